/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The staged path: host copies of device buffers around the previous
 * module's collective.  See coll_gpu_staged.h.
 */
#include "coll_gpu_staged.h"
#include "coll_gpu_board.h"
#include "coll_gpu_setup.h"
#include "coll_gpu_team.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/show_help.h"

/* Host buffers are aligned so that the host collective's own vectorized
 * reductions see the alignment they would on a malloc'ed buffer. */
#define COLL_GPU_HOST_ALIGN 64

/* The staging buffer is cut into two pipeline halves, each holding one slot
 * for the send and one for the receive buffer. */
#define COLL_GPU_PIPELINE_SLOTS 4

static size_t coll_gpu_align_up(size_t n) {
    return (n + COLL_GPU_HOST_ALIGN - 1) & ~(size_t)(COLL_GPU_HOST_ALIGN - 1);
}

void coll_gpu_buf_init(coll_gpu_buf_t *buf, const void *user, struct ompi_datatype_t *dtype,
                       size_t count) {
    buf->user = (void *)user;
    coll_gpu_region(dtype, count, &buf->lo, &buf->hi);
    buf->on_device = coll_gpu_on_device(user);
    buf->host = buf->user;
}

void coll_gpu_buf_init_blocks(coll_gpu_buf_t *buf, const void *user, struct ompi_datatype_t *dtype,
                              const int *counts, const int *displs, int n) {
    buf->user = (void *)user;
    coll_gpu_region_blocks(dtype, counts, displs, n, &buf->lo, &buf->hi);
    buf->on_device = coll_gpu_on_device(user);
    buf->host = buf->user;
}

void coll_gpu_buf_init_layout(coll_gpu_buf_t *buf, const void *user,
                              const coll_gpu_layout_t *layout) {
    buf->user = (void *)user;
    coll_gpu_region_layout(layout, &buf->lo, &buf->hi);
    buf->on_device = coll_gpu_on_device(user);
    buf->host = buf->user;
}

/* The first error of a call is the one reported. */
static void coll_gpu_stage_fail(coll_gpu_stage_t *stage, int rc) {
    if (OMPI_SUCCESS == stage->rc) {
        stage->rc = rc;
        stage->error = *accel_last_error();
    }
}

static void coll_gpu_copy(coll_gpu_stage_t *stage, void *dst, const void *src, size_t len) {
    if (0 == len) {
        return;
    }
    if (ACCEL_OK != mca_coll_gpu_component.accel->memcpy(dst, src, len)) {
        coll_gpu_stage_fail(stage, MPI_ERR_OTHER);
        return;
    }
    coll_gpu_count_add(&mca_coll_gpu_component.staged_bytes, len);
}

/* Creates the communicator's staging buffer, stream and events. */
static int coll_gpu_staging_create(mca_coll_gpu_module_t *module) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_staging_t *staging;

    staging = calloc(1, sizeof(*staging));
    if (NULL == staging) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    staging->size = coll_gpu_align_up(mca_coll_gpu_component.staging_buffer_size);
    if (ACCEL_OK == accel->mem_alloc(ACCEL_MEM_HOST_PINNED, staging->size, &staging->buffer)) {
        staging->pinned = true;
    } else {
        /* Pageable memory still works, at the price of synchronous copies. */
        COLL_GPU_VERBOSE(1, "pinning a %zu-byte staging buffer failed (%s); using pageable memory",
                         staging->size, accel_last_error()->error);
        coll_gpu_count_add(&mca_coll_gpu_component.pageable_fallbacks, 1);
        if (0 != posix_memalign(&staging->buffer, COLL_GPU_HOST_ALIGN, staging->size)) {
            goto err_free_staging;
        }
    }
    if (ACCEL_OK != accel->stream_create(&staging->stream)) {
        goto err_free_buffer;
    }
    for (int i = 0; i < 2; ++i) {
        if (ACCEL_OK != accel->event_create(&staging->copied_in[i])) {
            goto err_destroy_events;
        }
    }
    module->staging = staging;
    return OMPI_SUCCESS;

err_destroy_events:
    for (int i = 0; i < 2; ++i) {
        if (NULL != staging->copied_in[i]) {
            accel->event_destroy(staging->copied_in[i]);
        }
    }
    accel->stream_destroy(staging->stream);
err_free_buffer:
    if (staging->pinned) {
        accel->mem_free(staging->buffer);
    } else {
        free(staging->buffer);
    }
err_free_staging:
    free(staging);
    return OMPI_ERROR;
}

void coll_gpu_staging_destroy(coll_gpu_staging_t *staging) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;

    if (NULL == staging) {
        return;
    }
    for (int i = 0; i < 2; ++i) {
        accel->event_destroy(staging->copied_in[i]);
    }
    accel->stream_destroy(staging->stream);
    if (staging->pinned) {
        accel->mem_free(staging->buffer);
    } else {
        free(staging->buffer);
    }
    free(staging);
}

int coll_gpu_stage_begin(coll_gpu_stage_t *stage, mca_coll_gpu_module_t *module,
                         coll_gpu_coll_t coll) {
    memset(stage, 0, sizeof(*stage));
    stage->module = module;
    stage->coll = coll;
    stage->rc = OMPI_SUCCESS;
    coll_gpu_count_add(&mca_coll_gpu_component.calls_staged[coll], 1);
    if (NULL != module && NULL == module->staging) {
        /* Without a staging buffer every host copy is a temporary. */
        if (OMPI_SUCCESS != coll_gpu_staging_create(module)) {
            COLL_GPU_VERBOSE(1, "no staging buffer (%s): staging through temporary buffers",
                             accel_last_error()->error);
        }
    }
    return OMPI_SUCCESS;
}

/* Host memory for len bytes: from the staging buffer while it lasts, then
 * temporary pageable buffers. */
static void *coll_gpu_stage_alloc(coll_gpu_stage_t *stage, size_t len) {
    coll_gpu_staging_t *staging = (NULL != stage->module) ? stage->module->staging : NULL;
    void *ptr;

    len = coll_gpu_align_up(len);
    if (NULL != staging && staging->size - stage->arena_used >= len) {
        ptr = (char *)staging->buffer + stage->arena_used;
        stage->arena_used += len;
        return ptr;
    }
    if (stage->num_temps == COLL_GPU_STAGE_MAX_TEMPS ||
        0 != posix_memalign(&ptr, COLL_GPU_HOST_ALIGN, len)) {
        return NULL;
    }
    stage->temps[stage->num_temps++] = ptr;
    return ptr;
}

int coll_gpu_stage_in(coll_gpu_stage_t *stage, coll_gpu_buf_t *buf, bool copy_in) {
    char *shadow;
    size_t len;

    /* one per buffer of a call: Open MPI (libnbc) takes sbuf == rbuf for MPI_IN_PLACE */
    static char stand_ins[2];

    buf->host = buf->user;
    if (!buf->on_device) {
        return OMPI_SUCCESS;
    }
    if (buf->hi <= buf->lo) {
        /* Nothing is read or written, but Open MPI still gets a host address: never a
         * device pointer. */
        buf->host = &stand_ins[stage->num_stand_ins++ % 2];
        return OMPI_SUCCESS;
    }
    len = (size_t)(buf->hi - buf->lo);
    shadow = coll_gpu_stage_alloc(stage, len);
    if (NULL == shadow) {
        coll_gpu_out_of_host_memory(len);
    }
    buf->host = shadow - buf->lo;
    if (copy_in) {
        coll_gpu_copy(stage, shadow, (char *)buf->user + buf->lo, len);
    }
    return OMPI_SUCCESS;
}

void coll_gpu_stage_out(coll_gpu_stage_t *stage, coll_gpu_buf_t *buf) {
    if (!buf->on_device || buf->hi <= buf->lo) {
        return;
    }
    coll_gpu_copy(stage, (char *)buf->user + buf->lo, (char *)buf->host + buf->lo,
                  (size_t)(buf->hi - buf->lo));
}

void coll_gpu_stage_refresh(coll_gpu_stage_t *stage, coll_gpu_buf_t *buf) {
    if (!buf->on_device || buf->hi <= buf->lo) {
        return;
    }
    coll_gpu_copy(stage, (char *)buf->host + buf->lo, (char *)buf->user + buf->lo,
                  (size_t)(buf->hi - buf->lo));
}

int coll_gpu_stage_end(coll_gpu_stage_t *stage, struct ompi_communicator_t *comm,
                       const char *mpi_call) {
    for (int i = 0; i < stage->num_temps; ++i) {
        free(stage->temps[i]);
    }
    stage->num_temps = 0;
    return coll_gpu_stage_report(stage, comm, mpi_call);
}

int coll_gpu_stage_report(coll_gpu_stage_t *stage, struct ompi_communicator_t *comm,
                          const char *mpi_call) {
    if (OMPI_SUCCESS != stage->rc && NULL != stage->error.call) {
        coll_gpu_count_add(&mca_coll_gpu_component.accelerator_errors, 1);
        opal_show_help("help-mpi-coll-gpu.txt", "accelerator error", true, COLL_GPU_HOSTNAME,
                       mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), stage->error.call,
                       stage->error.error);
    }
    return stage->rc;
}

bool coll_gpu_pipeline_applies(struct ompi_datatype_t *dtype, int count) {
    size_t slot = mca_coll_gpu_component.staging_buffer_size / COLL_GPU_PIPELINE_SLOTS;
    ptrdiff_t lb, extent;
    size_t size;

    if (!mca_coll_gpu_component.staged_pipeline || count <= 0 ||
        !ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        return false;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_type_size(dtype, &size);
    /* A single element may be "contiguous" with an extent larger than its
     * data (a resized type): chunks copy whole extents, so only dense types. */
    if (extent <= 0 || (size_t)extent != size || (size_t)extent > slot) {
        return false;
    }
    /* One chunk is a single host collective either way: the plain path does it
     * without the pipeline's bookkeeping. */
    return (size_t)count > slot / (size_t)extent;
}

bool coll_gpu_pipeline_bytes_applies(size_t bytes) {
    return (bytes <= INT_MAX) && coll_gpu_pipeline_applies(MPI_BYTE, (int)bytes);
}

/* One chunk of a pipeline: which elements, and the host copies standing for
 * the user's buffers. */
typedef struct {
    size_t first;
    int count;
    const void *sbuf_host;
    void *rbuf_host;
} coll_gpu_chunk_t;

/* A pipeline copy: asynchronous on the staging stream when there is one. */
static void coll_gpu_pipeline_copy(coll_gpu_stage_t *stage, accel_stream_h stream, void *dst,
                                   const void *src, size_t len) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    accel_status_t status;

    status = (NULL != stream) ? accel->memcpy_async(dst, src, len, stream)
                              : accel->memcpy(dst, src, len);
    if (ACCEL_OK != status) {
        coll_gpu_stage_fail(stage, MPI_ERR_OTHER);
        return;
    }
    coll_gpu_count_add(&mca_coll_gpu_component.staged_bytes, len);
}

/*
 * Pipelined staging of an element-wise collective over contiguous data: the
 * device-to-host copy of chunk k and the host-to-device copy of chunk k - 2
 * run while the host collective of chunk k - 1 does.  The staging buffer is
 * cut into two halves, each with a slot for the send and the receive data.
 */
static void coll_gpu_pipeline_run(coll_gpu_stage_t *stage, const coll_gpu_call_t *call) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    coll_gpu_staging_t *staging = stage->module->staging;
    const void *sbuf = call->send.user;
    void *rbuf = call->recv.user;
    accel_stream_h stream = NULL;
    ptrdiff_t lb, extent, true_lb, true_extent;
    coll_gpu_chunk_t chunks[2];
    size_t slot, chunk_elems;
    char *slots;
    int num_chunks;

    ompi_datatype_get_extent(call->dtype, &lb, &extent);
    ompi_datatype_get_true_extent(call->dtype, &true_lb, &true_extent);
    /* Chunking depends only on the parameter and the datatype, never on what
     * this rank could allocate, so that every rank issues the same host
     * collectives. */
    slot = mca_coll_gpu_component.staging_buffer_size / COLL_GPU_PIPELINE_SLOTS;
    chunk_elems = slot / (size_t)extent;
    num_chunks = (int)(((size_t)call->count + chunk_elems - 1) / chunk_elems);

    if (NULL != staging) {
        slots = staging->buffer;
        stream = staging->stream;
    } else {
        /* No staging buffer: the same chunks through a temporary, unpipelined. */
        slots = coll_gpu_stage_alloc(stage, COLL_GPU_PIPELINE_SLOTS * slot);
        if (NULL == slots) {
            coll_gpu_out_of_host_memory(COLL_GPU_PIPELINE_SLOTS * slot);
        }
    }

    for (int k = 0; k <= num_chunks; ++k) {
        /* Start copying chunk k in while chunk k - 1 is reduced. */
        if (k < num_chunks) {
            coll_gpu_chunk_t *next = &chunks[k % 2];
            char *sslot = slots + (size_t)(k % 2) * 2 * slot;
            char *rslot = sslot + slot;
            size_t left, bytes;

            next->first = (size_t)k * chunk_elems;
            left = (size_t)call->count - next->first;
            next->count = (int)(left < chunk_elems ? left : chunk_elems);
            bytes = (size_t)next->count * (size_t)extent;

            next->sbuf_host = sbuf;
            if (NULL != sbuf && MPI_IN_PLACE != sbuf) {
                const char *user = (const char *)sbuf + next->first * (size_t)extent;
                next->sbuf_host = user;
                if (call->send.on_device) {
                    coll_gpu_pipeline_copy(stage, stream, sslot, user + true_lb, bytes);
                    next->sbuf_host = sslot - true_lb;
                }
            }
            next->rbuf_host = NULL;
            if (NULL != rbuf) {
                char *user = (char *)rbuf + next->first * (size_t)extent;
                next->rbuf_host = user;
                if (call->recv.on_device) {
                    if (call->recv_in) {
                        coll_gpu_pipeline_copy(stage, stream, rslot, user + true_lb, bytes);
                    }
                    next->rbuf_host = rslot - true_lb;
                }
            }
            if (NULL != stream &&
                ACCEL_OK != accel->event_record(staging->copied_in[k % 2], stream)) {
                coll_gpu_stage_fail(stage, MPI_ERR_OTHER);
            }
        }

        /* Run the host collective on chunk k - 1, then start copying it out.
         * The stream orders that copy before the next copy into its half. */
        if (k > 0) {
            coll_gpu_chunk_t *cur = &chunks[(k - 1) % 2];

            if (NULL != stream &&
                ACCEL_OK != accel->event_synchronize(staging->copied_in[(k - 1) % 2])) {
                coll_gpu_stage_fail(stage, MPI_ERR_OTHER);
            }
            coll_gpu_stage_set_rc(
                stage, call->host_fn(cur->sbuf_host, cur->rbuf_host, cur->count, call->args, NULL));
            coll_gpu_count_add(&mca_coll_gpu_component.staged_chunks, 1);
            if (call->recv_out && NULL != rbuf && call->recv.on_device) {
                char *user = (char *)rbuf + cur->first * (size_t)extent;
                coll_gpu_pipeline_copy(stage, stream, user + true_lb,
                                       (char *)cur->rbuf_host + true_lb,
                                       (size_t)cur->count * (size_t)extent);
            }
        }
    }
    if (NULL != stream && ACCEL_OK != accel->stream_synchronize(stream)) {
        coll_gpu_stage_fail(stage, MPI_ERR_OTHER);
    }
}

void coll_gpu_call_init(coll_gpu_call_t *call, coll_gpu_coll_t coll, const char *mpi_call,
                        coll_gpu_host_fn_t host_fn, void *args) {
    memset(call, 0, sizeof(*call));
    call->coll = coll;
    call->mpi_call = mpi_call;
    call->host_fn = host_fn;
    call->args = args;
}

bool coll_gpu_has_holes(struct ompi_datatype_t *dtype, size_t count) {
    /* two elements tell whatever the count (an int product of counts and ranks could
     * overflow): elements that leave no gap between each other leave none among more */
    return count > 0 && !ompi_datatype_is_contiguous_memory_layout(dtype, (count > 1) ? 2 : 1);
}

/* Host copies of the call's buffers; false when host memory ran out. */
static bool coll_gpu_stage_call_in(coll_gpu_stage_t *stage, coll_gpu_call_t *call) {
    if (OMPI_SUCCESS != coll_gpu_stage_in(stage, &call->send, true)) {
        return false;
    }
    /* An output with holes is copied in too, so that copying the region back
     * leaves the holes as they were. */
    return OMPI_SUCCESS == coll_gpu_stage_in(stage, &call->recv, call->recv_in || call->recv_holes);
}

int coll_gpu_staged_call(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         coll_gpu_call_t *call, bool single_call) {
    coll_gpu_stage_t stage;
    bool pipelined;

    /* a check of its own collectives: only where every rank stages this call */
    if (OPAL_UNLIKELY(mca_coll_gpu_component.transport_check) && (NULL == module->team) &&
        !module->team_failed && coll_gpu_board_known_all_stage(module)) {
        (void)coll_gpu_team_check(module, comm);
    }
    coll_gpu_stage_begin(&stage, module, call->coll);
    pipelined =
        call->elementwise && !single_call && coll_gpu_pipeline_applies(call->dtype, call->count);
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS, "%s: staged%s (send %s, receive %s)", call->mpi_call,
                     pipelined ? ", pipelined" : "", call->send.on_device ? "device" : "host",
                     call->recv.on_device ? "device" : "host");
    if (pipelined) {
        coll_gpu_pipeline_run(&stage, call); /* its caller's close agrees on its errors */
    } else if (coll_gpu_stage_call_in(&stage, call)) {
        int rc = stage.rc;

        /* no rank's host collective takes an undefined contribution as a success: the ranks
         * agree on their copies in first (MPI_Reduce_local has no peers) */
        if ((COLL_GPU_REDUCE_LOCAL == call->coll) ||
            coll_gpu_board_stage_agree(module, comm, call->mpi_call, &rc)) {
            coll_gpu_stage_set_rc(&stage, call->host_fn(call->send.host, call->recv.host,
                                                        call->count, call->args, NULL));
            if (call->recv_out) {
                coll_gpu_stage_out(&stage, &call->recv);
            }
        } else if (OMPI_SUCCESS == stage.rc) {
            coll_gpu_stage_set_rc(&stage, rc); /* a peer's failure: its message is out */
        }
    }
    return coll_gpu_stage_end(&stage, comm, call->mpi_call);
}

bool coll_gpu_memory_kinds_mixed(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 coll_gpu_coll_t coll, bool on_device) {
    int local = on_device ? 1 : 0, num_on_device = 0;
    int size = ompi_comm_size(comm);

    /* a host collective of its own: only where every rank asks for it (the parameters were
     * compared at the communicator's creation) */
    coll_gpu_setup_task_finish(module);
    if (module->params_differ) {
        return true; /* the single-call path is right in any case */
    }

    if (OMPI_SUCCESS !=
        COLL_GPU_PREV(module, allreduce, &local, &num_on_device, 1, MPI_INT, MPI_SUM, comm)) {
        /* Cannot tell: the single-call path is right in any case. */
        return true;
    }
    if (0 < num_on_device && num_on_device < size) {
        if (0 == ompi_comm_rank(comm)) {
            opal_show_help("help-mpi-coll-gpu.txt", "memory kinds mixed", true, num_on_device, size,
                           coll_gpu_coll_name(coll), COLL_GPU_HOSTNAME);
        }
        return true;
    }
    return false;
}

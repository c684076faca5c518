/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The staged path: device buffers copied to host memory, the previous
 * module's collective run on the host copies, results copied back.
 *
 * Whatever it stages, the staged path issues the same host collective(s) a
 * rank with host buffers would (one call; or, when pipelining, one call per
 * chunk on every rank, which is why pipelining asks every rank to pass the
 * same kind of memory): peers never wait on a call that is not coming.  An
 * accelerator error is therefore remembered, the host collective still run,
 * and the error returned at the end.
 */
#ifndef COLL_GPU_STAGED_H
#define COLL_GPU_STAGED_H

#include "coll_gpu.h"
#include "coll_gpu_region.h"

BEGIN_C_DECLS

#define COLL_GPU_STAGE_MAX_TEMPS 4

/* One buffer argument of a collective, as the staged path sees it. */
typedef struct {
    void *user;       /* the application's pointer */
    ptrdiff_t lo, hi; /* bytes [user + lo, user + hi) the collective may touch */
    bool on_device;
    void *host; /* stands for user: host + (p - user) is the host copy of p */
} coll_gpu_buf_t;

/* The state of one staged call. */
typedef struct {
    mca_coll_gpu_module_t *module; /* NULL for a nonblocking call: no shared staging buffer */
    coll_gpu_coll_t coll;
    size_t arena_used; /* bytes of the staging buffer handed out to this call */
    void *temps[COLL_GPU_STAGE_MAX_TEMPS];
    int num_temps;
    int num_stand_ins;   /* host addresses handed out for buffers of no data */
    int rc;              /* first error; the call goes on so peers don't hang */
    accel_error_t error; /* the accelerator error behind rc, if any */
} coll_gpu_stage_t;

/* Fills a buffer descriptor for a layout of blocks. */
void coll_gpu_buf_init_layout(coll_gpu_buf_t *buf, const void *user,
                              const coll_gpu_layout_t *layout);

/* Fills a buffer descriptor for count elements of dtype at user. */
void coll_gpu_buf_init(coll_gpu_buf_t *buf, const void *user, struct ompi_datatype_t *dtype,
                       size_t count);

/* Frees a communicator's staging resources. */
void coll_gpu_staging_destroy(coll_gpu_staging_t *staging);

/* Fills a buffer descriptor for blocks of dtype (v-collectives). */
void coll_gpu_buf_init_blocks(coll_gpu_buf_t *buf, const void *user, struct ompi_datatype_t *dtype,
                              const int *counts, const int *displs, int n);

int coll_gpu_stage_begin(coll_gpu_stage_t *stage, mca_coll_gpu_module_t *module,
                         coll_gpu_coll_t coll);

/* Gives buf a host copy; with copy_in, the device bytes are copied to it.
 * Returns an error only when no host memory could be found at all. */
int coll_gpu_stage_in(coll_gpu_stage_t *stage, coll_gpu_buf_t *buf, bool copy_in);

/* Copies the host copy of an output buffer back to the device. */
void coll_gpu_stage_out(coll_gpu_stage_t *stage, coll_gpu_buf_t *buf);

/* Copies the device bytes of a buffer given a host copy by coll_gpu_stage_in to that copy
 * again (a persistent request's next start). */
void coll_gpu_stage_refresh(coll_gpu_stage_t *stage, coll_gpu_buf_t *buf);

/* Reports the call's error (help message naming mpi_call), if any, and returns the call's
 * status; the host copies stay. */
int coll_gpu_stage_report(coll_gpu_stage_t *stage, struct ompi_communicator_t *comm,
                          const char *mpi_call);

/* Frees what the call allocated, reports its error (help message naming
 * mpi_call) and returns the call's status. */
int coll_gpu_stage_end(coll_gpu_stage_t *stage, struct ompi_communicator_t *comm,
                       const char *mpi_call);

/* Records the host collective's own status as the call's (it wins over an
 * accelerator error: Open MPI has already reported it). */
static inline void coll_gpu_stage_set_rc(coll_gpu_stage_t *stage, int rc) {
    if (OMPI_SUCCESS != rc) {
        stage->rc = rc;
        stage->error.call = NULL;
    }
}

/* One collective call as the staged path runs it. */
typedef struct {
    coll_gpu_coll_t coll;
    const char *mpi_call;
    coll_gpu_host_fn_t host_fn;
    void *args;

    coll_gpu_buf_t send; /* user NULL or MPI_IN_PLACE: not used on this rank */
    coll_gpu_buf_t recv; /* user NULL: not used on this rank */
    bool recv_in;        /* the collective reads the receive buffer */
    bool recv_out;       /* it writes it */
    bool recv_holes;     /* it leaves bytes inside the region untouched */

    /* Element-wise collectives (allreduce, reduce, bcast, scan, exscan,
     * reduce_local) may be pipelined: the same datatype on every rank. */
    bool elementwise;
    int count;
    struct ompi_datatype_t *dtype;

    bool persistent; /* MPI_*_init: host_fn sets up the previous module's persistent request */
} coll_gpu_call_t;

/* Fills send and recv as unused; the caller sets what its collective uses. */
void coll_gpu_call_init(coll_gpu_call_t *call, coll_gpu_coll_t coll, const char *mpi_call,
                        coll_gpu_host_fn_t host_fn, void *args);

/* Whether a staged element-wise call of bytes bytes of dense data is pipelined (the same on
 * every rank for the same bytes and parameters). */
bool coll_gpu_pipeline_bytes_applies(size_t bytes);
/* Whether count elements of dtype take the pipelined path: dense data of more than one chunk.
 * The same answer on every rank for the same parameters, count and datatype; a blocking call
 * pipelines only where every rank stages it (coll_gpu_board_all_stage). */
bool coll_gpu_pipeline_applies(struct ompi_datatype_t *dtype, int count);

/* Whether count elements of dtype leave holes in their region. */
bool coll_gpu_has_holes(struct ompi_datatype_t *dtype, size_t count);

/* A blocking collective through host staging.  single_call: never pipeline
 * (the ranks pass different kinds of memory). */
int coll_gpu_staged_call(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         coll_gpu_call_t *call, bool single_call);

/*
 * With coll_gpu_check_memory_kinds, every call first counts the ranks that
 * pass device memory.  Returns true when the kinds are mixed: the caller then
 * takes the path that issues exactly one host collective, whatever its
 * buffers, so that every rank runs the same communication.
 */
bool coll_gpu_memory_kinds_mixed(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 coll_gpu_coll_t coll, bool on_device);

/*
 * The start of every blocking wrapper: true when no buffer of this rank is on
 * the device and the call goes straight to the previous module.
 * *single_call_p says whether the staged path must avoid pipelining.
 */
static inline bool coll_gpu_pass_through(mca_coll_gpu_module_t *module,
                                         struct ompi_communicator_t *comm, coll_gpu_coll_t coll,
                                         bool on_device, bool *single_call_p) {
    *single_call_p = false;
    if (OPAL_UNLIKELY(mca_coll_gpu_component.check_memory_kinds)) {
        *single_call_p = coll_gpu_memory_kinds_mixed(module, comm, coll, on_device);
    }
    if (OPAL_LIKELY(!on_device)) {
        ++mca_coll_gpu_component.calls_passthrough[coll];
        return true;
    }
    return false;
}

/* The same for nonblocking wrappers, which never pipeline (and never agree
 * on memory kinds: a blocking agreement inside a nonblocking call could
 * deadlock against collectives posted on other communicators). */
static inline bool coll_gpu_ipass_through(coll_gpu_coll_t coll, bool on_device) {
    if (OPAL_LIKELY(!on_device)) {
        ++mca_coll_gpu_component.calls_passthrough[coll];
        return true;
    }
    return false;
}

/* The pass-through test of a call whose buffers were classified: blocking
 * calls may agree on memory kinds (coll_gpu_pass_through), nonblocking ones
 * never do and never pipeline (coll_gpu_ipass_through). */
static inline bool coll_gpu_classified_pass_through(mca_coll_gpu_module_t *module,
                                                    struct ompi_communicator_t *comm,
                                                    coll_gpu_coll_t coll, bool on_device,
                                                    ompi_request_t **request, bool *single_call_p) {
    if (NULL == request) {
        return coll_gpu_pass_through(module, comm, coll, on_device, single_call_p);
    }
    *single_call_p = true;
    return coll_gpu_ipass_through(coll, on_device);
}

END_C_DECLS

#endif /* COLL_GPU_STAGED_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/* Whether a call runs natively: its memory, datatype and op, the checks the ranks agree on
 * (counts, blocks, memory kinds, the call board), its context and algorithm. */
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_board.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_reduce_op.h"
#include "coll_gpu_setup.h"
#include "coll_gpu_signature.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "opal/util/show_help.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool coll_gpu_native_nonblocking_allowed(const mca_coll_gpu_module_t *module) {
    const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;

    /* Only what needs no blocking step of its own, the same on every rank: the checks that
     * agree (counts, memory kinds) are collectives, which a nonblocking call must not block in
     * (another rank may post its calls on another communicator first); and the promise that
     * every rank passes device memory, which a nonblocking call cannot learn
     * (coll_gpu_memory_kinds_uniform). */
    return c->native && c->native_nonblocking &&
           (c->memory_kinds_uniform || module->kinds_promised) && !c->check_counts &&
           !c->check_memory_kinds;
}

bool coll_gpu_native_nonblocking_ready(mca_coll_gpu_module_t *module) {
    const coll_gpu_native_t *native;

    if (!coll_gpu_native_nonblocking_allowed(module)) {
        return false;
    }
    /* the setup started at the communicator's creation: its outcome, the same on every rank,
     * decides (it waits for the peers' progress, not for their calls) */
    if (OPAL_UNLIKELY(NULL != module->setup_task)) {
        coll_gpu_setup_task_finish(module);
    }
    native = module->native;
    return (NULL != native) && !native->broken &&
           (NULL != native->scratch[COLL_GPU_NATIVE_DEVICE].mem);
}

void coll_gpu_native_block_arrays(coll_gpu_native_call_t *call, bool nonblocking, size_t **counts_p,
                                  size_t **displs_p, size_t **scounts_p, size_t **sdispls_p) {
    size_t size = (size_t)call->native->team->size;
    int narrays = (NULL != scounts_p) ? 4 : 2;

    if (!nonblocking) {
        *counts_p = call->native->counts;
        *displs_p = call->native->displs;
        if (NULL != scounts_p) {
            *scounts_p = call->native->send_counts;
            *sdispls_p = call->native->send_displs;
        }
        return;
    }
    call->posted_blocks = malloc((size_t)narrays * size * sizeof(size_t));
    if (NULL == call->posted_blocks) {
        /* the peers posted theirs */
        coll_gpu_out_of_host_memory((size_t)narrays * size * sizeof(size_t));
    }
    call->posted_arrays = narrays;
    *counts_p = call->posted_blocks;
    *displs_p = call->posted_blocks + size;
    if (NULL != scounts_p) {
        *scounts_p = call->posted_blocks + 2 * size;
        *sdispls_p = call->posted_blocks + 3 * size;
    }
}

int coll_gpu_native_check_counts(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 const char *mpi_call, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op) {
    int size = ompi_comm_size(comm), bad = -1, rc;
    unsigned long long mine[3], *all;
    size_t tsize = 0;

    (void)ompi_datatype_type_size(dtype, &tsize);
    mine[0] = (unsigned long long)count;
    mine[1] = (unsigned long long)tsize;
    if (NULL == op) {
        /* data movement: ranks may pass different datatypes of one signature; its bytes match */
        mine[0] = (unsigned long long)coll_gpu_signature_bytes(count, dtype);
        mine[1] = 1;
    }
    mine[2] = (NULL != op) ? (unsigned long long)op->o_f_to_c_index : ~0ULL;
    all = malloc((size_t)size * sizeof(mine));
    if (NULL == all) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = COLL_GPU_PREV(module, allgather, mine, 3, MPI_UNSIGNED_LONG_LONG, all, 3,
                       MPI_UNSIGNED_LONG_LONG, comm);
    for (int r = 1; (OMPI_SUCCESS == rc) && (r < size) && (bad < 0); ++r) {
        if (0 != memcmp(&all[3 * r], &all[0], sizeof(mine))) {
            bad = r;
        }
    }
    if (bad >= 0) {
        if (0 == ompi_comm_rank(comm)) {
            opal_show_help("help-mpi-coll-gpu.txt", "count mismatch", true, COLL_GPU_HOSTNAME,
                           mpi_call, size, 0, all[0], all[1], (long long)all[2], bad, all[3 * bad],
                           all[3 * bad + 1], (long long)all[3 * bad + 2]);
        }
        rc = MPI_ERR_COUNT;
    }
    free(all);
    return rc;
}

/* Block p of counts in the unit the ranks compare: bytes of the type signature for data
 * movement (the ranks may pass different datatypes of one signature), elements for a
 * reduction (one datatype everywhere). */
static int64_t coll_gpu_block_units(const int *counts, int p, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op) {
    if ((NULL != op) || (counts[p] < 0)) {
        return counts[p];
    }
    return (int64_t)coll_gpu_signature_bytes(counts[p], dtype);
}

bool coll_gpu_native_check_blocks(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                  coll_gpu_ncoll_t coll, const int *counts,
                                  struct ompi_datatype_t *dtype, const int *peer_counts,
                                  struct ompi_datatype_t *peer_dtype, struct ompi_op_t *op,
                                  int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), bad = -1;
    int64_t mine[3] = {-1, 0, 0}, *ours, *theirs, *all;

    /* where coll_gpu_native_eligible compares counts: the same parameters on every rank */
    if (OPAL_LIKELY(!c->check_counts) || !c->native ||
        (COLL_GPU_ALG_STAGED == c->algorithm[coll])) {
        return false;
    }
    ours = calloc(2 * (size_t)size, sizeof(int64_t));
    all = malloc(3 * (size_t)size * sizeof(int64_t));
    if ((NULL == ours) || (NULL == all)) {
        free(ours);
        free(all);
        *rc_p = OMPI_ERR_OUT_OF_RESOURCE;
        return true;
    }
    theirs = ours + size;
    for (int p = 0; p < size; ++p) {
        ours[p] = coll_gpu_block_units(counts, p, dtype, op);
    }
    if (NULL == peer_counts) {
        /* theirs: rank 0's counts */
        memcpy(theirs, ours, (size_t)size * sizeof(int64_t));
        *rc_p = COLL_GPU_PREV(module, bcast, theirs, size, MPI_INT64_T, 0, comm);
    } else {
        /* theirs[p]: what p sends this rank; ours[p] then: what this rank receives from p */
        *rc_p = COLL_GPU_PREV(module, alltoall, ours, 1, MPI_INT64_T, theirs, 1, MPI_INT64_T, comm);
        for (int p = 0; p < size; ++p) {
            ours[p] = coll_gpu_block_units(peer_counts, p, peer_dtype, op);
        }
    }
    for (int p = 0; (OMPI_SUCCESS == *rc_p) && (p < size) && (mine[0] < 0); ++p) {
        if (ours[p] != theirs[p]) {
            mine[0] = p;
            mine[1] = ours[p];
            mine[2] = theirs[p];
        }
    }
    if (OMPI_SUCCESS == *rc_p) {
        *rc_p = COLL_GPU_PREV(module, allgather, mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, comm);
    }
    for (int r = 0; (OMPI_SUCCESS == *rc_p) && (r < size) && (bad < 0); ++r) {
        bad = (all[3 * r] >= 0) ? r : -1;
    }
    if (bad >= 0) {
        int p = (int)all[3 * bad];
        const char *unit = (NULL == op) ? "bytes" : "elements";
        if (0 == rank) {
            /* same counts: rank bad's recvcounts[p] against rank 0's; transposed: rank bad's
             * recvcounts[p] against rank p's sendcounts[bad] */
            opal_show_help("help-mpi-coll-gpu.txt", "block count mismatch", true, COLL_GPU_HOSTNAME,
                           t->mpi_call, size, bad, "recvcounts", p, (long long)all[3 * bad + 1],
                           unit, (NULL == peer_counts) ? 0 : p,
                           (NULL == peer_counts) ? "recvcounts" : "sendcounts",
                           (NULL == peer_counts) ? p : bad, (long long)all[3 * bad + 2], unit);
        }
        *rc_p = MPI_ERR_COUNT;
    }
    free(ours);
    free(all);
    if (OMPI_SUCCESS == *rc_p) {
        /* the blocks agree: element size and op, as for the other collectives */
        *rc_p = coll_gpu_native_check_counts(module, comm, t->mpi_call, 0, dtype, op);
    }
    return OMPI_SUCCESS != *rc_p;
}

/* Whether every buffer of this rank is of kind's memory. */
static bool coll_gpu_native_buffers_fit(coll_gpu_native_kind_t kind, const void *const *bufs,
                                        int nbufs) {
    const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    bool ok = true;

    for (int b = 0; ok && (b < nbufs); ++b) {
        if (COLL_GPU_NATIVE_HOST == kind) {
            ok = (NULL == c->accel) || !coll_gpu_on_device(bufs[b]);
        } else {
            ok = coll_gpu_on_device(bufs[b]);
        }
    }
    return ok;
}

bool coll_gpu_native_arrive(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                            coll_gpu_native_kind_t kind, const void *const *bufs, int nbufs) {
    coll_gpu_board_status_t status =
        (COLL_GPU_NATIVE_HOST == kind) ? COLL_GPU_BOARD_HOST : COLL_GPU_BOARD_DEVICE;

    if (!coll_gpu_native_buffers_fit(kind, bufs, nbufs)) {
        status = COLL_GPU_BOARD_CANNOT;
    }
    return coll_gpu_board_uniform(module, comm, status);
}

bool coll_gpu_native_eligible(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              coll_gpu_ncoll_t coll, coll_gpu_native_kind_t kind, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              const void *const *bufs, int nbufs, bool kinds_mixed,
                              bool nonblocking, coll_gpu_native_call_t *call, int *rc_p) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];
    coll_gpu_fallback_t reason = COLL_GPU_FALLBACK_MEMORY; /* of buffers this rank refuses */
    coll_gpu_alg_query_t query;
    accel_status_t status;
    ptrdiff_t lb, extent;
    size_t tsize = 0;
    char why[256] = "";
    /* the verbose log's reasons of a native call: formatted only when the log is on */
    size_t why_len = (c->verbose >= COLL_GPU_VERBOSE_CALLS) ? sizeof(why) : 0;
    int ok = 1, alg;

    *rc_p = OMPI_SUCCESS;
    memset(call, 0, sizeof(*call));
    if (!c->native) {
        reason = COLL_GPU_FALLBACK_DISABLED;
        goto fallback;
    }
    if (COLL_GPU_ALG_STAGED == c->algorithm[coll]) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        snprintf(why, sizeof(why), ": coll_gpu_%s_algorithm=staged", t->name);
        goto fallback;
    }
    if (nonblocking &&
        ((COLL_GPU_NATIVE_DEVICE != kind) || !coll_gpu_native_nonblocking_ready(module))) {
        reason = COLL_GPU_FALLBACK_NONBLOCKING;
        goto fallback;
    }
    call->dtype = ACCEL_DT_COUNT;
    call->op = ACCEL_OP_SUM;
    call->entry_status = ACCEL_OK;
    if (NULL == op) {
        /* data movement: the type signature's bytes decide, the same on every rank whatever
         * datatype each passes (a rank whose layout is not dense packs: coll_gpu_signature.h) */
        tsize = coll_gpu_signature_bytes(count, dtype);
        call->esize = 1;
        if (0 == tsize) {
            reason = COLL_GPU_FALLBACK_DATATYPE_OP; /* nothing to move, on every rank */
            goto fallback;
        }
        query.bytes = tsize;
        tsize = 1;
    } else if ((count <= 0) || !coll_gpu_reduce_op_lookup(dtype, op, &call->dtype, &call->op) ||
               (OMPI_SUCCESS != ompi_datatype_get_extent(dtype, &lb, &extent)) || (0 != lb) ||
               ((size_t)extent != accel_dtype_size(call->dtype))) {
        /* a reduction: MPI requires the same count, datatype and op on every rank; the kernels
         * take the predefined types and coll_gpu_ext.h's, contiguous */
        reason = COLL_GPU_FALLBACK_DATATYPE_OP;
        goto fallback;
    } else {
        tsize = (size_t)extent;
        call->esize = tsize;
        query.bytes = (size_t)count * tsize;
    }
    if (kinds_mixed) {
        /* the ranks agreed on it already, and the host ones have gone to Open MPI */
        reason = COLL_GPU_FALLBACK_MEMORY;
        goto fallback;
    }
    if (!nonblocking && !coll_gpu_native_arrive(module, comm, kind, bufs, nbufs)) {
        if (OPAL_UNLIKELY(COLL_GPU_BOARD_DEAD == module->board_outcome)) {
            /* a rank of the call is gone: every rank that waits for it fails the call (a host
             * collective would wait for it for ever) */
            *rc_p = coll_gpu_board_dead_error(module, comm, t->mpi_call);
            return true;
        }
        /* another rank passes other memory, or this one does (coll_gpu_board.h) */
        reason = COLL_GPU_FALLBACK_MEMORY;
        snprintf(why, sizeof(why), ": not every rank can run it natively");
        goto fallback;
    }
    if (OPAL_UNLIKELY(c->check_counts) && t->uniform_count && !nonblocking) {
        *rc_p = coll_gpu_native_check_counts(module, comm, t->mpi_call, count, dtype, op);
        if (OMPI_SUCCESS != *rc_p) {
            return true; /* the call failed: no fallback */
        }
    }
    ok = coll_gpu_native_buffers_fit(kind, bufs, nbufs);
    if (c->check_memory_kinds) {
        /* not only "some device memory on every rank" (the staged path's agreement): all of
         * it, everywhere */
        int mine = ok;

        if (OMPI_SUCCESS !=
            COLL_GPU_PREV(module, allreduce, MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm)) {
            ok = 0;
        }
        if (mine && !ok) {
            /* another rank's memory or datatype */
            reason = COLL_GPU_FALLBACK_MEMORY;
            snprintf(why, sizeof(why), ": another rank cannot run it natively");
        }
    }
    if (!ok) {
        goto fallback;
    }
    if (!coll_gpu_native_get(module, comm, kind, &call->native, &reason)) {
        goto fallback;
    }
    if ((size_t)(t->per_rank_blocks ? call->native->team->size : 1) *
            (((NULL != op) && (call->native->team->nnodes > 1)) ? 2 : 1) * tsize >
        call->native->half) {
        /* a step must hold an element of every block, and a reduction spanning nodes as many
         * fetched from the other nodes */
        reason = COLL_GPU_FALLBACK_TEAM;
        goto fallback;
    }
    query.native = call->native;
    query.esize = call->esize;
    query.kind = kind;
    query.nonblocking = nonblocking;
    alg = coll_gpu_alg_choose(coll, &query, &call->chunk_bytes, why, why_len);
    if (COLL_GPU_ALG_STAGED == alg) {
        reason = COLL_GPU_FALLBACK_ALGORITHM;
        goto fallback;
    }
    call->alg = &t->algs[alg - COLL_GPU_ALG_FIRST_NATIVE];
    if ((call->native->team->nnodes > 1) && !call->alg->multi_node) {
        /* it loads every peer's scratch directly */
        reason = COLL_GPU_FALLBACK_MULTI_NODE;
        snprintf(why, sizeof(why), ": %s needs one node (%d nodes)", call->alg->name,
                 call->native->team->nnodes);
        goto fallback;
    }
    if ((NULL != call->alg->fits) && !call->alg->fits(&query, why, sizeof(why))) {
        reason = COLL_GPU_FALLBACK_TEAM;
        goto fallback;
    }
    if (coll_gpu_kernel_row(call->alg) && !coll_gpu_native_kernel_area(comm, call->native)) {
        /* (a blocking call makes it, every rank alike: fits said a nonblocking one finds it) */
        reason = COLL_GPU_FALLBACK_TEAM;
        snprintf(why, sizeof(why), ": no area for %s", call->alg->name);
        goto fallback;
    }
    if ((COLL_GPU_NCOLL_ALLTOALLV == coll) && nonblocking) {
        /* its blocks' lengths are agreed by the algorithm (coll_gpu_alltoall.c) */
        COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                         "%s (nonblocking, on the communicator's thread) "
                         "on %s: blocks agreed in the call, %s memory: %s (%s)",
                         t->mpi_call, comm->c_name, coll_gpu_native_mems[kind].name,
                         call->alg->name, why);
    } else {
        /* elements as the algorithm moves them: a data movement's signature bytes one by one */
        COLL_GPU_VERBOSE(
            COLL_GPU_VERBOSE_CALLS, "%s%s on %s: %zu x %zu bytes, %s memory: %s (%s)", t->mpi_call,
            nonblocking ? " (nonblocking, on the communicator's thread)" : "", comm->c_name,
            query.bytes / tsize, tsize, coll_gpu_native_mems[kind].name, call->alg->name, why);
    }
    call->kind = kind;
    call->mem = &coll_gpu_native_mems[kind];
    call->stream = NULL;
    call->mpi_call = t->mpi_call;
    coll_gpu_count_add(&c->algorithm_calls[coll][alg], 1);
    if (COLL_GPU_NATIVE_DEVICE == kind) {
        /* a stream this rank alone could not create: the algorithm still runs the protocol */
        status = coll_gpu_module_stream(module, &call->stream);
        if (OPAL_UNLIKELY(ACCEL_OK != status)) {
            call->entry_status = status;
            call->stream = NULL;
        }
    }
    return true;

fallback:
    coll_gpu_count_add(&c->native_fallbacks[reason], 1);
    if (COLL_GPU_NATIVE_DEVICE == kind) {
        coll_gpu_count_add(&c->algorithm_calls[coll][COLL_GPU_ALG_STAGED], 1);
    }
    /* (the choice's reasons, "rule at FILE:LINE" or auto's, come without the separator the
     * others write) */
    COLL_GPU_VERBOSE(
        COLL_GPU_VERBOSE_CALLS, "%s on %s: %d elements: %s (%s%s%s)", t->mpi_call, comm->c_name,
        count, (COLL_GPU_NATIVE_DEVICE == kind) ? "staged" : "host buffers to Open MPI",
        coll_gpu_fallback_names[reason], (('\0' != why[0]) && (':' != why[0])) ? ": " : "", why);
    return false;
}

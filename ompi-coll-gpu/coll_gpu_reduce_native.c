/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce, direct: per step, every rank but the root copies its chunk into its scratch half;
 * once every rank announced the step, the root reduces the chunks of all ranks, in rank
 * order, into its receive buffer: those of its node's ranks
 * straight from their scratch, its own from its input, those of other nodes' ranks after
 * fetching them (gets) into its own scratch half, which nobody reads in a reduce.  The n inputs
 * go through coll_gpu_native_reduce in rank order, as allreduce's do: the result is
 * MPI_Allreduce's, bit for bit.
 *
 * The root's half holds one chunk per rank of another node, which sets the step; plus one for
 * its own input when the root is rank ACCEL_REDUCE_MAX_INPUTS or later: a reduction of that
 * many inputs is chained through the destination, which would overwrite an in-place input
 * before its turn (ranks before that are in the first pass, which may read the destination).
 *
 * An accelerator error does not stop the signals: peers finish the call and every
 * rank returns the error at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_native.h"

int coll_gpu_reduce_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    const void *sbuf = call->sbuf;
    void *rbuf = call->rbuf;
    size_t count = call->count;
    int root = call->root;
    coll_gpu_native_t *native = call->native;
    coll_gpu_team_t *team = native->team;
    const coll_gpu_native_mem_t *mem = call->mem;
    const void **srcs = native->srcs;
    bool is_root = (team->rank == root), own_slot = (root >= ACCEL_REDUCE_MAX_INPUTS);
    size_t esize = call->esize, slots = own_slot ? 1 : 0, per_step;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status = SHMEM_OK;

    for (int p = 0; p < team->size; ++p) {
        slots += (team->node_of_rank[p] != team->node_of_rank[root]) ? 1 : 0;
    }
    per_step = native->half / (((slots > 0) ? slots : 1) * esize);

    for (size_t first = 0; first < count; first += per_step) {
        size_t n = (count - first < per_step) ? count - first : per_step, slot = 0;
        uint64_t step = ++native->step;
        char *mine = coll_gpu_native_mine(native, call->kind, step);
        const char *in = (const char *)sbuf + first * esize;
        char *out = (char *)rbuf + first * esize;

        if (!is_root && (ACCEL_OK == astatus)) {
            astatus = mem->copy(mine, in, n * esize, call->stream);
        }
        if (!is_root && (ACCEL_OK == astatus) && !coll_gpu_native_is_local(native, root)) {
            astatus = coll_gpu_native_publish(native, call->kind, step, 0, n * esize, call->stream);
        }
        /* a non-root's chunk landed; the root's reads of the previous step completed */
        status = coll_gpu_native_announce(call, step, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        if (!is_root || (ACCEL_OK != astatus)) {
            continue;
        }
        for (int p = 0; (p < team->size) && (ACCEL_OK == astatus); ++p) {
            if (p == team->rank) {
                srcs[p] = in;
                if (own_slot && (in == out)) {
                    srcs[p] = mine + (slots - 1) * n * esize;
                    astatus =
                        mem->copy(mine + (slots - 1) * n * esize, in, n * esize, call->stream);
                }
            } else if (coll_gpu_native_is_local(native, p)) {
                srcs[p] = coll_gpu_native_theirs(native, call->kind, p, step);
            } else {
                srcs[p] = mine + slot * n * esize;
                astatus =
                    coll_gpu_native_fetch(native, call->kind, p, step, 0, mine + slot * n * esize,
                                          n * esize, call->stream, &status);
                ++slot;
                if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                    goto err_transport;
                }
            }
        }
        /* the other nodes' chunks arrived */
        status = coll_gpu_native_fetch_complete(native, call->kind, call->stream, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto err_transport;
        }
        if (ACCEL_OK == astatus) {
            astatus = coll_gpu_native_reduce(mem, out, srcs, team->size, n, call->dtype, call->op,
                                             call->stream);
        }
    }
    return coll_gpu_native_finish(call, comm, SHMEM_OK, astatus);

err_transport:
    return coll_gpu_native_finish(call, comm, status, astatus);
}

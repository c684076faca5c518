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
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_reduce_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_team_t *team = call->native->team;
    const void **srcs = call->native->srcs;
    int root = call->root;
    bool is_root = (team->rank == root), own_slot = (root >= ACCEL_REDUCE_MAX_INPUTS);
    size_t esize = call->esize, slots = own_slot ? 1 : 0, per_step;
    coll_gpu_prims_t pr;

    for (int p = 0; p < team->size; ++p) {
        slots += (team->node_of_rank[p] != team->node_of_rank[root]) ? 1 : 0;
    }
    per_step = call->native->half / (((slots > 0) ? slots : 1) * esize);

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, per_step);) {
        size_t len = c.n * esize, slot = 0;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        const char *in = (const char *)call->sbuf + c.first * esize;
        char *out = (char *)call->rbuf + c.first * esize;

        if (!is_root) {
            coll_gpu_prims_copy(&pr, mine, in, len);
            if (!coll_gpu_native_is_local(call->native, root)) {
                coll_gpu_prims_publish(&pr, c.step, 0, len);
            }
        }
        /* a non-root's chunk landed; the root's reads of the previous step completed */
        coll_gpu_prims_announce(&pr, c.step);
        if (!is_root) {
            continue;
        }
        for (int p = 0; p < team->size; ++p) {
            if (p == team->rank) {
                srcs[p] = in;
                if (own_slot && (in == out)) {
                    srcs[p] = mine + (slots - 1) * len;
                    coll_gpu_prims_copy(&pr, mine + (slots - 1) * len, in, len);
                }
            } else if (coll_gpu_native_is_local(call->native, p)) {
                srcs[p] = coll_gpu_prims_theirs(&pr, p, c.step);
            } else {
                srcs[p] = mine + slot * len;
                coll_gpu_prims_fetch(&pr, p, c.step, 0, mine + slot * len, len);
                ++slot;
            }
        }
        /* the other nodes' chunks arrived */
        coll_gpu_prims_fetch_complete(&pr);
        coll_gpu_prims_reduce(&pr, out, srcs, team->size, c.n);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

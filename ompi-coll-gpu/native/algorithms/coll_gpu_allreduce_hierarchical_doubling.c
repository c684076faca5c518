/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, hierarchical_doubling (small messages across nodes): the leader reduces its node,
 * the leaders run recursive doubling (coll_gpu_doubling_chunk), the leader hands the result to
 * its node.  A chunk is half a half across nodes: a leader fetches its partner's partial into the
 * upper half of its own, which no peer reads.  Protocol, reuse and order: docs/allreduce.md,
 * "Small messages across nodes".
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_doubling.h"

int coll_gpu_allreduce_hierarchical_doubling(struct ompi_communicator_t *comm,
                                             const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    coll_gpu_team_t *team = native->team;
    size_t esize = call->esize;
    size_t limit = native->half / esize; /* elements per step */
    int leader = coll_gpu_team_node_rank(team, team->node, 0);
    const void **srcs = native->srcs;
    coll_gpu_prims_t pr;
    coll_gpu_doubling_t d;

    coll_gpu_prims_init(&pr, call);
    if (team->nnodes > 1) {
        limit /= 2;
    }
    coll_gpu_doubling_init(&d, &pr, true, (team->nnodes > 1) ? limit * esize : 0);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, limit);) {
        size_t bytes = c.n * esize, offset = c.first * esize;
        const char *in = (const char *)call->sbuf + offset;
        char *out = (char *)call->rbuf + offset;
        uint64_t step;

        /* 1. the node's inputs to its leader */
        if (team->rank != leader) {
            coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, c.step), in, bytes);
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, leader, c.step, COLL_GPU_PHASE_READY);
        } else {
            for (int l = 0; l < team->local_size; ++l) {
                int q = team->local_ranks[l];

                if (q != team->rank) {
                    coll_gpu_prims_wait(&pr, q, c.step, COLL_GPU_PHASE_READY);
                    srcs[l] = coll_gpu_prims_theirs(&pr, q, c.step);
                } else {
                    srcs[l] = in;
                }
            }
            coll_gpu_prims_reduce(&pr, out, srcs, team->local_size, c.n);
        }

        /* 2. between the leaders (stream order: the doubling's copies follow the reduction) */
        coll_gpu_doubling_chunk(&d, 0, out, out, c.n);

        /* 3. the leader's result to its node */
        step = ++native->step;
        if ((team->rank == leader) && (team->local_size > 1)) {
            coll_gpu_doubling_claim(&d, step);
            coll_gpu_prims_copy(&pr, coll_gpu_prims_mine(&pr, step), out, bytes);
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal_node(&pr, step, COLL_GPU_PHASE_FINAL);
        } else if (team->rank != leader) {
            coll_gpu_prims_wait(&pr, leader, step, COLL_GPU_PHASE_FINAL);
            coll_gpu_prims_copy(&pr, out, coll_gpu_prims_theirs(&pr, leader, step), bytes);
        }
        /* this rank's reads done before it says READY of the next chunk (or the agreement) */
        coll_gpu_prims_sync(&pr);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

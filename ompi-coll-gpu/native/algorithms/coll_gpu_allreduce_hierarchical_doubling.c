/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, hierarchical_doubling (small messages across nodes: O(log nnodes) rounds and
 * messages between nodes, where hierarchical's owners each exchange with every other node):
 * per chunk of a scratch half (half a half across nodes: a leader fetches its partner's partial
 * into the upper half of its own, which no peer reads),
 *   1. the node step: every rank but the node's leader (its first rank) puts its input in its
 *      half and tells the leader; the leader reduces the node's inputs in local rank order (its
 *      own from its send buffer) into its receive buffer;
 *   2. recursive doubling between the node leaders (coll_gpu_doubling_chunk): log2(p) rounds
 *      with one partner each, p the largest power of two <= nnodes, + 2 where nnodes is not one
 *      (the extras' pairing and hand-back); the other ranks take the same steps idle;
 *   3. the hand-off step: the leader puts the result in its half and signals FINAL to its
 *      node, whose ranks copy it.
 * Between nodes only the leaders talk: per round one READY, one get of the chunk, one CONSUMED;
 * the leader moves the whole chunk each round (log2(p) x the message, where hierarchical moves
 * 2 (nnodes - 1) / nnodes x a shard): for small messages, where the rounds are the cost.
 *
 * Synchronization: READY (a rank to its leader, step 1) and FINAL (the leader to its node, step
 * 3) are the only signals inside a node; between leaders coll_gpu_doubling_chunk's.  Reuse of
 * the halves: a rank writes its input in chunk k + 1 after the FINAL of chunk k, which its
 * leader sent after it had read chunk k's inputs; a leader writes the result in its half
 * after the last leader that read that half said CONSUMED (coll_gpu_doubling_claim), and writes
 * that half again (chunk k + 1's rounds) only after every rank of its node said READY of chunk
 * k + 1, which each says after it copied chunk k's result.  The halves of earlier calls are
 * free: their last step, the agreement, was announced by every rank.
 *
 * Determinism: each node's inputs reduced in local rank order by its leader, then recursive
 * doubling on node indices (lower op higher): the same bits on every rank, from run to run for
 * the same layout, count, type and op; not hierarchical's bits nor one_shot's on floating point.
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

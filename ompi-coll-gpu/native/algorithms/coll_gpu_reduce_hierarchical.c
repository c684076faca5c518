/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce, hierarchical (nodes of several ranks): each node's leader reduces its node into one
 * partial, which the root fetches; segmented on 3 nodes or more from 64 KiB (a reduce-scatter
 * between the leaders, the root getting each segment's result).  docs/collectives.md, "Reduce,
 * gather, scatter".
 *
 * Scratch half: [input][partial][nnodes fetched partials], per_step elements each (segmented:
 * [input][partial][nnodes fetched segments][the segment's result]); written again two steps
 * later, after every rank announced the step between.  MPI_IN_PLACE at the root: its input is
 * rbuf, copied into its scratch in the step that writes the same chunk of rbuf.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

bool coll_gpu_reduce_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    return (size_t)(2 + native->team->nnodes) * esize <= native->half;
}

/* Elements of segment k of a chunk of n elements cut into nsegs: its first and its length. */
static size_t coll_gpu_reduce_hier_segment(size_t n, int nsegs, int k, size_t *first) {
    size_t seg = (n + (size_t)nsegs - 1) / (size_t)nsegs;

    *first = (size_t)k * seg;
    return (*first >= n) ? 0 : (n - *first < seg) ? n - *first : seg;
}

/* The segmented network step of a leader (the node partial made, at partial offset of its
 * half): a reduce-scatter between the leaders (segment j of every node's partial, reduced in node
 * order by node j's leader), then the root gets each segment's result. */
static void coll_gpu_reduce_hier_segments(coll_gpu_prims_t *pr, const coll_gpu_native_call_t *call,
                                          const coll_gpu_prims_chunk_t *c, size_t bytes,
                                          int root_index) {
    coll_gpu_team_t *team = pr->native->team;
    const void **srcs = pr->native->srcs;
    int nnodes = team->nnodes, root = call->root;
    size_t esize = call->esize,
           seg_bytes = (bytes / esize + (size_t)nnodes - 1) / (size_t)nnodes * esize;
    char *mine = coll_gpu_prims_mine(pr, c->step);
    char *out = (char *)call->rbuf + c->first * esize;
    /* [input][partial][nnodes fetched segments][this node's segment result] */
    size_t off_part = (team->local_size > 1) ? bytes : 0, off_fetch = 2 * bytes;
    size_t off_res = off_fetch + (size_t)nnodes * seg_bytes, first, n;
    bool is_root = (team->rank == root);

    n = coll_gpu_reduce_hier_segment(c->n, nnodes, team->node, &first);
    coll_gpu_prims_publish(pr, c->step, off_part, c->n * esize);
    /* the partial is there (and published) before the other leaders are told */
    coll_gpu_prims_sync(pr);
    for (int j = 0; j < nnodes; ++j) {
        if (j != team->node) {
            coll_gpu_prims_signal(pr, coll_gpu_team_rail_rank(team, j, root_index), c->step,
                                  COLL_GPU_PHASE_REDUCED);
        }
    }
    /* this node's segment of every node's partial, reduced in node order */
    for (int j = 0; j < nnodes; ++j) {
        int leader = coll_gpu_team_rail_rank(team, j, root_index);
        char *slot = mine + off_fetch + (size_t)j * seg_bytes;

        if (j == team->node) {
            srcs[j] = mine + off_part + first * esize;
            continue;
        }
        coll_gpu_prims_wait(pr, leader, c->step, COLL_GPU_PHASE_REDUCED);
        coll_gpu_prims_fetch(pr, leader, c->step,
                             ((team->node_sizes[j] > 1) ? bytes : 0) + first * esize, slot,
                             n * esize);
        srcs[j] = slot;
    }
    coll_gpu_prims_fetch_complete(pr);
    coll_gpu_prims_reduce(pr, is_root ? out + first * esize : mine + off_res, srcs, nnodes, n);
    if (!is_root) {
        coll_gpu_prims_publish(pr, c->step, off_res, n * esize);
        coll_gpu_prims_sync(pr);
        coll_gpu_prims_signal(pr, root, c->step, COLL_GPU_PHASE_SEGMENT);
        return;
    }
    /* the root: every other segment's result, straight into the receive buffer */
    for (int j = 0; j < nnodes; ++j) {
        int leader = coll_gpu_team_rail_rank(team, j, root_index);
        size_t nj = coll_gpu_reduce_hier_segment(c->n, nnodes, j, &first);

        if (j != team->node) {
            coll_gpu_prims_wait(pr, leader, c->step, COLL_GPU_PHASE_SEGMENT);
            coll_gpu_prims_fetch(pr, leader, c->step, off_res, out + first * esize, nj * esize);
        }
    }
    coll_gpu_prims_fetch_complete(pr);
}

int coll_gpu_reduce_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    coll_gpu_team_t *team = native->team;
    const void **srcs = native->srcs;
    int root = call->root;
    int root_index = coll_gpu_team_index_in_node(team, root), leader;
    bool is_root = (team->rank == root);
    size_t esize = call->esize;
    size_t per_step = native->half / ((size_t)(2 + team->nnodes) * esize);
    /* segments between the leaders: on 3 nodes or more, for messages from
     * COLL_GPU_REDUCE_SEGMENTED_MIN_BYTES (the same on every rank), when the segments fit */
    size_t seg_bytes = (per_step + (size_t)team->nnodes - 1) / (size_t)team->nnodes * esize;
    bool segmented =
        (team->nnodes >= 3) && (call->count * esize >= COLL_GPU_REDUCE_SEGMENTED_MIN_BYTES) &&
        ((size_t)(team->nnodes + 1) * seg_bytes <= (size_t)team->nnodes * per_step * esize);
    coll_gpu_prims_t pr;

    /* this node's leader (the root on the root's node) */
    leader = coll_gpu_team_root_leader(team, root, team->node);

    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, per_step);) {
        size_t bytes = per_step * esize, len = c.n * esize;
        char *mine = coll_gpu_prims_mine(&pr, c.step);
        char *out = (char *)call->rbuf + c.first * esize;
        int nsrcs = 0;

        coll_gpu_prims_copy(&pr, mine, (const char *)call->sbuf + c.first * esize, len);
        /* the inputs landed; every rank's reads of step - 2 completed */
        coll_gpu_prims_announce(&pr, c.step);
        if (team->rank != leader) {
            continue;
        }
        if (1 == team->nnodes) {
            coll_gpu_prims_reduce_node(&pr, out, c.step, 0, c.n);
            continue;
        }
        /* this node's partial (a node of one rank: the input) */
        if (team->local_size > 1) {
            coll_gpu_prims_reduce_node(&pr, mine + bytes, c.step, 0, c.n);
        }
        if (segmented) {
            coll_gpu_reduce_hier_segments(&pr, call, &c, bytes, root_index);
            continue;
        }
        if (!is_root) {
            coll_gpu_prims_publish(&pr, c.step, (team->local_size > 1) ? bytes : 0, len);
            /* the partial is there (and published) before the root is told */
            coll_gpu_prims_sync(&pr);
            coll_gpu_prims_signal(&pr, root, c.step, COLL_GPU_PHASE_REDUCED);
            continue;
        }
        /* the root: every node's partial, in node order */
        for (int j = 0; j < team->nnodes; ++j) {
            char *slot = mine + (size_t)(2 + j) * bytes;
            int their_leader = coll_gpu_team_rail_rank(team, j, root_index);

            if (j == team->node) {
                srcs[nsrcs++] = mine + ((team->local_size > 1) ? bytes : 0);
                continue;
            }
            coll_gpu_prims_wait(&pr, their_leader, c.step, COLL_GPU_PHASE_REDUCED);
            coll_gpu_prims_fetch(&pr, their_leader, c.step, (team->node_sizes[j] > 1) ? bytes : 0,
                                 slot, len);
            srcs[nsrcs++] = slot;
        }
        /* the other nodes' partials have arrived */
        coll_gpu_prims_fetch_complete(&pr);
        coll_gpu_prims_reduce(&pr, out, srcs, nsrcs, c.n);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, hierarchical (communicators spanning nodes): per chunk a node reduce-scatter into
 * shards, a direct reduce-scatter and allgather of each shard between its owners, a node
 * allgather; the network step pipelined against the node's work.  Why direct rather than a ring,
 * the scratch layout and its reuse, the reduction order: docs/allreduce.md, "Across nodes".
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

#include <string.h>

#define COLL_GPU_HIER_ALIGN 64

typedef struct {
    size_t n;           /* elements of a chunk, at most */
    size_t shard_bytes; /* room of a shard */
    size_t seg_bytes;   /* room of a segment of a shard (one per node) */
    size_t off_partial, off_result, off_stage;
} coll_gpu_hier_layout_t;

static size_t coll_gpu_hier_align(size_t bytes) {
    return (bytes + COLL_GPU_HIER_ALIGN - 1) & ~(size_t)(COLL_GPU_HIER_ALIGN - 1);
}

/* Segments of a shard between nodes: one per node, or one on 2 nodes, where each owner getting
 * the whole of the other's partial moves as many bytes (1 x shard = 2 (2 - 1) / 2 x shard) in one
 * round instead of two, all of it while the node reduces the next chunk. */
static int coll_gpu_hier_nsegs(int nnodes) { return (2 == nnodes) ? 1 : nnodes; }

/* The layout of chunks of n elements; returns the bytes of a half it needs. */
static size_t coll_gpu_hier_layout(size_t n, int m, int nnodes, size_t esize,
                                   coll_gpu_hier_layout_t *layout) {
    size_t shard_n = (n + (size_t)m - 1) / (size_t)m;

    layout->n = n;
    layout->shard_bytes = coll_gpu_hier_align(shard_n * esize);
    layout->seg_bytes = coll_gpu_hier_align((shard_n + (size_t)coll_gpu_hier_nsegs(nnodes) - 1) /
                                            (size_t)coll_gpu_hier_nsegs(nnodes) * esize);
    layout->off_partial = coll_gpu_hier_align(n * esize);
    /* one node: the partial is the result */
    layout->off_result = layout->off_partial + ((nnodes > 1) ? layout->shard_bytes : 0);
    layout->off_stage = layout->off_result + layout->shard_bytes;
    return layout->off_stage + ((nnodes > 1) ? (size_t)nnodes * layout->seg_bytes : 0);
}

typedef struct {
    coll_gpu_prims_t pr;
    coll_gpu_hier_layout_t layout;
    int m;            /* shards per chunk: the fewest ranks of a node */
    const int *owner; /* nnodes entries: the rank owning this rank's shard on each node */
    bool is_owner;
    int nsegs; /* segments of a shard between nodes (coll_gpu_hier_nsegs) */
    int seg;   /* the segment this node's owner reduces */
} coll_gpu_hier_t;

/* One chunk in flight. */
typedef struct {
    uint64_t step;
    size_t first, n; /* elements */
} coll_gpu_hier_chunk_t;

static char *coll_gpu_hier_mine(coll_gpu_hier_t *h, uint64_t step, size_t offset) {
    return coll_gpu_prims_mine(&h->pr, step) + offset;
}

/* READY of step to the node's other ranks, then theirs: each is done with step - 1. */
static void coll_gpu_hier_node_ready(coll_gpu_hier_t *h, uint64_t step) {
    coll_gpu_prims_signal_node(&h->pr, step, COLL_GPU_PHASE_READY);
    coll_gpu_prims_wait_node(&h->pr, step, COLL_GPU_PHASE_READY);
}

/* Phases 1 and 2 of the node: input copied and announced, this rank's shard reduced over
 * the node's ranks. */
static void coll_gpu_hier_node_reduce(coll_gpu_hier_t *h, const coll_gpu_hier_chunk_t *c) {
    coll_gpu_prims_t *pr = &h->pr;
    const coll_gpu_native_call_t *call = pr->call;
    size_t esize = call->esize, shard_first, shard_len;
    const char *in = (const char *)call->sbuf + c->first * esize;

    coll_gpu_prims_node_input(pr, coll_gpu_hier_mine(h, c->step, 0), in, c->n, h->m);
    coll_gpu_prims_sync(pr);
    coll_gpu_hier_node_ready(h, c->step);
    if (h->is_owner) {
        coll_gpu_native_shard(c->n, h->m, pr->native->team->local_rank, &shard_first, &shard_len);
        coll_gpu_prims_reduce_node_from(pr, coll_gpu_hier_mine(h, c->step, h->layout.off_partial),
                                        c->step, shard_first * esize, in + shard_first * esize,
                                        shard_len);
        if (pr->native->team->nnodes > 1) {
            /* the other nodes' owners fetch it */
            coll_gpu_prims_publish(pr, c->step, h->layout.off_partial, shard_len * esize);
        }
        coll_gpu_prims_sync(pr);
    }
}

/* Segment q of this rank's shard of chunk c: elements [*first_p, + *len_p) of the shard. */
static void coll_gpu_hier_segment(const coll_gpu_hier_t *h, const coll_gpu_hier_chunk_t *c, int q,
                                  size_t *first_p, size_t *len_p) {
    size_t shard_first, shard_len;

    coll_gpu_native_shard(c->n, h->m, h->pr.native->team->local_rank, &shard_first, &shard_len);
    coll_gpu_native_shard(shard_len, h->nsegs, q, first_p, len_p);
}

/* Phase 2a, started: tells the other nodes' owners this rank's partial is ready (and its gets
 * of the previous chunk done), waits for theirs and gets this node's segment of each. */
static void coll_gpu_hier_net_start(coll_gpu_hier_t *h, const coll_gpu_hier_chunk_t *c) {
    coll_gpu_prims_t *pr = &h->pr;
    coll_gpu_team_t *team = pr->native->team;
    size_t esize = pr->call->esize, seg_first, seg_len;

    if (!h->is_owner || (team->nnodes < 2)) {
        return;
    }
    for (int j = 0; j < team->nnodes; ++j) {
        if (j != team->node) {
            coll_gpu_prims_signal(pr, h->owner[j], c->step, COLL_GPU_PHASE_REDUCED);
        }
    }
    coll_gpu_hier_segment(h, c, h->seg, &seg_first, &seg_len);
    for (int j = 0; j < team->nnodes; ++j) {
        if (j != team->node) {
            coll_gpu_prims_wait(pr, h->owner[j], c->step, COLL_GPU_PHASE_REDUCED);
            coll_gpu_prims_fetch(
                pr, h->owner[j], c->step, h->layout.off_partial + seg_first * esize,
                coll_gpu_hier_mine(h, c->step,
                                   h->layout.off_stage + (size_t)j * h->layout.seg_bytes),
                seg_len * esize);
        }
    }
}

/* Phase 2a, finished, and 2b started (an owner, in the step after chunk c's, its gets of c
 * completed): reduces its node's segment of the nodes' partials in node order; tells the other
 * owners and gets their segments' results, which complete in the next step. */
static void coll_gpu_hier_net_reduce(coll_gpu_hier_t *h, const coll_gpu_hier_chunk_t *c) {
    coll_gpu_prims_t *pr = &h->pr;
    coll_gpu_team_t *team = pr->native->team;
    const void **srcs = pr->native->srcs;
    size_t esize = pr->call->esize, seg_first, seg_len;

    coll_gpu_hier_segment(h, c, h->seg, &seg_first, &seg_len);
    for (int j = 0; j < team->nnodes; ++j) {
        srcs[j] = coll_gpu_hier_mine(h, c->step,
                                     (j == team->node)
                                         ? h->layout.off_partial + seg_first * esize
                                         : h->layout.off_stage + (size_t)j * h->layout.seg_bytes);
    }
    coll_gpu_prims_reduce(pr,
                          coll_gpu_hier_mine(h, c->step, h->layout.off_result + seg_first * esize),
                          srcs, team->nnodes, seg_len);
    if (1 == h->nsegs) {
        coll_gpu_prims_sync(pr); /* every owner reduced the whole shard */
        return;
    }
    /* the other owners get it */
    coll_gpu_prims_publish(pr, c->step, h->layout.off_result + seg_first * esize, seg_len * esize);
    coll_gpu_prims_sync(pr);
    for (int j = 0; j < team->nnodes; ++j) {
        if (j != team->node) {
            coll_gpu_prims_signal(pr, h->owner[j], c->step, COLL_GPU_PHASE_SEGMENT);
        }
    }
    for (int j = 0; j < team->nnodes; ++j) {
        if (j != team->node) {
            size_t off;

            coll_gpu_hier_segment(h, c, j, &seg_first, &seg_len);
            off = h->layout.off_result + seg_first * esize;
            coll_gpu_prims_wait(pr, h->owner[j], c->step, COLL_GPU_PHASE_SEGMENT);
            coll_gpu_prims_fetch(pr, h->owner[j], c->step, off, coll_gpu_hier_mine(h, c->step, off),
                                 seg_len * esize);
        }
    }
}

/* Phase 3 (the owners' results of chunk c complete): every rank copies each shard's result from
 * its owner.  Runs in a later step (step): its FINAL signal follows that step's READY to the
 * same peer, keeping each peer's signal slot monotone. */
static void coll_gpu_hier_final(coll_gpu_hier_t *h, const coll_gpu_hier_chunk_t *c, uint64_t step) {
    coll_gpu_prims_t *pr = &h->pr;

    if (h->is_owner) {
        coll_gpu_prims_signal_node(pr, step, COLL_GPU_PHASE_FINAL);
    }
    coll_gpu_prims_node_shards_out(pr, c->step, h->layout.off_result, step, c->first, c->n, h->m);
    /* the reads of this step's results are done before the next step's announcement */
    coll_gpu_prims_sync(pr);
}

bool coll_gpu_allreduce_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    coll_gpu_hier_layout_t layout;

    return coll_gpu_hier_layout(1, native->team->min_local_size, native->team->nnodes, esize,
                                &layout) <= native->half;
}

int coll_gpu_allreduce_hierarchical(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    coll_gpu_team_t *team = native->team;
    coll_gpu_hier_chunk_t cur = {0, 0, 0}, prev = {0, 0, 0}, prev2 = {0, 0, 0};
    bool reduce_pending = false, final_pending = false;
    int depth;
    coll_gpu_hier_t h;
    size_t n;

    coll_gpu_prims_init(&h.pr, call);
    /* the shards of a chunk: as many as the smallest node has ranks; the owner of this rank's
     * shard on each node is the node's local_rank-th rank, shard l's on this node its l-th */
    h.m = team->min_local_size;
    h.is_owner = (team->local_rank < h.m);
    h.owner = team->node_peers;
    h.nsegs = coll_gpu_hier_nsegs(team->nnodes);
    h.seg = (h.nsegs > 1) ? team->node : 0;

    /* the largest chunk within call->chunk_bytes whose layout fits a scratch half (the row's
     * fits made sure one element does, the same on every rank) */
    n = call->chunk_bytes / call->esize;
    n = (n < call->count) ? n : call->count;
    n = (n > 0) ? n : 1;
    while ((n > 1) &&
           (coll_gpu_hier_layout(n, h.m, team->nnodes, call->esize, &h.layout) > native->half)) {
        n -= (n + 7) / 8;
    }
    if (coll_gpu_hier_layout(n, h.m, team->nnodes, call->esize, &h.layout) > native->half) {
        return coll_gpu_accel_failed(ACCEL_ERR_INVALID, call->mpi_call, comm); /* every rank */
    }

    /* Step s runs: the node reduce of the chunk of step s; the owners' completion of every get
     * issued in step s - 1, which flew during that reduce; the copies of the results of the chunk
     * of step s - 2 (s - 1 where the shard is one segment); the reduction of the segment of the
     * chunk of step s - 1 and the gets of the other segments' results; the gets of this chunk's
     * segments.  The call's last step (the agreement, coll_gpu_prims_finish) tells every rank
     * that every read is done. */
    depth = ((team->nnodes > 1) && (h.nsegs > 1)) ? 2 : 1;
    for (size_t first = 0;
         ((first < call->count) || reduce_pending || final_pending) && coll_gpu_prims_linked(&h.pr);
         first += n) {
        bool current = (first < call->count);
        uint64_t step = ++native->step;

        if (current) {
            cur.step = step;
            cur.first = first;
            cur.n = (call->count - first < n) ? call->count - first : n;
            coll_gpu_hier_node_reduce(&h, &cur);
        } else if (2 == depth) {
            /* the node's readers of the results two steps back (the half the segment reduced
             * below goes into) are done: what the next chunk's node reduce would have said */
            coll_gpu_hier_node_ready(&h, step);
        }
        if (h.is_owner && (team->nnodes > 1) && (reduce_pending || final_pending)) {
            coll_gpu_prims_fetch_complete(&h.pr);
        }
        if (final_pending) {
            coll_gpu_hier_final(&h, &prev2, step);
        }
        if (reduce_pending) {
            if (h.is_owner && (team->nnodes > 1)) {
                coll_gpu_hier_net_reduce(&h, &prev);
            }
            if (1 == depth) {
                coll_gpu_hier_final(&h, &prev, step);
            }
        }
        if (current) {
            coll_gpu_hier_net_start(&h, &cur);
        }
        final_pending = (2 == depth) && reduce_pending;
        prev2 = prev;
        reduce_pending = current;
        prev = cur;
    }
    return coll_gpu_prims_finish(&h.pr, comm);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, hierarchical_rabenseifner (large messages across many nodes): per chunk a node
 * reduce-scatter into shards, Rabenseifner's allreduce of each shard among its owners (recursive
 * halving, then doubling), a node allgather; pipelined against the node's work.  The steps, the
 * scratch reuse argument and the reduction order: docs/allreduce.md, "Large messages across many
 * nodes".
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

#define COLL_GPU_RAB_ALIGN 64
/* rounds of an owner in a chunk, at most: 2 log2 p of 30 nodes' bits, the pairing, the
 * hand-back */
#define COLL_GPU_RAB_MAX_ROUNDS 64

typedef struct {
    size_t off_work, off_land;
} coll_gpu_rab_layout_t;

static size_t coll_gpu_rab_align(size_t bytes) {
    return (bytes + COLL_GPU_RAB_ALIGN - 1) & ~(size_t)(COLL_GPU_RAB_ALIGN - 1);
}

/* [input chunk][work: a shard][landing: a shard]; returns the bytes of a half it needs. */
static size_t coll_gpu_rab_layout(size_t n, int m, size_t esize, coll_gpu_rab_layout_t *layout) {
    size_t shard = coll_gpu_rab_align((n + (size_t)m - 1) / (size_t)m * esize);

    layout->off_work = coll_gpu_rab_align(n * esize);
    layout->off_land = layout->off_work + shard;
    return layout->off_land + shard;
}

/* One round of an owner with one peer: what it offers of its work, what it takes of the
 * peer's (bytes in the work shard). */
typedef struct {
    int peer;
    int index;        /* its place among the chunk's rounds: its step, the same on both sides */
    bool offer, take; /* (a round may move no bytes: the signals still go) */
    size_t offer_off, offer_len, take_off, take_len;
    bool reduce;       /* the take lands in the landing and is reduced into the work at take_off */
    bool theirs_first; /* in the reduction: the peer's elements first */
    bool tracked;      /* the peer says CONSUMED once its take of this offer completed */
    bool consumed;     /* ... and this rank, once its take completed */
} coll_gpu_rab_round_t;

/* The rounds of a chunk, as run in a step (by the chunk's parity). */
typedef struct {
    coll_gpu_rab_round_t round[COLL_GPU_RAB_MAX_ROUNDS];
    int n;
    uint64_t base; /* the step they ran in */
} coll_gpu_rab_plan_t;

typedef struct {
    size_t first, n; /* elements */
} coll_gpu_rab_chunk_t;

typedef struct {
    coll_gpu_prims_t pr;
    coll_gpu_rab_layout_t layout;
    int m;                      /* shards per chunk */
    bool is_owner;              /* local rank < m: a member of shard local_rank's group */
    const int *owner;           /* nnodes entries: the owner of this rank's shard on each node */
    coll_gpu_prims_fold_t fold; /* the nodes onto a power of two */
    int vme;           /* this owner's virtual index among the p, -1: an extra (or not an owner) */
    int nindices;      /* round indices of a chunk (every rank counts them alike) */
    size_t n, nchunks; /* elements of a chunk, at most; chunks of the call */
    coll_gpu_rab_plan_t plan[2]; /* by chunk parity: the running chunk's and the one before */
} coll_gpu_rab_t;

static coll_gpu_rab_chunk_t coll_gpu_rab_chunk(const coll_gpu_rab_t *r, size_t c) {
    coll_gpu_rab_chunk_t chunk = {c * r->n, 0};

    chunk.n = (r->pr.call->count - chunk.first < r->n) ? r->pr.call->count - chunk.first : r->n;
    return chunk;
}

/* Chunk c's half (its parity). */
static char *coll_gpu_rab_mine(const coll_gpu_rab_t *r, size_t c) {
    return coll_gpu_prims_mine(&r->pr, (uint64_t)c);
}

/* The rank of virtual index v. */
static int coll_gpu_rab_rank(const coll_gpu_rab_t *r, int v) {
    return r->owner[coll_gpu_prims_fold_member(&r->fold, v)];
}

/* Segments [lo, lo + nsegs) of a shard of shard_n elements: first byte and bytes. */
static void coll_gpu_rab_segs(const coll_gpu_rab_t *r, size_t shard_n, int lo, int nsegs,
                              size_t *off_p, size_t *len_p) {
    size_t esize = r->pr.call->esize, first, len, last_first, last_len;

    coll_gpu_native_shard(shard_n, r->fold.p, lo, &first, &len);
    coll_gpu_native_shard(shard_n, r->fold.p, lo + nsegs - 1, &last_first, &last_len);
    *off_p = first * esize;
    *len_p = (last_first + last_len - first) * esize;
}

/* This owner's rounds for a shard of shard_n elements (none: not an owner, or one node). */
static void coll_gpu_rab_plan(coll_gpu_rab_t *r, size_t shard_n, coll_gpu_rab_plan_t *plan) {
    const coll_gpu_team_t *team = r->pr.native->team;
    size_t whole = shard_n * r->pr.call->esize;
    int me = team->node, index = 0;
    coll_gpu_rab_round_t *rd = plan->round;

    plan->n = 0;
    if (!r->is_owner || (team->nnodes < 2)) {
        return;
    }
    if (r->fold.rem > 0) {
        /* the pairing: the extra's partial reduced into the odd one's, the extra's first */
        if (coll_gpu_prims_fold_paired(&r->fold, me)) {
            bool odd = (me & 1);

            rd[plan->n++] = (coll_gpu_rab_round_t){.peer = r->owner[odd ? me - 1 : me + 1],
                                                   .index = index,
                                                   .offer = !odd,
                                                   .offer_len = whole,
                                                   .take = odd,
                                                   .take_len = whole,
                                                   .reduce = true,
                                                   .theirs_first = true};
        }
        ++index;
    }
    /* recursive halving: the range [lo, lo + 2 mask) of segments, lower half kept by the lower
     * virtual index */
    for (int mask = r->fold.p / 2; mask >= 1; mask /= 2, ++index) {
        int v = r->vme, lo, keep, give;

        if (v < 0) {
            continue;
        }
        lo = v & ~(2 * mask - 1);
        keep = lo + (v & mask);
        give = lo + ((v ^ mask) & mask);
        rd[plan->n] = (coll_gpu_rab_round_t){.peer = coll_gpu_rab_rank(r, v ^ mask),
                                             .index = index,
                                             .offer = true,
                                             .take = true,
                                             .reduce = true,
                                             .theirs_first = ((v ^ mask) < v)};
        coll_gpu_rab_segs(r, shard_n, give, mask, &rd[plan->n].offer_off, &rd[plan->n].offer_len);
        coll_gpu_rab_segs(r, shard_n, keep, mask, &rd[plan->n].take_off, &rd[plan->n].take_len);
        ++plan->n;
    }
    /* recursive doubling of the segments, each got into its place in the work */
    for (int mask = 1; mask < r->fold.p; mask *= 2, ++index) {
        int v = r->vme;

        if (v < 0) {
            continue;
        }
        rd[plan->n] = (coll_gpu_rab_round_t){.peer = coll_gpu_rab_rank(r, v ^ mask),
                                             .index = index,
                                             .offer = true,
                                             .take = true,
                                             .tracked = true,
                                             .consumed = true};
        coll_gpu_rab_segs(r, shard_n, v & ~(mask - 1), mask, &rd[plan->n].offer_off,
                          &rd[plan->n].offer_len);
        coll_gpu_rab_segs(r, shard_n, (v ^ mask) & ~(mask - 1), mask, &rd[plan->n].take_off,
                          &rd[plan->n].take_len);
        ++plan->n;
    }
    if (coll_gpu_prims_fold_paired(&r->fold, me)) {
        /* the hand-back: the odd one's result into the extra's work */
        bool odd = (me & 1);

        rd[plan->n++] = (coll_gpu_rab_round_t){.peer = r->owner[odd ? me - 1 : me + 1],
                                               .index = index,
                                               .offer = odd,
                                               .offer_len = whole,
                                               .take = !odd,
                                               .take_len = whole,
                                               .tracked = odd,
                                               .consumed = !odd};
    }
}

/* A round's first half: the offer (published, READY), then the take's get issued. */
static void coll_gpu_rab_start(coll_gpu_rab_t *r, size_t c, uint64_t base,
                               const coll_gpu_rab_round_t *rd) {
    coll_gpu_prims_t *pr = &r->pr;
    uint64_t step = base + 1 + (uint64_t)rd->index;
    size_t work = r->layout.off_work;

    if (rd->offer) {
        coll_gpu_prims_publish(pr, (uint64_t)c, work + rd->offer_off, rd->offer_len);
        coll_gpu_prims_sync(pr);
        coll_gpu_prims_signal(pr, rd->peer, step, COLL_GPU_PHASE_READY);
    }
    if (rd->take) {
        coll_gpu_prims_wait(pr, rd->peer, step, COLL_GPU_PHASE_READY);
        coll_gpu_prims_fetch(pr, rd->peer, (uint64_t)c, work + rd->take_off,
                             coll_gpu_rab_mine(r, c) +
                                 (rd->reduce ? r->layout.off_land : work + rd->take_off),
                             rd->take_len);
    }
}

/* Its second half: the get completed, reduced into the work (lower index first), CONSUMED. */
static void coll_gpu_rab_finish(coll_gpu_rab_t *r, size_t c, uint64_t base,
                                const coll_gpu_rab_round_t *rd) {
    coll_gpu_prims_t *pr = &r->pr;
    char *at = coll_gpu_rab_mine(r, c) + r->layout.off_work + rd->take_off;
    const char *land = coll_gpu_rab_mine(r, c) + r->layout.off_land;

    if (!rd->take) {
        return;
    }
    coll_gpu_prims_fetch_complete(pr);
    if (rd->reduce) {
        const void *srcs[2] = {rd->theirs_first ? land : at, rd->theirs_first ? at : land};

        coll_gpu_prims_reduce(pr, at, srcs, 2, rd->take_len / pr->call->esize);
        coll_gpu_prims_sync(pr);
    }
    if (rd->consumed) {
        coll_gpu_prims_signal(pr, rd->peer, base + 1 + (uint64_t)rd->index,
                              COLL_GPU_PHASE_CONSUMED);
    }
}

/* The first window of step t (signals at base): chunk t's input into its half, chunk t - 2's
 * results out of the node's owners, READY to the node and the node's. */
static void coll_gpu_rab_window_node(coll_gpu_rab_t *r, uint64_t base, size_t t, bool has_cur,
                                     bool has_out) {
    coll_gpu_prims_t *pr = &r->pr;
    const coll_gpu_native_call_t *call = pr->call;
    size_t esize = call->esize;

    if (has_cur) {
        coll_gpu_rab_chunk_t cur = coll_gpu_rab_chunk(r, t);

        coll_gpu_prims_node_input(pr, coll_gpu_rab_mine(r, t),
                                  (const char *)call->sbuf + cur.first * esize, cur.n, r->m);
    }
    if (has_out) {
        /* chunk t - 2, the same half: each shard's result from its owner, FINAL at the last
         * step's end */
        coll_gpu_rab_chunk_t out = coll_gpu_rab_chunk(r, t - 2);

        coll_gpu_prims_node_shards_out(pr, (uint64_t)t, r->layout.off_work, base - 1, out.first,
                                       out.n, r->m);
    }
    coll_gpu_prims_sync(pr);
    coll_gpu_prims_signal_node(pr, base, COLL_GPU_PHASE_READY);
    coll_gpu_prims_wait_node(pr, base, COLL_GPU_PHASE_READY);
}

/* The second window: an owner reduces its shard of chunk t into its work, once chunk t - 2's
 * readers between nodes said CONSUMED. */
static void coll_gpu_rab_window_reduce(coll_gpu_rab_t *r, size_t t, bool has_cur) {
    coll_gpu_prims_t *pr = &r->pr;
    coll_gpu_rab_plan_t *before = &r->plan[t & 1];
    size_t esize = pr->call->esize, shard_first, shard_len;
    coll_gpu_rab_chunk_t cur;

    if (!has_cur || !r->is_owner) {
        return;
    }
    for (int i = 0; i < before->n; ++i) {
        if (before->round[i].tracked) {
            coll_gpu_prims_wait(pr, before->round[i].peer,
                                before->base + 1 + (uint64_t)before->round[i].index,
                                COLL_GPU_PHASE_CONSUMED);
        }
    }
    before->n = 0;
    cur = coll_gpu_rab_chunk(r, t);
    coll_gpu_native_shard(cur.n, r->m, pr->native->team->local_rank, &shard_first, &shard_len);
    coll_gpu_prims_reduce_node_from(
        pr, coll_gpu_rab_mine(r, t) + r->layout.off_work, (uint64_t)t, shard_first * esize,
        (const char *)pr->call->sbuf + (cur.first + shard_first) * esize, shard_len);
    coll_gpu_prims_sync(pr);
}

bool coll_gpu_allreduce_hierarchical_rabenseifner_fits(const coll_gpu_native_t *native,
                                                       size_t esize) {
    coll_gpu_rab_layout_t layout;

    return coll_gpu_rab_layout(1, native->team->min_local_size, esize, &layout) <= native->half;
}

int coll_gpu_allreduce_hierarchical_rabenseifner(struct ompi_communicator_t *comm,
                                                 const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    coll_gpu_team_t *team = native->team;
    coll_gpu_rab_t r;
    size_t n;

    coll_gpu_prims_init(&r.pr, call);
    r.m = team->min_local_size;
    r.is_owner = (team->local_rank < r.m);
    r.owner = team->node_peers;
    r.fold = coll_gpu_prims_fold(team->nnodes);
    r.vme = r.is_owner ? coll_gpu_prims_fold_virtual(&r.fold, team->node) : -1;
    r.nindices = 2 * r.fold.log2p + ((r.fold.rem > 0) ? 2 : 0);
    r.plan[0].n = r.plan[1].n = 0;

    /* the largest chunk within call->chunk_bytes whose layout fits a scratch half (the row's
     * fits made sure one element does, the same on every rank) */
    n = call->chunk_bytes / call->esize;
    n = (n < call->count) ? n : call->count;
    n = (n > 0) ? n : 1;
    while ((n > 1) && (coll_gpu_rab_layout(n, r.m, call->esize, &r.layout) > native->half)) {
        n -= (n + 7) / 8;
    }
    if (coll_gpu_rab_layout(n, r.m, call->esize, &r.layout) > native->half) {
        return coll_gpu_accel_failed(ACCEL_ERR_INVALID, call->mpi_call, comm); /* every rank */
    }
    r.n = n;
    r.nchunks = (call->count + n - 1) / n;

    /* step t: chunk t - 1's rounds, chunk t's input and node reduce, chunk t - 2's results */
    for (size_t t = 0; (t < r.nchunks + 2) && coll_gpu_prims_linked(&r.pr); ++t) {
        uint64_t base = native->step + 1;
        bool has_cur = (t < r.nchunks), has_net = (t >= 1) && (t - 1 < r.nchunks);
        coll_gpu_rab_plan_t *plan = &r.plan[(t + 1) & 1];

        native->step += (uint64_t)r.nindices + 2; /* READY, the rounds, FINAL */
        plan->n = 0;
        if (has_net) {
            coll_gpu_rab_chunk_t net = coll_gpu_rab_chunk(&r, t - 1);
            size_t shard_first, shard_len;

            coll_gpu_native_shard(net.n, r.m, team->local_rank, &shard_first, &shard_len);
            coll_gpu_rab_plan(&r, shard_len, plan);
            plan->base = base;
        }
        if (0 == plan->n) {
            coll_gpu_rab_window_node(&r, base, t, has_cur, t >= 2);
            coll_gpu_rab_window_reduce(&r, t, has_cur);
        }
        for (int i = 0; i < plan->n; ++i) {
            coll_gpu_rab_start(&r, t - 1, base, &plan->round[i]);
            if (0 == i) {
                coll_gpu_rab_window_node(&r, base, t, has_cur, t >= 2);
            }
            if (plan->n - 1 == i) {
                coll_gpu_rab_window_reduce(&r, t, has_cur);
            }
            coll_gpu_rab_finish(&r, t - 1, base, &plan->round[i]);
        }
        if (has_net && r.is_owner) {
            /* chunk t - 1's result is in the work: the node copies it in the next step */
            coll_gpu_prims_signal_node(&r.pr, base + (uint64_t)r.nindices + 1,
                                       COLL_GPU_PHASE_FINAL);
        }
    }
    return coll_gpu_prims_finish(&r.pr, comm);
}

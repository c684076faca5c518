/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, hierarchical_rabenseifner (large messages across many nodes): per chunk,
 *   1. inside each node a reduce-scatter, as hierarchical's: the chunk is cut into m shards (m
 *      the fewest ranks of any node) and local rank l < m (shard l's owner) reduces shard l of
 *      its node's inputs, in local rank order, into its partial;
 *   2. between nodes Rabenseifner's allreduce of each shard among its owners (local rank l of
 *      every node): with p the largest power of two <= nnodes and rem = nnodes - p, the first
 *      2 rem nodes pair up (the even one's partial is reduced into the odd one's, the even one
 *      sits out); the p others cut the shard into p segments and run log2 p rounds of recursive
 *      halving (round k: partner v ^ (p / 2^(k+1)), each gets the half of the current range it
 *      keeps from the partner and reduces it, lower virtual index first: after the rounds v
 *      holds segment v reduced over the nodes) and log2 p rounds of recursive doubling that
 *      gather the segments (each gets the partner's range); the odd ones hand the result to
 *      the even ones.  Each owner moves about 2 (p - 1) / p x the shard each way in
 *      2 log2 p rounds of one partner (hierarchical: the same bytes, but every owner exchanging
 *      with every other node, twice per chunk);
 *   3. inside each node an allgather: every rank copies each shard's result from its owner.
 *
 * Steps of a chunk, the same on every rank: s0 (the node's inputs; the pairing, or the first
 * halving round), the halving rounds, the gathering rounds (from s_g), the hand-back, FINAL.
 * A chunk starts with the step handshake (coll_gpu_prims_announce: every rank is done with
 * every earlier step), so every half is free at its start; inside the chunk:
 *   - a rank's half of s0 holds its input (read by its node's owners) and an owner's partial;
 *   - halving round at step s: each owner's current range is in its half of s, read by its
 *     partner (a get into the partner's landing area); each reduces into its half of s + 1,
 *     after the member that last read that half of the same parity said CONSUMED;
 *   - gathering: the ranges accumulate in the half of s_g, where the last halving round wrote
 *     the owner's segment: each round gets the partner's range into the same offsets, read by
 *     later partners and by the node: write once, so no CONSUMED (the next chunk's handshake
 *     covers the last readers).
 *
 * Determinism: each segment of a shard is reduced by one owner per round in a fixed order (the
 * pairing: the even node's partial first; halving: the lower virtual index's first), then
 * copied, so every rank gets the same bits, run to run.  Every element goes through the same
 * tree whichever segment holds it (round k pairs v and v ^ p / 2^(k+1) for every v), so the
 * bits depend on the node layout only, not on the chunk, the shards or the memory kind.
 */
#include "coll_gpu_prims.h"

#define COLL_GPU_RAB_ALIGN 64

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

typedef struct {
    coll_gpu_prims_t pr;
    coll_gpu_rab_layout_t layout;
    int m;                      /* shards per chunk */
    bool is_owner;              /* local rank < m: a member of shard local_rank's group */
    const int *owner;           /* nnodes entries: the owner of this rank's shard on each node */
    coll_gpu_prims_fold_t fold; /* the nodes onto a power of two */
    int vme; /* this owner's virtual index among the p, -1: an extra (or not an owner) */
    coll_gpu_prims_readers_t readers; /* of this owner's halves */
} coll_gpu_rab_t;

/* The rank of virtual index v. */
static int coll_gpu_rab_rank(const coll_gpu_rab_t *r, int v) {
    return r->owner[coll_gpu_prims_fold_member(&r->fold, v)];
}

/* Segments [lo, lo + nsegs) of a shard of shard_n elements: first element and count. */
static void coll_gpu_rab_segs(const coll_gpu_rab_t *r, size_t shard_n, int lo, int nsegs,
                              size_t *first_p, size_t *len_p) {
    size_t first, len, last_first, last_len;

    coll_gpu_native_shard(shard_n, r->fold.p, lo, &first, &len);
    coll_gpu_native_shard(shard_n, r->fold.p, lo + nsegs - 1, &last_first, &last_len);
    *first_p = first;
    *len_p = last_first + last_len - first;
}

/* This owner may write its half of step: the partner that last read it said CONSUMED. */
static void coll_gpu_rab_claim(coll_gpu_rab_t *r, uint64_t step) {
    coll_gpu_prims_claim(&r->pr, &r->readers, step);
}

/* Tells peer the len bytes at offset of my half of data_step are there to read (signal of
 * step: the partner's wait). */
static void coll_gpu_rab_offer(coll_gpu_rab_t *r, uint64_t data_step, uint64_t step, size_t offset,
                               size_t len, int peer, bool tracked) {
    coll_gpu_prims_publish(&r->pr, data_step, offset, len);
    coll_gpu_prims_sync(&r->pr);
    if (tracked) {
        coll_gpu_prims_lend(&r->readers, data_step, peer);
    }
    coll_gpu_prims_signal(&r->pr, peer, step, COLL_GPU_PHASE_READY);
}

/* Waits for peer's READY of step and gets len bytes at offset of its half of data_step into
 * dst, completed. */
static void coll_gpu_rab_take(coll_gpu_rab_t *r, uint64_t data_step, uint64_t step, int peer,
                              size_t offset, void *dst, size_t len) {
    coll_gpu_prims_wait(&r->pr, peer, step, COLL_GPU_PHASE_READY);
    coll_gpu_prims_fetch(&r->pr, peer, data_step, offset, dst, len);
    coll_gpu_prims_fetch_complete(&r->pr);
}

/* dst = (theirs op own) when theirs_first, else (own op theirs), n elements; then CONSUMED of
 * step to peer. */
static void coll_gpu_rab_reduce(coll_gpu_rab_t *r, uint64_t step, int peer, void *dst,
                                const void *own, const void *theirs, bool theirs_first, size_t n) {
    const void *srcs[2] = {theirs_first ? theirs : own, theirs_first ? own : theirs};

    coll_gpu_prims_reduce(&r->pr, dst, srcs, 2, n);
    coll_gpu_prims_sync(&r->pr);
    coll_gpu_prims_signal(&r->pr, peer, step, COLL_GPU_PHASE_CONSUMED);
}

/* Step 2 for one chunk: shard_n elements of this owner's shard, its partial in its half of s0
 * at off_work; the result ends in its half of s_g at off_work. */
static void coll_gpu_rab_between_nodes(coll_gpu_rab_t *r, uint64_t s0, uint64_t s_g,
                                       size_t shard_n) {
    coll_gpu_prims_t *pr = &r->pr;
    size_t esize = pr->call->esize, work = r->layout.off_work;
    int me = pr->native->team->node;
    uint64_t step = s0;

    if (r->fold.rem > 0) {
        if (coll_gpu_prims_fold_paired(&r->fold, me) && (me & 1)) {
            /* the extra's partial first, into the half of the first round */
            int extra = r->owner[me - 1];
            char *land = coll_gpu_prims_mine(pr, step) + r->layout.off_land;

            coll_gpu_rab_take(r, step, step, extra, work, land, shard_n * esize);
            coll_gpu_rab_claim(r, step + 1);
            coll_gpu_rab_reduce(r, step, extra, coll_gpu_prims_mine(pr, step + 1) + work,
                                coll_gpu_prims_mine(pr, step) + work, land, true, shard_n);
        } else if (coll_gpu_prims_fold_paired(&r->fold, me)) {
            coll_gpu_rab_offer(r, step, step, work, shard_n * esize, r->owner[me + 1], true);
        } else {
            /* not paired: the partial into the half of the first round */
            coll_gpu_rab_claim(r, step + 1);
            coll_gpu_prims_copy(pr, coll_gpu_prims_mine(pr, step + 1) + work,
                                coll_gpu_prims_mine(pr, step) + work, shard_n * esize);
            coll_gpu_prims_sync(pr);
        }
        ++step;
    }
    /* recursive halving: the range [lo, lo + 2 mask) of segments, lower half kept by the lower
     * virtual index */
    for (int mask = r->fold.p / 2; (mask >= 1) && (r->vme >= 0); mask /= 2, ++step) {
        int v = r->vme, partner = coll_gpu_rab_rank(r, v ^ mask);
        int lo = v & ~(2 * mask - 1), keep = lo + (v & mask), give = lo + ((v ^ mask) & mask);
        size_t keep_first, keep_len, give_first, give_len;
        char *land = coll_gpu_prims_mine(pr, step) + r->layout.off_land;

        coll_gpu_rab_segs(r, shard_n, keep, mask, &keep_first, &keep_len);
        coll_gpu_rab_segs(r, shard_n, give, mask, &give_first, &give_len);
        coll_gpu_rab_offer(r, step, step, work + give_first * esize, give_len * esize, partner,
                           true);
        coll_gpu_rab_take(r, step, step, partner, work + keep_first * esize, land,
                          keep_len * esize);
        coll_gpu_rab_claim(r, step + 1);
        coll_gpu_rab_reduce(r, step, partner,
                            coll_gpu_prims_mine(pr, step + 1) + work + keep_first * esize,
                            coll_gpu_prims_mine(pr, step) + work + keep_first * esize, land,
                            (v ^ mask) < v, keep_len);
    }
    /* recursive doubling of the segments, accumulated in the half of s_g (write once) */
    for (int mask = 1; (mask < r->fold.p) && (r->vme >= 0); mask *= 2, ++step) {
        int v = r->vme, partner = coll_gpu_rab_rank(r, v ^ mask);
        int lo = v & ~(mask - 1), plo = (v ^ mask) & ~(mask - 1);
        size_t mine_first, mine_len, theirs_first, theirs_len;

        coll_gpu_rab_segs(r, shard_n, lo, mask, &mine_first, &mine_len);
        coll_gpu_rab_segs(r, shard_n, plo, mask, &theirs_first, &theirs_len);
        coll_gpu_rab_offer(r, s_g, step, work + mine_first * esize, mine_len * esize, partner,
                           false);
        coll_gpu_rab_take(r, s_g, step, partner, work + theirs_first * esize,
                          coll_gpu_prims_mine(pr, s_g) + work + theirs_first * esize,
                          theirs_len * esize);
    }
    if (r->fold.rem > 0) {
        /* the hand-back (this step is taken by every rank: the callers count it) */
        if (coll_gpu_prims_fold_paired(&r->fold, me) && (me & 1)) {
            coll_gpu_rab_offer(r, s_g, s_g + (uint64_t)r->fold.log2p, work, shard_n * esize,
                               r->owner[me - 1], false);
        } else if (coll_gpu_prims_fold_paired(&r->fold, me)) {
            coll_gpu_rab_claim(r, s_g);
            coll_gpu_rab_take(r, s_g, s_g + (uint64_t)r->fold.log2p, r->owner[me + 1], work,
                              coll_gpu_prims_mine(pr, s_g) + work, shard_n * esize);
        }
    }
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
    const void **srcs = native->srcs;
    size_t esize = call->esize, n;
    coll_gpu_rab_t r;
    uint64_t nsteps;

    coll_gpu_prims_init(&r.pr, call);
    r.m = team->min_local_size;
    r.is_owner = (team->local_rank < r.m);
    r.owner = team->node_peers;
    r.fold = coll_gpu_prims_fold(team->nnodes);
    r.vme = r.is_owner ? coll_gpu_prims_fold_virtual(&r.fold, team->node) : -1;

    /* the largest chunk within call->chunk_bytes whose layout fits a scratch half (the row's
     * fits made sure one element does, the same on every rank) */
    n = call->chunk_bytes / esize;
    n = (n < call->count) ? n : call->count;
    n = (n > 0) ? n : 1;
    while ((n > 1) && (coll_gpu_rab_layout(n, r.m, esize, &r.layout) > native->half)) {
        n -= (n + 7) / 8;
    }
    if (coll_gpu_rab_layout(n, r.m, esize, &r.layout) > native->half) {
        return coll_gpu_accel_failed(ACCEL_ERR_INVALID, call->mpi_call, comm); /* every rank */
    }
    /* a chunk's steps after s0 (the node's inputs, and the pairing or the first halving
     * round): the other halving rounds, the pairing's extra one, the gathering rounds, the
     * hand-back; FINAL's is one more (a step number left unused on the way costs nothing) */
    nsteps = (uint64_t)(2 * r.fold.log2p + ((r.fold.rem > 0) ? 2 : 0) + 1);

    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&r.pr, &c, call->count, n);) {
        const char *in = (const char *)call->sbuf + c.first * esize;
        size_t shard_first = 0, shard_len = 0;
        uint64_t s_g = c.step + (uint64_t)r.fold.log2p + ((r.fold.rem > 0) ? 1 : 0), s_final;

        s_final = c.step + nsteps;
        native->step = s_final;
        coll_gpu_prims_readers_init(&r.readers); /* the handshake below frees every half */

        /* 1. the node's inputs; every rank is done with the steps before (the last chunk's
         * results read) */
        coll_gpu_prims_copy(&r.pr, coll_gpu_prims_mine(&r.pr, c.step), in, c.n * esize);
        coll_gpu_prims_announce(&r.pr, c.step);
        if (r.is_owner) {
            coll_gpu_native_shard(c.n, r.m, team->local_rank, &shard_first, &shard_len);
            for (int l = 0; l < team->local_size; ++l) {
                int q = team->local_ranks[l];

                srcs[l] = ((q == team->rank) ? in : coll_gpu_prims_theirs(&r.pr, q, c.step)) +
                          shard_first * esize;
            }
            coll_gpu_prims_reduce(&r.pr, coll_gpu_prims_mine(&r.pr, c.step) + r.layout.off_work,
                                  srcs, team->local_size, shard_len);
            coll_gpu_prims_sync(&r.pr);
            /* 2. between the nodes */
            if (team->nnodes > 1) {
                coll_gpu_rab_between_nodes(&r, c.step, s_g, shard_len);
            }
        }
        /* 3. each shard's result from its owner's half of s_g */
        if (r.is_owner) {
            coll_gpu_prims_signal_node(&r.pr, s_final, COLL_GPU_PHASE_FINAL);
        }
        for (int l = 0; l < r.m; ++l) {
            int q = team->local_ranks[l];
            size_t first, len;

            if (q != team->rank) {
                coll_gpu_prims_wait(&r.pr, q, s_final, COLL_GPU_PHASE_FINAL);
            }
            coll_gpu_native_shard(c.n, r.m, l, &first, &len);
            coll_gpu_prims_copy(&r.pr, (char *)call->rbuf + (c.first + first) * esize,
                                ((q == team->rank) ? coll_gpu_prims_mine(&r.pr, s_g)
                                                   : coll_gpu_prims_theirs(&r.pr, q, s_g)) +
                                    r.layout.off_work,
                                len * esize);
        }
        coll_gpu_prims_sync(&r.pr);
    }
    return coll_gpu_prims_finish(&r.pr, comm);
}

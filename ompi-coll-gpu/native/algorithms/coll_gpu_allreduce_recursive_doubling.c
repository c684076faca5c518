/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, recursive doubling among every rank (small messages: log2(n) signal rounds with
 * one partner each, where one_shot waits on every peer and the ring takes 2 (n - 1) steps);
 * the doubling itself (coll_gpu_doubling_chunk, here) also runs between node leaders in
 * hierarchical_doubling.  The message is cut into steps of a scratch half (of half a half across
 * nodes: a partner on another node is fetched into the landing area, the upper half of this
 * rank's half of the step, which no peer reads).  The halves of earlier calls are free, their
 * last step (coll_gpu_native_finish's agreement) having been announced by every peer.
 *
 * Across nodes, where nodes have one rank each: log2(p) inter-node rounds (+ 2 with extras).
 *
 * An accelerator error skips the copies and reductions, never the signals; every rank returns
 * it at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_doubling.h"

/* The rank of member i. */
static int coll_gpu_doubling_rank(const coll_gpu_doubling_t *d, int i) {
    return d->leaders ? coll_gpu_team_node_rank(d->pr->native->team, i, 0) : i;
}

void coll_gpu_doubling_init(coll_gpu_doubling_t *d, coll_gpu_prims_t *pr, bool leaders,
                            size_t landing) {
    const coll_gpu_team_t *team = pr->native->team;

    d->pr = pr;
    d->leaders = leaders;
    d->members = leaders ? team->nnodes : team->size;
    if (!leaders) {
        d->me = team->rank;
    } else {
        d->me = (0 == team->local_rank) ? team->node : -1;
    }
    d->landing = landing;
    coll_gpu_prims_readers_init(&d->readers);
}

/* My partial of step into my half of step, once that half's last reader is done with it
 * (nothing to copy where a reduction already wrote it there). */
static void coll_gpu_doubling_put(coll_gpu_doubling_t *d, uint64_t step, const char *partial,
                                  size_t len) {
    coll_gpu_prims_t *pr = d->pr;
    char *half = coll_gpu_prims_mine(pr, step);

    coll_gpu_doubling_claim(d, step);
    if (partial != half) {
        coll_gpu_prims_copy(pr, half, partial, len);
        coll_gpu_prims_sync(pr);
    }
}

/* Tells peer my partial of step (len bytes, in my half, complete) is there to read. */
static void coll_gpu_doubling_publish(coll_gpu_doubling_t *d, uint64_t step, size_t len, int peer) {
    coll_gpu_prims_t *pr = d->pr;

    if (!coll_gpu_native_is_local(pr->native, peer)) {
        coll_gpu_prims_publish(pr, step, 0, len);
        coll_gpu_prims_sync(pr); /* landed before peer is told */
    }
    coll_gpu_prims_lend(&d->readers, step, peer);
    coll_gpu_prims_signal(pr, peer, step, COLL_GPU_PHASE_READY);
}

/* Waits for peer's half of step and reads it: dst = (peer's op own) when theirs_first, else
 * (own op peer's); a copy of peer's when own is NULL.  Then tells peer its half is free. */
static void coll_gpu_doubling_read(coll_gpu_doubling_t *d, uint64_t step, int peer, char *dst,
                                   const void *own, bool theirs_first, size_t n) {
    coll_gpu_prims_t *pr = d->pr;
    size_t bytes = n * pr->call->esize;
    const char *theirs;

    coll_gpu_prims_wait(pr, peer, step, COLL_GPU_PHASE_READY);
    if (coll_gpu_native_is_local(pr->native, peer)) {
        theirs = coll_gpu_prims_theirs(pr, peer, step);
    } else {
        theirs = coll_gpu_prims_mine(pr, step) + d->landing;
        coll_gpu_prims_fetch(pr, peer, step, 0, (char *)theirs, bytes);
        coll_gpu_prims_fetch_complete(pr);
    }
    if (NULL != own) {
        const void *srcs[2] = {theirs_first ? (const void *)theirs : own,
                               theirs_first ? own : (const void *)theirs};
        coll_gpu_prims_reduce(pr, dst, srcs, 2, n);
    } else {
        coll_gpu_prims_copy(pr, dst, theirs, bytes);
    }
    coll_gpu_prims_sync(pr);
    coll_gpu_prims_signal(pr, peer, step, COLL_GPU_PHASE_CONSUMED);
}

/* Where a reduction of the step before next writes: my half of next, the partial it publishes
 * (claimed: its last reader is done), so no copy goes between rounds; out after the last round
 * (next 0). */
static char *coll_gpu_doubling_target(coll_gpu_doubling_t *d, uint64_t next, char *out) {
    if (0 == next) {
        return out;
    }
    coll_gpu_doubling_claim(d, next);
    return coll_gpu_prims_mine(d->pr, next);
}

void coll_gpu_doubling_chunk(coll_gpu_doubling_t *d, uint64_t first_step, const char *in, char *out,
                             size_t n) {
    coll_gpu_prims_t *pr = d->pr;
    coll_gpu_prims_fold_t f = coll_gpu_prims_fold(d->members);
    int log2p = f.log2p, rem = f.rem, me = d->me;
    /* the extras sit the rounds out */
    int vme = coll_gpu_prims_fold_virtual(&f, me);
    bool paired = coll_gpu_prims_fold_paired(&f, me);
    size_t bytes = n * pr->call->esize;
    const char *partial = in;
    uint64_t base, round0;

    /* the steps, consecutive on every rank: the pairing, the rounds, the hand-back (first_step,
     * when given, is the one just taken) */
    base = (0 != first_step) ? first_step : pr->native->step + 1;
    round0 = base + ((rem > 0) ? 1 : 0);
    if (log2p > 0) {
        pr->native->step = round0 + (uint64_t)log2p + ((rem > 0) ? 1 : 0) - 1;
    }

    if (paired) {
        if (me & 1) {
            /* the first round's partial, straight into the half it is published from */
            partial = coll_gpu_doubling_target(d, round0, out);
            coll_gpu_doubling_read(d, base, coll_gpu_doubling_rank(d, me - 1), (char *)partial, in,
                                   true, n);
        } else {
            coll_gpu_doubling_put(d, base, in, bytes);
            coll_gpu_doubling_publish(d, base, bytes, coll_gpu_doubling_rank(d, me + 1));
        }
    }
    for (int k = 0; (k < log2p) && (vme >= 0); ++k) {
        int vpartner = vme ^ (1 << k);
        int partner = coll_gpu_doubling_rank(d, coll_gpu_prims_fold_member(&f, vpartner));
        uint64_t step = round0 + (uint64_t)k;
        char *dst;

        coll_gpu_doubling_put(d, step, partial, bytes);
        coll_gpu_doubling_publish(d, step, bytes, partner);
        dst = coll_gpu_doubling_target(d, (k + 1 < log2p) ? step + 1 : 0, out);
        coll_gpu_doubling_read(d, step, partner, dst, coll_gpu_prims_mine(pr, step), vpartner < vme,
                               n);
        partial = dst;
    }
    if (paired) {
        uint64_t step = pr->native->step;

        if (me & 1) {
            coll_gpu_doubling_put(d, step, out, bytes);
            coll_gpu_doubling_publish(d, step, bytes, coll_gpu_doubling_rank(d, me - 1));
        } else {
            coll_gpu_doubling_read(d, step, coll_gpu_doubling_rank(d, me + 1), out, NULL, false, n);
        }
    }
    if ((me >= 0) && (1 == d->members) && (in != out)) {
        coll_gpu_prims_copy(pr, out, in, bytes);
    }
}

int coll_gpu_allreduce_recursive_doubling(struct ompi_communicator_t *comm,
                                          const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    size_t esize = call->esize;
    size_t limit = native->half / esize; /* elements per step */
    coll_gpu_prims_t pr;
    coll_gpu_doubling_t d;

    coll_gpu_prims_init(&pr, call);
    if (native->team->nnodes > 1) {
        limit /= 2;
    }
    coll_gpu_doubling_init(&d, &pr, false, (native->team->nnodes > 1) ? limit * esize : 0);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, limit);) {
        size_t offset = c.first * esize;

        coll_gpu_doubling_chunk(&d, c.step, (const char *)call->sbuf + offset,
                                (char *)call->rbuf + offset, c.n);
    }
    return coll_gpu_prims_finish(&pr, comm);
}

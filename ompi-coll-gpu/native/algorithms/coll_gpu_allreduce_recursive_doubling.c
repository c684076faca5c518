/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, recursive doubling (small messages: log2(n) signal rounds with one peer each,
 * where one_shot waits on every peer and the ring takes 2 (n - 1) steps).  The message is cut
 * into steps of a scratch half (of half a half across nodes: a partner on another node is
 * fetched into the landing area, the upper half of this rank's half of the step, which no
 * peer reads).  With p the largest power of two <= n and rem = n - p, the ranks below 2 rem pair up
 * first: each even one (an extra) puts its input in its half and its odd neighbour reduces the
 * two; the p remaining ranks (virtual rank v: r / 2 below 2 rem, r - rem above) then run
 * log2(p) rounds, round k with partner v ^ 2^k: each puts its partial in its half, both reduce
 * the two halves, lower virtual rank first; at last each odd rank below 2 rem hands the result
 * to its extra.  One native step per round (and one for the pairing, one for the hand-back),
 * taken by every rank alike.
 *
 * Synchronization, partners only (values 4 * step + phase, monotone per pair of ranks):
 * READY(s) to the partner: my partial of step s is in my half of s; CONSUMED(s) to the
 * partner: I finished reading its half of s.  A rank writes its half of step s only after the
 * rank that read its half of the same parity last (step s - 2 or earlier in this call) sent
 * CONSUMED; the halves of earlier calls are free, their last step (coll_gpu_native_finish's
 * agreement) having been announced by every peer.
 *
 * Determinism: every pair computes lower op higher, so partners hold the same bits, and by
 * induction every rank ends with the same bits, from run to run for the same communicator,
 * count, type and op; they differ from one_shot's on floating point.
 *
 * Across nodes each round is one signal each way and one fetch (a get) per rank: log2(p)
 * inter-node rounds (+ 2 with extras) where nodes have one rank each.
 *
 * An accelerator error skips the copies and reductions, never the signals; every rank returns
 * it at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_prims.h"

typedef struct {
    coll_gpu_prims_t pr;
    size_t landing;        /* offset of the landing area in a half (0: every peer is local) */
    int reader[2];         /* the rank that last read my half of each parity, -1: none */
    uint64_t read_step[2]; /* and the step it read */
} coll_gpu_rd_t;

/* Puts len bytes of partial in my half of step for peer, once that half's last reader is done
 * with it, and tells peer. */
static void coll_gpu_rd_publish(coll_gpu_rd_t *rd, uint64_t step, const char *partial, size_t len,
                                int peer) {
    int parity = (int)(step & 1);

    if (rd->reader[parity] >= 0) {
        coll_gpu_prims_wait(&rd->pr, rd->reader[parity], rd->read_step[parity],
                            COLL_GPU_PHASE_CONSUMED);
    }
    coll_gpu_prims_copy(&rd->pr, coll_gpu_prims_mine(&rd->pr, step), partial, len);
    if (!coll_gpu_native_is_local(rd->pr.native, peer)) {
        coll_gpu_prims_publish(&rd->pr, step, 0, len);
    }
    coll_gpu_prims_sync(&rd->pr); /* landed before peer is told */
    rd->reader[parity] = peer;
    rd->read_step[parity] = step;
    coll_gpu_prims_signal(&rd->pr, peer, step, COLL_GPU_PHASE_READY);
}

/* Waits for peer's half of step and reads it: dst = (peer's op own) when theirs_first, else
 * (own op peer's); a copy of peer's when own is NULL.  Then tells peer its half is free. */
static void coll_gpu_rd_read(coll_gpu_rd_t *rd, uint64_t step, int peer, char *dst,
                             const void *own, bool theirs_first, size_t n) {
    coll_gpu_prims_t *pr = &rd->pr;
    size_t bytes = n * pr->call->esize;
    const char *theirs;

    coll_gpu_prims_wait(pr, peer, step, COLL_GPU_PHASE_READY);
    if (coll_gpu_native_is_local(pr->native, peer)) {
        theirs = coll_gpu_prims_theirs(pr, peer, step);
    } else {
        theirs = coll_gpu_prims_mine(pr, step) + rd->landing;
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

int coll_gpu_allreduce_recursive_doubling(struct ompi_communicator_t *comm,
                                          const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    int size = native->team->size, rank = native->team->rank, p = 1, rem, vrank;
    size_t esize = call->esize;
    coll_gpu_rd_t rd = {.reader = {-1, -1}};
    coll_gpu_prims_t *pr = &rd.pr;
    size_t limit = native->half / esize; /* elements per step */

    coll_gpu_prims_init(pr, call);
    if (native->team->nnodes > 1) {
        limit /= 2;
        rd.landing = limit * esize;
    }
    while (2 * p <= size) {
        p *= 2;
    }
    rem = size - p;
    /* the extras (even ranks below 2 rem) sit the rounds out */
    vrank = (rank < 2 * rem) ? ((rank & 1) ? rank / 2 : -1) : rank - rem;

    for (coll_gpu_prims_chunk_t c = {0};
         coll_gpu_prims_next(pr, &c, call->count, limit);) {
        size_t bytes = c.n * esize, offset = c.first * esize;
        const char *in = (const char *)call->sbuf + offset, *partial = in;
        char *out = (char *)call->rbuf + offset;
        uint64_t step = c.step; /* the pairing's, when there are extras */

        if ((rem > 0) && (rank < 2 * rem)) {
            if (rank & 1) {
                coll_gpu_rd_read(&rd, step, rank - 1, out, in, true, c.n);
            } else {
                coll_gpu_rd_publish(&rd, step, in, bytes, rank + 1);
            }
            partial = out;
        }
        for (int mask = 1; mask < p; mask <<= 1) {
            int vpartner = vrank ^ mask, partner;

            step = (0 == rem && 1 == mask) ? c.step : ++native->step;
            if (vrank < 0) {
                continue;
            }
            partner = (vpartner < rem) ? 2 * vpartner + 1 : vpartner + rem;
            coll_gpu_rd_publish(&rd, step, partial, bytes, partner);
            coll_gpu_rd_read(&rd, step, partner, out, coll_gpu_prims_mine(pr, step),
                             vpartner < vrank, c.n);
            partial = out;
        }
        if (rem > 0) {
            step = ++native->step;
            if ((rank < 2 * rem) && (rank & 1)) {
                coll_gpu_rd_publish(&rd, step, out, bytes, rank - 1);
            } else if (rank < 2 * rem) {
                coll_gpu_rd_read(&rd, step, rank + 1, out, NULL, false, c.n);
            }
        }
        if (1 == size) {
            coll_gpu_prims_copy(pr, out, in, (in != out) ? bytes : 0);
        }
    }
    return coll_gpu_prims_finish(pr, comm);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Recursive doubling of one chunk among a group of ranks: every rank of the communicator
 * (recursive_doubling) or the node leaders, node j's first rank (hierarchical_doubling).  With
 * p the largest power of two <= the group's size and rem = size - p, the members below 2 rem
 * pair up first: each even one (an extra) puts its partial in its half and its odd neighbour
 * reduces the two; the p remaining members (virtual index v: i / 2 below 2 rem, i - rem above)
 * then run log2(p) rounds, round k with partner v ^ 2^k: each puts its partial in its half,
 * both reduce the two, lower virtual index first; at last each odd member below 2 rem hands the
 * result to its extra.  One native step per round (and one for the pairing, one for the
 * hand-back), taken by every rank of the communicator alike, members or not.
 *
 * Synchronization between partners only (values 4 * step + phase, monotone per pair): READY(s):
 * my partial of step s is in my half of s; CONSUMED(s): I finished reading the partner's half
 * of s.  A member writes its half of step s only after the member that last read its half of
 * the same parity sent CONSUMED (coll_gpu_doubling_claim).
 *
 * Determinism: every pair computes lower op higher, so partners hold the same bits, and by
 * induction every member ends with the same bits, from run to run for the same group, count,
 * type and op.  Across nodes each round is one signal each way and one get per member.
 */
#ifndef COLL_GPU_DOUBLING_H
#define COLL_GPU_DOUBLING_H

#include "coll_gpu_prims.h"

BEGIN_C_DECLS

typedef struct {
    coll_gpu_prims_t *pr;
    bool leaders;   /* the group: member j is node j's first rank; else rank j */
    int members;    /* the group's size */
    int me;         /* this rank's member index, -1: not in the group */
    size_t landing; /* offset in a half where a partner's partial is fetched, when it is on
                     * another node (no peer reads there); 0: every partner is local */
    coll_gpu_prims_readers_t readers; /* of this member's halves */
} coll_gpu_doubling_t;

/* The group of every rank (leaders false) or of the node leaders; landing as above. */
void coll_gpu_doubling_init(coll_gpu_doubling_t *d, coll_gpu_prims_t *pr, bool leaders,
                            size_t landing);

/* out = the group's in (n elements each) reduced, on every member (in may be out); steps: the
 * pairing's or first round's is first_step, or a new one when first_step is 0, the others new.
 * A rank outside the group takes the same steps and does nothing else. */
void coll_gpu_doubling_chunk(coll_gpu_doubling_t *d, uint64_t first_step, const char *in, char *out,
                             size_t n);

/* This member may write its half of step: the group member that last read that half is done
 * with it; the half is then left to readers outside the group (who must be done before this
 * member's next claim of it: the caller's protocol). */
static inline void coll_gpu_doubling_claim(coll_gpu_doubling_t *d, uint64_t step) {
    coll_gpu_prims_claim(d->pr, &d->readers, step);
}

END_C_DECLS

#endif /* COLL_GPU_DOUBLING_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Recursive doubling of one chunk among a group of ranks: every rank of the communicator
 * (recursive_doubling) or the node leaders (hierarchical_doubling); extras beyond the largest
 * power of two pair up first and get the result back.  One native step per round, taken by every
 * rank alike; READY and CONSUMED between partners only, a member writing its half only after its
 * last reader's CONSUMED (coll_gpu_doubling_claim).  Every pair computes lower op higher, so every
 * member ends with the same bits.  docs/allreduce.md.
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

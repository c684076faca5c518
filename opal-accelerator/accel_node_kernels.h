/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collective kernels of a node (accel.h: accel_node_plan_t, the protocol and the area's
 * layout), written once: cuda/accel_cuda_reduce.h compiles them for the GPU, accel_emulated.c
 * for the emulated device, on accel_kernel_port.h.  The includer provides the two block-wide
 * data primitives (all of a block's threads call them):
 *
 *   ak_copy(dst, src, bytes, from_peer)   bytes from src to dst (from_peer: src is memory
 *                                          another device wrote)
 *   AK_FOLD(fold, dst, bases, n, off, count)
 *                                          dst[i] = base_0[i] op ... op base_{n-1}[i] for the
 *                                          count elements at off bytes into every bases[k], in
 *                                          rank order (dst may be one of them, at the same i)
 *
 * and AK_TEMPLATE / AK_FOLD_PARAM: how a kernel body is given its (op, type) (a template
 * parameter on the GPU, a value on the host).
 */
#ifndef ACCEL_NODE_KERNELS_H
#define ACCEL_NODE_KERNELS_H

#include "accel_internal.h"
#include "accel_kernel_port.h"

/* Lane l's next step: its number, counter[l] + 1, the same in every thread and (every step
 * advancing every lane) in every lane; lane 0 advances the lanes the launch has no block for. */
AK_FN uint32_t ak_node_enter(const accel_node_args_t *a, int l, int lanes) {
    AK_SHARED uint32_t step;

    if (AK_THREAD == 0) {
        char *mine = a->areas[a->rank];

        /* only this rank's kernels, in stream order, write them */
        step = *accel_node_counter(mine, a->nranks, l) + 1;
        for (int k = (l == 0) ? lanes : ACCEL_NODE_LANES; k < ACCEL_NODE_LANES; ++k) {
            ak_store_release(accel_node_counter(mine, a->nranks, k), step);
        }
        ak_store_release(accel_node_counter(mine, a->nranks, l), step);
    }
    ak_sync();
    return step;
}

/* Flag `which` of lane l (and lane 0: of the lanes without a block) = s at every peer. */
AK_FN void ak_node_tell(const accel_node_args_t *a, int l, int lanes, accel_node_flag_t which,
                        uint32_t s) {
    for (int p = AK_THREAD; p < a->nranks; p += AK_THREADS) {
        if (p == a->rank) {
            continue;
        }
        ak_fence();
        ak_store_release(accel_node_flag(a->areas[p], a->nranks, l, which, a->rank), s);
        for (int k = (l == 0) ? lanes : ACCEL_NODE_LANES; k < ACCEL_NODE_LANES; ++k) {
            ak_store_release(accel_node_flag(a->areas[p], a->nranks, k, which, a->rank), s);
        }
    }
}

/* Everything the block wrote before, then flag `which` of step s told to every peer and theirs
 * waited for: after it, every thread of the block may read what the peers wrote before theirs. */
AK_FN void ak_node_exchange(const accel_node_args_t *a, int l, int lanes, accel_node_flag_t which,
                            uint32_t s) {
    ak_sync();
    ak_node_tell(a, l, lanes, which, s);
    for (int p = AK_THREAD; p < a->nranks; p += AK_THREADS) {
        if (p != a->rank) {
            ak_wait(accel_node_flag(a->areas[a->rank], a->nranks, l, which, p), s);
        }
    }
    ak_sync();
}

/* The block's reads of the peers' halves of step s are over: their done flags. */
AK_FN void ak_node_leave(const accel_node_args_t *a, int l, int lanes, uint32_t s) {
    ak_sync();
    ak_node_tell(a, l, lanes, ACCEL_NODE_DONE, s);
}

/* Bytes from an area's start to lane l's window in the half of step s. */
AK_FN size_t ak_node_lane_off(const accel_node_args_t *a, uint32_t s, int l) {
    return accel_node_head_bytes(a->nranks) + (size_t)(s & 1) * a->half +
           (size_t)l * accel_node_lane_window(a->half);
}

/* One-shot, lane l of lanes: the lane's slice into its window of this rank's half, ready, the
 * fold of every rank's window into dst, done. */
AK_TEMPLATE
AK_FN void ak_node_one_shot(const accel_node_args_t *a, int l, int lanes, AK_FOLD_PARAM fold) {
    const uint32_t s = ak_node_enter(a, l, lanes);
    const size_t off = ak_node_lane_off(a, s, l), size = a->size;
    size_t lo, hi;

    accel_node_slice(a->count, lanes, l, &lo, &hi);
    if (a->src != NULL) {
        ak_copy(a->areas[a->rank] + off, a->src + lo * size, (hi - lo) * size, false);
    }
    ak_node_exchange(a, l, lanes, ACCEL_NODE_READY, s);
    if ((a->src != NULL) && (hi > lo)) {
        AK_FOLD(fold, a->dst + lo * size, a->areas, a->nranks, off, hi - lo);
    }
    ak_node_leave(a, l, lanes, s);
}

/* Every other kind in one node, lane l (of ACCEL_NODE_LANES), step after step of
 * accel_node_per_step() elements: the lane's slice of the step's input into its window of this
 * rank's half (reduce-scatter: the slice of every rank's block, one after another; bcast: the
 * root's only), ready, then what the kind reads of the windows, done.  Two-shot: this rank's
 * part of the slice folded from every rank's window into its own, reduced, every rank's part
 * copied into dst (a part is folded by one rank and read by all: each element combined once, in
 * rank order). */
AK_TEMPLATE
AK_FN void ak_node_stepped(const accel_node_args_t *a, int l, AK_FOLD_PARAM fold) {
    const accel_node_kind_t kind = (accel_node_kind_t)a->kind;
    const size_t size = a->size, per = accel_node_per_step(kind, size, a->half, a->nranks, 1);
    const size_t steps = accel_node_steps(kind, a->count, size, a->half, a->nranks, 1);
    const size_t block = per / ACCEL_NODE_LANES; /* reduce-scatter: a rank's block's slice */
    const bool data = (a->src != NULL);
    char *const mine = a->areas[a->rank];

    for (size_t k = 0; k < steps; ++k) {
        const uint32_t s = ak_node_enter(a, l, ACCEL_NODE_LANES);
        const size_t off = ak_node_lane_off(a, s, l), first = k * per;
        const size_t n = accel_node_step_elems(a->count, per, k);
        size_t lo, hi, plo, phi;

        accel_node_slice(n, ACCEL_NODE_LANES, l, &lo, &hi);
        if (data && (kind == ACCEL_NODE_REDUCE_SCATTER)) {
            for (int p = 0; p < a->nranks; ++p) {
                ak_copy(mine + off + (size_t)p * block * size,
                        a->src + ((size_t)p * a->count + first + lo) * size, (hi - lo) * size,
                        false);
            }
        } else if (data && ((kind != ACCEL_NODE_BCAST) || (a->rank == a->root))) {
            ak_copy(mine + off, a->src + (first + lo) * size, (hi - lo) * size, false);
        }
        ak_node_exchange(a, l, ACCEL_NODE_LANES, ACCEL_NODE_READY, s);
        if (kind == ACCEL_NODE_ALLREDUCE_TWO_SHOT) {
            accel_node_slice(hi - lo, a->nranks, a->rank, &plo, &phi);
            if (data && (phi > plo)) {
                AK_FOLD(fold, mine + off + plo * size, a->areas, a->nranks, off + plo * size,
                        phi - plo);
            }
            ak_node_exchange(a, l, ACCEL_NODE_LANES, ACCEL_NODE_REDUCED, s);
        }
        if (data && (hi > lo)) {
            switch (kind) {
            case ACCEL_NODE_ALLREDUCE_TWO_SHOT:
                for (int p = 0; p < a->nranks; ++p) {
                    accel_node_slice(hi - lo, a->nranks, p, &plo, &phi);
                    ak_copy(a->dst + (first + lo + plo) * size, a->areas[p] + off + plo * size,
                            (phi - plo) * size, p != a->rank);
                }
                break;
            case ACCEL_NODE_REDUCE_SCATTER:
                AK_FOLD(fold, a->dst + (first + lo) * size, a->areas, a->nranks,
                        off + (size_t)a->rank * block * size, hi - lo);
                break;
            case ACCEL_NODE_ALLGATHER:
                for (int p = 0; p < a->nranks; ++p) {
                    ak_copy(a->dst + ((size_t)p * a->count + first + lo) * size, a->areas[p] + off,
                            (hi - lo) * size, p != a->rank);
                }
                break;
            case ACCEL_NODE_BCAST:
                if (a->rank != a->root) {
                    ak_copy(a->dst + (first + lo) * size, a->areas[a->root] + off, (hi - lo) * size,
                            true);
                }
                break;
            case ACCEL_NODE_REDUCE:
                if (a->rank == a->root) {
                    AK_FOLD(fold, a->dst + (first + lo) * size, a->areas, a->nranks, off, hi - lo);
                }
                break;
            default:
                break;
            }
        }
        ak_node_leave(a, l, ACCEL_NODE_LANES, s);
    }
}

/* The peers' reads of this rank's half of step s (their copies out of it) are over. */
AK_FN void ak_node_wait_done(const accel_node_args_t *a, int l, uint32_t s) {
    for (int p = AK_THREAD; p < a->nranks; p += AK_THREADS) {
        if (p != a->rank) {
            ak_wait(accel_node_done(a->areas[a->rank], a->nranks, l, p), s);
        }
    }
    ak_sync();
}

/* Across nodes (accel.h, accel_node_plan_t): a part's window in a lane's, and a step's
 * elements. */
typedef struct {
    size_t window, per;
} ak_node_hier_t;

/* Step s (the call's k-th) into the network: the lane's share of every rank's part of the step
 * into this rank's half, ready; its share of this rank's part folded from the node's halves,
 * into the stage; handed to the host's proxy. */
AK_TEMPLATE
AK_FN void ak_node_hier_in(const accel_node_args_t *a, const ak_node_hier_t *h, int l, size_t k,
                           uint32_t s, AK_FOLD_PARAM fold) {
    const size_t size = a->size, per_lane = h->window / size, first = k * h->per;
    const size_t off = ak_node_lane_off(a, s, l), n = accel_node_step_elems(a->count, h->per, k);
    const size_t my = off + (size_t)a->rank * h->window;
    char *const mine = a->areas[a->rank];
    size_t at, len;

    for (int p = 0; (a->src != NULL) && (p < a->nranks); ++p) {
        accel_node_share(n, per_lane, p, l, &at, &len);
        ak_copy(mine + off + (size_t)p * h->window, a->src + (first + at) * size, len * size,
                false);
    }
    ak_node_exchange(a, l, ACCEL_NODE_LANES, ACCEL_NODE_READY, s);
    accel_node_share(n, per_lane, a->rank, l, &at, &len);
    if ((a->src != NULL) && (len > 0)) {
        if (a->nranks > 1) {
            AK_FOLD(fold, mine + my, a->areas, a->nranks, my, len);
            ak_sync();
        }
        ak_copy(a->stage + accel_node_stage_off(h->window, a->nnodes, s, a->node, l), mine + my,
                len * size, false);
    }
    /* to the proxy, whose puts read the slot */
    ak_sync();
    if (AK_THREAD == 0) {
        ak_fence();
        ak_store_release(&accel_node_proxy(a->stage)[l], s);
    }
}

/* Step s (the call's k-th) out of the network: the proxy's word that the other nodes' shares
 * are in their slots; folded from the nodes' slots in node order, reduced; every rank's share
 * copied from that rank's half into dst, done. */
AK_TEMPLATE
AK_FN void ak_node_hier_out(const accel_node_args_t *a, const ak_node_hier_t *h, int l, size_t k,
                            uint32_t s, AK_FOLD_PARAM fold) {
    const size_t size = a->size, per_lane = h->window / size, first = k * h->per;
    const size_t off = ak_node_lane_off(a, s, l), n = accel_node_step_elems(a->count, h->per, k);
    char *const mine = a->areas[a->rank] + off + (size_t)a->rank * h->window;
    char *slots[ACCEL_NODE_MAX_NODES];
    size_t at, len;

    if (AK_THREAD == 0) {
        ak_wait(&accel_node_proxy(a->stage)[ACCEL_NODE_LANES + l], s);
    }
    ak_sync();
    accel_node_share(n, per_lane, a->rank, l, &at, &len);
    if ((a->src != NULL) && (len > 0)) {
        for (int j = 0; j < a->nnodes; ++j) {
            slots[j] = (j == a->node)
                           ? mine
                           : a->stage + accel_node_stage_off(h->window, a->nnodes, s, j, l);
        }
        AK_FOLD(fold, mine, slots, a->nnodes, 0, len);
    }
    ak_node_exchange(a, l, ACCEL_NODE_LANES, ACCEL_NODE_REDUCED, s);
    for (int p = 0; (a->src != NULL) && (p < a->nranks); ++p) {
        accel_node_share(n, per_lane, p, l, &at, &len);
        ak_copy(a->dst + (first + at) * size, a->areas[p] + off + (size_t)p * h->window, len * size,
                p != a->rank);
    }
    ak_node_leave(a, l, ACCEL_NODE_LANES, s);
}

/* Across nodes, lane l (of ACCEL_NODE_LANES), step after step, two in flight (accel.h): step
 * s into the network once the peers are done with step s - 2 (the same half), then step s - 1
 * out of it. */
AK_TEMPLATE
AK_FN void ak_node_hierarchical(const accel_node_args_t *a, int l, AK_FOLD_PARAM fold) {
    const accel_node_kind_t kind = ACCEL_NODE_ALLREDUCE_HIERARCHICAL;
    const size_t window = accel_node_window(a->half, a->nranks, a->nnodes);
    const ak_node_hier_t h = {window,
                              accel_node_per_step(kind, a->size, a->half, a->nranks, a->nnodes)};
    const size_t steps = accel_node_steps(kind, a->count, a->size, a->half, a->nranks, a->nnodes);
    uint32_t s = 0;

    for (size_t k = 0; k < steps; ++k) {
        s = ak_node_enter(a, l, ACCEL_NODE_LANES);
        ak_node_wait_done(a, l, s - 2);
        ak_node_hier_in(a, &h, l, k, s, fold);
        if (k > 0) {
            ak_node_hier_out(a, &h, l, k - 1, s - 1, fold);
        }
    }
    ak_node_hier_out(a, &h, l, steps - 1, s, fold);
}

/* Block l of a launch of lanes blocks. */
AK_TEMPLATE
AK_FN void ak_node_collective(const accel_node_args_t *a, int l, int lanes, AK_FOLD_PARAM fold) {
    switch ((accel_node_kind_t)a->kind) {
    case ACCEL_NODE_ALLREDUCE_ONE_SHOT:
        ak_node_one_shot(a, l, lanes, fold);
        break;
    case ACCEL_NODE_ALLREDUCE_HIERARCHICAL:
        ak_node_hierarchical(a, l, fold);
        break;
    default:
        ak_node_stepped(a, l, fold);
        break;
    }
}

#endif /* ACCEL_NODE_KERNELS_H */

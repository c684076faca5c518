/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The primitives the native algorithms are written in: one algorithm's run of a call
 * (coll_gpu_prims_t) with sticky errors, the step iterator over a message's chunks, and the
 * data and signal operations of a step.  An algorithm body is then the algorithm: what it
 * copies, reduces, publishes, fetches and whom it signals or waits for, step by step, with no
 * error handling of its own and nothing of the transport.
 *
 * The rules the sticky errors keep (docs/failure-model.md):
 *  - an accelerator error (or an error the call started with, entry_status) stops the data:
 *    no more copies, reductions, fetches; every signal and wait still runs, so peers finish;
 *  - a transport error stops everything: the chunk loop ends, coll_gpu_prims_finish reports it.
 * coll_gpu_prims_finish ends every algorithm: the outcome agreed by every rank, or the
 * transport's failure.
 *
 * Designed to become the nonblocking state machines' steps: every operation is a step's
 * action on the context, none keeps state on the C stack between steps but the chunk.
 */
#ifndef COLL_GPU_PRIMS_H
#define COLL_GPU_PRIMS_H

#include "coll_gpu_fold.h"
#include "coll_gpu_native_agree.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_mem.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_run.h"

BEGIN_C_DECLS

typedef struct {
    const coll_gpu_native_call_t *call;
    coll_gpu_native_t *native;
    coll_gpu_native_kind_t kind;
    cgt_status_t status;    /* the first transport error */
    accel_status_t astatus; /* the first accelerator error, or the call's entry_status */
} coll_gpu_prims_t;

static inline void coll_gpu_prims_init(coll_gpu_prims_t *pr, const coll_gpu_native_call_t *call) {
    pr->call = call;
    pr->native = call->native;
    pr->kind = call->kind;
    pr->status = CGT_OK;
    pr->astatus = call->entry_status;
}

/* Whether the transport still works (signals, waits). */
static inline bool coll_gpu_prims_linked(const coll_gpu_prims_t *pr) {
    return CGT_OK == pr->status;
}
/* Whether data may still move (no error of either kind). */
static inline bool coll_gpu_prims_moving(const coll_gpu_prims_t *pr) {
    return (CGT_OK == pr->status) && (ACCEL_OK == pr->astatus);
}

/* This rank's half of step, and peer's (mapped here: peers on this node). */
static inline char *coll_gpu_prims_mine(const coll_gpu_prims_t *pr, uint64_t step) {
    return coll_gpu_native_mine(pr->native, pr->kind, step);
}
static inline char *coll_gpu_prims_theirs(const coll_gpu_prims_t *pr, int peer, uint64_t step) {
    return coll_gpu_native_theirs(pr->native, pr->kind, peer, step);
}

/* One chunk of a message: elements [first, first + n), run as native step. */
typedef struct {
    size_t first, n;
    uint64_t step;
} coll_gpu_prims_chunk_t;

/* The chunks of count elements, per_step at a time, one native step each (the same steps on
 * every rank), while the transport works:
 *     for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, count, per_step);) */
static inline bool coll_gpu_prims_next(coll_gpu_prims_t *pr, coll_gpu_prims_chunk_t *c,
                                       size_t count, size_t per_step) {
    if (0 != c->step) {
        c->first += per_step;
    }
    if ((c->first >= count) || !coll_gpu_prims_linked(pr)) {
        return false;
    }
    c->n = (count - c->first < per_step) ? count - c->first : per_step;
    c->step = ++pr->native->step;
    return true;
}

/* Elements [first, first + per_step) of a block of count elements: how many there are (a step
 * of a collective whose blocks differ in length, the largest setting the steps). */
static inline size_t coll_gpu_prims_block_chunk(size_t count, size_t first, size_t per_step) {
    return (count <= first) ? 0 : (count - first < per_step) ? count - first : per_step;
}

/* The uniform collective's call as its v-form: call->count elements in every block, block p at
 * p * count (the context's work arrays counts and displs). */
static inline coll_gpu_native_call_t
coll_gpu_prims_uniform_blocks(const coll_gpu_native_call_t *call) {
    coll_gpu_native_call_t blocks = *call;
    size_t *counts = call->native->counts, *displs = call->native->displs;

    for (int p = 0; p < call->native->team->size; ++p) {
        counts[p] = call->count;
        displs[p] = (size_t)p * call->count;
    }
    blocks.counts = counts;
    blocks.displs = displs;
    return blocks;
}

/* Data, queued on the call's stream; nothing once data stopped. */
static inline void coll_gpu_prims_copy(coll_gpu_prims_t *pr, void *dst, const void *src,
                                       size_t len) {
    if (coll_gpu_prims_moving(pr) && (len > 0)) {
        pr->astatus = pr->call->mem->copy(dst, src, len, pr->call->stream);
    }
}
/* rows rows of len bytes at strides (coll_gpu_native_mem_t's copy2d): one launch for blocks
 * that lie at regular strides on both sides. */
static inline void coll_gpu_prims_copy2d(coll_gpu_prims_t *pr, void *dst, size_t dpitch,
                                         const void *src, size_t spitch, size_t len, size_t rows) {
    if (coll_gpu_prims_moving(pr) && (len > 0) && (rows > 0)) {
        pr->astatus = pr->call->mem->copy2d(dst, dpitch, src, spitch, len, rows, pr->call->stream);
    }
}
/* dst = srcs[0] op ... op srcs[n-1] (the call's type and op), left to right. */
static inline void coll_gpu_prims_reduce(coll_gpu_prims_t *pr, void *dst, const void *const *srcs,
                                         int n, size_t count) {
    if (coll_gpu_prims_moving(pr) && (count > 0)) {
        pr->astatus = coll_gpu_native_reduce(pr->call->mem, dst, srcs, n, count, pr->call->dtype,
                                             pr->call->op, pr->call->stream);
    }
}
/* dst = this node's ranks' count elements at offset of their halves of step, reduced in local
 * rank order (the node partial of the hierarchical algorithms; uses native->srcs); this rank's
 * from own where own is not NULL (an owner reading its shard straight from its send buffer,
 * coll_gpu_prims_node_input). */
static inline void coll_gpu_prims_reduce_node_from(coll_gpu_prims_t *pr, void *dst, uint64_t step,
                                                   size_t offset, const char *own, size_t count) {
    const coll_gpu_team_t *team = pr->native->team;
    const void **srcs = pr->native->srcs;

    for (int l = 0; l < team->local_size; ++l) {
        int q = team->local_ranks[l];

        /* (theirs of this rank is its own half) */
        srcs[l] = ((q == team->rank) && (NULL != own))
                      ? own
                      : coll_gpu_prims_theirs(pr, q, step) + offset;
    }
    coll_gpu_prims_reduce(pr, dst, srcs, team->local_size, count);
}
static inline void coll_gpu_prims_reduce_node(coll_gpu_prims_t *pr, void *dst, uint64_t step,
                                              size_t offset, size_t count) {
    coll_gpu_prims_reduce_node_from(pr, dst, step, offset, NULL, count);
}

/* The node's input of a chunk for its shard owners (the hierarchical allreduces: local rank
 * l < m owns shard l of the chunk cut in m): the n elements at in into dst, but for this rank's
 * own shard, which no other rank reads (it reduces that straight from in). */
static inline void coll_gpu_prims_node_input(coll_gpu_prims_t *pr, char *dst, const char *in,
                                             size_t n, int m) {
    const coll_gpu_team_t *team = pr->native->team;
    size_t esize = pr->call->esize, first = n, len = 0, rest;

    if (team->local_rank < m) {
        coll_gpu_native_shard(n, m, team->local_rank, &first, &len);
    }
    rest = (first + len) * esize;
    coll_gpu_prims_copy(pr, dst, in, first * esize);
    coll_gpu_prims_copy(pr, dst + rest, in + rest, n * esize - rest);
}

/* The node-order layout of a step of per-rank blocks (the hierarchical doubling and halving
 * algorithms): elements [first, first + per_step) of every rank's block, node after node (node
 * j's ranks in rank order, team->node_ranks), packed, so that any run of consecutive nodes is one
 * run of bytes.  pos_off[i]: the byte offset of position i's chunk (size entries); returns the
 * step's bytes. */
static inline size_t coll_gpu_prims_node_layout(const coll_gpu_team_t *team, const size_t *counts,
                                                size_t first, size_t per_step, size_t esize,
                                                size_t *pos_off) {
    size_t pos = 0;

    for (int i = 0; i < team->size; ++i) {
        pos_off[i] = pos;
        pos += coll_gpu_prims_block_chunk(counts[team->node_ranks[i]], first, per_step) * esize;
    }
    return pos;
}
/* Where node j's run starts in the layout (j = nnodes: its end, total). */
static inline size_t coll_gpu_prims_node_at(const coll_gpu_team_t *team, const size_t *pos_off,
                                            size_t total, int j) {
    return (j < team->nnodes) ? pos_off[team->node_first[j]] : total;
}
/* A run of copies issued as one (coll_gpu_run.h): one plain copy, or one 2D copy. */
static inline void coll_gpu_prims_run_flush(coll_gpu_prims_t *pr, coll_gpu_prims_run_t *run) {
    if (1 == run->rows) {
        coll_gpu_prims_copy(pr, run->dst, run->src, run->len);
    } else if (run->rows > 1) {
        coll_gpu_prims_copy2d(pr, run->dst, run->dpitch, run->src, run->spitch, run->len,
                              run->rows);
    }
    run->rows = 0;
}
/* Adds len bytes src -> dst to the run, or issues the run and starts another with them. */
static inline void coll_gpu_prims_run_add(coll_gpu_prims_t *pr, coll_gpu_prims_run_t *run,
                                          char *dst, const char *src, size_t len) {
    if (!coll_gpu_run_join(run, dst, src, len)) {
        coll_gpu_prims_run_flush(pr, run);
        coll_gpu_run_start(run, dst, src, len);
    }
}

/* Every block's chunk between a buffer of blocks in rank order (block q at displs[q] elements)
 * and the layout at base: into the layout when into_layout, else out of it; runs of blocks in
 * one copy (coll_gpu_prims_run_add: one for a step of whole blocks where nodes are rank ranges,
 * a 2D one for equal chunks at regular strides); rank skip's block left alone (-1: none). */
static inline void coll_gpu_prims_node_layout_copy(coll_gpu_prims_t *pr, char *base,
                                                   const size_t *pos_off, char *buf,
                                                   const size_t *counts, const size_t *displs,
                                                   size_t first, size_t per_step, int skip,
                                                   bool into_layout) {
    const coll_gpu_team_t *team = pr->native->team;
    size_t esize = pr->call->esize;
    coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};

    for (int q = 0; q < team->size; ++q) {
        size_t len = coll_gpu_prims_block_chunk(counts[q], first, per_step) * esize;
        char *lay = base + pos_off[coll_gpu_team_node_order(team, q)];
        char *user = buf + (displs[q] + first) * esize;

        if ((0 == len) || (q == skip)) {
            continue;
        }
        coll_gpu_prims_run_add(pr, &run, into_layout ? lay : user, into_layout ? user : lay, len);
    }
    coll_gpu_prims_run_flush(pr, &run);
}

/* Every rank's chunk between a half of one slot per rank and a buffer of blocks in rank order
 * (the rooted gather and scatter): slot k, len bytes at half + k * len, holds the chunk of the
 * rank at node order (k + rotate) mod size (rotate: the first slot's node order), whose chunk in
 * the buffer is at buf + rank * stride.  Out of the half into buf when to_buf, else into it; this
 * rank's chunk left alone, and those of its node's ranks when skip_local.  Runs of chunks go in
 * one copy (coll_gpu_prims_run_add): where nodes are rank ranges the slots and the blocks lie at
 * regular strides, so a step is a copy or two (a plain one for a step of whole blocks, len ==
 * stride; a 2D one for a chunk of each block), not one per rank. */
static inline void coll_gpu_prims_slots_copy(coll_gpu_prims_t *pr, char *half, size_t len,
                                             int rotate, char *buf, size_t stride, bool skip_local,
                                             bool to_buf) {
    const coll_gpu_team_t *team = pr->native->team;
    coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};

    for (int k = 0; k < team->size; ++k) {
        int p = team->node_ranks[(k + rotate) % team->size];
        char *slot = half + (size_t)k * len, *user = buf + (size_t)p * stride;

        if ((p == team->rank) || (skip_local && coll_gpu_native_is_local(pr->native, p))) {
            continue;
        }
        coll_gpu_prims_run_add(pr, &run, to_buf ? user : slot, to_buf ? slot : user, len);
    }
    coll_gpu_prims_run_flush(pr, &run);
}

/* What was queued has completed (before a signal lets peers read it). */
static inline void coll_gpu_prims_sync(coll_gpu_prims_t *pr) {
    if (coll_gpu_prims_moving(pr)) {
        pr->astatus = pr->call->mem->synchronize(pr->call->stream);
    }
}

/* Signals: one peer, or every peer; nothing once the transport failed. */
static inline void coll_gpu_prims_signal(coll_gpu_prims_t *pr, int peer, uint64_t step,
                                         coll_gpu_phase_t phase) {
    if (coll_gpu_prims_linked(pr)) {
        pr->status = coll_gpu_native_signal(pr->native, peer, step, phase);
    }
}
static inline void coll_gpu_prims_wait(coll_gpu_prims_t *pr, int peer, uint64_t step,
                                       coll_gpu_phase_t phase) {
    if (coll_gpu_prims_linked(pr)) {
        pr->status = coll_gpu_native_wait(pr->native, peer, step, phase);
    }
}
static inline void coll_gpu_prims_signal_all(coll_gpu_prims_t *pr, uint64_t step,
                                             coll_gpu_phase_t phase) {
    if (coll_gpu_prims_linked(pr)) {
        pr->status = coll_gpu_native_signal_all(pr->native, step, phase);
    }
}
static inline void coll_gpu_prims_wait_all(coll_gpu_prims_t *pr, uint64_t step,
                                           coll_gpu_phase_t phase) {
    if (coll_gpu_prims_linked(pr)) {
        pr->status = coll_gpu_native_wait_all(pr->native, step, phase);
    }
}
/* Inside the node: phase of step to every other rank of this node; every other rank's. */
static inline void coll_gpu_prims_signal_node(coll_gpu_prims_t *pr, uint64_t step,
                                              coll_gpu_phase_t phase) {
    const coll_gpu_team_t *team = pr->native->team;

    for (int l = 0; l < team->local_size; ++l) {
        if (team->local_ranks[l] != team->rank) {
            coll_gpu_prims_signal(pr, team->local_ranks[l], step, phase);
        }
    }
}
static inline void coll_gpu_prims_wait_node(coll_gpu_prims_t *pr, uint64_t step,
                                            coll_gpu_phase_t phase) {
    const coll_gpu_team_t *team = pr->native->team;

    for (int l = 0; l < team->local_size; ++l) {
        if (team->local_ranks[l] != team->rank) {
            coll_gpu_prims_wait(pr, team->local_ranks[l], step, phase);
        }
    }
}

/* The node's allgather of the hierarchical allreduces: each of the m shards of the chunk of
 * elements [first, first + n) (cut in m, shard l owned by local rank l) into the receive buffer,
 * from offset of its owner's half of data_step, once the owner said FINAL of final_step.
 * Queued: synchronize before telling the owners these reads are done. */
static inline void coll_gpu_prims_node_shards_out(coll_gpu_prims_t *pr, uint64_t data_step,
                                                  size_t offset, uint64_t final_step, size_t first,
                                                  size_t n, int m) {
    const coll_gpu_team_t *team = pr->native->team;
    size_t esize = pr->call->esize, shard_first, shard_len;

    for (int l = 0; l < m; ++l) {
        int q = team->local_ranks[l];

        if (q != team->rank) {
            coll_gpu_prims_wait(pr, q, final_step, COLL_GPU_PHASE_FINAL);
        }
        coll_gpu_native_shard(n, m, l, &shard_first, &shard_len);
        coll_gpu_prims_copy(pr, (char *)pr->call->rbuf + (first + shard_first) * esize,
                            coll_gpu_prims_theirs(pr, q, data_step) + offset, shard_len * esize);
    }
}

/* Peers on other nodes: fetch len bytes at offset of peer's half of step into dst (loaded
 * directly from a peer on this node); complete every fetch (before dst is read or the next
 * step is announced); publish this rank's half for other nodes' fetches. */
static inline void coll_gpu_prims_fetch(coll_gpu_prims_t *pr, int peer, uint64_t step,
                                        size_t offset, void *dst, size_t len) {
    if (coll_gpu_prims_moving(pr) && (len > 0)) {
        pr->astatus = coll_gpu_native_fetch(pr->native, pr->kind, peer, step, offset, dst, len,
                                            pr->call->stream, &pr->status);
    }
}
static inline void coll_gpu_prims_fetch_complete(coll_gpu_prims_t *pr) {
    if (coll_gpu_prims_linked(pr)) {
        pr->status =
            coll_gpu_native_fetch_complete(pr->native, pr->kind, pr->call->stream, &pr->astatus);
    }
}
/* coll_gpu_prims_fetch keeping at most max gets from other nodes in flight (0: no bound): the
 * ones in flight are completed before one more is issued (fetch_complete: the stream too). */
static inline void coll_gpu_prims_fetch_bounded(coll_gpu_prims_t *pr, unsigned max, int peer,
                                                uint64_t step, size_t offset, void *dst,
                                                size_t len) {
    if ((max > 0) && (len > 0) && (pr->native->gets_in_flight >= max) &&
        !coll_gpu_native_is_local(pr->native, peer)) {
        coll_gpu_prims_fetch_complete(pr);
    }
    coll_gpu_prims_fetch(pr, peer, step, offset, dst, len);
}
static inline void coll_gpu_prims_publish(coll_gpu_prims_t *pr, uint64_t step, size_t offset,
                                          size_t len) {
    if (coll_gpu_prims_moving(pr) && (len > 0)) {
        pr->astatus =
            coll_gpu_native_publish(pr->native, pr->kind, step, offset, len, pr->call->stream);
    }
}

/* [offset, offset + len) of this rank's half of step is there for peer, on another node, to
 * get (published, landed), and peer is told: READY of step. */
static inline void coll_gpu_prims_offer(coll_gpu_prims_t *pr, int peer, uint64_t step,
                                        size_t offset, size_t len) {
    coll_gpu_prims_publish(pr, step, offset, len);
    coll_gpu_prims_sync(pr);
    coll_gpu_prims_signal(pr, peer, step, COLL_GPU_PHASE_READY);
}
/* Waits for peer's READY of step and gets [offset, offset + len) of its half into dst (done at
 * coll_gpu_prims_fetch_complete). */
static inline void coll_gpu_prims_take(coll_gpu_prims_t *pr, int peer, uint64_t step, size_t offset,
                                       void *dst, size_t len) {
    coll_gpu_prims_wait(pr, peer, step, COLL_GPU_PHASE_READY);
    coll_gpu_prims_fetch(pr, peer, step, offset, dst, len);
}

/* Partner-only algorithms (recursive doubling, Rabenseifner): who last read this rank's half of
 * each parity, so that a write to a half waits for that reader's CONSUMED alone. */
typedef struct {
    int reader[2];         /* -1: none (or readers the algorithm's own protocol covers) */
    uint64_t read_step[2]; /* the step it read */
} coll_gpu_prims_readers_t;

static inline void coll_gpu_prims_readers_init(coll_gpu_prims_readers_t *readers) {
    readers->reader[0] = readers->reader[1] = -1;
    readers->read_step[0] = readers->read_step[1] = 0;
}
/* This rank may write its half of step: the peer that last read it said CONSUMED. */
static inline void coll_gpu_prims_claim(coll_gpu_prims_t *pr, coll_gpu_prims_readers_t *readers,
                                        uint64_t step) {
    int parity = (int)(step & 1);

    if (readers->reader[parity] >= 0) {
        coll_gpu_prims_wait(pr, readers->reader[parity], readers->read_step[parity],
                            COLL_GPU_PHASE_CONSUMED);
    }
    readers->reader[parity] = -1;
}
/* peer reads this rank's half of step from now on, until it says CONSUMED. */
static inline void coll_gpu_prims_lend(coll_gpu_prims_readers_t *readers, uint64_t step, int peer) {
    readers->reader[step & 1] = peer;
    readers->read_step[step & 1] = step;
}

/* The step handshake: this rank's copies and fetches complete, READY of step to every peer,
 * then every peer's (coll_gpu_native_announce). */
static inline void coll_gpu_prims_announce(coll_gpu_prims_t *pr, uint64_t step) {
    if (coll_gpu_prims_linked(pr)) {
        pr->status = coll_gpu_native_announce(pr->call, step, &pr->astatus);
    }
}

/* The largest of the ranks' values (coll_gpu_native_agree_max), one step of signals; 0 once
 * the transport failed (the algorithm then ends). */
static inline uint64_t coll_gpu_prims_agree_max(coll_gpu_prims_t *pr, uint64_t mine) {
    uint64_t max = 0;

    if (coll_gpu_prims_linked(pr)) {
        pr->status = coll_gpu_native_agree_max(pr->native, mine, &max);
    }
    return coll_gpu_prims_linked(pr) ? max : 0;
}

/* The end of the algorithm (coll_gpu_native_finish): its result. */
static inline int coll_gpu_prims_finish(coll_gpu_prims_t *pr, struct ompi_communicator_t *comm) {
    return coll_gpu_native_finish(pr->call, comm, pr->status, pr->astatus);
}

END_C_DECLS

#endif /* COLL_GPU_PRIMS_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, pipelined ring (large messages; nodes of one rank): reduce-scatter then allgather
 * around the ring, every rank reading only its left neighbour's scratch, on READY / CONSUMED
 * signals between neighbours.  Piece k of every segment is chunk k; step s publishes in the half
 * of parity s at offset 0, the second piece-sized area landing a get from another node.  The
 * signals, the entry and exit handshakes and the order: docs/allreduce.md, "Ring" and
 * "Determinism".
 *
 * An accelerator error skips the data movement, never the signals (peers finish the call);
 * every rank returns it at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

/* Segment j of n elements over size ranks: the first n % size segments one element longer. */
static void coll_gpu_ring_segment(size_t n, int size, int j, size_t *first_p, size_t *len_p) {
    size_t base = n / (size_t)size, extra = n % (size_t)size, uj = (size_t)j;

    *first_p = uj * base + ((uj < extra) ? uj : extra);
    *len_p = base + ((uj < extra) ? 1 : 0);
}

/* Piece k (of piece elements) of segment j: first element and length, 0 past its end. */
static void coll_gpu_ring_piece(size_t n, int size, int j, size_t k, size_t piece, size_t *first_p,
                                size_t *len_p) {
    size_t seg_first, seg_len, skip = k * piece;

    coll_gpu_ring_segment(n, size, j, &seg_first, &seg_len);
    *first_p = seg_first + skip;
    *len_p = (seg_len > skip) ? ((seg_len - skip < piece) ? seg_len - skip : piece) : 0;
}

/* Before this rank writes its half of step x: the right neighbour finished reading x - 2.  A step
 * before the call's first (call_first) was read in an earlier call, which the closing agreement's
 * barrier ended on every rank. */
static void coll_gpu_ring_wait_reader(coll_gpu_prims_t *pr, int right, uint64_t x,
                                      uint64_t call_first) {
    if (x >= call_first + 2) {
        coll_gpu_prims_wait(pr, right, x - 2, COLL_GPU_PHASE_CONSUMED);
    }
}

int coll_gpu_allreduce_ring(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    int size = native->team->size, rank = native->team->rank;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int nsteps = 2 * (size - 1);
    size_t esize = call->esize, chunk, piece, nchunks;
    const char *in = call->sbuf;
    char *out = call->rbuf;
    bool first_step = true;
    uint64_t call_first = native->step + 1;
    coll_gpu_prims_t pr;

    coll_gpu_prims_init(&pr, call);
    if (1 == size) {
        coll_gpu_prims_copy(&pr, out, in, (in != out) ? call->count * esize : 0);
        return coll_gpu_prims_finish(&pr, comm);
    }
    /* a piece and the landing area of a get fit in a half: 2 * chunk / size <= half */
    chunk = ((call->chunk_bytes < native->half) ? call->chunk_bytes : native->half) / esize;
    piece = chunk / (size_t)size;
    piece = (piece > 0) ? piece : 1;
    nchunks = ((call->count + (size_t)size - 1) / (size_t)size + piece - 1) / piece;

    for (size_t k = 0; (k < nchunks) && coll_gpu_prims_linked(&pr); ++k) {
        for (int i = 0; (i < nsteps) && coll_gpu_prims_linked(&pr); ++i) {
            bool reduce = (i < size - 1), forward = (i < nsteps - 1);
            int seg =
                reduce ? (rank - i - 1 + size) % size : (rank - (i - (size - 1)) + size) % size;
            uint64_t step = ++native->step;
            char *mine = coll_gpu_prims_mine(&pr, step);
            char *next = forward ? coll_gpu_prims_mine(&pr, step + 1) : NULL;
            size_t first, len, bytes;
            const char *src;

            if (0 == i) {
                /* publish my own segment's piece, the start of its reduction */
                coll_gpu_ring_wait_reader(&pr, right, step, call_first);
                coll_gpu_ring_piece(call->count, size, rank, k, piece, &first, &len);
                coll_gpu_prims_copy(&pr, mine, in + first * esize, len * esize);
            }
            if (!coll_gpu_native_is_local(native, right)) {
                /* the right neighbour fetches it from another node */
                coll_gpu_prims_publish(&pr, step, 0, piece * esize);
            }
            /* my piece of this step landed (copied now, or written by the last step) */
            coll_gpu_prims_sync(&pr);
            if (first_step) {
                coll_gpu_prims_signal_all(&pr, step, COLL_GPU_PHASE_READY);
                coll_gpu_prims_wait_all(&pr, step, COLL_GPU_PHASE_READY);
                first_step = false;
            } else {
                coll_gpu_prims_signal(&pr, right, step, COLL_GPU_PHASE_READY);
                coll_gpu_prims_wait(&pr, left, step, COLL_GPU_PHASE_READY);
            }
            if (forward) {
                /* what I receive now I publish in the next step's half */
                coll_gpu_ring_wait_reader(&pr, right, step + 1, call_first);
            }

            coll_gpu_ring_piece(call->count, size, seg, k, piece, &first, &len);
            bytes = len * esize;
            if (coll_gpu_native_is_local(native, left)) {
                src = coll_gpu_prims_theirs(&pr, left, step);
            } else {
                /* into the landing area of my half of this step, which nobody reads */
                src = mine + piece * esize;
                coll_gpu_prims_fetch(&pr, left, step, 0, (char *)src, bytes);
                coll_gpu_prims_fetch_complete(&pr);
            }
            if (reduce) {
                const void *srcs[2] = {src, in + first * esize};

                coll_gpu_prims_reduce(&pr, next, srcs, 2, len);
                if (size - 2 == i) {
                    /* fully reduced: my segment of the result */
                    coll_gpu_prims_copy(&pr, out + first * esize, next, bytes);
                }
            } else if (forward) {
                coll_gpu_prims_copy(&pr, next, src, bytes);
                coll_gpu_prims_copy(&pr, out + first * esize, next, bytes);
            } else {
                coll_gpu_prims_copy(&pr, out + first * esize, src, bytes);
            }
            /* my reads of the left's half done: it may reuse it */
            coll_gpu_prims_fetch_complete(&pr);
            coll_gpu_prims_signal(&pr, left, step, COLL_GPU_PHASE_CONSUMED);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

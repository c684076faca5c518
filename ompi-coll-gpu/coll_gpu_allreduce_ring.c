/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, pipelined ring (large messages; communicators spanning nodes with one rank per
 * node, ring topologies): every rank talks only to its neighbours, left = rank - 1 and
 * right = rank + 1 (mod size), and reads only its left neighbour's scratch: loaded when it is
 * on this node, fetched with a get (coll_gpu_native_fetch) when it is not.
 *
 * The message is cut into size segments (segment j: two-shot's shard j of the whole message)
 * and each segment into pieces of chunk_bytes / size; chunk k is piece k of every segment and
 * runs in 2 (size - 1) ring steps, one native step each:
 *   - reduce-scatter, steps i = 0 .. size - 2: rank r receives piece k of segment
 *     (r - i - 1) mod size from its left neighbour (the left's own input at i = 0, its partial
 *     reduction after), reduces it with its own input's piece (received value on the left),
 *     and publishes the result for its right neighbour; after the last one it holds segment
 *     r + 1 fully reduced and writes it to its receive buffer;
 *   - allgather, steps i = size - 1 .. 2 size - 3: rank r receives segment (r - i) mod size
 *     from its left neighbour, writes it to its receive buffer and publishes it (but the last).
 * Every rank publishes the piece it sends in step s in its scratch half of s (parity s & 1),
 * at offset 0; the second piece-sized area of the half lands a get from a left neighbour on
 * another node.  Chunk k + 1 follows chunk k without a pause: a rank is never more than a step
 * ahead of its neighbours, all links busy at once.
 *
 * Synchronization, neighbours only (COLL_GPU_NATIVE_SIGNAL_VALUE: 4 * step + phase, monotone
 * per pair):
 *   - READY(s) to the right: my piece of step s is in my half of s;
 *   - CONSUMED(s) to the left: I finished reading its half of s.
 * A rank writes its half of x only after its right neighbour, the only reader, sent
 * CONSUMED(x - 2) (or anything later).  With 2 ranks left and right are one peer: READY(s)
 * follows CONSUMED(s - 1) in its program, so the values stay monotone.
 * The other algorithms let every peer read every half, and assume a half is free once every
 * peer announced the next step: the ring's first step announces READY to every peer and waits
 * for every peer's (its peers finished reading the previous call's halves); the call's last
 * step, coll_gpu_native_conclude's agreement, is every peer's announcement again, so that the
 * next call, of whatever algorithm, may write its first half at once.
 *
 * Determinism: every element is reduced exactly once, by the ring order that starts at its
 * segment j, ((x_j op x_j+1) op ...) op x_j-1 (legal: the predefined ops are commutative),
 * then copied: the same bits on every rank and from run to run for the same communicator
 * (rank order), count, type and op.  The bits do not depend on the chunk size, the scratch
 * size, the memory kind nor the node layout (an element's segment depends only on count and
 * size), but they differ from one_shot's and two_shot's (rank order x_0 op x_1 ... op x_n-1)
 * on floating point except in segment 0.
 *
 * An accelerator error skips the data movement, never the signals (peers finish the call);
 * every rank returns it at the end (coll_gpu_native_conclude).
 */
#include "coll_gpu_native.h"

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

/* Before this rank writes its half of step x: the right neighbour finished reading x - 2. */
static shmem_status_t coll_gpu_ring_wait_reader(coll_gpu_native_t *native, int right, uint64_t x) {
    if (x < 2) {
        return SHMEM_OK;
    }
    return coll_gpu_native_wait(native, right, x - 2, COLL_GPU_PHASE_CONSUMED);
}

int coll_gpu_allreduce_ring(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    coll_gpu_native_kind_t kind = call->kind;
    int size = native->team->size, rank = native->team->rank;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int nsteps = 2 * (size - 1);
    size_t esize = call->esize, chunk, piece, nchunks;
    const char *in = call->sbuf;
    char *out = call->rbuf;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status = SHMEM_OK;
    bool first_step = true;
    uint64_t step = 0;

    if (1 == size) {
        if (in != out) {
            astatus = mem->copy(out, in, call->count * esize, call->stream);
        }
        goto conclude;
    }
    /* a piece and the landing area of a get fit in a half: 2 * chunk / size <= half */
    chunk = ((call->chunk_bytes < native->half) ? call->chunk_bytes : native->half) / esize;
    piece = chunk / (size_t)size;
    piece = (piece > 0) ? piece : 1;
    nchunks = ((call->count + (size_t)size - 1) / (size_t)size + piece - 1) / piece;

    for (size_t k = 0; k < nchunks; ++k) {
        for (int i = 0; i < nsteps; ++i) {
            bool reduce = (i < size - 1), forward = (i < nsteps - 1);
            int seg =
                reduce ? (rank - i - 1 + size) % size : (rank - (i - (size - 1)) + size) % size;
            size_t first, len, bytes;
            const char *src;
            char *mine, *next;

            step = ++native->step;
            mine = coll_gpu_native_mine(native, kind, step);
            if (0 == i) {
                /* publish my own segment's piece, the start of its reduction */
                status = coll_gpu_ring_wait_reader(native, right, step);
                if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                    goto conclude;
                }
                coll_gpu_ring_piece(call->count, size, rank, k, piece, &first, &len);
                if ((ACCEL_OK == astatus) && (len > 0)) {
                    astatus = mem->copy(mine, in + first * esize, len * esize, call->stream);
                }
            }
            if ((ACCEL_OK == astatus) && !coll_gpu_native_is_local(native, right)) {
                /* the right neighbour fetches it from another node */
                astatus =
                    coll_gpu_native_publish(native, kind, step, 0, piece * esize, call->stream);
            }
            /* my piece of this step landed (copied now, or written by the last step) */
            if (ACCEL_OK == astatus) {
                astatus = mem->synchronize(call->stream);
            }
            if (first_step) {
                status = coll_gpu_native_signal_all(native, step, COLL_GPU_PHASE_READY);
                if (SHMEM_OK == status) {
                    status = coll_gpu_native_wait_all(native, step, COLL_GPU_PHASE_READY);
                }
                first_step = false;
            } else {
                status = coll_gpu_native_signal(native, right, step, COLL_GPU_PHASE_READY);
                if (SHMEM_OK == status) {
                    status = coll_gpu_native_wait(native, left, step, COLL_GPU_PHASE_READY);
                }
            }
            if ((SHMEM_OK == status) && forward) {
                /* what I receive now I publish in the next step's half */
                status = coll_gpu_ring_wait_reader(native, right, step + 1);
            }
            if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                goto conclude;
            }

            coll_gpu_ring_piece(call->count, size, seg, k, piece, &first, &len);
            bytes = len * esize;
            next = forward ? coll_gpu_native_mine(native, kind, step + 1) : NULL;
            if ((ACCEL_OK == astatus) && (len > 0)) {
                if (coll_gpu_native_is_local(native, left)) {
                    src = coll_gpu_native_theirs(native, kind, left, step);
                } else {
                    /* into the landing area of my half of this step, which nobody reads */
                    src = mine + piece * esize;
                    astatus = coll_gpu_native_fetch(native, kind, left, step, 0, (char *)src, bytes,
                                                    call->stream, &status);
                    if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                        goto conclude;
                    }
                    status = coll_gpu_native_fetch_complete(native, kind, call->stream, &astatus);
                    if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                        goto conclude;
                    }
                }
                if ((ACCEL_OK == astatus) && reduce) {
                    const void *srcs[2] = {src, in + first * esize};
                    astatus = coll_gpu_native_reduce(mem, next, srcs, 2, len, call->dtype, call->op,
                                                     call->stream);
                    if ((ACCEL_OK == astatus) && (size - 2 == i)) {
                        /* fully reduced: my segment of the result */
                        astatus = mem->copy(out + first * esize, next, bytes, call->stream);
                    }
                } else if ((ACCEL_OK == astatus) && forward) {
                    astatus = mem->copy(next, src, bytes, call->stream);
                    if (ACCEL_OK == astatus) {
                        astatus = mem->copy(out + first * esize, next, bytes, call->stream);
                    }
                } else if (ACCEL_OK == astatus) {
                    astatus = mem->copy(out + first * esize, src, bytes, call->stream);
                }
            }
            /* my reads of the left's half done: it may reuse it */
            status = coll_gpu_native_fetch_complete(native, kind, call->stream, &astatus);
            if (SHMEM_OK == status) {
                status = coll_gpu_native_signal(native, left, step, COLL_GPU_PHASE_CONSUMED);
            }
            if (OPAL_UNLIKELY(SHMEM_OK != status)) {
                goto conclude;
            }
        }
    }
conclude:
    return coll_gpu_native_finish(call, comm, status, astatus);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, recursive doubling (small messages on one node: log2(n) signal rounds with one
 * peer each, where one_shot waits on every peer).  The message is cut into steps of a scratch
 * half.  With p the largest power of two <= n and rem = n - p, the ranks below 2 rem pair up
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
 * CONSUMED; the halves of earlier calls are free, their last step (coll_gpu_native_conclude's
 * agreement) having been announced by every peer.
 *
 * Determinism: every pair computes lower op higher, so partners hold the same bits, and by
 * induction every rank ends with the same bits, from run to run for the same communicator,
 * count, type and op; they differ from one_shot's on floating point.
 *
 * An accelerator error skips the copies and reductions, never the signals; every rank returns
 * it at the end (coll_gpu_native_finish).
 */
#include "coll_gpu_native.h"

typedef struct {
    const coll_gpu_native_call_t *call;
    coll_gpu_native_t *native;
    int reader[2];         /* the rank that last read my half of each parity, -1: none */
    uint64_t read_step[2]; /* and the step it read */
    accel_status_t astatus;
} coll_gpu_rd_t;

/* Puts len bytes of partial in my half of step for peer, once that half's last reader is done
 * with it, and tells peer. */
static shmem_status_t coll_gpu_rd_publish(coll_gpu_rd_t *rd, uint64_t step, const char *partial,
                                          size_t len, int peer) {
    const coll_gpu_native_call_t *call = rd->call;
    int parity = (int)(step & 1);
    shmem_status_t status = SHMEM_OK;

    if (rd->reader[parity] >= 0) {
        status = coll_gpu_native_wait(rd->native, rd->reader[parity], rd->read_step[parity],
                                      COLL_GPU_PHASE_CONSUMED);
        if (SHMEM_OK != status) {
            return status;
        }
    }
    if (ACCEL_OK == rd->astatus) {
        rd->astatus = call->mem->copy(coll_gpu_native_mine(rd->native, call->kind, step), partial,
                                      len, call->stream);
    }
    if (ACCEL_OK == rd->astatus) {
        rd->astatus = call->mem->synchronize(call->stream); /* landed before peer is told */
    }
    rd->reader[parity] = peer;
    rd->read_step[parity] = step;
    return coll_gpu_native_signal(rd->native, peer, step, COLL_GPU_PHASE_READY);
}

/* Waits for peer's half of step, lets apply read it (a reduction or a copy, queued), completes
 * that and tells peer its half is free. */
static shmem_status_t coll_gpu_rd_read(coll_gpu_rd_t *rd, uint64_t step, int peer, char *dst,
                                       const void *first, const void *second, size_t n) {
    const coll_gpu_native_call_t *call = rd->call;
    const void *srcs[2] = {first, second};
    shmem_status_t status;

    status = coll_gpu_native_wait(rd->native, peer, step, COLL_GPU_PHASE_READY);
    if (SHMEM_OK != status) {
        return status;
    }
    if ((ACCEL_OK == rd->astatus) && (NULL != second)) {
        rd->astatus =
            coll_gpu_native_reduce(call->mem, dst, srcs, 2, n, call->dtype, call->op, call->stream);
    } else if (ACCEL_OK == rd->astatus) {
        rd->astatus = call->mem->copy(dst, first, n * call->esize, call->stream);
    }
    if (ACCEL_OK == rd->astatus) {
        rd->astatus = call->mem->synchronize(call->stream);
    }
    return coll_gpu_native_signal(rd->native, peer, step, COLL_GPU_PHASE_CONSUMED);
}

int coll_gpu_allreduce_recursive_doubling(struct ompi_communicator_t *comm,
                                          const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    int size = native->team->size, rank = native->team->rank, p = 1, rem, vrank;
    size_t esize = call->esize, per_step = native->half / esize;
    coll_gpu_rd_t rd = {
        .call = call, .native = native, .reader = {-1, -1}, .astatus = call->entry_status};
    shmem_status_t status = SHMEM_OK;

    while (2 * p <= size) {
        p *= 2;
    }
    rem = size - p;
    /* the extras (even ranks below 2 rem) sit the rounds out */
    vrank = (rank < 2 * rem) ? ((rank & 1) ? rank / 2 : -1) : rank - rem;

    for (size_t first = 0; (first < call->count) && (SHMEM_OK == status); first += per_step) {
        size_t n = (call->count - first < per_step) ? call->count - first : per_step;
        size_t bytes = n * esize, offset = first * esize;
        const char *in = (const char *)call->sbuf + offset;
        char *out = (char *)call->rbuf + offset;
        const char *partial = in;
        uint64_t step;

        if (rem > 0) {
            step = ++native->step;
            if (rank < 2 * rem) {
                status = (rank & 1) ? coll_gpu_rd_read(&rd, step, rank - 1, out,
                                                       coll_gpu_native_theirs(native, call->kind,
                                                                              rank - 1, step),
                                                       in, n)
                                    : coll_gpu_rd_publish(&rd, step, in, bytes, rank + 1);
                partial = out;
            }
        }
        for (int mask = 1; (mask < p) && (SHMEM_OK == status); mask <<= 1) {
            int vpartner = vrank ^ mask, partner;
            const char *mine, *theirs;

            step = ++native->step;
            if (vrank < 0) {
                continue;
            }
            partner = (vpartner < rem) ? 2 * vpartner + 1 : vpartner + rem;
            status = coll_gpu_rd_publish(&rd, step, partial, bytes, partner);
            if (SHMEM_OK != status) {
                break;
            }
            mine = coll_gpu_native_mine(native, call->kind, step);
            theirs = coll_gpu_native_theirs(native, call->kind, partner, step);
            status = coll_gpu_rd_read(&rd, step, partner, out, (vrank < vpartner) ? mine : theirs,
                                      (vrank < vpartner) ? theirs : mine, n);
            partial = out;
        }
        if ((rem > 0) && (SHMEM_OK == status)) {
            step = ++native->step;
            if ((rank < 2 * rem) && (rank & 1)) {
                status = coll_gpu_rd_publish(&rd, step, out, bytes, rank - 1);
            } else if (rank < 2 * rem) {
                status = coll_gpu_rd_read(
                    &rd, step, rank + 1, out,
                    coll_gpu_native_theirs(native, call->kind, rank + 1, step), NULL, n);
            }
        }
        if ((SHMEM_OK == status) && (1 == size) && (ACCEL_OK == rd.astatus) && (in != out)) {
            rd.astatus = call->mem->copy(out, in, bytes, call->stream);
        }
    }
    return coll_gpu_native_finish(call, comm, status, rd.astatus);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Allreduce, two-shot (medium and large messages, bandwidth bound): per chunk, a
 * reduce-scatter (rank k reduces shard k of the chunk from every peer's scratch, in rank
 * order, into the second part of its own scratch half), then an allgather (every rank copies
 * each shard from its owner's scratch into its receive buffer).  Each rank reads n inputs of
 * 1/n of the chunk and n shards instead of n whole inputs.  A rank's own shard of its input
 * is read from its send buffer, so only the peers' shards are copied into the scratch.
 * Device or host memory alike: call->mem says how to copy, reduce and wait for completion.
 *
 * Every element is combined exactly as one-shot combines it (coll_gpu_native_reduce over
 * the n inputs in rank order), so the two give the same bits, on every rank.
 *
 * Scratch half of a step: [0, half/2) this rank's input chunk, [half/2, half) its reduced
 * shard.
 */
#include "coll_gpu_native.h"

int coll_gpu_allreduce_two_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call) {
    coll_gpu_native_t *native = call->native;
    const coll_gpu_native_mem_t *mem = call->mem;
    const void **srcs = native->srcs;
    size_t shard_area = native->half / 2, chunk, shard_first, shard_len, esize = call->esize;
    int size = native->team->size, rank = native->team->rank;
    accel_status_t astatus = call->entry_status;
    shmem_status_t status;

    chunk = ((call->chunk_bytes < shard_area) ? call->chunk_bytes : shard_area) / esize;
    chunk = (chunk > 0) ? chunk : 1;
    for (size_t first = 0; first < call->count; first += chunk) {
        size_t n = (call->count - first < chunk) ? call->count - first : chunk;
        size_t offset = first * esize, mine_first, mine_len;
        const char *in = (const char *)call->sbuf + offset;
        uint64_t step = ++native->step;
        char *mine = coll_gpu_native_mine(native, call->kind, step);

        coll_gpu_native_range_t peers_shards[2];

        /* the peers' shards of my input: before and after my own */
        coll_gpu_native_shard(n, size, rank, &mine_first, &mine_len);
        peers_shards[0].offset = 0;
        peers_shards[0].len = mine_first * esize;
        peers_shards[1].offset = (mine_first + mine_len) * esize;
        peers_shards[1].len = (n - mine_first - mine_len) * esize;
        status = coll_gpu_native_step_ready(call, step, in, peers_shards, 2, &astatus);
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto conclude;
        }

        /* reduce-scatter: my shard from every rank's input, mine from my send buffer */
        if ((ACCEL_OK == astatus) && (mine_len > 0)) {
            for (int p = 0; p < size; ++p) {
                srcs[p] = coll_gpu_native_theirs(native, call->kind, p, step) + mine_first * esize;
            }
            srcs[rank] = in + mine_first * esize;
            astatus = coll_gpu_native_reduce(mem, mine + shard_area, srcs, size, mine_len,
                                             call->dtype, call->op, call->stream);
        }
        if (ACCEL_OK == astatus) {
            astatus = mem->synchronize(call->stream);
        }
        status = coll_gpu_native_signal_all(native, step, COLL_GPU_PHASE_REDUCED);
        if (SHMEM_OK == status) {
            status = coll_gpu_native_wait_all(native, step, COLL_GPU_PHASE_REDUCED);
        }
        if (OPAL_UNLIKELY(SHMEM_OK != status)) {
            goto conclude;
        }

        /* allgather: every shard from its owner; synchronized before the next step's
         * announcement, after which owners may reuse this half */
        for (int k = 0; (k < size) && (ACCEL_OK == astatus); ++k) {
            coll_gpu_native_shard(n, size, k, &shard_first, &shard_len);
            if (shard_len > 0) {
                astatus =
                    mem->copy((char *)call->rbuf + offset + shard_first * esize,
                              coll_gpu_native_theirs(native, call->kind, k, step) + shard_area,
                              shard_len * esize, call->stream);
            }
        }
    }
    status = SHMEM_OK;
conclude:
    return coll_gpu_native_finish(call, comm, status, astatus);
}

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
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

int coll_gpu_allreduce_two_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call) {
    const void **srcs = call->native->srcs;
    size_t shard_area = call->native->half / 2, chunk, esize = call->esize;
    int size = call->native->team->size, rank = call->native->team->rank;
    coll_gpu_prims_t pr;

    chunk = ((call->chunk_bytes < shard_area) ? call->chunk_bytes : shard_area) / esize;
    chunk = (chunk > 0) ? chunk : 1;
    coll_gpu_prims_init(&pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&pr, &c, call->count, chunk);) {
        size_t offset = c.first * esize, mine_first, mine_len, shard_first, shard_len;
        const char *in = (const char *)call->sbuf + offset;
        char *mine = coll_gpu_prims_mine(&pr, c.step);

        /* the peers' shards of my input, before and after my own, into my half; announced */
        coll_gpu_native_shard(c.n, size, rank, &mine_first, &mine_len);
        coll_gpu_prims_copy(&pr, mine, in, mine_first * esize);
        coll_gpu_prims_copy(&pr, mine + (mine_first + mine_len) * esize,
                            in + (mine_first + mine_len) * esize,
                            (c.n - mine_first - mine_len) * esize);
        coll_gpu_prims_sync(&pr);
        coll_gpu_prims_signal_all(&pr, c.step, COLL_GPU_PHASE_READY);
        coll_gpu_prims_wait_all(&pr, c.step, COLL_GPU_PHASE_READY);

        /* reduce-scatter: my shard from every rank's input, mine from my send buffer */
        for (int p = 0; p < size; ++p) {
            srcs[p] = coll_gpu_prims_theirs(&pr, p, c.step) + mine_first * esize;
        }
        srcs[rank] = in + mine_first * esize;
        coll_gpu_prims_reduce(&pr, mine + shard_area, srcs, size, mine_len);
        coll_gpu_prims_sync(&pr);
        coll_gpu_prims_signal_all(&pr, c.step, COLL_GPU_PHASE_REDUCED);
        coll_gpu_prims_wait_all(&pr, c.step, COLL_GPU_PHASE_REDUCED);

        /* allgather: every shard from its owner; synchronized before the next step's
         * announcement, after which owners may reuse this half */
        for (int k = 0; k < size; ++k) {
            coll_gpu_native_shard(c.n, size, k, &shard_first, &shard_len);
            coll_gpu_prims_copy(&pr, (char *)call->rbuf + offset + shard_first * esize,
                                coll_gpu_prims_theirs(&pr, k, c.step) + shard_area,
                                shard_len * esize);
        }
    }
    return coll_gpu_prims_finish(&pr, comm);
}

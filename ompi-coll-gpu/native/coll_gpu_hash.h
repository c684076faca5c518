/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * FNV-1a, 64 bits: what the ranks of a communicator compare instead of the things themselves
 * (the parameters and tuning rules that choose an algorithm, each rank's network interfaces).
 * Not for anything a collision would make wrong: a collision only makes ranks think equal what
 * differs.
 */
#ifndef COLL_GPU_HASH_H
#define COLL_GPU_HASH_H

#include <stddef.h>
#include <stdint.h>

#define COLL_GPU_HASH_SEED 14695981039346656037ULL

/* hash (a seed or an earlier result) extended by len bytes at p. */
static inline uint64_t coll_gpu_hash_bytes(uint64_t hash, const void *p, size_t len) {
    const unsigned char *bytes = (const unsigned char *)p;

    for (size_t b = 0; b < len; ++b) {
        hash = (hash ^ bytes[b]) * 1099511628211ULL;
    }
    return hash;
}

#endif /* COLL_GPU_HASH_H */

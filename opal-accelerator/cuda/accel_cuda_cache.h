/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classification cache of the CUDA backend: the allocation ranges seen
 * recently, so that a pointer into one of them is classified without a full
 * cuPointerGetAttributes.  Pure C, no CUDA: the driver queries come in as
 * function pointers, so the policy is unit-tested with a fake driver.
 *
 * A bounded set (capacity fixed at creation, e.g. 64) of non-overlapping
 * ranges, kept sorted by base: lookup is a binary search under a read lock
 * (concurrent lookups do not serialize); each hit stamps the entry with a
 * relaxed atomic counter, and an insert into a full cache evicts the entry
 * with the oldest stamp (least recently used).
 */
#ifndef ACCEL_CUDA_CACHE_H
#define ACCEL_CUDA_CACHE_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_CUDA_CACHE_DEFAULT_CAPACITY 64

typedef struct accel_cuda_cache accel_cuda_cache_t;

typedef struct {
    uint64_t hits;        /* lookups that found a range */
    uint64_t misses;      /* lookups that did not */
    uint64_t evictions;   /* entries dropped to make room (LRU) */
    uint64_t invalidated; /* entries dropped as stale: freed, or reused by a new allocation */
} accel_cuda_cache_stats_t;

/* Full classification of ptr (e.g. cuPointerGetAttributes). */
typedef accel_status_t (*accel_cuda_cache_query_full_func_t)(const void *ptr, void *ctx,
                                                             accel_mem_attr_t *attr_p);

/* The buffer id of the allocation ptr is in now (e.g. cuPointerGetAttribute
 * BUFFER_ID); anything but ACCEL_OK means "no allocation there any more". */
typedef accel_status_t (*accel_cuda_cache_query_buffer_id_func_t)(const void *ptr, void *ctx,
                                                                  uint64_t *buffer_id_p);

ACCEL_API accel_status_t accel_cuda_cache_create(size_t capacity, accel_cuda_cache_t **cache_p);
ACCEL_API void accel_cuda_cache_destroy(accel_cuda_cache_t *cache);

/* Copy of the entry whose range holds ptr into *attr_p; false on a miss.
 * (A copy, not a pointer into the cache: another thread may evict the entry.) */
ACCEL_API bool accel_cuda_cache_lookup(accel_cuda_cache_t *cache, const void *ptr,
                                       accel_mem_attr_t *attr_p);

/* Remember an allocation (attr->base/size/buffer_id set, size > 0).  Entries
 * whose ranges overlap it are stale and dropped; a full cache evicts its least
 * recently used entry. */
ACCEL_API void accel_cuda_cache_insert(accel_cuda_cache_t *cache, const accel_mem_attr_t *attr);

/* Forget every entry overlapping [base, base + size), e.g. on free. */
ACCEL_API void accel_cuda_cache_remove(accel_cuda_cache_t *cache, uintptr_t base, size_t size);

ACCEL_API void accel_cuda_cache_clear(accel_cuda_cache_t *cache);
ACCEL_API size_t accel_cuda_cache_count(accel_cuda_cache_t *cache);
ACCEL_API void accel_cuda_cache_get_stats(accel_cuda_cache_t *cache,
                                          accel_cuda_cache_stats_t *stats_p);

/*
 * Classify ptr through the cache.  On a hit the entry is checked with one
 * query_buffer_id(): the same id means the allocation is still the one
 * remembered; another id (or an error) means it was freed and the range
 * reused (or not), so the entry is dropped and query_full() decides.  What
 * query_full() finds is remembered when it is an allocation (type other than
 * HOST, buffer id and size non-zero).  Returns query_full()'s status on a miss.
 */
ACCEL_API accel_status_t accel_cuda_cache_classify(
    accel_cuda_cache_t *cache, const void *ptr, accel_cuda_cache_query_full_func_t query_full,
    accel_cuda_cache_query_buffer_id_func_t query_buffer_id, void *ctx, accel_mem_attr_t *attr_p);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_CUDA_CACHE_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classification cache of the CUDA backend (see accel_cuda_cache.h).
 */
#define _GNU_SOURCE /* pthread_rwlock_t under -std=c11 */

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel_cuda_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    accel_mem_attr_t attr;
    uint64_t last_use; /* written under the read lock: __atomic accesses only */
} accel_cuda_cache_entry_t;

struct accel_cuda_cache {
    /* Lookups share the lock; insert/remove/clear take it alone, so an entry
     * is never moved while it is read. */
    pthread_rwlock_t lock;
    size_t capacity;
    size_t count;
    uint64_t clock;                    /* LRU stamps; __atomic */
    accel_cuda_cache_stats_t stats;    /* hits/misses: __atomic; the rest under the write lock */
    accel_cuda_cache_entry_t *entries; /* [count], sorted by base, ranges disjoint */
};

accel_status_t accel_cuda_cache_create(size_t capacity, accel_cuda_cache_t **cache_p) {
    accel_cuda_cache_t *cache;

    if (capacity == 0) {
        return ACCEL_ERR_INVALID;
    }
    cache = calloc(1, sizeof(*cache));
    if (cache == NULL) {
        goto err;
    }
    cache->entries = calloc(capacity, sizeof(cache->entries[0]));
    if (cache->entries == NULL) {
        goto err_free_cache;
    }
    if (pthread_rwlock_init(&cache->lock, NULL) != 0) {
        goto err_free_entries;
    }
    cache->capacity = capacity;
    *cache_p = cache;
    return ACCEL_OK;

err_free_entries:
    free(cache->entries);
err_free_cache:
    free(cache);
err:
    return ACCEL_ERR_NO_MEMORY;
}

void accel_cuda_cache_destroy(accel_cuda_cache_t *cache) {
    if (cache == NULL) {
        return;
    }
    pthread_rwlock_destroy(&cache->lock);
    free(cache->entries);
    free(cache);
}

/* Index of the last entry with base <= addr, or -1.  Lock held. */
static ptrdiff_t accel_cuda_cache_find(const accel_cuda_cache_t *cache, uintptr_t addr) {
    size_t lo = 0, hi = cache->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cache->entries[mid].attr.base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (ptrdiff_t)lo - 1;
}

static void accel_cuda_cache_erase(accel_cuda_cache_t *cache, size_t i, size_t n) {
    memmove(&cache->entries[i], &cache->entries[i + n],
            (cache->count - i - n) * sizeof(cache->entries[0]));
    cache->count -= n;
}

/* Drop the entries overlapping [base, base + size); returns how many.  Write lock held. */
static size_t accel_cuda_cache_erase_range(accel_cuda_cache_t *cache, uintptr_t base, size_t size) {
    uintptr_t limit = (base + size < base) ? UINTPTR_MAX : base + size;
    ptrdiff_t first = accel_cuda_cache_find(cache, base);
    size_t i, end;

    /* The entry starting at or before base overlaps if it reaches past base. */
    if ((first < 0) ||
        (base - cache->entries[first].attr.base >= cache->entries[first].attr.size)) {
        ++first;
    }
    i = (size_t)first;
    end = i;
    while ((end < cache->count) && (cache->entries[end].attr.base < limit)) {
        ++end;
    }
    if (end > i) {
        accel_cuda_cache_erase(cache, i, end - i);
    }
    return end - i;
}

bool accel_cuda_cache_lookup(accel_cuda_cache_t *cache, const void *ptr, accel_mem_attr_t *attr_p) {
    uintptr_t addr = (uintptr_t)ptr;
    accel_cuda_cache_entry_t *entry;
    ptrdiff_t i;
    bool hit = false;

    pthread_rwlock_rdlock(&cache->lock);
    i = accel_cuda_cache_find(cache, addr);
    if (i >= 0) {
        entry = &cache->entries[i];
        if (addr - entry->attr.base < entry->attr.size) {
            *attr_p = entry->attr;
            __atomic_store_n(&entry->last_use,
                             __atomic_add_fetch(&cache->clock, 1, __ATOMIC_RELAXED),
                             __ATOMIC_RELAXED);
            hit = true;
        }
    }
    pthread_rwlock_unlock(&cache->lock);

    __atomic_add_fetch(hit ? &cache->stats.hits : &cache->stats.misses, 1, __ATOMIC_RELAXED);
    return hit;
}

void accel_cuda_cache_insert(accel_cuda_cache_t *cache, const accel_mem_attr_t *attr) {
    accel_cuda_cache_entry_t *entry;
    size_t i, lru;

    if ((attr->size == 0) || (attr->base + attr->size < attr->base)) {
        return;
    }

    pthread_rwlock_wrlock(&cache->lock);
    /* Allocations do not overlap: whatever does is a freed one. */
    cache->stats.invalidated += accel_cuda_cache_erase_range(cache, attr->base, attr->size);

    if (cache->count == cache->capacity) {
        lru = 0;
        for (i = 1; i < cache->count; ++i) {
            if (__atomic_load_n(&cache->entries[i].last_use, __ATOMIC_RELAXED) <
                __atomic_load_n(&cache->entries[lru].last_use, __ATOMIC_RELAXED)) {
                lru = i;
            }
        }
        accel_cuda_cache_erase(cache, lru, 1);
        ++cache->stats.evictions;
    }

    i = (size_t)(accel_cuda_cache_find(cache, attr->base) + 1);
    memmove(&cache->entries[i + 1], &cache->entries[i],
            (cache->count - i) * sizeof(cache->entries[0]));
    ++cache->count;
    entry = &cache->entries[i];
    entry->attr = *attr;
    entry->last_use = __atomic_add_fetch(&cache->clock, 1, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&cache->lock);
}

void accel_cuda_cache_remove(accel_cuda_cache_t *cache, uintptr_t base, size_t size) {
    if (size == 0) {
        size = 1;
    }
    pthread_rwlock_wrlock(&cache->lock);
    accel_cuda_cache_erase_range(cache, base, size);
    pthread_rwlock_unlock(&cache->lock);
}

/* Drop the entry at base if it still is the allocation buffer_id (another
 * thread may have replaced it already). */
static void accel_cuda_cache_invalidate(accel_cuda_cache_t *cache, uintptr_t base,
                                        uint64_t buffer_id) {
    ptrdiff_t i;

    pthread_rwlock_wrlock(&cache->lock);
    i = accel_cuda_cache_find(cache, base);
    if ((i >= 0) && (cache->entries[i].attr.base == base) &&
        (cache->entries[i].attr.buffer_id == buffer_id)) {
        accel_cuda_cache_erase(cache, (size_t)i, 1);
        ++cache->stats.invalidated;
    }
    pthread_rwlock_unlock(&cache->lock);
}

void accel_cuda_cache_clear(accel_cuda_cache_t *cache) {
    pthread_rwlock_wrlock(&cache->lock);
    cache->count = 0;
    pthread_rwlock_unlock(&cache->lock);
}

size_t accel_cuda_cache_count(accel_cuda_cache_t *cache) {
    size_t count;

    pthread_rwlock_rdlock(&cache->lock);
    count = cache->count;
    pthread_rwlock_unlock(&cache->lock);
    return count;
}

void accel_cuda_cache_get_stats(accel_cuda_cache_t *cache, accel_cuda_cache_stats_t *stats_p) {
    pthread_rwlock_rdlock(&cache->lock);
    stats_p->hits = __atomic_load_n(&cache->stats.hits, __ATOMIC_RELAXED);
    stats_p->misses = __atomic_load_n(&cache->stats.misses, __ATOMIC_RELAXED);
    stats_p->evictions = cache->stats.evictions;
    stats_p->invalidated = cache->stats.invalidated;
    pthread_rwlock_unlock(&cache->lock);
}

accel_status_t accel_cuda_cache_classify(accel_cuda_cache_t *cache, const void *ptr,
                                         accel_cuda_cache_query_full_func_t query_full,
                                         accel_cuda_cache_query_buffer_id_func_t query_buffer_id,
                                         void *ctx, accel_mem_attr_t *attr_p) {
    accel_mem_attr_t cached;
    accel_status_t status;
    uint64_t buffer_id;

    if (cache == NULL) {
        return query_full(ptr, ctx, attr_p);
    }

    if (accel_cuda_cache_lookup(cache, ptr, &cached)) {
        /* One cheap query proves the range still is that allocation. */
        if ((query_buffer_id(ptr, ctx, &buffer_id) == ACCEL_OK) &&
            (buffer_id == cached.buffer_id)) {
            *attr_p = cached;
            return ACCEL_OK;
        }
        accel_cuda_cache_invalidate(cache, cached.base, cached.buffer_id);
    }

    status = query_full(ptr, ctx, attr_p);
    if ((status == ACCEL_OK) && (attr_p->type != ACCEL_MEM_HOST) && (attr_p->buffer_id != 0) &&
        (attr_p->size != 0)) {
        accel_cuda_cache_insert(cache, attr_p);
    }
    return status;
}

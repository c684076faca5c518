/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the CUDA backend's classification cache and its validation
 * policy (accel_cuda_cache_classify), with a fake driver: a table of
 * allocations with buffer ids, freed and reused at will.  No CUDA needed.
 *
 * Exit status: 0 all checks passed, 1 a check failed.  One line per check,
 * then "N passed, M failed".
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel.h"
#include "cuda/accel_cuda_cache.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_check.h"

/* ---- fake driver ------------------------------------------------------- */

#define FAKE_MAX 64

typedef struct {
    accel_mem_attr_t allocs[FAKE_MAX];
    bool live[FAKE_MAX];
    uint64_t next_id;
    uint64_t full_calls; /* __atomic: the concurrent test calls from several threads */
    uint64_t id_calls;
} fake_driver_t;

static fake_driver_t fake = {.next_id = 100};

static const accel_mem_attr_t *fake_find(uintptr_t addr) {
    for (int i = 0; i < FAKE_MAX; ++i) {
        const accel_mem_attr_t *a = &fake.allocs[i];
        if (fake.live[i] && (addr - a->base < a->size)) {
            return a;
        }
    }
    return NULL;
}

static uintptr_t fake_alloc(uintptr_t base, size_t size, accel_mem_type_t type, int device) {
    for (int i = 0; i < FAKE_MAX; ++i) {
        if (!fake.live[i]) {
            fake.live[i] = true;
            fake.allocs[i] = (accel_mem_attr_t){.type = type,
                                                .device = device,
                                                .base = base,
                                                .size = size,
                                                .buffer_id = fake.next_id++};
            return base;
        }
    }
    abort();
}

static void fake_free(uintptr_t base) {
    for (int i = 0; i < FAKE_MAX; ++i) {
        if (fake.live[i] && (fake.allocs[i].base == base)) {
            fake.live[i] = false;
            return;
        }
    }
    abort();
}

static uint64_t fake_id(uintptr_t addr) {
    const accel_mem_attr_t *a = fake_find(addr);

    return (a != NULL) ? a->buffer_id : 0;
}

/* As cuPointerGetAttributes: never fails, unknown memory is host. */
static accel_status_t fake_query_full(const void *ptr, void *ctx, accel_mem_attr_t *attr_p) {
    const accel_mem_attr_t *a = fake_find((uintptr_t)ptr);

    (void)ctx;
    __atomic_add_fetch(&fake.full_calls, 1, __ATOMIC_RELAXED);
    if (a != NULL) {
        *attr_p = *a;
    } else {
        *attr_p = (accel_mem_attr_t){.type = ACCEL_MEM_HOST, .device = -1};
    }
    return ACCEL_OK;
}

/* As cuPointerGetAttribute(BUFFER_ID): fails for memory CUDA does not know. */
static accel_status_t fake_query_buffer_id(const void *ptr, void *ctx, uint64_t *buffer_id_p) {
    const accel_mem_attr_t *a = fake_find((uintptr_t)ptr);

    (void)ctx;
    __atomic_add_fetch(&fake.id_calls, 1, __ATOMIC_RELAXED);
    if (a == NULL) {
        return ACCEL_ERR_INVALID;
    }
    *buffer_id_p = a->buffer_id;
    return ACCEL_OK;
}

static accel_status_t classify(accel_cuda_cache_t *cache, uintptr_t addr, accel_mem_attr_t *attr) {
    return accel_cuda_cache_classify(cache, (const void *)addr, fake_query_full,
                                     fake_query_buffer_id, NULL, attr);
}

static bool in_cache(accel_cuda_cache_t *cache, uintptr_t addr) {
    accel_mem_attr_t attr;

    return accel_cuda_cache_lookup(cache, (const void *)addr, &attr);
}

/* ---- tests -------------------------------------------------------------- */

#define MiB ((uintptr_t)1 << 20)
#define A_BASE (0x7f0000000000ULL)

static void test_basic(void) {
    accel_cuda_cache_t *cache = NULL;
    accel_mem_attr_t attr;
    accel_cuda_cache_stats_t stats;
    uint64_t full0, id0;
    int host_var;
    uintptr_t a;

    CHECK(accel_cuda_cache_create(0, &cache) == ACCEL_ERR_INVALID, "capacity 0 is refused");
    CHECK(accel_cuda_cache_create(4, &cache) == ACCEL_OK, "create a cache of 4");

    CHECK(classify(cache, (uintptr_t)&host_var, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_HOST &&
              attr.device == -1,
          "host pointer: host");
    CHECK(accel_cuda_cache_count(cache) == 0, "host memory is not cached");

    a = fake_alloc(A_BASE, MiB, ACCEL_MEM_DEVICE, 0);
    full0 = fake.full_calls;
    id0 = fake.id_calls;
    CHECK(classify(cache, a + 16, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE &&
              attr.base == a && attr.size == MiB && attr.device == 0,
          "device pointer: miss, full query");
    CHECK(fake.full_calls == full0 + 1 && fake.id_calls == id0, "a miss costs one full query");
    CHECK(accel_cuda_cache_count(cache) == 1, "the allocation is remembered");
    CHECK(classify(cache, a + MiB - 1, &attr) == ACCEL_OK && attr.base == a &&
              attr.buffer_id == fake_id(a),
          "interior pointer: hit");
    CHECK(fake.full_calls == full0 + 1 && fake.id_calls == id0 + 1,
          "a hit costs one buffer-id query, no full query");
    CHECK(!in_cache(cache, a + MiB) && !in_cache(cache, a - 1),
          "one past the end and one before the start miss");

    accel_cuda_cache_get_stats(cache, &stats);
    CHECK(stats.hits == 1 && stats.misses == 4 && stats.evictions == 0,
          "stats: %" PRIu64 " hits %" PRIu64 " misses", stats.hits, stats.misses);

    accel_cuda_cache_remove(cache, a, MiB);
    CHECK(accel_cuda_cache_count(cache) == 0 && !in_cache(cache, a), "remove on free");
    fake_free(a);

    {
        accel_cuda_cache_t *none = NULL;
        CHECK(accel_cuda_cache_classify(none, &host_var, fake_query_full, fake_query_buffer_id,
                                        NULL, &attr) == ACCEL_OK &&
                  attr.type == ACCEL_MEM_HOST,
              "no cache: full query only");
    }
    accel_cuda_cache_destroy(cache);
}

static void test_lru(void) {
    accel_cuda_cache_t *cache = NULL;
    accel_cuda_cache_stats_t stats;
    accel_mem_attr_t attr;
    uintptr_t p[6];

    accel_cuda_cache_create(4, &cache);
    for (int i = 0; i < 6; ++i) {
        p[i] = fake_alloc(A_BASE + (uintptr_t)i * 4 * MiB, MiB, ACCEL_MEM_DEVICE, 0);
    }
    for (int i = 0; i < 4; ++i) {
        classify(cache, p[i], &attr);
    }
    CHECK(accel_cuda_cache_count(cache) == 4, "cache filled to its bound");
    classify(cache, p[0], &attr); /* p[1] is now the least recently used */
    classify(cache, p[4], &attr);
    CHECK(accel_cuda_cache_count(cache) == 4, "inserting into a full cache keeps the bound");
    CHECK(!in_cache(cache, p[1]), "the least recently used entry was evicted");
    CHECK(in_cache(cache, p[0]) && in_cache(cache, p[2]) && in_cache(cache, p[3]) &&
              in_cache(cache, p[4]),
          "the others stay");
    /* in_cache() stamped p0, p2, p3, p4 in that order: p0 is the oldest now. */
    classify(cache, p[5], &attr);
    CHECK(!in_cache(cache, p[0]) && in_cache(cache, p[5]), "lookups count as use too");
    accel_cuda_cache_get_stats(cache, &stats);
    CHECK(stats.evictions == 2, "two evictions counted");

    accel_cuda_cache_clear(cache);
    CHECK(accel_cuda_cache_count(cache) == 0 && !in_cache(cache, p[5]), "clear");
    for (int i = 0; i < 6; ++i) {
        fake_free(p[i]);
    }
    accel_cuda_cache_destroy(cache);
}

static void test_reuse(void) {
    accel_cuda_cache_t *cache = NULL;
    accel_cuda_cache_stats_t stats;
    accel_mem_attr_t attr;
    uint64_t old_id, full0;
    uintptr_t a = A_BASE + 64 * MiB;

    accel_cuda_cache_create(8, &cache);

    fake_alloc(a, 2 * MiB, ACCEL_MEM_DEVICE, 0);
    classify(cache, a, &attr);
    old_id = attr.buffer_id;
    /* Freed behind the cache's back (cudaFree by the application) and reused. */
    fake_free(a);
    fake_alloc(a, 2 * MiB, ACCEL_MEM_MANAGED, 0);
    full0 = fake.full_calls;
    CHECK(classify(cache, a + 100, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_MANAGED &&
              attr.buffer_id != old_id && attr.buffer_id == fake_id(a),
          "device 0 -> managed at the same address: new classification");
    CHECK(fake.full_calls == full0 + 1, "the stale hit fell back to a full query");
    CHECK(classify(cache, a, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_MANAGED &&
              fake.full_calls == full0 + 1,
          "the new allocation is cached");

    fake_free(a);
    fake_alloc(a, 2 * MiB, ACCEL_MEM_DEVICE, 1);
    CHECK(classify(cache, a, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE &&
              attr.device == 1,
          "managed -> device 1 at the same address");

    fake_free(a);
    fake_alloc(a, 2 * MiB, ACCEL_MEM_DEVICE, 0);
    CHECK(classify(cache, a + MiB, &attr) == ACCEL_OK && attr.device == 0 &&
              attr.buffer_id == fake_id(a),
          "device 1 -> device 0 at the same address");

    fake_free(a);
    CHECK(classify(cache, a, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_HOST &&
              attr.buffer_id == 0,
          "device -> host after free");
    CHECK(!in_cache(cache, a), "the freed allocation was dropped");

    /* Reused with another size: one larger allocation over two cached ones. */
    fake_alloc(a, MiB, ACCEL_MEM_DEVICE, 0);
    fake_alloc(a + MiB, MiB, ACCEL_MEM_DEVICE, 0);
    classify(cache, a, &attr);
    classify(cache, a + MiB, &attr);
    CHECK(accel_cuda_cache_count(cache) == 2, "two neighbours cached");
    fake_free(a);
    fake_free(a + MiB);
    fake_alloc(a, 2 * MiB, ACCEL_MEM_HOST_PINNED, -1);
    CHECK(classify(cache, a + MiB + 5, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_HOST_PINNED &&
              attr.base == a && attr.size == 2 * MiB,
          "one allocation over two freed ones: new classification");
    CHECK(accel_cuda_cache_count(cache) == 1 && in_cache(cache, a) && in_cache(cache, a + MiB),
          "the overlapping stale entries are gone");
    accel_cuda_cache_get_stats(cache, &stats);
    CHECK(stats.invalidated >= 5, "stale entries counted (%" PRIu64 ")", stats.invalidated);

    /* Remove by range drops whatever overlaps it. */
    accel_cuda_cache_remove(cache, a + MiB, 1);
    CHECK(accel_cuda_cache_count(cache) == 0, "remove of an interior byte drops the entry");
    fake_free(a);

    /* A range at the top of the address space must not wrap. */
    attr = (accel_mem_attr_t){
        .type = ACCEL_MEM_DEVICE, .base = UINTPTR_MAX - 10, .size = 100, .buffer_id = 1};
    accel_cuda_cache_insert(cache, &attr);
    CHECK(accel_cuda_cache_count(cache) == 0 && !in_cache(cache, 5), "wrapping range refused");
    accel_cuda_cache_destroy(cache);
}

/* ---- concurrency -------------------------------------------------------- */

#define CONC_ALLOCS 12
#define CONC_THREADS 4
#define CONC_ITERS 200000

typedef struct {
    accel_cuda_cache_t *cache;
    uintptr_t bases[CONC_ALLOCS];
    unsigned seed;
    long errors;
} conc_arg_t;

static void *conc_main(void *arg) {
    conc_arg_t *t = arg;
    accel_mem_attr_t attr;

    for (long i = 0; i < CONC_ITERS; ++i) {
        unsigned r = (unsigned)rand_r(&t->seed);
        uintptr_t base = t->bases[r % CONC_ALLOCS];
        uintptr_t addr = base + (r >> 8) % MiB;

        if ((r % 1000) == 0) {
            accel_cuda_cache_remove(t->cache, base, MiB);
            continue;
        }
        if ((classify(t->cache, addr, &attr) != ACCEL_OK) || (attr.base != base) ||
            (attr.buffer_id != fake_id(base)) || (attr.type != ACCEL_MEM_DEVICE)) {
            ++t->errors;
        }
    }
    return NULL;
}

static void test_concurrent(void) {
    accel_cuda_cache_t *cache = NULL;
    pthread_t th[CONC_THREADS];
    conc_arg_t args[CONC_THREADS];
    uintptr_t bases[CONC_ALLOCS];
    accel_cuda_cache_stats_t stats;
    long errors = 0;

    /* Fewer entries than allocations: lookups race with inserts and evictions. */
    accel_cuda_cache_create(8, &cache);
    for (int i = 0; i < CONC_ALLOCS; ++i) {
        bases[i] = fake_alloc(A_BASE + (uintptr_t)(i + 200) * 2 * MiB, MiB, ACCEL_MEM_DEVICE, 0);
    }
    for (int t = 0; t < CONC_THREADS; ++t) {
        args[t].cache = cache;
        memcpy(args[t].bases, bases, sizeof(bases));
        args[t].seed = (unsigned)t + 1;
        args[t].errors = 0;
        pthread_create(&th[t], NULL, conc_main, &args[t]);
    }
    for (int t = 0; t < CONC_THREADS; ++t) {
        pthread_join(th[t], NULL);
        errors += args[t].errors;
    }
    accel_cuda_cache_get_stats(cache, &stats);
    CHECK(errors == 0, "%d threads x %d classifications with evictions: %ld wrong", CONC_THREADS,
          CONC_ITERS, errors);
    CHECK(stats.hits > 0 && stats.evictions > 0 && accel_cuda_cache_count(cache) <= 8,
          "hits %" PRIu64 ", misses %" PRIu64 ", evictions %" PRIu64 ", within the bound",
          stats.hits, stats.misses, stats.evictions);
    for (int i = 0; i < CONC_ALLOCS; ++i) {
        fake_free(bases[i]);
    }
    accel_cuda_cache_destroy(cache);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_basic();
    test_lru();
    test_reuse();
    test_concurrent();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (test_failed == 0) ? 0 : 1;
}

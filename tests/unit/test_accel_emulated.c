/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the emulated accelerator backend (opal-accelerator).
 *
 * Exit status: 0 all checks passed, 1 a check failed.  One line per check,
 * then "N passed, M failed".
 *
 * Built a second time with -DACCEL_EMULATED_TEST_SHIM -shared (together with
 * accel.c and accel_emulated.c) it is a second copy of the backend, for the
 * check that two copies in one process share one state: the test finds it in
 * $ACCEL_EMULATED_SHIM, argv[1], or as libtest_accel_emulated_shim.so next to
 * the test program; without it that check is skipped.
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel.h"
#include "accel_emulated.h"
#include "accel_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef VALGRIND_DISABLE_ERROR_REPORTING
#define VALGRIND_DISABLE_ERROR_REPORTING
#define VALGRIND_ENABLE_ERROR_REPORTING
#endif

#define SHIM_API __attribute__((visibility("default")))

#ifdef ACCEL_EMULATED_TEST_SHIM

/* The second copy's entry points (everything else in it is hidden). */
SHIM_API const accel_ops_t *test_shim_init(void) {
    const accel_ops_t *ops = NULL;
    const char *reason;

    return (accel_init(ACCEL_BACKEND_EMULATED, &ops, &reason) == ACCEL_OK) ? ops : NULL;
}

SHIM_API void test_shim_finalize(void) { accel_finalize(); }

SHIM_API size_t test_shim_live_allocations(accel_mem_type_t type) {
    return accel_emulated_live_allocations(type);
}

SHIM_API void test_shim_inject_fault(accel_emulated_fault_t what, int n, bool repeat) {
    accel_emulated_inject_fault(what, n, repeat);
}

SHIM_API const accel_error_t *test_shim_last_error(void) { return accel_last_error(); }

#else /* !ACCEL_EMULATED_TEST_SHIM */

#include "test_thread_count.h"
#include "unit_check.h"

static const accel_ops_t *ops;

static bool last_error_is(const char *call, const char *error) {
    const accel_error_t *err = accel_last_error();

    return (strcmp(err->call, call) == 0) && (strcmp(err->error, error) == 0);
}

static bool is_host_attr(const accel_mem_attr_t *attr) {
    return (attr->type == ACCEL_MEM_HOST) && (attr->device == -1) && (attr->base == 0) &&
           (attr->size == 0) && (attr->buffer_id == 0);
}

/* Contents of device memory, read back through the backend. */
static bool device_has_pattern(void *dev, size_t len, unsigned seed) {
    void *tmp = malloc(len);
    bool ok;

    ok = (tmp != NULL) && (ops->memcpy(tmp, dev, len) == ACCEL_OK) && has_pattern(tmp, len, seed);
    free(tmp);
    return ok;
}

static int captured_level;
static char captured_msg[256];

static void capture_log(int level, const char *msg) {
    captured_level = level;
    snprintf(captured_msg, sizeof(captured_msg), "%s", msg);
}

static void test_names(void) {
    CHECK(strcmp(accel_mem_type_string(ACCEL_MEM_DEVICE), "device") == 0, "mem type name");
    CHECK(strcmp(accel_status_string(ACCEL_OK), "success") == 0, "status name");
    CHECK(accel_status_string((accel_status_t)99) != NULL, "unknown status has a name");
    CHECK(strcmp(accel_last_error()->call, "") == 0, "no last error at start");
}

static void test_auto_backend(void) {
    const accel_ops_t *auto_ops = NULL;
    const char *reason = NULL;
    accel_status_t status;

    status = accel_init(ACCEL_BACKEND_AUTO, &auto_ops, &reason);
    if (status == ACCEL_OK) {
        CHECK(strcmp(auto_ops->name, "cuda") == 0, "AUTO chose cuda (a GPU is present)");
        accel_finalize();
        return;
    }
    CHECK((status == ACCEL_ERR_NO_DRIVER) || (status == ACCEL_ERR_NO_DEVICE),
          "AUTO without a GPU fails: %s (%s)", accel_status_string(status), reason);
    CHECK((reason != NULL) && (reason[0] != '\0'), "AUTO says why: \"%s\"", reason);
#ifndef HAVE_CUDA
    CHECK(strcmp(reason, "built without CUDA support") == 0, "reason without CUDA support");
    status = accel_init(ACCEL_BACKEND_CUDA, &auto_ops, &reason);
    CHECK(status == ACCEL_ERR_NO_DRIVER, "CUDA without CUDA support: no driver");
#endif
}

static void test_init_refcount(void) {
    const accel_ops_t *again = NULL, *other = NULL;
    const char *reason = NULL;
    accel_status_t status;

    status = accel_init(ACCEL_BACKEND_EMULATED, &ops, &reason);
    if (!CHECK(status == ACCEL_OK, "init emulated: %s %s", accel_status_string(status),
               reason ? reason : "")) {
        exit(1);
    }
    CHECK(strcmp(ops->name, "emulated") == 0, "backend name is emulated");
    CHECK(ops->device_count() == 1, "device count is 1");

    status = accel_init(ACCEL_BACKEND_EMULATED, &again, &reason);
    CHECK((status == ACCEL_OK) && (again == ops), "second init returns the same ops");

    accel_set_log(capture_log, 1);
    status = accel_init(ACCEL_BACKEND_CUDA, &other, &reason);
    CHECK(status == ACCEL_ERR_INVALID, "another kind while emulated is active is refused");
    CHECK(strstr(reason, "already initialized") != NULL, "refusal says why: \"%s\"", reason);
    CHECK((captured_level == 1) && (captured_msg[0] != '\0'), "log sink got: \"%s\"", captured_msg);
    accel_set_log(NULL, 0);

    accel_finalize(); /* refcount back to 1: still usable */
    {
        void *p = NULL;
        status = ops->mem_alloc(ACCEL_MEM_DEVICE, 64, &p);
        CHECK((status == ACCEL_OK) && (ops->mem_free(p) == ACCEL_OK),
              "usable after one of two finalizes");
    }
}

static void test_classify(void) {
    static int static_var;
    int stack_var = 0;
    int *heap = malloc(sizeof(*heap));
    void *dev = NULL, *man = NULL, *pin = NULL;
    accel_mem_attr_t a, b, c, h;
    accel_status_t status;

    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 1000, &dev) == ACCEL_OK, "alloc device");
    CHECK(ops->mem_alloc(ACCEL_MEM_MANAGED, 5000, &man) == ACCEL_OK, "alloc managed");
    CHECK(ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 300, &pin) == ACCEL_OK, "alloc pinned");
    CHECK(((uintptr_t)dev % 256 == 0) && ((uintptr_t)man % 256 == 0) && ((uintptr_t)pin % 256 == 0),
          "allocations are 256-byte aligned");
    CHECK(accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 1 &&
              accel_emulated_live_allocations(ACCEL_MEM_MANAGED) == 1 &&
              accel_emulated_live_allocations(ACCEL_MEM_HOST_PINNED) == 1,
          "live allocation counters");

    status = ops->mem_query(dev, &a);
    CHECK((status == ACCEL_OK) && (a.type == ACCEL_MEM_DEVICE) && (a.device == 0) &&
              (a.base == (uintptr_t)dev) && (a.size == 1000) && (a.buffer_id != 0),
          "device pointer: device 0, base, size, id %" PRIu64, a.buffer_id);
    status = ops->mem_query(man, &b);
    CHECK((status == ACCEL_OK) && (b.type == ACCEL_MEM_MANAGED) && (b.device == 0) &&
              (b.base == (uintptr_t)man) && (b.size == 5000),
          "managed pointer");
    status = ops->mem_query(pin, &c);
    CHECK((status == ACCEL_OK) && (c.type == ACCEL_MEM_HOST_PINNED) && (c.device == -1) &&
              (c.base == (uintptr_t)pin) && (c.size == 300),
          "pinned pointer");
    CHECK((a.buffer_id != b.buffer_id) && (b.buffer_id != c.buffer_id) &&
              (a.buffer_id != c.buffer_id),
          "buffer ids differ");

    CHECK(ops->mem_query(&stack_var, &h) == ACCEL_OK && is_host_attr(&h), "stack pointer: host");
    CHECK(ops->mem_query(heap, &h) == ACCEL_OK && is_host_attr(&h), "heap pointer: host");
    CHECK(ops->mem_query(&static_var, &h) == ACCEL_OK && is_host_attr(&h), "static pointer: host");
    CHECK(ops->mem_query("literal", &h) == ACCEL_OK && is_host_attr(&h), "literal: host");
    CHECK(ops->mem_query(NULL, &h) == ACCEL_OK && is_host_attr(&h), "NULL: host");
    CHECK(ops->mem_query((void *)UINTPTR_MAX, &h) == ACCEL_OK && is_host_attr(&h),
          "top of the address space: host");

    CHECK(ops->mem_query((char *)dev + 1, &h) == ACCEL_OK && h.type == ACCEL_MEM_DEVICE &&
              h.base == (uintptr_t)dev && h.buffer_id == a.buffer_id,
          "interior device pointer");
    CHECK(ops->mem_query((char *)dev + 999, &h) == ACCEL_OK && h.buffer_id == a.buffer_id,
          "last byte of a device allocation");
    CHECK(ops->mem_query((char *)man + 4999, &h) == ACCEL_OK && h.type == ACCEL_MEM_MANAGED,
          "last byte of a managed allocation");
    status = ops->mem_query((char *)dev + 1000, &h);
    CHECK(status == ACCEL_ERR_INVALID, "one past the end of a device allocation: invalid");
    CHECK(last_error_is("emuPointerGetAttributes", "EMULATED_ERROR_INVALID_VALUE"),
          "last error: %s %s", accel_last_error()->call, accel_last_error()->error);
    CHECK(ops->mem_query((char *)dev + 4096 * 1024, &h) == ACCEL_ERR_INVALID,
          "unallocated address in the device window: invalid");

    /* Freed, then reallocated at the same address: the new allocation counts. */
    CHECK(ops->mem_free(dev) == ACCEL_OK, "free device");
    CHECK(ops->mem_query(dev, &h) == ACCEL_ERR_INVALID, "freed device pointer is not classified");
    {
        void *dev2 = NULL;
        CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 4096, &dev2) == ACCEL_OK, "realloc device");
        CHECK(dev2 == dev, "first fit reuses the freed address");
        status = ops->mem_query(dev2, &h);
        CHECK(status == ACCEL_OK && h.type == ACCEL_MEM_DEVICE && h.size == 4096 &&
                  h.buffer_id > a.buffer_id && h.buffer_id > c.buffer_id,
              "reused address has a new buffer id %" PRIu64 " and the new size", h.buffer_id);
        CHECK(ops->mem_query((char *)dev2 + 2000, &h) == ACCEL_OK,
              "interior of the new, larger allocation");
        CHECK(ops->mem_free(dev2) == ACCEL_OK, "free reallocated device");
    }
    CHECK(ops->mem_free(man) == ACCEL_OK, "free managed");
    {
        void *pin2 = NULL;
        CHECK(ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 300, &pin2) == ACCEL_OK, "alloc pinned again");
        CHECK(ops->mem_query(pin2, &h) == ACCEL_OK && h.type == ACCEL_MEM_HOST_PINNED &&
                  h.buffer_id != c.buffer_id,
              "pinned memory at a freed managed address classifies as pinned");
        CHECK(ops->mem_free(pin2) == ACCEL_OK, "free pinned again");
    }
    CHECK(ops->mem_free(pin) == ACCEL_OK, "free pinned");
    CHECK(ops->mem_query(pin, &h) == ACCEL_ERR_INVALID, "freed pinned pointer is not classified");
    CHECK(accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0 &&
              accel_emulated_live_allocations(ACCEL_MEM_MANAGED) == 0 &&
              accel_emulated_live_allocations(ACCEL_MEM_HOST_PINNED) == 0,
          "live allocation counters back to zero");
    free(heap);
}

static void test_alloc_errors(void) {
    void *p = (void *)0x1, *dev = NULL;
    int host_var;

    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 0, &p) == ACCEL_ERR_INVALID,
          "zero-length allocation is refused");
    CHECK(ops->mem_alloc(ACCEL_MEM_HOST, 64, &p) == ACCEL_ERR_INVALID,
          "allocating plain host memory is refused");
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, (size_t)1 << 40, &p) == ACCEL_ERR_NO_MEMORY,
          "1 TiB of device memory: out of memory");
    CHECK(last_error_is("emuMemAlloc", "EMULATED_ERROR_OUT_OF_MEMORY"), "out of memory error");
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, SIZE_MAX, &p) == ACCEL_ERR_NO_MEMORY,
          "SIZE_MAX bytes: out of memory, no overflow");
    CHECK(ops->mem_free(NULL) == ACCEL_OK, "free(NULL) is a no-op");
    CHECK(ops->mem_free(&host_var) == ACCEL_ERR_INVALID, "free of a host pointer is refused");
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 512, &dev) == ACCEL_OK, "alloc device");
    CHECK(ops->mem_free((char *)dev + 256) == ACCEL_ERR_INVALID,
          "free of an interior pointer is refused");
    CHECK(ops->mem_free(dev) == ACCEL_OK, "free device");
    CHECK(ops->mem_free(dev) == ACCEL_ERR_INVALID, "double free is refused");
    CHECK(last_error_is("emuMemFree", "EMULATED_ERROR_INVALID_VALUE"), "double free error");
}

static void test_allocator(void) {
    enum { N = 200 };
    void *p[N];
    size_t sz[N];
    void *a = NULL, *b = NULL, *c = NULL, *ab = NULL, *big = NULL;
    bool ok = true;

    srand(1);
    for (int i = 0; i < N; ++i) {
        sz[i] = 1 + (size_t)rand() % 100000;
        ok = ok && ops->mem_alloc((i % 3 == 0) ? ACCEL_MEM_MANAGED : ACCEL_MEM_DEVICE, sz[i],
                                  &p[i]) == ACCEL_OK;
    }
    CHECK(ok, "%d allocations of random size", N);
    /* Free every other one, then check the rest are intact and disjoint. */
    for (int i = 0; i < N; i += 2) {
        ok = ok && (ops->mem_free(p[i]) == ACCEL_OK);
    }
    for (int i = 1; ok && (i < N); i += 2) {
        accel_mem_attr_t attr;
        ok = (ops->mem_query(p[i], &attr) == ACCEL_OK) && (attr.base == (uintptr_t)p[i]) &&
             (attr.size == sz[i]);
        for (int j = 1; ok && (j < N); j += 2) {
            uintptr_t x = (uintptr_t)p[i], y = (uintptr_t)p[j];
            ok = (i == j) || (x + sz[i] <= y) || (y + sz[j] <= x);
        }
    }
    CHECK(ok, "remaining allocations keep their attributes and do not overlap");
    for (int i = 1; i < N; i += 2) {
        ok = ok && (ops->mem_free(p[i]) == ACCEL_OK);
    }
    CHECK(ok && accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0 &&
              accel_emulated_live_allocations(ACCEL_MEM_MANAGED) == 0,
          "all freed");

    /* Coalescing: two neighbours freed make room for one of their joint size. */
    ops->mem_alloc(ACCEL_MEM_DEVICE, 1024, &a);
    ops->mem_alloc(ACCEL_MEM_DEVICE, 1024, &b);
    ops->mem_alloc(ACCEL_MEM_DEVICE, 1024, &c);
    CHECK((uintptr_t)b == (uintptr_t)a + 1024 && (uintptr_t)c == (uintptr_t)b + 1024,
          "consecutive allocations are adjacent");
    ops->mem_free(a);
    ops->mem_free(b);
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 2048, &ab) == ACCEL_OK && ab == a,
          "freed neighbours coalesce");
    ops->mem_free(ab);
    ops->mem_free(c);
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, (size_t)31 << 30, &big) == ACCEL_OK,
          "31 GiB device allocation once all is freed");
    CHECK(ops->mem_free(big) == ACCEL_OK, "free the 31 GiB allocation");
}

static long rss_shmem_kib(void) {
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while ((f != NULL) && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "RssShmem: %ld kB", &kib) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib;
}

static void test_copies(void) {
    enum { LEN = 1000 };
    unsigned char host[LEN], back[LEN];
    void *d1 = NULL, *d2 = NULL, *d3 = NULL, *man = NULL, *pin = NULL;
    uint64_t count0, bytes0;
    accel_stream_h stream = NULL;

    ops->mem_alloc(ACCEL_MEM_DEVICE, LEN, &d1);
    ops->mem_alloc(ACCEL_MEM_DEVICE, LEN, &d2);
    ops->mem_alloc(ACCEL_MEM_DEVICE, LEN, &d3);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &man);
    ops->mem_alloc(ACCEL_MEM_HOST_PINNED, LEN, &pin);
    count0 = accel_emulated_copy_count();
    bytes0 = accel_emulated_copy_bytes();

    fill(host, LEN, 1);
    CHECK(ops->memcpy(d1, host, LEN) == ACCEL_OK, "H2D");
    memset(back, 0, LEN);
    CHECK(ops->memcpy(back, d1, LEN) == ACCEL_OK && has_pattern(back, LEN, 1), "D2H round trip");
    CHECK(ops->memcpy(d2, d1, LEN) == ACCEL_OK && device_has_pattern(d2, LEN, 1), "D2D");
    CHECK(ops->memcpy(man, d2, LEN) == ACCEL_OK && has_pattern(man, LEN, 1),
          "D2M, managed readable by the host");
    fill(man, LEN, 2);
    CHECK(ops->memcpy(d3, man, LEN) == ACCEL_OK && device_has_pattern(d3, LEN, 2),
          "M2D after a host write to managed");
    CHECK(ops->memcpy(pin, d3, LEN) == ACCEL_OK && has_pattern(pin, LEN, 2), "D2 pinned");
    CHECK(ops->memcpy((char *)d1 + 100, (char *)d3 + 200, 300) == ACCEL_OK, "interior D2D");
    CHECK(ops->memcpy(back, (char *)d1 + 100, 300) == ACCEL_OK &&
              memcmp(back, (unsigned char *)pin + 200, 300) == 0,
          "interior D2D copied the right bytes");
    CHECK(ops->stream_create(&stream) == ACCEL_OK, "stream for async copies");
    fill(host, LEN, 3);
    CHECK(ops->memcpy_async(d1, host, LEN, stream) == ACCEL_OK &&
              ops->stream_synchronize(stream) == ACCEL_OK && device_has_pattern(d1, LEN, 3),
          "async H2D on a stream");
    CHECK(ops->memcpy_async(d2, d1, LEN, NULL) == ACCEL_OK && device_has_pattern(d2, LEN, 3),
          "async D2D on the default stream");
    CHECK(accel_emulated_copy_count() - count0 == 14 &&
              accel_emulated_copy_bytes() - bytes0 == 14 * LEN - 2 * 700,
          "copy counters: %" PRIu64 " copies, %" PRIu64 " bytes",
          accel_emulated_copy_count() - count0, accel_emulated_copy_bytes() - bytes0);
    CHECK(ops->memcpy(d1, host, 0) == ACCEL_OK, "zero-length copy is a no-op");

    /* Bounds: nothing may be written when a range leaves its allocation. */
    fill(host, LEN, 4);
    ops->memcpy(d1, host, LEN);
    ops->memcpy(d2, host, LEN);
    count0 = accel_emulated_copy_count();
    {
        unsigned char big[LEN + 256];
        fill(big, sizeof(big), 9);
        CHECK(ops->memcpy(d1, big, LEN + 1) == ACCEL_ERR_INVALID, "H2D past the end: invalid");
        CHECK(last_error_is("emuMemcpy", "EMULATED_ERROR_INVALID_VALUE"), "last error %s %s",
              accel_last_error()->call, accel_last_error()->error);
        CHECK(ops->memcpy_async((char *)d1 + 900, big, 101, stream) == ACCEL_ERR_INVALID &&
                  last_error_is("emuMemcpyAsync", "EMULATED_ERROR_INVALID_VALUE"),
              "async interior copy past the end: invalid");
        CHECK(ops->memcpy(big, (char *)d1 + 1, LEN) == ACCEL_ERR_INVALID &&
                  has_pattern(big, sizeof(big), 9),
              "D2H reading past the end: invalid, nothing written");
        CHECK(ops->memcpy(d1, d2, LEN + 24) == ACCEL_ERR_INVALID, "D2D past the end: invalid");
        CHECK(ops->memcpy((char *)d1 + LEN, big, 1) == ACCEL_ERR_INVALID,
              "copy to one past the end: invalid");
        CHECK(ops->memcpy((char *)man + 1, big, LEN) == ACCEL_ERR_INVALID,
              "managed past the end: invalid");
        CHECK(ops->memcpy((void *)(0x200000000000ULL - 16), big, 32) == ACCEL_ERR_INVALID,
              "host range reaching into the device window: invalid");
        CHECK(ops->memcpy(d1, (void *)(uintptr_t)-16, 32) == ACCEL_ERR_INVALID,
              "wrapping range: invalid");
    }
    CHECK(device_has_pattern(d1, LEN, 4) && device_has_pattern(d2, LEN, 4),
          "refused copies wrote nothing");
    CHECK(accel_emulated_copy_count() - count0 == 2, "refused copies are not counted");
    ops->mem_free(d3);
    CHECK(ops->memcpy(d3, host, 16) == ACCEL_ERR_INVALID, "copy to freed memory: invalid");
    CHECK(ops->memcpy(host, d3, 16) == ACCEL_ERR_INVALID, "copy from freed memory: invalid");

    /* Freed memory goes back to the system. */
    {
        size_t len = (size_t)64 << 20;
        void *dbig = NULL;
        char *hbig = malloc(len);
        long before, touched, after;

        memset(hbig, 1, len);
        before = rss_shmem_kib();
        ops->mem_alloc(ACCEL_MEM_DEVICE, len, &dbig);
        ops->memcpy(dbig, hbig, len);
        touched = rss_shmem_kib();
        ops->mem_free(dbig);
        after = rss_shmem_kib();
        CHECK((before >= 0) && (touched - before >= 60 * 1024) && (touched - after >= 60 * 1024),
              "freed pages are released (RssShmem %ld -> %ld -> %ld KiB)", before, touched, after);
        free(hbig);
    }

    ops->stream_destroy(stream);
    ops->mem_free(d1);
    ops->mem_free(d2);
    ops->mem_free(man);
    ops->mem_free(pin);
}

static int run_child(void (*fn)(void *), void *arg) {
    int wstatus = 0;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    if ((pid < 0) || (waitpid(pid, &wstatus, 0) != pid)) {
        return -1;
    }
    return wstatus;
}

/* The fault a child takes: exit 42 for an access fault (SEGV_ACCERR: the page
 * is mapped, without permission) at the expected address.  A handler rather
 * than the default action: valgrind's would dump every page of the sparse
 * emulated memory into a core file. */
#define CHILD_EXIT_ACCERR 42
static void *child_fault_addr;

static void child_segv_handler(int sig, siginfo_t *info, void *uctx) {
    (void)sig;
    (void)uctx;
    VALGRIND_ENABLE_ERROR_REPORTING;
    _exit(((info->si_code == SEGV_ACCERR) && (info->si_addr == child_fault_addr))
              ? CHILD_EXIT_ACCERR
              : 43);
}

static void child_prepare_to_fault(void *ptr) {
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = child_segv_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    child_fault_addr = ptr;
    /* The fault is the point: not an error for valgrind (else it changes the exit code). */
    VALGRIND_DISABLE_ERROR_REPORTING;
}

static void child_read(void *ptr) {
    child_prepare_to_fault(ptr);
    (void)*(volatile char *)ptr;
}

static void child_write(void *ptr) {
    child_prepare_to_fault(ptr);
    *(volatile char *)ptr = 1;
    VALGRIND_ENABLE_ERROR_REPORTING;
}

/* memcpy2d_async: rows at strides, one operation (counted once), bounds over every row's
 * extent, pitches narrower than a row refused, the memcpy fault plan applies. */
static void test_copy2d(void) {
    enum { ROWS = 7, WIDTH = 24, SPITCH = 40, DPITCH = 64 };
    unsigned char host[ROWS * SPITCH], back[ROWS * DPITCH], want[ROWS * DPITCH];
    void *src = NULL, *dst = NULL;
    accel_stream_h stream = NULL;
    uint64_t count0, bytes0;
    bool rows_ok = true;

    CHECK(ops->memcpy2d_async != NULL, "the emulated backend has memcpy2d_async");
    if (ops->memcpy2d_async == NULL) {
        return;
    }
    ops->mem_alloc(ACCEL_MEM_DEVICE, sizeof(host), &src);
    ops->mem_alloc(ACCEL_MEM_DEVICE, sizeof(back), &dst);
    ops->stream_create(&stream);
    fill(host, sizeof(host), 5);
    memset(back, 0xee, sizeof(back));
    ops->memcpy(src, host, sizeof(host));
    ops->memcpy(dst, back, sizeof(back));
    memcpy(want, back, sizeof(want));
    for (int r = 0; r < ROWS; ++r) {
        memcpy(want + r * DPITCH, host + r * SPITCH, WIDTH);
    }
    count0 = accel_emulated_copy_count();
    bytes0 = accel_emulated_copy_bytes();
    CHECK(ops->memcpy2d_async(dst, DPITCH, src, SPITCH, WIDTH, ROWS, stream) == ACCEL_OK &&
              ops->stream_synchronize(stream) == ACCEL_OK,
          "D2D, %d rows of %d bytes, pitches %d -> %d", ROWS, WIDTH, SPITCH, DPITCH);
    CHECK(accel_emulated_copy_count() - count0 == 1 &&
              accel_emulated_copy_bytes() - bytes0 == ROWS * WIDTH,
          "one operation of %d bytes: %" PRIu64 " copies, %" PRIu64 " bytes", ROWS * WIDTH,
          accel_emulated_copy_count() - count0, accel_emulated_copy_bytes() - bytes0);
    ops->memcpy(back, dst, sizeof(back));
    for (size_t i = 0; i < sizeof(back); ++i) {
        rows_ok = rows_ok && (back[i] == want[i]);
    }
    CHECK(rows_ok, "every row in its place, the bytes between rows untouched");
    /* host to device: the rows gathered, packed (dpitch = width) */
    fill(host, sizeof(host), 6);
    CHECK(ops->memcpy2d_async(dst, WIDTH, host, SPITCH, WIDTH, ROWS, stream) == ACCEL_OK &&
              ops->stream_synchronize(stream) == ACCEL_OK,
          "H2D, rows packed");
    ops->memcpy(back, dst, ROWS * WIDTH);
    rows_ok = true;
    for (int r = 0; r < ROWS; ++r) {
        rows_ok = rows_ok && (memcmp(back + r * WIDTH, host + r * SPITCH, WIDTH) == 0);
    }
    CHECK(rows_ok, "H2D rows packed in order");
    count0 = accel_emulated_copy_count();
    CHECK(ops->memcpy2d_async(dst, DPITCH, src, SPITCH, WIDTH, ROWS + 1, stream) ==
              ACCEL_ERR_INVALID,
          "a last row past the destination's end: invalid");
    CHECK(ops->memcpy2d_async(dst, WIDTH - 1, src, SPITCH, WIDTH, 2, stream) == ACCEL_ERR_INVALID,
          "a pitch narrower than a row: invalid");
    CHECK(ops->memcpy2d_async(dst, (size_t)-1 / 2, src, SPITCH, WIDTH, 3, stream) ==
              ACCEL_ERR_INVALID,
          "an extent that wraps: invalid");
    CHECK(ops->memcpy2d_async(dst, DPITCH, src, SPITCH, 0, ROWS, stream) == ACCEL_OK &&
              ops->memcpy2d_async(dst, DPITCH, src, SPITCH, WIDTH, 0, stream) == ACCEL_OK,
          "no bytes: a no-op");
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, 1, false);
    CHECK(ops->memcpy2d_async(dst, DPITCH, src, SPITCH, WIDTH, ROWS, stream) != ACCEL_OK,
          "the memcpy fault plan fails a 2D copy");
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, 0, false);
    CHECK(accel_emulated_copy_count() == count0, "refused 2D copies are not counted");
    ops->stream_synchronize(stream);
    ops->stream_destroy(stream);
    ops->mem_free(src);
    ops->mem_free(dst);
}

static void test_prot_none(void) {
    void *dev = NULL, *man = NULL;
    int ws;

    ops->mem_alloc(ACCEL_MEM_DEVICE, 4096, &dev);
    ops->mem_alloc(ACCEL_MEM_MANAGED, 4096, &man);
    ws = run_child(child_read, dev);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_EXIT_ACCERR,
          "host read of device memory faults (SIGSEGV, SEGV_ACCERR; status 0x%x)", ws);
    ws = run_child(child_write, (char *)dev + 100);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_EXIT_ACCERR,
          "host write of device memory faults (status 0x%x)", ws);
    ws = run_child(child_write, man);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "host write of managed memory works");
    ops->mem_free(dev);
    ops->mem_free(man);
}

static void child_reinit(void *dev) {
    unsigned char buf[256];
    void *mine = NULL;
    void *hdr = NULL;
    accel_mem_attr_t attr;
    const char *reason;

    /* The first use in a fork child rebuilds the state: the parent's
     * allocations are gone and the child's memory is its own. */
    if (ops->mem_query(dev, &attr) != ACCEL_ERR_INVALID) {
        _exit(2);
    }
    if (ops->mem_alloc(ACCEL_MEM_DEVICE, 256, &mine) != ACCEL_OK) {
        _exit(3);
    }
    memset(buf, 0xee, sizeof(buf));
    if (ops->memcpy(mine, buf, sizeof(buf)) != ACCEL_OK) {
        _exit(4);
    }
    if (accel_emulated_state_attach(&hdr, &reason) != ACCEL_OK) {
        _exit(5);
    }
    _exit((accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 1) ? 0 : 6);
}

static void test_fork_child(void) {
    unsigned char buf[256];
    void *dev = NULL;
    accel_mem_attr_t attr;
    int ws;

    ops->mem_alloc(ACCEL_MEM_DEVICE, 256, &dev);
    fill(buf, sizeof(buf), 5);
    ops->memcpy(dev, buf, sizeof(buf));
    ws = run_child(child_reinit, dev);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
          "a forked child starts its own emulated state (status 0x%x)", ws);
    CHECK(device_has_pattern(dev, sizeof(buf), 5) && ops->mem_query(dev, &attr) == ACCEL_OK,
          "the parent's device memory is untouched by the child");
    ops->mem_free(dev);
}

static void test_faults(void) {
    unsigned char host[64] = {0};
    void *dev = NULL, *p = NULL;
    accel_stream_h stream = NULL;
    size_t live;

    ops->mem_alloc(ACCEL_MEM_DEVICE, sizeof(host), &dev);
    ops->stream_create(&stream);

    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, 3, false);
    CHECK(ops->memcpy(dev, host, sizeof(host)) == ACCEL_OK, "memcpy 1 of plan n=3 succeeds");
    CHECK(ops->memcpy(host, dev, sizeof(host)) == ACCEL_OK, "memcpy 2 of plan n=3 succeeds");
    CHECK(ops->memcpy_async(dev, host, sizeof(host), stream) == ACCEL_ERR_DEVICE,
          "memcpy 3 of plan n=3 fails");
    CHECK(last_error_is("emuMemcpyAsync", "EMULATED_ERROR_INJECTED"), "injected error: %s %s",
          accel_last_error()->call, accel_last_error()->error);
    CHECK(ops->memcpy(dev, host, sizeof(host)) == ACCEL_OK, "the plan cleared itself");

    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, 2, true);
    CHECK(ops->memcpy(dev, host, sizeof(host)) == ACCEL_OK, "repeat plan n=2: 1st succeeds");
    CHECK(ops->memcpy(dev, host, sizeof(host)) == ACCEL_ERR_DEVICE &&
              last_error_is("emuMemcpy", "EMULATED_ERROR_INJECTED"),
          "repeat plan: 2nd fails");
    CHECK(ops->memcpy(dev, host, sizeof(host)) == ACCEL_ERR_DEVICE, "repeat plan: 3rd fails");
    CHECK(ops->memcpy_async(dev, host, sizeof(host), NULL) == ACCEL_ERR_DEVICE,
          "repeat plan: 4th fails");
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_MEMCPY, 0, false);
    CHECK(ops->memcpy(dev, host, sizeof(host)) == ACCEL_OK, "cleared plan: succeeds");

    live = accel_emulated_live_allocations(ACCEL_MEM_HOST_PINNED);
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_PINNED_ALLOC, 1, false);
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 64, &p) == ACCEL_OK && ops->mem_free(p) == ACCEL_OK,
          "pinned plan leaves device allocations alone");
    CHECK(ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, &p) == ACCEL_ERR_DEVICE &&
              last_error_is("emuMemHostAlloc", "EMULATED_ERROR_INJECTED"),
          "pinned allocation fails by plan");
    CHECK(accel_emulated_live_allocations(ACCEL_MEM_HOST_PINNED) == live,
          "failed allocation is not counted");
    CHECK(ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, &p) == ACCEL_OK && ops->mem_free(p) == ACCEL_OK,
          "next pinned allocation succeeds");

    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_DEVICE_ALLOC, 1, true);
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 64, &p) == ACCEL_ERR_DEVICE &&
              last_error_is("emuMemAlloc", "EMULATED_ERROR_INJECTED"),
          "device allocation fails by plan");
    CHECK(ops->mem_alloc(ACCEL_MEM_MANAGED, 64, &p) == ACCEL_ERR_DEVICE &&
              last_error_is("emuMemAllocManaged", "EMULATED_ERROR_INJECTED"),
          "managed allocation fails by the device plan (repeat)");
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_DEVICE_ALLOC, 0, false);
    CHECK(ops->mem_alloc(ACCEL_MEM_MANAGED, 64, &p) == ACCEL_OK && ops->mem_free(p) == ACCEL_OK,
          "cleared device plan");

    ops->stream_destroy(stream);
    ops->mem_free(dev);
}

static void test_streams_events(void) {
    accel_stream_h s1 = NULL, s2 = NULL;
    accel_event_h e1 = NULL, e2 = NULL;
    size_t streams0 = accel_emulated_live_streams(), events0 = accel_emulated_live_events();

    CHECK(ops->stream_create(&s1) == ACCEL_OK && ops->stream_create(&s2) == ACCEL_OK && s1 != s2,
          "create two streams");
    CHECK(ops->event_create(&e1) == ACCEL_OK && ops->event_create(&e2) == ACCEL_OK,
          "create two events");
    CHECK(accel_emulated_live_streams() == streams0 + 2 &&
              accel_emulated_live_events() == events0 + 2,
          "live stream and event counters");
    CHECK(ops->event_synchronize(e1) == ACCEL_OK, "sync on a never recorded event");
    CHECK(ops->event_record(e1, s1) == ACCEL_OK && ops->event_record(e2, NULL) == ACCEL_OK,
          "record on a stream and on the default stream");
    CHECK(ops->event_synchronize(e1) == ACCEL_OK && ops->event_synchronize(e2) == ACCEL_OK,
          "event sync");
    CHECK(ops->stream_synchronize(s1) == ACCEL_OK && ops->stream_synchronize(NULL) == ACCEL_OK,
          "stream sync");
    CHECK(ops->stream_destroy(NULL) == ACCEL_ERR_INVALID &&
              last_error_is("emuStreamDestroy", "EMULATED_ERROR_INVALID_HANDLE"),
          "destroying the default stream is refused");
    CHECK(ops->event_record(NULL, s1) == ACCEL_ERR_INVALID, "recording a NULL event is refused");
    CHECK(ops->event_destroy(e1) == ACCEL_OK && ops->event_destroy(e2) == ACCEL_OK,
          "destroy events");
    CHECK(ops->stream_destroy(s1) == ACCEL_OK && ops->stream_destroy(s2) == ACCEL_OK,
          "destroy streams");
    CHECK(accel_emulated_live_streams() == streams0 && accel_emulated_live_events() == events0,
          "stream and event counters back");
}

/*
 * Asynchronous streams.  A stream is held back by a stream_wait_value32 on a
 * pinned flag, so that what must not have happened yet can be checked without
 * a race.  The flag is set by hold_release(), or by a timer thread after 2 s:
 * a backend that runs the wait in the caller (ACCEL_EMULATED_SYNC=1, or a
 * synchronous one) then fails the checks instead of hanging.
 */
typedef struct {
    uint32_t *flag;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool released;
    bool started;
} hold_t;

static void *hold_timer(void *arg) {
    hold_t *h = arg;
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    pthread_mutex_lock(&h->lock);
    while (!h->released && (pthread_cond_timedwait(&h->cond, &h->lock, &ts) == 0)) {
    }
    pthread_mutex_unlock(&h->lock);
    __atomic_store_n(h->flag, 1u, __ATOMIC_RELEASE);
    return NULL;
}

static bool hold_begin(hold_t *h) {
    memset(h, 0, sizeof(*h));
    if (ops->mem_alloc(ACCEL_MEM_HOST_PINNED, sizeof(uint32_t), (void **)&h->flag) != ACCEL_OK) {
        return false;
    }
    *h->flag = 0;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->started = (pthread_create(&h->thread, NULL, hold_timer, h) == 0);
    return h->started;
}

/* Hold stream until hold_release(). */
static bool hold_stream(hold_t *h, accel_stream_h stream) {
    return ops->stream_wait_value32(stream, h->flag, 1, ACCEL_WAIT_VALUE_GEQ) == ACCEL_OK;
}

static void hold_release(hold_t *h) {
    if (!h->started) {
        return;
    }
    pthread_mutex_lock(&h->lock);
    h->released = true;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    h->started = false;
}

static void hold_end(hold_t *h) {
    hold_release(h);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    ops->mem_free(h->flag);
}

static void test_async_copy(void) {
    enum { LEN = 4096 };
    unsigned char host[LEN];
    void *dev = NULL, *man = NULL, *red = NULL;
    accel_stream_h s = NULL;
    accel_event_h e = NULL;
    const void *srcs[2];
    bool done = true;
    hold_t h;

    ops->mem_alloc(ACCEL_MEM_DEVICE, LEN, &dev);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &man);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &red);
    ops->stream_create(&s);
    ops->event_create(&e);
    memset(man, 0, LEN);
    memset(red, 1, LEN);
    fill(host, LEN, 11);
    if (!CHECK(hold_begin(&h) && hold_stream(&h, s), "hold a stream with a wait on a flag")) {
        goto out;
    }
    srcs[0] = red;
    srcs[1] = man;
    CHECK(ops->memcpy_async(dev, host, LEN, s) == ACCEL_OK &&
              ops->memcpy_async(man, dev, LEN, s) == ACCEL_OK &&
              ops->reduce(red, srcs, 2, LEN, ACCEL_DT_UINT8, ACCEL_OP_BOR, s) == ACCEL_OK &&
              ops->event_record(e, s) == ACCEL_OK,
          "queue H2D, D2M, a reduction and an event behind the wait");
    fill(host, LEN, 12); /* the copy reads the source when it runs, as a GPU does */
    usleep(20000);
    CHECK(((unsigned char *)man)[0] == 0 && ((unsigned char *)man)[LEN - 1] == 0 &&
              ((unsigned char *)red)[7] == 1,
          "the destination is untouched while the stream is held (not synchronized)");
    CHECK(ops->event_query(e, &done) == ACCEL_OK && !done,
          "event_query: not complete while the stream is held");
    hold_release(&h);
    CHECK(ops->event_synchronize(e) == ACCEL_OK && ops->event_query(e, &done) == ACCEL_OK && done,
          "released: the event completes");
    CHECK(has_pattern(man, LEN, 12), "after the event, the copies' data is there");
    {
        bool ok = true;
        for (size_t i = 0; i < LEN; ++i) {
            ok = ok && (((unsigned char *)red)[i] == (unsigned char)(1 | (12 + i * 7)));
        }
        CHECK(ok, "and the reduction ran after them, in order");
    }
out:
    hold_end(&h);
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->mem_free(dev);
    ops->mem_free(man);
    ops->mem_free(red);
}

/* CUDA graphs, emulated: work queued while capturing is recorded, not run; every launch queues
 * it again (a reduction in place accumulates once per launch); events are refused while
 * capturing; ending without a capture, or beginning twice, is an error. */
static void test_graphs(void) {
    enum { N = 256 };
    int32_t *acc = NULL, *one = NULL, got[N];
    const void *srcs[2];
    accel_stream_h s = NULL;
    accel_event_h e = NULL;
    accel_graph_h g = NULL;
    bool capturing = false, ok = true;

    ops->mem_alloc(ACCEL_MEM_DEVICE, N * 4, (void **)&acc);
    ops->mem_alloc(ACCEL_MEM_MANAGED, N * 4, (void **)&one);
    ops->stream_create(&s);
    ops->event_create(&e);
    for (int i = 0; i < N; ++i) {
        got[i] = 0;
        one[i] = i;
    }
    ops->memcpy(acc, got, N * 4);
    srcs[0] = acc;
    srcs[1] = one;
    CHECK(ops->stream_begin_capture(s) == ACCEL_OK &&
              ops->stream_is_capturing(s, &capturing) == ACCEL_OK && capturing,
          "graphs: a capture begins, the stream says it captures");
    CHECK(ops->stream_begin_capture(s) == ACCEL_ERR_INVALID, "graphs: a second begin is refused");
    CHECK(ops->reduce(acc, srcs, 2, N, ACCEL_DT_INT32, ACCEL_OP_SUM, s) == ACCEL_OK,
          "graphs: a reduction recorded");
    CHECK(ops->event_record(e, s) == ACCEL_ERR_UNSUPPORTED,
          "graphs: an event record is refused while capturing");
    CHECK(ops->stream_end_capture(s, &g) == ACCEL_OK && (g != NULL) &&
              ops->stream_is_capturing(s, &capturing) == ACCEL_OK && !capturing,
          "graphs: the capture ends in a graph");
    ops->stream_synchronize(s);
    ops->memcpy(got, acc, N * 4);
    for (int i = 0; i < N; ++i) {
        ok = ok && (got[i] == 0);
    }
    CHECK(ok, "graphs: nothing ran at the capture");
    CHECK(ops->graph_launch(g, s) == ACCEL_OK && ops->graph_launch(g, s) == ACCEL_OK &&
              ops->graph_launch(g, s) == ACCEL_OK && ops->stream_synchronize(s) == ACCEL_OK,
          "graphs: three launches");
    ops->memcpy(got, acc, N * 4);
    for (int i = 0; i < N; ++i) {
        ok = ok && (got[i] == 3 * i);
    }
    CHECK(ok, "graphs: the recorded reduction ran once per launch");
    CHECK(ops->event_record(e, s) == ACCEL_OK && ops->event_synchronize(e) == ACCEL_OK,
          "graphs: the event refused while capturing records and completes after");
    CHECK(ops->stream_end_capture(s, &g) == ACCEL_ERR_INVALID, "graphs: an end without a begin");
    CHECK(ops->graph_destroy(g) == ACCEL_OK, "graphs: destroyed");
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->mem_free(acc);
    ops->mem_free(one);
}

/* What host functions saw: how many ran, the value each read, and the thread they ran on. */
typedef struct {
    int runs;
    int32_t seen[4];
    const int32_t *watch; /* managed memory the stream wrote before the function */
    int32_t *out;         /* pinned memory the stream reads after it */
    pthread_t thread;
} host_func_log_t;

static void host_func_note(void *arg) {
    host_func_log_t *log = arg;

    if (log->runs < 4) {
        log->seen[log->runs] = log->watch[0];
    }
    ++log->runs;
    log->out[0] = 100 + log->runs;
    log->thread = pthread_self();
}

/* stream_host_func: it runs once the work before it is done (it sees a held copy's result only
 * after the release), on a thread of the backend, and the work after it sees what it wrote;
 * captured into a graph it runs at every launch, not at the capture; a queuing fault or no
 * function: an error, and it never runs. */
static void test_host_funcs(void) {
    int32_t *dev = NULL, *man = NULL, *pin = NULL, *after = NULL, got = 0, v = 7;
    uint32_t *flag = NULL;
    host_func_log_t log;
    accel_stream_h s = NULL;
    accel_graph_h g = NULL;

    ops->mem_alloc(ACCEL_MEM_DEVICE, 64, (void **)&dev);
    ops->mem_alloc(ACCEL_MEM_DEVICE, 64, (void **)&after);
    ops->mem_alloc(ACCEL_MEM_MANAGED, 64, (void **)&man);
    ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, (void **)&pin);
    ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, (void **)&flag);
    ops->stream_create(&s);
    memset(&log, 0, sizeof(log));
    log.watch = man;
    log.out = pin;
    man[0] = 0;
    pin[0] = 0;
    flag[0] = 0;
    ops->memcpy(dev, &v, 4);
    CHECK(ops->stream_wait_value32(s, flag, 1, ACCEL_WAIT_VALUE_EQ) == ACCEL_OK &&
              ops->memcpy_async(man, dev, 4, s) == ACCEL_OK &&
              ops->stream_host_func(s, host_func_note, &log) == ACCEL_OK &&
              ops->memcpy_async(after, pin, 4, s) == ACCEL_OK,
          "host functions: a held copy, a function, a copy of what it wrote, queued");
    usleep(20000);
    CHECK(__atomic_load_n(&log.runs, __ATOMIC_ACQUIRE) == 0,
          "host functions: it has not run while the stream is held");
    __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    CHECK(ops->stream_synchronize(s) == ACCEL_OK && log.runs == 1 && log.seen[0] == 7 &&
              !pthread_equal(log.thread, pthread_self()),
          "host functions: released, it ran once on another thread and saw the copy before it");
    ops->memcpy(&got, after, 4);
    CHECK(got == 101, "host functions: the copy after it read what it wrote");

    CHECK(ops->stream_begin_capture(s) == ACCEL_OK &&
              ops->stream_host_func(s, host_func_note, &log) == ACCEL_OK &&
              ops->stream_end_capture(s, &g) == ACCEL_OK && ops->stream_synchronize(s) == ACCEL_OK,
          "host functions: one captured into a graph");
    CHECK(log.runs == 1, "host functions: the capture did not run it");
    CHECK(ops->graph_launch(g, s) == ACCEL_OK && ops->graph_launch(g, s) == ACCEL_OK &&
              ops->stream_synchronize(s) == ACCEL_OK && log.runs == 3,
          "host functions: two launches ran it twice");
    ops->graph_destroy(g);

    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_HOST_FUNC, 1, false);
    CHECK(ops->stream_host_func(s, host_func_note, &log) == ACCEL_ERR_DEVICE,
          "host functions: a queuing fault is an error");
    CHECK(ops->stream_host_func(s, NULL, &log) == ACCEL_ERR_INVALID,
          "host functions: no function is an error");
    CHECK(ops->stream_synchronize(s) == ACCEL_OK && log.runs == 3, "host functions: neither ran");
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_HOST_FUNC, 0, false);
    ops->stream_destroy(s);
    ops->mem_free(dev);
    ops->mem_free(after);
    ops->mem_free(man);
    ops->mem_free(pin);
    ops->mem_free(flag);
}

static void test_async_cross_stream(void) {
    enum { LEN = 1024 };
    unsigned char host[LEN];
    void *a = NULL, *b = NULL;
    accel_stream_h s1 = NULL, s2 = NULL;
    accel_event_h e1 = NULL, e2 = NULL, never = NULL;
    bool done = true;
    hold_t h;

    ops->mem_alloc(ACCEL_MEM_DEVICE, LEN, &a);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &b);
    ops->stream_create(&s1);
    ops->stream_create(&s2);
    ops->event_create(&e1);
    ops->event_create(&e2);
    ops->event_create(&never);
    fill(host, LEN, 20);
    ops->memcpy(a, host, LEN);
    memset(b, 0, LEN);
    fill(host, LEN, 21);
    if (!CHECK(hold_begin(&h) && hold_stream(&h, s1), "hold stream 1")) {
        goto out;
    }
    CHECK(ops->memcpy_async(a, host, LEN, s1) == ACCEL_OK &&
              ops->event_record(e1, s1) == ACCEL_OK && ops->stream_wait_event(s2, e1) == ACCEL_OK &&
              ops->memcpy_async(b, a, LEN, s2) == ACCEL_OK && ops->event_record(e2, s2) == ACCEL_OK,
          "stream 2 waits for an event of held stream 1, then copies what stream 1 wrote");
    CHECK(ops->stream_wait_event(s2, never) == ACCEL_OK,
          "waiting for an event never recorded is a no-op");
    usleep(20000);
    CHECK(ops->event_query(e2, &done) == ACCEL_OK && !done && ((unsigned char *)b)[0] == 0,
          "stream 2 is held by stream 1's event");
    hold_release(&h);
    CHECK(ops->stream_synchronize(s2) == ACCEL_OK && has_pattern(b, LEN, 21),
          "stream 2 copied after stream 1's copy (cross-stream order)");
    CHECK(ops->event_query(e1, &done) == ACCEL_OK && done, "stream 1's event is complete");
out:
    hold_end(&h);
    ops->event_destroy(e1);
    ops->event_destroy(e2);
    ops->event_destroy(never);
    ops->stream_destroy(s1);
    ops->stream_destroy(s2);
    ops->mem_free(a);
    ops->mem_free(b);
}

static void test_async_values(void) {
    enum { LEN = 512 };
    unsigned char host[LEN];
    uint32_t *devflag = NULL, *pin = NULL, back = 0;
    void *man = NULL;
    accel_stream_h s1 = NULL, s2 = NULL;
    hold_t h;

    ops->mem_alloc(ACCEL_MEM_DEVICE, 64, (void **)&devflag);
    ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, (void **)&pin);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &man);
    ops->stream_create(&s1);
    ops->stream_create(&s2);
    ops->memcpy(devflag, &back, sizeof(back));
    memset(pin, 0, 64);
    memset(man, 0, LEN);
    fill(host, LEN, 30);

    CHECK(ops->stream_wait_value32(s1, (uint32_t *)((char *)pin + 1), 1, ACCEL_WAIT_VALUE_EQ) ==
                  ACCEL_ERR_INVALID &&
              ops->stream_write_value32(s1, &pin[5], 1) == ACCEL_OK &&
              ops->stream_wait_value32(s1, pin, 1, (accel_wait_value_t)9) == ACCEL_ERR_INVALID,
          "value operations: misaligned flag and unknown condition refused");
    ops->stream_synchronize(s1);
    CHECK(__atomic_load_n(&pin[5], __ATOMIC_ACQUIRE) == 1, "write_value32 to pinned memory");

    if (!CHECK(hold_begin(&h) && hold_stream(&h, s1), "hold stream 1")) {
        goto out;
    }
    /* s1: (held) write 5 to a device flag; s2: wait for it, copy, write 7 to pinned. */
    CHECK(ops->stream_write_value32(s1, devflag, 5) == ACCEL_OK &&
              ops->stream_wait_value32(s2, devflag, 5, ACCEL_WAIT_VALUE_EQ) == ACCEL_OK &&
              ops->memcpy_async(man, host, LEN, s2) == ACCEL_OK &&
              ops->stream_write_value32(s2, &pin[1], 7) == ACCEL_OK,
          "queue a write on held stream 1 and a wait for it on stream 2");
    usleep(20000);
    back = 99;
    CHECK(__atomic_load_n(&pin[1], __ATOMIC_ACQUIRE) == 0 && ((unsigned char *)man)[0] == 0 &&
              ops->memcpy(&back, devflag, sizeof(back)) == ACCEL_OK && back == 0,
          "nothing written while stream 1 is held (flag %u)", back);
    hold_release(&h);
    CHECK(ops->stream_synchronize(s2) == ACCEL_OK &&
              __atomic_load_n(&pin[1], __ATOMIC_ACQUIRE) == 7 && has_pattern(man, LEN, 30),
          "released: stream 2 ran after stream 1's write, and wrote its own flag last");
    CHECK(ops->memcpy(&back, devflag, sizeof(back)) == ACCEL_OK && back == 5,
          "write_value32 to device memory");

    /* Conditions: each already holds, so the streams run through. */
    pin[2] = 5;
    pin[3] = 0x6;
    pin[4] = 0;
    CHECK(ops->stream_wait_value32(s1, &pin[2], 0xfffffff0u, ACCEL_WAIT_VALUE_GEQ) == ACCEL_OK &&
              ops->stream_wait_value32(s1, &pin[2], 5, ACCEL_WAIT_VALUE_GEQ) == ACCEL_OK &&
              ops->stream_wait_value32(s1, &pin[3], 0x2, ACCEL_WAIT_VALUE_AND) == ACCEL_OK &&
              ops->stream_wait_value32(s1, &pin[4], 0x1, ACCEL_WAIT_VALUE_NOR) == ACCEL_OK &&
              ops->stream_synchronize(s1) == ACCEL_OK,
          "GEQ (wrapping as a sequence number), AND, NOR");
out:
    hold_end(&h);
    ops->stream_destroy(s1);
    ops->stream_destroy(s2);
    ops->mem_free(devflag);
    ops->mem_free(pin);
    ops->mem_free(man);
}

static void test_async_default_stream(void) {
    enum { LEN = 256 };
    unsigned char host[LEN];
    void *man = NULL, *man2 = NULL;
    accel_stream_h s = NULL;
    accel_event_h e = NULL;
    bool done = true;
    hold_t h;

    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &man);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &man2);
    ops->stream_create(&s);
    ops->event_create(&e);
    memset(man, 0, LEN);
    memset(man2, 0, LEN);
    fill(host, LEN, 40);
    if (!CHECK(hold_begin(&h) && hold_stream(&h, NULL), "hold the default stream")) {
        goto out;
    }
    CHECK(ops->memcpy_async(man, host, LEN, NULL) == ACCEL_OK &&
              ops->event_record(e, NULL) == ACCEL_OK,
          "copy and record on the held default stream");
    CHECK(ops->memcpy_async(man2, host, LEN, s) == ACCEL_OK &&
              ops->stream_synchronize(s) == ACCEL_OK && has_pattern(man2, LEN, 40),
          "another stream runs while the default stream is held (non-blocking streams)");
    CHECK(((unsigned char *)man)[1] == 0 && ops->event_query(e, &done) == ACCEL_OK && !done,
          "the default stream's copy has not run");
    hold_release(&h);
    CHECK(ops->stream_synchronize(NULL) == ACCEL_OK && has_pattern(man, LEN, 40) &&
              ops->event_query(e, &done) == ACCEL_OK && done,
          "default stream synchronized");
out:
    hold_end(&h);
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->mem_free(man);
    ops->mem_free(man2);
}

/* A thread that frees device memory while a held stream still has a copy into it queued. */
static void test_async_free_waits(void) {
    enum { LEN = 1 << 16 };
    unsigned char *host = malloc(LEN);
    void *dev = NULL;
    accel_stream_h s = NULL;
    struct timespec t0, t1;
    double ms;
    hold_t h;

    ops->mem_alloc(ACCEL_MEM_DEVICE, LEN, &dev);
    ops->stream_create(&s);
    fill(host, LEN, 50);
    if (!CHECK(hold_begin(&h) && hold_stream(&h, s), "hold a stream")) {
        goto out;
    }
    ops->memcpy_async(dev, host, LEN, s);
    /* The timer releases the stream after 2 s: mem_free must wait for it. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(ops->mem_free(dev) == ACCEL_OK, "free device memory a queued copy writes");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    dev = NULL;
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK(ms > 1000, "mem_free waited for the queued work, as cuMemFree does (%.0f ms)", ms);
out:
    hold_end(&h);
    ops->stream_destroy(s);
    ops->mem_free(dev);
    free(host);
}

static void test_async_exec_fault(void) {
    unsigned char host[64] = {0};
    void *dev = NULL;
    accel_stream_h s = NULL;
    accel_event_h e = NULL;
    bool done = false;

    ops->mem_alloc(ACCEL_MEM_DEVICE, sizeof(host), &dev);
    ops->stream_create(&s);
    ops->event_create(&e);
    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_EXEC, 2, false);
    CHECK(ops->memcpy_async(dev, host, sizeof(host), s) == ACCEL_OK &&
              ops->memcpy_async(host, dev, sizeof(host), s) == ACCEL_OK &&
              ops->event_record(e, s) == ACCEL_OK,
          "a copy that fails while it runs is queued without an error");
    CHECK(ops->event_synchronize(e) == ACCEL_ERR_DEVICE &&
              last_error_is("emuEventSynchronize", "EMULATED_ERROR_INJECTED"),
          "the event recorded after it reports the failure");
    CHECK(ops->event_query(e, &done) == ACCEL_ERR_DEVICE && done, "so does event_query");
    CHECK(ops->stream_synchronize(s) == ACCEL_ERR_DEVICE &&
              last_error_is("emuStreamSynchronize", "EMULATED_ERROR_INJECTED"),
          "stream_synchronize reports it");
    CHECK(ops->memcpy_async(dev, host, sizeof(host), s) == ACCEL_OK &&
              ops->stream_synchronize(s) == ACCEL_OK,
          "once: the stream works on");
    ops->event_destroy(e);
    ops->stream_destroy(s);
    ops->mem_free(dev);
}

static void child_streams(void *arg) {
    accel_stream_h parent = arg;
    unsigned char buf[64], back[64];
    void *dev = NULL;

    if (ops->stream_synchronize(parent) != ACCEL_ERR_INVALID) {
        _exit(2); /* the parent's worker is not here */
    }
    fill(buf, sizeof(buf), 60);
    if ((ops->mem_alloc(ACCEL_MEM_DEVICE, sizeof(buf), &dev) != ACCEL_OK) ||
        (ops->memcpy_async(dev, buf, sizeof(buf), NULL) != ACCEL_OK) ||
        (ops->memcpy_async(back, dev, sizeof(buf), NULL) != ACCEL_OK) ||
        (ops->stream_synchronize(NULL) != ACCEL_OK) || !has_pattern(back, sizeof(back), 60)) {
        _exit(3);
    }
    _exit(0);
}

static void test_async_threads_and_fork(void) {
    unsigned char buf[64];
    accel_stream_h s[4] = {NULL};
    int before, during, after, ws;
    void *dev = NULL;

    ops->mem_alloc(ACCEL_MEM_DEVICE, sizeof(buf), &dev);
    fill(buf, sizeof(buf), 61);
    ops->memcpy_async(dev, buf, sizeof(buf), NULL); /* the default stream's worker runs */
    ops->stream_synchronize(NULL);
    before = test_thread_count();
    for (int i = 0; i < 4; ++i) {
        ops->stream_create(&s[i]);
    }
    CHECK(test_thread_count() == before, "a stream without work has no worker");
    for (int i = 0; i < 4; ++i) {
        ops->memcpy_async(dev, buf, sizeof(buf), s[i]);
    }
    during = test_thread_count();
    ws = run_child(child_streams, s[0]);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0,
          "forked child: the parent's streams are invalid, its own default stream works "
          "(status 0x%x)",
          ws);
    for (int i = 0; i < 4; ++i) {
        ops->stream_destroy(s[i]);
    }
    after = test_thread_count();
    CHECK(during == before + 4 && after == before,
          "one worker per stream with work, joined at destroy (threads %d, %d, %d)", before, during,
          after);
    ops->mem_free(dev);
}

static void test_attach_path(void) {
    void *dev = NULL, *hdr = NULL;
    accel_mem_attr_t before, after;
    const char *reason = NULL;
    accel_status_t status;
    size_t live;

    ops->mem_alloc(ACCEL_MEM_DEVICE, 128, &dev);
    ops->mem_query(dev, &before);
    live = accel_emulated_live_allocations(ACCEL_MEM_DEVICE);
    /* What a second copy of the code does: the header exists (EEXIST). */
    status = accel_emulated_state_attach(&hdr, &reason);
    CHECK(status == ACCEL_OK, "attach as a second copy (%s)", reason);
    CHECK((uintptr_t)hdr == 0x200000000000ULL - ((size_t)4 << 20),
          "the header is at its fixed address");
    CHECK(accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == live &&
              ops->mem_query(dev, &after) == ACCEL_OK && after.buffer_id == before.buffer_id,
          "attaching keeps the existing state");
    ops->mem_free(dev);
}

static void *shim_open(const char *argv0_dir, const char *arg) {
    char path[PATH_MAX + 64];
    const char *env = getenv("ACCEL_EMULATED_SHIM");
    void *handle;

    if ((env != NULL) && (env[0] != '\0')) {
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    }
    if (arg != NULL) {
        return dlopen(arg, RTLD_NOW | RTLD_LOCAL);
    }
    snprintf(path, sizeof(path), "%s/libtest_accel_emulated_shim.so", argv0_dir);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(path, sizeof(path), "%s/.libs/libtest_accel_emulated_shim.so", argv0_dir);
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return handle;
}

static void test_second_copy(const char *argv0_dir, const char *arg) {
    const accel_ops_t *(*shim_init)(void);
    void (*shim_finalize)(void);
    size_t (*shim_live)(accel_mem_type_t);
    void (*shim_inject)(accel_emulated_fault_t, int, bool);
    const accel_ops_t *ops2;
    void *handle, *d1 = NULL, *d2 = NULL;
    unsigned char buf[512];
    accel_mem_attr_t attr;

    handle = shim_open(argv0_dir, arg);
    if (handle == NULL) {
        printf("SKIP: second copy of the backend via dlopen (no shim: %s)\n", dlerror());
        return;
    }
    *(void **)&shim_init = dlsym(handle, "test_shim_init");
    *(void **)&shim_finalize = dlsym(handle, "test_shim_finalize");
    *(void **)&shim_live = dlsym(handle, "test_shim_live_allocations");
    *(void **)&shim_inject = dlsym(handle, "test_shim_inject_fault");
    if (!CHECK(shim_init && shim_finalize && shim_live && shim_inject, "shim entry points")) {
        dlclose(handle);
        return;
    }

    ops2 = shim_init();
    CHECK((ops2 != NULL) && (ops2 != ops), "second copy initialized (its own ops table)");
    if (ops2 == NULL) {
        dlclose(handle);
        return;
    }
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 512, &d1) == ACCEL_OK &&
              ops2->mem_alloc(ACCEL_MEM_DEVICE, 512, &d2) == ACCEL_OK && d1 != d2,
          "both copies allocate from one allocator");
    CHECK(ops->mem_query(d2, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE &&
              attr.base == (uintptr_t)d2,
          "copy 1 classifies copy 2's allocation");
    CHECK(ops2->mem_query(d1, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE,
          "copy 2 classifies copy 1's allocation");
    CHECK(shim_live(ACCEL_MEM_DEVICE) == accel_emulated_live_allocations(ACCEL_MEM_DEVICE) &&
              accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 2,
          "one set of live counters");
    fill(buf, sizeof(buf), 6);
    CHECK(ops->memcpy(d1, buf, sizeof(buf)) == ACCEL_OK &&
              ops2->memcpy(d2, d1, sizeof(buf)) == ACCEL_OK && device_has_pattern(d2, 512, 6),
          "copies through either copy see the same memory");
    shim_inject(ACCEL_EMULATED_FAULT_MEMCPY, 1, false);
    CHECK(ops->memcpy(d1, buf, sizeof(buf)) == ACCEL_ERR_DEVICE,
          "a fault planned by copy 2 hits copy 1");
    CHECK(ops2->mem_free(d1) == ACCEL_OK && ops->mem_free(d2) == ACCEL_OK,
          "each copy frees the other's allocation");
    shim_finalize();
    CHECK(accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0 &&
              ops->mem_alloc(ACCEL_MEM_DEVICE, 64, &d1) == ACCEL_OK &&
              ops->mem_free(d1) == ACCEL_OK,
          "copy 1 works on after copy 2 finalized");
    dlclose(handle);
}

typedef struct {
    int id;
    bool ok;
} thread_arg_t;

static void *thread_main(void *arg) {
    thread_arg_t *t = arg;
    unsigned char in[1024], out[1024];
    accel_mem_attr_t attr;

    t->ok = true;
    for (int i = 0; t->ok && (i < 200); ++i) {
        void *d = NULL;
        size_t len = 1 + (size_t)((t->id * 131 + i * 17) % 1024);
        fill(in, len, (unsigned)(t->id + i));
        t->ok = (ops->mem_alloc(ACCEL_MEM_DEVICE, len, &d) == ACCEL_OK) &&
                (ops->mem_query(d, &attr) == ACCEL_OK) && (attr.base == (uintptr_t)d) &&
                (attr.size == len) && (ops->memcpy(d, in, len) == ACCEL_OK) &&
                (ops->memcpy(out, d, len) == ACCEL_OK) && (memcmp(in, out, len) == 0) &&
                (ops->mem_free(d) == ACCEL_OK);
    }
    return NULL;
}

static void test_threads(void) {
    enum { T = 4 };
    pthread_t th[T];
    thread_arg_t args[T];
    bool ok = true;

    for (int i = 0; i < T; ++i) {
        args[i].id = i;
        pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    for (int i = 0; i < T; ++i) {
        pthread_join(th[i], NULL);
        ok = ok && args[i].ok;
    }
    CHECK(ok && accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0,
          "%d threads allocate, classify, copy and free concurrently", T);
}

static double now_ns(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void test_timing(void) {
    long iters = 10000000;
    const char *env = getenv("ACCEL_TEST_QUERY_ITERS");
    int host_var = 0;
    void *dev = NULL;
    accel_mem_attr_t attr;
    unsigned sink = 0;
    double t0, t1;

    if (env != NULL) {
        iters = atol(env);
    }
    t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        ops->mem_query(&host_var, &attr);
        sink += (unsigned)attr.type;
    }
    t1 = now_ns();
    printf("INFO: host-pointer mem_query: %.2f ns per call (%ld calls)\n",
           (t1 - t0) / (double)iters, iters);

    ops->mem_alloc(ACCEL_MEM_DEVICE, 64, &dev);
    iters /= 10;
    t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        ops->mem_query(dev, &attr);
        sink += (unsigned)attr.type;
    }
    t1 = now_ns();
    printf("INFO: device-pointer mem_query: %.2f ns per call (%ld calls)\n",
           (t1 - t0) / (double)iters, iters);
    ops->mem_free(dev);
    CHECK(sink != 1, "timing loop ran");
}

static int threads_at_start;

static void test_final(void) {
    const accel_ops_t *again = NULL;
    const char *reason;
    int threads;

    CHECK(accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0 &&
              accel_emulated_live_allocations(ACCEL_MEM_MANAGED) == 0 &&
              accel_emulated_live_allocations(ACCEL_MEM_HOST_PINNED) == 0 &&
              accel_emulated_live_streams() == 0 && accel_emulated_live_events() == 0,
          "nothing leaked");
    accel_finalize();
    threads = test_thread_count();
    CHECK(threads == threads_at_start,
          "no worker left after the last finalize (%d threads, %d at start)", threads,
          threads_at_start);
    CHECK(accel_init(ACCEL_BACKEND_EMULATED, &again, &reason) == ACCEL_OK && again == ops,
          "init again after the last finalize");
    accel_finalize();
}

int main(int argc, char **argv) {
    char dir[PATH_MAX];
    ssize_t n;
    const char *verbose = getenv("ACCEL_TEST_VERBOSE");

    n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    dir[(n > 0) ? n : 0] = '\0';
    if (strrchr(dir, '/') != NULL) {
        *strrchr(dir, '/') = '\0';
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    threads_at_start = test_thread_count();

    test_names();
    test_auto_backend();
    test_init_refcount();
    if (verbose != NULL) {
        accel_set_log(NULL, atoi(verbose));
    }
    test_classify();
    test_alloc_errors();
    test_allocator();
    test_copies();
    test_copy2d();
    test_prot_none();
    test_fork_child();
    test_faults();
    test_streams_events();
    test_async_copy();
    test_async_cross_stream();
    test_graphs();
    test_host_funcs();
    test_async_values();
    test_async_default_stream();
    test_async_free_waits();
    test_async_exec_fault();
    test_async_threads_and_fork();
    test_attach_path();
    test_second_copy(dir, (argc > 1) ? argv[1] : NULL);
    test_threads();
    test_timing();
    test_final();

    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (test_failed == 0) ? 0 : 1;
}

#endif /* ACCEL_EMULATED_TEST_SHIM */

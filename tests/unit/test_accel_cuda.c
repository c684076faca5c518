/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of the CUDA backend of opal-accelerator (built only with CUDA).
 *
 * Without a driver or a device it prints "SKIP: no CUDA driver/device:
 * <reason>" and exits 77.  With a GPU: allocation, classification, copies,
 * streams and events, the classification cache against memory freed and
 * reallocated behind its back (through the driver directly), the kernels
 * check.  Exit status 0 / 1, one line per check, then "N passed, M failed".
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel.h"
#include "cuda/accel_cuda.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unit_check.h"

static const accel_ops_t *ops;

static void log_to_stdout(int level, const char *msg) { printf("LOG(%d): %s\n", level, msg); }

static void test_classify(void) {
    static int static_var;
    int stack_var = 0;
    int *heap = malloc(64);
    size_t len = (size_t)1 << 20;
    void *dev = NULL, *man = NULL, *pin = NULL;
    accel_mem_attr_t a, b, c, h;
    accel_status_t status;

    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, len, &dev) == ACCEL_OK, "alloc device");
    CHECK(ops->mem_alloc(ACCEL_MEM_MANAGED, len, &man) == ACCEL_OK, "alloc managed");
    CHECK(ops->mem_alloc(ACCEL_MEM_HOST_PINNED, len, &pin) == ACCEL_OK, "alloc pinned");

    /* (Queried before CHECK: its format arguments are evaluated in no set order.) */
    status = ops->mem_query(dev, &a);
    CHECK(status == ACCEL_OK && a.type == ACCEL_MEM_DEVICE && a.device >= 0 &&
              a.base == (uintptr_t)dev && a.size >= len && a.buffer_id != 0,
          "device: %s dev %d size %zu id %" PRIu64, accel_mem_type_string(a.type), a.device, a.size,
          a.buffer_id);
    status = ops->mem_query(man, &b);
    CHECK(status == ACCEL_OK && b.type == ACCEL_MEM_MANAGED && b.base == (uintptr_t)man &&
              b.size >= len,
          "managed: %s dev %d", accel_mem_type_string(b.type), b.device);
    status = ops->mem_query(pin, &c);
    CHECK(status == ACCEL_OK && c.type == ACCEL_MEM_HOST_PINNED && c.device == -1 &&
              c.base == (uintptr_t)pin,
          "pinned: %s", accel_mem_type_string(c.type));
    CHECK(a.buffer_id != b.buffer_id && b.buffer_id != c.buffer_id, "buffer ids differ");
    CHECK(ops->mem_query((char *)dev + 4096, &h) == ACCEL_OK && h.base == a.base &&
              h.buffer_id == a.buffer_id,
          "interior device pointer");
    CHECK(ops->mem_query((char *)dev + 8192, &h) == ACCEL_OK && h.buffer_id == a.buffer_id,
          "interior device pointer again (cache hit)");
    CHECK(ops->mem_query(&stack_var, &h) == ACCEL_OK && h.type == ACCEL_MEM_HOST &&
              h.buffer_id == 0,
          "stack pointer: host");
    CHECK(ops->mem_query(heap, &h) == ACCEL_OK && h.type == ACCEL_MEM_HOST, "heap pointer: host");
    CHECK(ops->mem_query(&static_var, &h) == ACCEL_OK && h.type == ACCEL_MEM_HOST,
          "static pointer: host");
    CHECK(ops->mem_query(NULL, &h) == ACCEL_OK && h.type == ACCEL_MEM_HOST, "NULL: host");

    CHECK(ops->mem_free(dev) == ACCEL_OK && ops->mem_free(man) == ACCEL_OK &&
              ops->mem_free(pin) == ACCEL_OK,
          "free all three");
    CHECK(ops->mem_query(dev, &h) == ACCEL_OK && h.type == ACCEL_MEM_HOST,
          "freed device pointer: host");
    CHECK(ops->mem_free(heap) == ACCEL_ERR_INVALID, "free of a host pointer is refused");
    CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, 0, &dev) == ACCEL_ERR_INVALID,
          "zero-length allocation is refused");
    free(heap);
}

static void test_copies(void) {
    size_t len = (size_t)4 << 20;
    unsigned char *host = malloc(len), *back = malloc(len);
    void *d1 = NULL, *d2 = NULL, *man = NULL, *pin = NULL;
    accel_stream_h stream = NULL;
    accel_event_h event = NULL;

    ops->mem_alloc(ACCEL_MEM_DEVICE, len, &d1);
    ops->mem_alloc(ACCEL_MEM_DEVICE, len, &d2);
    ops->mem_alloc(ACCEL_MEM_MANAGED, len, &man);
    ops->mem_alloc(ACCEL_MEM_HOST_PINNED, len, &pin);

    fill(host, len, 1);
    CHECK(ops->memcpy(d1, host, len) == ACCEL_OK, "H2D");
    CHECK(ops->memcpy(d2, d1, len) == ACCEL_OK, "D2D");
    memset(back, 0, len);
    CHECK(ops->memcpy(back, d2, len) == ACCEL_OK && has_pattern(back, len, 1), "D2H round trip");
    CHECK(ops->memcpy(man, d1, len) == ACCEL_OK && has_pattern(man, len, 1),
          "D2M then host read of managed (memcpy is synchronous)");
    fill(man, len, 2);
    CHECK(ops->memcpy(pin, man, len) == ACCEL_OK && has_pattern(pin, len, 2), "M2 pinned");

    CHECK(ops->stream_create(&stream) == ACCEL_OK, "stream create");
    CHECK(ops->event_create(&event) == ACCEL_OK, "event create");
    fill(pin, len, 3);
    CHECK(ops->memcpy_async(d1, pin, len, stream) == ACCEL_OK &&
              ops->event_record(event, stream) == ACCEL_OK &&
              ops->event_synchronize(event) == ACCEL_OK,
          "async H2D, record, event sync");
    memset(pin, 0, len);
    CHECK(ops->memcpy_async(pin, d1, len, stream) == ACCEL_OK &&
              ops->stream_synchronize(stream) == ACCEL_OK && has_pattern(pin, len, 3),
          "async D2H, stream sync");
    {
        /* A stream held by a wait on a pinned flag the host writes later;
         * another stream waits for its event and writes a second flag. */
        volatile uint32_t *flags = NULL;
        accel_stream_h s2 = NULL;
        accel_status_t status;
        bool done = true;

        ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, (void **)&flags);
        ops->stream_create(&s2);
        flags[0] = 0;
        flags[1] = 0;
        status = ops->stream_wait_value32(stream, (uint32_t *)&flags[0], 1, ACCEL_WAIT_VALUE_GEQ);
        if (status == ACCEL_ERR_UNSUPPORTED) {
            printf("SKIP: stream memory operations unsupported (%s %s)\n", accel_last_error()->call,
                   accel_last_error()->error);
        } else {
            CHECK(status == ACCEL_OK && ops->memcpy_async(d2, d1, len, stream) == ACCEL_OK &&
                      ops->event_record(event, stream) == ACCEL_OK &&
                      ops->stream_wait_event(s2, event) == ACCEL_OK &&
                      ops->stream_write_value32(s2, (uint32_t *)&flags[1], 9) == ACCEL_OK,
                  "wait_value32, copy, record; wait_event and write_value32 on another stream");
            usleep(20000);
            CHECK(ops->event_query(event, &done) == ACCEL_OK && !done && flags[1] == 0,
                  "held: event not complete, second stream's flag not written");
            __atomic_store_n(&flags[0], 1u, __ATOMIC_RELEASE);
            CHECK(ops->stream_synchronize(s2) == ACCEL_OK && flags[1] == 9 &&
                      ops->event_query(event, &done) == ACCEL_OK && done,
                  "released: the event completed, then the second stream wrote its flag");
            memset(back, 0, len);
            CHECK(ops->memcpy(back, d2, len) == ACCEL_OK && has_pattern(back, len, 3),
                  "the held copy ran");
        }
        ops->stream_synchronize(stream);
        ops->stream_destroy(s2);
        ops->mem_free((void *)flags);
    }
    CHECK(ops->stream_destroy(NULL) == ACCEL_ERR_INVALID,
          "destroying the default stream is refused");
    CHECK(ops->event_destroy(event) == ACCEL_OK && ops->stream_destroy(stream) == ACCEL_OK,
          "event and stream destroy");

    /* (No copy to freed memory here: with UVA, cuMemcpy takes an address it
     * does not know for pageable host memory and would write there.) */
    ops->mem_free(d1);
    ops->mem_free(d2);
    ops->mem_free(man);
    ops->mem_free(pin);
    free(host);
    free(back);
}

/* What host functions saw (cuLaunchHostFunc): how many ran, and the flag each read. */
typedef struct {
    int runs;
    uint32_t seen[4];
    const volatile uint32_t *watch;
} host_func_log_t;

static void host_func_note(void *arg) {
    host_func_log_t *log = arg;

    if (log->runs < 4) {
        log->seen[log->runs] = *log->watch;
    }
    ++log->runs;
}

/* stream_host_func: held behind a wait it does not run; released, it runs after the write
 * before it; captured into a graph (with the wait and the write), it runs at every launch and
 * not at the capture. */
static void test_host_funcs(void) {
    volatile uint32_t *flags = NULL;
    accel_stream_h s = NULL;
    accel_graph_h g = NULL;
    host_func_log_t log;

    memset(&log, 0, sizeof(log));
    ops->mem_alloc(ACCEL_MEM_HOST_PINNED, 64, (void **)&flags);
    ops->stream_create(&s);
    flags[0] = flags[1] = 0;
    log.watch = &flags[1];
    if (ops->stream_wait_value32(s, (uint32_t *)&flags[0], 1, ACCEL_WAIT_VALUE_GEQ) ==
        ACCEL_ERR_UNSUPPORTED) {
        printf("SKIP: stream memory operations unsupported (host functions untested)\n");
    } else {
        CHECK(ops->stream_write_value32(s, (uint32_t *)&flags[1], 5) == ACCEL_OK &&
                  ops->stream_host_func(s, host_func_note, &log) == ACCEL_OK,
              "host functions: queued behind a held wait and a write");
        usleep(20000);
        CHECK(__atomic_load_n(&log.runs, __ATOMIC_ACQUIRE) == 0,
              "host functions: not run while the stream is held");
        __atomic_store_n(&flags[0], 1u, __ATOMIC_RELEASE);
        CHECK(ops->stream_synchronize(s) == ACCEL_OK && log.runs == 1 && log.seen[0] == 5,
              "host functions: released, it ran once, after the write before it");
        CHECK(ops->stream_begin_capture(s) == ACCEL_OK &&
                  ops->stream_wait_value32(s, (uint32_t *)&flags[0], 1, ACCEL_WAIT_VALUE_EQ) ==
                      ACCEL_OK &&
                  ops->stream_write_value32(s, (uint32_t *)&flags[1], 6) == ACCEL_OK &&
                  ops->stream_host_func(s, host_func_note, &log) == ACCEL_OK &&
                  ops->stream_end_capture(s, &g) == ACCEL_OK,
              "host functions: a wait, a write and a function captured into a graph");
        CHECK(ops->stream_synchronize(s) == ACCEL_OK && log.runs == 1,
              "host functions: the capture ran nothing");
        CHECK((g != NULL) && ops->graph_launch(g, s) == ACCEL_OK &&
                  ops->graph_launch(g, s) == ACCEL_OK && ops->stream_synchronize(s) == ACCEL_OK &&
                  log.runs == 3 && log.seen[1] == 6 && log.seen[2] == 6,
              "host functions: two launches ran it twice, each after the write");
        if (g != NULL) {
            ops->graph_destroy(g);
        }
    }
    CHECK(ops->stream_host_func(s, NULL, &log) == ACCEL_ERR_INVALID,
          "host functions: no function is refused");
    ops->stream_destroy(s);
    ops->mem_free((void *)flags);
}

/* memcpy2d_async: device to device and host to device at strides (cuMemcpy2DAsync), the bytes
 * between rows untouched; a pitch narrower than a row refused; pitches past the device's
 * limit (row by row) still right. */
static void test_copy2d(void) {
    enum { ROWS = 33, WIDTH = 1000, SPITCH = 1536, DPITCH = 4096 };
    size_t big = (size_t)3 << 30; /* a pitch past CU_DEVICE_ATTRIBUTE_MAX_PITCH (2^31 - 1) */
    unsigned char *host = malloc(ROWS * SPITCH), *back = malloc(ROWS * DPITCH);
    unsigned char *want = malloc(ROWS * DPITCH);
    void *src = NULL, *dst = NULL, *wide = NULL;
    accel_stream_h stream = NULL;
    bool ok = true;

    CHECK(ops->memcpy2d_async != NULL, "the cuda backend has memcpy2d_async");
    if ((ops->memcpy2d_async == NULL) || (host == NULL) || (back == NULL) || (want == NULL)) {
        free(host);
        free(back);
        free(want);
        return;
    }
    ops->mem_alloc(ACCEL_MEM_DEVICE, ROWS * SPITCH, &src);
    ops->mem_alloc(ACCEL_MEM_DEVICE, ROWS * DPITCH, &dst);
    ops->stream_create(&stream);
    fill(host, ROWS * SPITCH, 7);
    memset(want, 0x5a, ROWS * DPITCH);
    ops->memcpy(src, host, ROWS * SPITCH);
    ops->memcpy(dst, want, ROWS * DPITCH);
    for (int r = 0; r < ROWS; ++r) {
        memcpy(want + r * DPITCH, host + r * SPITCH, WIDTH);
    }
    CHECK(ops->memcpy2d_async(dst, DPITCH, src, SPITCH, WIDTH, ROWS, stream) == ACCEL_OK &&
              ops->stream_synchronize(stream) == ACCEL_OK &&
              ops->memcpy(back, dst, ROWS * DPITCH) == ACCEL_OK &&
              memcmp(back, want, ROWS * DPITCH) == 0,
          "D2D, %d rows of %d bytes, pitches %d -> %d: rows placed, gaps untouched", ROWS, WIDTH,
          SPITCH, DPITCH);
    CHECK(ops->memcpy2d_async(dst, WIDTH, host, SPITCH, WIDTH, ROWS, stream) == ACCEL_OK &&
              ops->stream_synchronize(stream) == ACCEL_OK &&
              ops->memcpy(back, dst, ROWS * WIDTH) == ACCEL_OK,
          "H2D (pageable), rows packed");
    for (int r = 0; r < ROWS; ++r) {
        ok = ok && (memcmp(back + r * WIDTH, host + r * SPITCH, WIDTH) == 0);
    }
    CHECK(ok, "H2D rows in order");
    CHECK(ops->memcpy2d_async(dst, WIDTH - 1, src, SPITCH, WIDTH, 2, stream) == ACCEL_ERR_INVALID,
          "a pitch narrower than a row: invalid");
    if (ops->mem_alloc(ACCEL_MEM_DEVICE, big + WIDTH, &wide) == ACCEL_OK) {
        CHECK(ops->memcpy2d_async(wide, big, src, SPITCH, WIDTH, 2, stream) == ACCEL_OK &&
                  ops->stream_synchronize(stream) == ACCEL_OK &&
                  ops->memcpy(back, (char *)wide + big, WIDTH) == ACCEL_OK &&
                  memcmp(back, host + SPITCH, WIDTH) == 0,
              "a 3 GiB pitch (past the device's 2D limit): row by row, right");
        ops->mem_free(wide);
    } else {
        printf("SKIP: no 3 GiB for the wide-pitch case\n");
    }
    ops->stream_destroy(stream);
    ops->mem_free(src);
    ops->mem_free(dst);
    free(host);
    free(back);
    free(want);
}

/* Memory freed and reallocated through the driver, behind the cache's back. */
static void test_cache_reuse(void) {
    size_t len = (size_t)2 << 20;
    CUdeviceptr d = 0, d2 = 0;
    accel_mem_attr_t attr;
    uint64_t old_id;
    CUresult res;

    res = accel_cuda_driver.cuMemAlloc(&d, len);
    CHECK(res == CUDA_SUCCESS, "cuMemAlloc");
    CHECK(ops->mem_query((void *)d, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE,
          "classified (now cached)");

    accel_cuda_driver.cuMemFree(d);
    CHECK(ops->mem_query((void *)d, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_HOST,
          "freed behind the cache's back: host");

    accel_cuda_driver.cuMemAlloc(&d, len);
    ops->mem_query((void *)d, &attr);
    old_id = attr.buffer_id;
    accel_cuda_driver.cuMemFree(d);
    res = accel_cuda_driver.cuMemAlloc(&d2, len);
    if (d2 == d) {
        accel_status_t status = ops->mem_query((void *)d2, &attr);
        CHECK(status == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE && attr.buffer_id != old_id,
              "reallocated at the same address: new buffer id %" PRIu64 " (was %" PRIu64 ")",
              attr.buffer_id, old_id);
    } else {
        printf("INFO: the driver did not reuse the address (%#llx -> %#llx)\n",
               (unsigned long long)d, (unsigned long long)d2);
        CHECK(ops->mem_query((void *)d, &attr) == ACCEL_OK && attr.buffer_id != old_id,
              "the old address is not classified as the freed allocation");
    }
    accel_cuda_driver.cuMemFree(d2);

    res = accel_cuda_driver.cuMemAllocManaged(&d, len, CU_MEM_ATTACH_GLOBAL);
    if (res == CUDA_SUCCESS) {
        CHECK(ops->mem_query((void *)d, &attr) == ACCEL_OK && attr.type == ACCEL_MEM_MANAGED,
              "managed allocation after the freed device one: managed");
        accel_cuda_driver.cuMemFree(d);
    }
}

static double now_ns(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void test_timing(void) {
    int host_var = 0;
    long iters = 1000000;
    void *dev = NULL;
    accel_mem_attr_t attr;
    double t0;

    t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        ops->mem_query(&host_var, &attr);
    }
    printf("INFO: host-pointer mem_query: %.1f ns per call\n", (now_ns() - t0) / (double)iters);
    ops->mem_alloc(ACCEL_MEM_DEVICE, 4096, &dev);
    ops->mem_query(dev, &attr);
    t0 = now_ns();
    for (long i = 0; i < iters; ++i) {
        ops->mem_query(dev, &attr);
    }
    printf("INFO: cached device-pointer mem_query: %.1f ns per call\n",
           (now_ns() - t0) / (double)iters);
    ops->mem_free(dev);
}

int main(void) {
    const accel_ops_t *again = NULL;
    const char *reason = NULL;
    const char *kernels_reason = NULL;
    accel_status_t status;

    setvbuf(stdout, NULL, _IOLBF, 0);
    accel_set_log(log_to_stdout,
                  (getenv("ACCEL_TEST_VERBOSE") != NULL) ? atoi(getenv("ACCEL_TEST_VERBOSE")) : 1);
    status = accel_init(ACCEL_BACKEND_CUDA, &ops, &reason);
    if ((status == ACCEL_ERR_NO_DRIVER) || (status == ACCEL_ERR_NO_DEVICE)) {
        printf("SKIP: no CUDA driver/device: %s\n", reason);
        return 77;
    }
    if (!CHECK(status == ACCEL_OK, "init cuda: %s (%s)", accel_status_string(status), reason)) {
        printf("%d passed, %d failed\n", test_passed, test_failed);
        return 1;
    }
    CHECK(strcmp(ops->name, "cuda") == 0 && ops->device_count() >= 1, "cuda backend, %d device(s)",
          ops->device_count());
    status = accel_cuda_kernels_check(0, &kernels_reason);
    CHECK((status == ACCEL_OK) == accel_cuda_kernels_usable, "kernels check: %s%s",
          (status == ACCEL_OK) ? "usable" : "not usable: ", kernels_reason);
    accel_set_log(NULL, 0);

    test_classify();
    test_copies();
    test_copy2d();
    test_host_funcs();
    test_cache_reuse();
    test_timing();

    accel_finalize();
    CHECK(accel_init(ACCEL_BACKEND_AUTO, &again, &reason) == ACCEL_OK &&
              strcmp(again->name, "cuda") == 0,
          "AUTO picks cuda; init again after finalize");
    accel_finalize();

    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (test_failed == 0) ? 0 : 1;
}

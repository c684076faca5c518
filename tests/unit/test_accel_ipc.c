/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test of IPC export/import (opal-accelerator): fork based, no MPI.
 *
 *   test_accel_ipc [--backend emulated|cuda] [-v]   (-v: the backend's log on stderr)
 *
 * The parent allocates device memory, fills it and exports a pointer at an
 * offset; peer processes (forked first, before any backend is initialized:
 * a CUDA context does not survive fork) import the handle they read from a
 * pipe, check the content through ops->memcpy, write a pattern and close;
 * the parent sees the write.  Also: a second import gives the same base and
 * needs a second close; the live mapping count returns to 0 (emulated);
 * handles that are garbage, of a dead process or of a freed allocation, and
 * exports of host memory, fail without a crash; an injected import fault
 * (emulated); an allocation made by cuMemCreate (cuda, VMM handles).
 *
 * The emulated backend by default; --backend cuda runs the same on the GPU
 * (exit 77 without a driver or device).  Exit status 0 / 1, one line per
 * check (peers' lines say "peer"), then "N passed, M failed".
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel.h"
#include "accel_emulated.h"
#include "accel_internal.h"
#ifdef HAVE_CUDA
#include "cuda/accel_cuda.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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

#include "unit_check.h"

#define NPEERS 2
#define ANY_ERROR (-1)   /* CMD_IMPORT_FAILS: any status but ACCEL_OK */
#define REPORT_ONLY (-2) /* CMD_IMPORT_FAILS: say what happened, check nothing */

typedef enum {
    CMD_RW,           /* import, check content, write a pattern, import twice, close twice */
    CMD_IMPORT_FAILS, /* import must fail with want_status */
    CMD_FAULT,        /* an injected import fault, then a good import (emulated) */
    CMD_MANAGED,      /* import managed memory and touch it from the host (emulated) */
    CMD_SIGNAL,       /* import a flag, write seed_write to it with stream_write_value32 */
    CMD_QUIT,
} cmd_kind_t;

typedef struct {
    cmd_kind_t kind;
    accel_ipc_handle_t handle;
    size_t len;           /* bytes from the exported pointer to check and overwrite */
    unsigned seed_expect; /* pattern there */
    unsigned seed_write;  /* pattern the peer leaves */
    int want_status;
    bool allow_unsupported; /* ACCEL_ERR_UNSUPPORTED from import: a skip (VMM without ptrace) */
    char what[64];
} cmd_t;

typedef struct {
    int passed;
    int failed;
    bool imported;
} reply_t;

typedef struct {
    pid_t pid;
    int cmd_fd;   /* parent writes commands */
    int reply_fd; /* parent reads replies */
} peer_t;

static accel_backend_kind_t backend = ACCEL_BACKEND_EMULATED;
static const accel_ops_t *ops;
static peer_t peers[NPEERS];
static pid_t dead_pid;

static bool emulated(void) { return backend == ACCEL_BACKEND_EMULATED; }

static bool read_full(int fd, void *buf, size_t len) {
    char *p = buf;

    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static bool write_full(int fd, const void *buf, size_t len) {
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Pattern seed of the bytes from offset on, of a buffer filled with seed. */
static unsigned seed_at(unsigned seed, size_t offset) { return seed + (unsigned)(offset * 7); }

static bool device_has_pattern(const void *dev, size_t len, unsigned seed) {
    void *tmp = malloc(len);
    bool ok;

    ok = (tmp != NULL) && (ops->memcpy(tmp, dev, len) == ACCEL_OK) && has_pattern(tmp, len, seed);
    free(tmp);
    return ok;
}

static bool device_fill(void *dev, size_t len, unsigned seed) {
    void *tmp = malloc(len);
    bool ok = (tmp != NULL);

    if (ok) {
        fill(tmp, len, seed);
        ok = (ops->memcpy(dev, tmp, len) == ACCEL_OK);
    }
    free(tmp);
    return ok;
}

/* Whether ops->reduce can run here (the CUDA kernels need a matching GPU). */
static bool reduce_usable(void) {
#ifdef HAVE_CUDA
    if (!emulated() && !accel_cuda_kernels_usable) {
        return false;
    }
#endif
    return ops->reduce != NULL;
}

/* ------------------------------------------------------------------ peer */

/* A host read of ptr in a forked child faults: exit 42 on SEGV_ACCERR there. */
static void *fault_addr;

static void fault_handler(int sig, siginfo_t *info, void *uctx) {
    (void)sig;
    (void)uctx;
    VALGRIND_ENABLE_ERROR_REPORTING;
    _exit(((info->si_code == SEGV_ACCERR) && (info->si_addr == fault_addr)) ? 42 : 43);
}

static bool host_read_faults(void *ptr) {
    struct sigaction sa;
    int ws = 0;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = fault_handler;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
        fault_addr = ptr;
        VALGRIND_DISABLE_ERROR_REPORTING;
        (void)*(volatile char *)ptr;
        _exit(0);
    }
    return (pid > 0) && (waitpid(pid, &ws, 0) == pid) && WIFEXITED(ws) && (WEXITSTATUS(ws) == 42);
}

static void peer_rw(const cmd_t *cmd, reply_t *reply) {
    const accel_ipc_handle_t *h = &cmd->handle;
    void *base = NULL, *base2 = NULL;
    accel_mem_attr_t attr;
    accel_status_t status;
    char *ptr;

    status = ops->ipc_import(h, &base);
    if ((status == ACCEL_ERR_UNSUPPORTED) && cmd->allow_unsupported) {
        printf("SKIP: peer: %s: import unsupported here (%s %s)\n", cmd->what,
               accel_last_error()->call, accel_last_error()->error);
        return;
    }
    if (!CHECK(status == ACCEL_OK, "peer: %s: import", cmd->what)) {
        return;
    }
    reply->imported = true;
    ptr = (char *)base + h->offset;

    status = ops->mem_query(ptr, &attr);
    CHECK(status == ACCEL_OK && attr.type == ACCEL_MEM_DEVICE && attr.base == (uintptr_t)base &&
              attr.size >= h->alloc_size && accel_may_be_device(ops, ptr),
          "peer: %s: imported memory is device memory (%s, base %s)", cmd->what,
          accel_mem_type_string(attr.type), (attr.base == (uintptr_t)base) ? "ok" : "wrong");
    CHECK(device_has_pattern(ptr, cmd->len, cmd->seed_expect),
          "peer: %s: reads the exporter's data at offset %" PRIu64, cmd->what, h->offset);
    if (reduce_usable()) {
        const void *srcs[2] = {ptr, ptr};

        /* x | x = x: the reduction reaches imported memory, changes nothing. */
        status = ops->reduce(ptr, srcs, 2, 64, ACCEL_DT_UINT8, ACCEL_OP_BOR, NULL);
        CHECK(status == ACCEL_OK && ops->stream_synchronize(NULL) == ACCEL_OK &&
                  device_has_pattern(ptr, cmd->len, cmd->seed_expect),
              "peer: %s: reduce on imported memory", cmd->what);
    }
    CHECK(device_fill(ptr, cmd->len, cmd->seed_write), "peer: %s: writes", cmd->what);
    if (emulated()) {
        CHECK(host_read_faults(ptr), "peer: %s: a host read of imported device memory faults",
              cmd->what);
    }

    CHECK(ops->ipc_import(h, &base2) == ACCEL_OK && base2 == base,
          "peer: %s: a second import gives the same base", cmd->what);
    if (emulated()) {
        CHECK(accel_emulated_live_ipc_mappings() == 1, "peer: %s: one mapping (%zu)", cmd->what,
              accel_emulated_live_ipc_mappings());
    }
    CHECK(ops->ipc_close(base) == ACCEL_OK, "peer: %s: first close", cmd->what);
    CHECK(device_has_pattern(ptr, cmd->len, cmd->seed_write),
          "peer: %s: still mapped after the first close", cmd->what);
    CHECK(ops->ipc_close(base) == ACCEL_OK, "peer: %s: second close", cmd->what);
    if (emulated()) {
        CHECK(accel_emulated_live_ipc_mappings() == 0, "peer: %s: no mapping left", cmd->what);
        CHECK(ops->mem_query(ptr, &attr) == ACCEL_ERR_INVALID,
              "peer: %s: unmapped memory is no allocation", cmd->what);
    }
    CHECK(ops->ipc_close(base) == ACCEL_ERR_INVALID, "peer: %s: a third close is refused",
          cmd->what);
}

static void peer_import_fails(const cmd_t *cmd) {
    accel_status_t status;
    void *base = NULL;

    status = ops->ipc_import(&cmd->handle, &base);
    if (status == ACCEL_OK) {
        ops->ipc_close(base);
    }
    if (cmd->want_status == REPORT_ONLY) {
        printf("NOTE: peer: %s: import gives %s (%s %s)\n", cmd->what, accel_status_string(status),
               (status == ACCEL_OK) ? "-" : accel_last_error()->call,
               (status == ACCEL_OK) ? "-" : accel_last_error()->error);
        return;
    }
    CHECK((cmd->want_status == ANY_ERROR) ? (status != ACCEL_OK)
                                          : ((int)status == cmd->want_status),
          "peer: %s: import fails (%s)", cmd->what, accel_status_string(status));
    if (emulated()) {
        CHECK(accel_emulated_live_ipc_mappings() == 0, "peer: %s: nothing mapped", cmd->what);
    }
}

static void peer_fault(const cmd_t *cmd, reply_t *reply) {
    accel_status_t status;
    void *base = NULL;

    accel_emulated_inject_fault(ACCEL_EMULATED_FAULT_IPC_IMPORT, 1, false);
    status = ops->ipc_import(&cmd->handle, &base);
    CHECK(status == ACCEL_ERR_DEVICE &&
              strcmp(accel_last_error()->error, "EMULATED_ERROR_INJECTED") == 0 &&
              accel_emulated_live_ipc_mappings() == 0,
          "peer: injected import fault (%s)", accel_status_string(status));
    status = ops->ipc_import(&cmd->handle, &base);
    CHECK(status == ACCEL_OK &&
              device_has_pattern((char *)base + cmd->handle.offset, cmd->len, cmd->seed_expect),
          "peer: the import after the fault works");
    reply->imported = (status == ACCEL_OK);
    if (status == ACCEL_OK) {
        CHECK(ops->ipc_close(base) == ACCEL_OK, "peer: close after the fault");
    }
}

static void peer_managed(const cmd_t *cmd, reply_t *reply) {
    accel_mem_attr_t attr;
    accel_status_t status;
    void *base = NULL;
    char *ptr;

    status = ops->ipc_import(&cmd->handle, &base);
    if (!CHECK(status == ACCEL_OK, "peer: managed: import")) {
        return;
    }
    reply->imported = true;
    ptr = (char *)base + cmd->handle.offset;
    /* (Queried before CHECK: its format arguments are evaluated in no set order.) */
    status = ops->mem_query(ptr, &attr);
    CHECK(status == ACCEL_OK && attr.type == ACCEL_MEM_MANAGED && accel_may_be_device(ops, ptr),
          "peer: managed: imported as managed memory (%s)", accel_mem_type_string(attr.type));
    /* Host accessible: read and written in place. */
    CHECK(has_pattern(ptr, cmd->len, cmd->seed_expect), "peer: managed: the host reads it");
    fill(ptr, cmd->len, cmd->seed_write);
    CHECK(device_has_pattern(ptr, cmd->len, cmd->seed_write), "peer: managed: the host writes it");
    CHECK(ops->ipc_close(base) == ACCEL_OK && accel_emulated_live_ipc_mappings() == 0,
          "peer: managed: close");
}

/* Release a stream of the exporter: write the flag through the peer's default stream. */
static void peer_signal(const cmd_t *cmd, reply_t *reply) {
    void *base = NULL;

    if (!CHECK(ops->ipc_import(&cmd->handle, &base) == ACCEL_OK, "peer: %s: import", cmd->what)) {
        return;
    }
    reply->imported = true;
    CHECK(ops->stream_write_value32(NULL, (uint32_t *)((char *)base + cmd->handle.offset),
                                    cmd->seed_write) == ACCEL_OK &&
              ops->stream_synchronize(NULL) == ACCEL_OK,
          "peer: %s: stream_write_value32 to imported memory", cmd->what);
    CHECK(ops->ipc_close(base) == ACCEL_OK, "peer: %s: close", cmd->what);
}

static void peer_main(int cmd_fd, int reply_fd) {
    const char *reason = "";
    reply_t reply;
    cmd_t cmd;

    alarm(60);
    while (read_full(cmd_fd, &cmd, sizeof(cmd)) && (cmd.kind != CMD_QUIT)) {
        int passed = test_passed, failed = test_failed;

        memset(&reply, 0, sizeof(reply));
        if ((ops == NULL) && (accel_init(backend, &ops, &reason) != ACCEL_OK)) {
            CHECK(false, "peer: init the backend: %s", reason);
            ops = NULL;
        } else if (cmd.kind == CMD_RW) {
            peer_rw(&cmd, &reply);
        } else if (cmd.kind == CMD_IMPORT_FAILS) {
            peer_import_fails(&cmd);
        } else if (cmd.kind == CMD_FAULT) {
            peer_fault(&cmd, &reply);
        } else if (cmd.kind == CMD_MANAGED) {
            peer_managed(&cmd, &reply);
        } else if (cmd.kind == CMD_SIGNAL) {
            peer_signal(&cmd, &reply);
        }
        fflush(stdout);
        reply.passed = test_passed - passed;
        reply.failed = test_failed - failed;
        if (!write_full(reply_fd, &reply, sizeof(reply))) {
            break;
        }
    }
    if (ops != NULL) {
        accel_finalize();
    }
    fflush(stdout);
    _exit(0);
}

/* ---------------------------------------------------------------- parent */

/* Fork the peers and a process that exits at once (its pid: a dead exporter),
 * before the parent touches the backend. */
static bool start_peers(void) {
    int ws;

    for (int i = 0; i < NPEERS; ++i) {
        int to_peer[2], from_peer[2];

        if ((pipe(to_peer) != 0) || (pipe(from_peer) != 0)) {
            return false;
        }
        fflush(stdout);
        peers[i].pid = fork();
        if (peers[i].pid < 0) {
            return false;
        }
        if (peers[i].pid == 0) {
            close(to_peer[1]);
            close(from_peer[0]);
            for (int j = 0; j < i; ++j) {
                close(peers[j].cmd_fd);
                close(peers[j].reply_fd);
            }
            peer_main(to_peer[0], from_peer[1]);
        }
        close(to_peer[0]);
        close(from_peer[1]);
        peers[i].cmd_fd = to_peer[1];
        peers[i].reply_fd = from_peer[0];
    }

    dead_pid = fork();
    if (dead_pid == 0) {
        _exit(0);
    }
    return (dead_pid > 0) && (waitpid(dead_pid, &ws, 0) == dead_pid);
}

static reply_t peer_run(int i, const cmd_t *cmd) {
    reply_t reply;

    memset(&reply, 0, sizeof(reply));
    fflush(stdout);
    if (!write_full(peers[i].cmd_fd, cmd, sizeof(*cmd)) ||
        !read_full(peers[i].reply_fd, &reply, sizeof(reply))) {
        CHECK(false, "peer %d answers (%s)", i, cmd->what);
        memset(&reply, 0, sizeof(reply));
        return reply;
    }
    test_passed += reply.passed;
    test_failed += reply.failed;
    return reply;
}

static void stop_peers(void) {
    cmd_t cmd;
    int ws;

    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = CMD_QUIT;
    for (int i = 0; i < NPEERS; ++i) {
        write_full(peers[i].cmd_fd, &cmd, sizeof(cmd));
        close(peers[i].cmd_fd);
        close(peers[i].reply_fd);
        ws = 0;
        if (waitpid(peers[i].pid, &ws, 0) == peers[i].pid) {
            CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "peer %d exits cleanly (status 0x%x)", i,
                  ws);
        }
    }
}

static cmd_t make_cmd(cmd_kind_t kind, const accel_ipc_handle_t *handle, const char *what) {
    cmd_t cmd;

    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = kind;
    if (handle != NULL) {
        cmd.handle = *handle;
    }
    snprintf(cmd.what, sizeof(cmd.what), "%s", what);
    return cmd;
}

/* Export at two offsets, each imported by another peer; the parent sees the writes. */
static void test_rw(void) {
    size_t len = ((size_t)1 << 20) + 1000;
    size_t off1 = 4096 + 123, off2 = 300001;
    accel_ipc_handle_t h1, h2;
    accel_mem_attr_t attr;
    accel_status_t status;
    void *dev = NULL;
    reply_t reply;
    cmd_t cmd;

    if (!CHECK(ops->mem_alloc(ACCEL_MEM_DEVICE, len, &dev) == ACCEL_OK && device_fill(dev, len, 11),
               "alloc and fill %zu bytes of device memory", len)) {
        return;
    }
    ops->mem_query(dev, &attr);
    status = ops->ipc_export((char *)dev + off1, &h1);
    CHECK(status == ACCEL_OK && h1.offset == off1 && h1.alloc_size >= len &&
              h1.buffer_id == attr.buffer_id && h1.pid == (int32_t)getpid(),
          "export at offset %zu: offset %" PRIu64 ", size %" PRIu64 ", id %" PRIu64, off1,
          h1.offset, h1.alloc_size, h1.buffer_id);

    cmd = make_cmd(CMD_RW, &h1, "device at offset 1");
    cmd.len = len - off1;
    cmd.seed_expect = seed_at(11, off1);
    cmd.seed_write = seed_at(22, off1);
    reply = peer_run(0, &cmd);
    if (reply.imported) {
        CHECK(device_has_pattern(dev, off1, 11) &&
                  device_has_pattern((char *)dev + off1, len - off1, seed_at(22, off1)),
              "the parent sees the peer's write, and nothing before the offset changed");
    }

    status = ops->ipc_export((char *)dev + off2, &h2);
    CHECK(status == ACCEL_OK && h2.offset == off2 && h2.buffer_id == h1.buffer_id,
          "export of the same allocation at offset %zu", off2);
    cmd = make_cmd(CMD_RW, &h2, "device at offset 2");
    cmd.len = len - off2;
    cmd.seed_expect = seed_at(22, off2);
    cmd.seed_write = seed_at(33, off2);
    reply = peer_run(1, &cmd);
    if (reply.imported) {
        CHECK(device_has_pattern((char *)dev + off2, len - off2, seed_at(33, off2)),
              "the parent sees the second peer's write");
    }

    if (emulated()) {
        cmd = make_cmd(CMD_FAULT, &h1, "fault");
        cmd.len = 64;
        cmd.seed_expect = seed_at(22, off1);
        peer_run(0, &cmd);
    }
    CHECK(ops->mem_free(dev) == ACCEL_OK, "free the exported allocation");
}

/* A stream of this process waits on a flag in its device memory that a peer
 * writes through IPC (stream_write_value32): the stream-ordered handshake. */
static void test_signal(void) {
    enum { LEN = 4096 };
    unsigned char *host = malloc(LEN);
    uint32_t zero = 0, *flag = NULL;
    void *man = NULL;
    accel_stream_h stream = NULL;
    accel_event_h event = NULL;
    accel_ipc_handle_t h;
    accel_status_t status;
    bool done = true;
    reply_t reply;
    cmd_t cmd;

    ops->mem_alloc(ACCEL_MEM_DEVICE, 256, (void **)&flag);
    ops->mem_alloc(ACCEL_MEM_MANAGED, LEN, &man);
    ops->stream_create(&stream);
    ops->event_create(&event);
    memset(man, 0, LEN);
    for (size_t i = 0; i < LEN; ++i) {
        host[i] = (unsigned char)seed_at(44, i);
    }
    ops->memcpy(&flag[16], &zero, sizeof(zero));
    status = ops->stream_wait_value32(stream, &flag[16], 3, ACCEL_WAIT_VALUE_GEQ);
    if (status == ACCEL_ERR_UNSUPPORTED) {
        printf("SKIP: stream_wait_value32 unsupported here (%s %s)\n", accel_last_error()->call,
               accel_last_error()->error);
        goto out;
    }
    CHECK(status == ACCEL_OK && ops->memcpy_async(man, host, LEN, stream) == ACCEL_OK &&
              ops->event_record(event, stream) == ACCEL_OK &&
              ops->ipc_export(&flag[16], &h) == ACCEL_OK,
          "a stream waits on a device flag, then copies; the flag is exported");
    usleep(20000);
    CHECK(ops->event_query(event, &done) == ACCEL_OK && !done && ((unsigned char *)man)[0] == 0,
          "the stream is held until the flag is written");
    cmd = make_cmd(CMD_SIGNAL, &h, "signal");
    cmd.seed_write = 3;
    reply = peer_run(0, &cmd);
    if (reply.imported) {
        CHECK(ops->event_synchronize(event) == ACCEL_OK && memcmp(man, host, LEN) == 0,
              "a peer's stream_write_value32 released the stream");
    } else {
        ops->memcpy(&flag[16], &(uint32_t){3}, sizeof(uint32_t));
    }
out:
    ops->stream_synchronize(stream);
    ops->event_destroy(event);
    ops->stream_destroy(stream);
    ops->mem_free(flag);
    ops->mem_free(man);
    free(host);
}

/* Import in the exporting process: the allocation itself. */
static void test_own(void) {
    size_t len = 65536;
    void *dev = NULL, *base = NULL, *base2 = NULL;
    accel_ipc_handle_t h;

    ops->mem_alloc(ACCEL_MEM_DEVICE, len, &dev);
    CHECK(ops->ipc_export((char *)dev + 100, &h) == ACCEL_OK, "export for an own import");
    CHECK(ops->ipc_import(&h, &base) == ACCEL_OK && base == dev,
          "own import gives the allocation itself");
    CHECK(ops->ipc_import(&h, &base2) == ACCEL_OK && base2 == dev, "own import again");
    if (emulated()) {
        CHECK(accel_emulated_live_ipc_mappings() == 1, "own imports: counted once");
    }
    CHECK(ops->ipc_close(base) == ACCEL_OK && ops->ipc_close(base2) == ACCEL_OK,
          "own imports: two closes");
    CHECK(ops->ipc_close(base) == ACCEL_ERR_INVALID, "own imports: a third close is refused");
    CHECK(ops->mem_free(dev) == ACCEL_OK, "own allocation still freed normally");
    CHECK(ops->ipc_import(&h, &base) == ACCEL_ERR_INVALID, "own import of a freed allocation");
}

/* What must fail: exports of host memory, bad handles. */
static void test_invalid(void) {
    size_t len = 8192;
    char stack_buf[64] = "";
    char *heap = malloc(64);
    void *dev = NULL, *pinned = NULL, *man = NULL, *other = NULL;
    accel_ipc_handle_t good, h;
    accel_status_t status;
    cmd_t cmd;

    CHECK(ops->ipc_export(stack_buf, &h) == ACCEL_ERR_INVALID, "export of a stack buffer refused");
    CHECK(ops->ipc_export(heap, &h) == ACCEL_ERR_INVALID, "export of heap memory refused");
    CHECK(ops->ipc_export(NULL, &h) == ACCEL_ERR_INVALID, "export of NULL refused");
    free(heap);
    if (ops->mem_alloc(ACCEL_MEM_HOST_PINNED, len, &pinned) == ACCEL_OK) {
        CHECK(ops->ipc_export(pinned, &h) == ACCEL_ERR_INVALID, "export of pinned memory refused");
        ops->mem_free(pinned);
    }
    CHECK(ops->ipc_close(stack_buf) == ACCEL_ERR_INVALID, "close of what was never imported");

    ops->mem_alloc(ACCEL_MEM_DEVICE, len, &dev);
    device_fill(dev, len, 44);
    CHECK(ops->ipc_export((char *)dev + 8, &good) == ACCEL_OK, "export for the invalid handles");

    memset(&h, 0xa5, sizeof(h));
    cmd = make_cmd(CMD_IMPORT_FAILS, &h, "garbage handle");
    cmd.want_status = ACCEL_ERR_INVALID;
    peer_run(0, &cmd);

    h = good;
    for (size_t i = 0; i < sizeof(h.data); ++i) {
        h.data[i] ^= (uint8_t)(0x5a + i);
    }
    cmd = make_cmd(CMD_IMPORT_FAILS, &h, "garbage data of a valid kind");
    cmd.want_status = emulated() ? ACCEL_ERR_INVALID : ANY_ERROR;
    peer_run(0, &cmd);

    h = good;
    h.offset = h.alloc_size;
    cmd = make_cmd(CMD_IMPORT_FAILS, &h, "offset past the allocation");
    cmd.want_status = ACCEL_ERR_INVALID;
    peer_run(0, &cmd);

    h = good;
    h.pid = (int32_t)dead_pid;
    cmd = make_cmd(CMD_IMPORT_FAILS, &h, "handle of a dead process");
    cmd.want_status = ACCEL_ERR_INVALID;
    peer_run(0, &cmd);

    /* Freed, and the address handed out again. */
    ops->mem_free(dev);
    ops->mem_alloc(ACCEL_MEM_DEVICE, len, &other);
    cmd = make_cmd(CMD_IMPORT_FAILS, &good, "handle of a freed allocation");
    /* CUDA: whether cuIpcOpenMemHandle refuses a handle of freed memory is
     * the driver's business (the contract forbids it): only reported. */
    cmd.want_status = emulated() ? ACCEL_ERR_INVALID : REPORT_ONLY;
    peer_run(1, &cmd);
    ops->mem_free(other);

    status = ops->mem_alloc(ACCEL_MEM_MANAGED, len, &man);
    if (status == ACCEL_OK) {
        status = ops->ipc_export(man, &h);
        if (emulated()) {
            CHECK(status == ACCEL_OK, "export of managed memory");
            fill(man, len, 55);
            cmd = make_cmd(CMD_MANAGED, &h, "managed");
            cmd.len = len;
            cmd.seed_expect = 55;
            cmd.seed_write = 66;
            if (peer_run(1, &cmd).imported) {
                CHECK(has_pattern(man, len, 66), "the parent sees the write to managed memory");
            }
        } else {
            CHECK(status == ACCEL_ERR_UNSUPPORTED, "CUDA IPC of managed memory: unsupported (%s)",
                  accel_status_string(status));
        }
        ops->mem_free(man);
    }
}

static void test_pci_bus_id(void) {
    char buf[32] = "";
    unsigned dom, bus, dev, fn;

    CHECK(ops->device_pci_bus_id(0, buf, sizeof(buf)) == ACCEL_OK &&
              sscanf(buf, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4 && strlen(buf) == 12,
          "PCI bus id of device 0: %s", buf);
    if (emulated()) {
        CHECK(strcmp(buf, "0000:00:00.0") == 0, "emulated: the fixed fake address");
    }
    CHECK(ops->device_pci_bus_id(0, buf, 4) == ACCEL_ERR_INVALID, "PCI bus id: buffer too small");
    CHECK(ops->device_pci_bus_id(ops->device_count(), buf, sizeof(buf)) != ACCEL_OK,
          "PCI bus id of a device that is not there");
}

#ifdef HAVE_CUDA
/* An allocation made with cuMemCreate (POSIX fd handle type requested): VMM handles. */
static void test_cuda_vmm(void) {
    accel_cuda_driver_t *drv = &accel_cuda_driver;
    CUmemGenericAllocationHandle vmm;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUdeviceptr ptr = 0;
    size_t gran = 0, len, off = 12345;
    int vmm_ok = 0, fd_ok = 0;
    accel_ipc_handle_t h;
    CUdevice device;
    reply_t reply;
    cmd_t cmd;

    if ((accel_cuda_ctx_ensure() != ACCEL_OK) || (drv->cuCtxGetDevice(&device) != CUDA_SUCCESS)) {
        CHECK(false, "VMM: current device");
        return;
    }
    drv->cuDeviceGetAttribute(&vmm_ok, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              device);
    drv->cuDeviceGetAttribute(
        &fd_ok, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device);
    if (!vmm_ok || !fd_ok) {
        printf("SKIP: VMM: the device lacks VMM (%d) or POSIX fd handles (%d)\n", vmm_ok, fd_ok);
        return;
    }
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)device;
    drv->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    len = 2 * gran;
    if (!CHECK(gran != 0 && drv->cuMemCreate(&vmm, len, &prop, 0) == CUDA_SUCCESS,
               "VMM: cuMemCreate %zu bytes", len)) {
        return;
    }
    memset(&access, 0, sizeof(access));
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (!CHECK(drv->cuMemAddressReserve(&ptr, len, gran, 0, 0) == CUDA_SUCCESS &&
                   drv->cuMemMap(ptr, len, 0, vmm, 0) == CUDA_SUCCESS &&
                   drv->cuMemSetAccess(ptr, len, &access, 1) == CUDA_SUCCESS,
               "VMM: map it")) {
        goto out_release;
    }
    device_fill((void *)(uintptr_t)ptr, len, 77);

    CHECK(ops->ipc_export((char *)(uintptr_t)ptr + off, &h) == ACCEL_OK &&
              h.kind == ACCEL_CUDA_IPC_KIND_VMM_FD && h.offset == off && h.alloc_size == len,
          "VMM: export gives a VMM handle (kind 0x%x, size %" PRIu64 ")", h.kind, h.alloc_size);
    cmd = make_cmd(CMD_RW, &h, "VMM allocation");
    cmd.len = len - off;
    cmd.seed_expect = seed_at(77, off);
    cmd.seed_write = seed_at(88, off);
    cmd.allow_unsupported = true;
    reply = peer_run(0, &cmd);
    if (reply.imported) {
        CHECK(device_has_pattern((char *)(uintptr_t)ptr + off, len - off, seed_at(88, off)),
              "VMM: the parent sees the peer's write");
    }
out_release:
    if (ptr != 0) {
        drv->cuMemUnmap(ptr, len); /* (fails harmlessly when the map did) */
        drv->cuMemAddressFree(ptr, len);
    }
    drv->cuMemRelease(vmm);
}
#endif

static void usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--backend emulated|cuda] [-v]\n", argv0);
    exit(2);
}

int main(int argc, char **argv) {
    const char *reason = "";
    accel_status_t status;

    for (int i = 1; i < argc; ++i) {
        if ((strcmp(argv[i], "--backend") == 0) && (i + 1 < argc)) {
            ++i;
            if (strcmp(argv[i], "cuda") == 0) {
                backend = ACCEL_BACKEND_CUDA;
            } else if (strcmp(argv[i], "emulated") == 0) {
                backend = ACCEL_BACKEND_EMULATED;
            } else {
                usage(argv[0]);
            }
        } else if (strcmp(argv[i], "-v") == 0) {
            accel_set_log(NULL, ACCEL_LOG_DEBUG);
        } else {
            usage(argv[0]);
        }
    }
#ifndef HAVE_CUDA
    if (backend == ACCEL_BACKEND_CUDA) {
        printf("SKIP: built without CUDA\n");
        return 77;
    }
#endif

    signal(SIGPIPE, SIG_IGN); /* a dead peer is a failed check, not the end */
    alarm(60);
    /* Peers may take descriptors from this process (VMM handles, pidfd_getfd)
     * under Yama ptrace_scope 1; no effect elsewhere. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    if (!start_peers()) {
        printf("FAIL: cannot start the peer processes: %s\n", strerror(errno));
        return 1;
    }

    status = accel_init(backend, &ops, &reason);
    if (status != ACCEL_OK) {
        stop_peers();
        if (backend == ACCEL_BACKEND_CUDA) {
            printf("SKIP: no CUDA driver/device: %s\n", reason);
            return 77;
        }
        printf("FAIL: init the emulated backend: %s\n", reason);
        return 1;
    }
    printf("backend %s, %d peers\n", ops->name, NPEERS);

    test_rw();
    test_signal();
    test_own();
    test_invalid();
    test_pci_bus_id();
#ifdef HAVE_CUDA
    if (backend == ACCEL_BACKEND_CUDA) {
        test_cuda_vmm();
    }
#endif
    stop_peers();

    if (emulated()) {
        CHECK(accel_emulated_live_ipc_mappings() == 0 &&
                  accel_emulated_live_allocations(ACCEL_MEM_DEVICE) == 0 &&
                  accel_emulated_live_allocations(ACCEL_MEM_MANAGED) == 0,
              "no mapping or allocation left");
    }
    accel_finalize();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (test_failed == 0) ? 0 : 1;
}

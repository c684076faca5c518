/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ucx backend of shmem-transport (cgt_ucx.h) between MPI processes: every rank is
 * "remote" to every other (one UCX context per rank, no node-local shortcut), the out-of-band
 * exchange is MPI_Allgather.  Run with UCX_TLS=tcp,self or shm,self (or --tls=...).
 *
 * Cases:
 *   topo        cgt_topo_nearest_nics is OK and "" without GPU/NIC, and says why
 *   put / get   host <-> host, 1 B .. 16 MiB and odd sizes at odd offsets, every byte checked,
 *               the bytes after the target range untouched
 *   signal      data then put_signal to every peer without a flush; the target waits on the
 *               flag with cgt_ucx_progress only and then checks the data (ordering)
 *   signal storm 1,000 signals of growing value to every peer's one slot, no flush nor wait
 *               between: the target's slot only ever grows and ends at the last value
 *               (signal messages may be delivered out of order; none may lower the slot)
 *   staged      emulated device memory (UCX cannot touch it): device source put into remote
 *               host memory, remote host memory got into device memory, through the bounce
 *               pipeline (several chunks); mapping device memory is refused
 *   bounds      puts/gets/signals past the mapping fail with CGT_ERR_INVALID and write
 *               nothing; garbage rkeys are refused
 *   endpoints   one per peer used; 0 in the process after destroy
 *   cycles      --cycles create/use/destroy: endpoints 0, no fd growth, RSS bounded
 *   dead peer   (--dead-peer) rank 0 forks a UCX peer (OOB over a socketpair) that exits
 *               abruptly: the next put+flush to it fails (PEER_FAILED or TIMEOUT) within the
 *               timeout, never hangs; destroy stays bounded
 *
 * Closing line (rank 0): "N passed, M failed".
 */
/* strdup, alarm, fork: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include "cgt_ucx.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_LEN (16u * 1024 * 1024 + 64)
#define CANARY_LEN 64
#define CANARY 0xA5
#define SENTINEL 0xEE
#define NUM_SIGNALS 64

typedef struct {
    const char *tls;
    long cycles;
    size_t max_size;
    long rss_limit_kib;
    bool dead_peer;
    int verbose;
} options_t;

static options_t opt = {.tls = NULL,
                        .cycles = 20,
                        .max_size = 16u * 1024 * 1024,
                        .rss_limit_kib = 16384,
                        .dead_peer = false,
                        .verbose = 0};

/* One rank's view of the others: its window and signals, every peer's rkeys. */
typedef struct {
    cgt_ucx_t *ucx;
    uint8_t *window; /* WINDOW_LEN mapped, then CANARY_LEN not mapped */
    uint64_t *signals;
    cgt_ucx_mem_t *window_mem;
    cgt_ucx_mem_t *signals_mem;
    cgt_ucx_rkey_t **window_rkeys;
    cgt_ucx_rkey_t **signal_rkeys;
} team_t;

static int rank, nranks;

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static int oob_mpi_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx) {
    MPI_Comm comm = *(MPI_Comm *)ctx;
    return (MPI_Allgather(sbuf, (int)len, MPI_BYTE, rbuf, (int)len, MPI_BYTE, comm) == MPI_SUCCESS)
               ? 0
               : -1;
}

static void test_log(int level, const char *msg) {
    printf("LOG [rank %d] %d: %s\n", rank, level, msg);
    fflush(stdout);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t pattern_byte(uint32_t seed, size_t i) {
    return (uint8_t)(seed * 131u + i * 7u + (i >> 11) + (seed >> 8));
}

static void pattern_fill(uint8_t *buf, size_t len, uint32_t seed) {
    for (size_t i = 0; i < len; ++i) {
        buf[i] = pattern_byte(seed, i);
    }
}

/* Index of the first byte that differs from the pattern, len when none. */
static size_t pattern_check(const uint8_t *buf, size_t len, uint32_t seed) {
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != pattern_byte(seed, i)) {
            return i;
        }
    }
    return len;
}

static bool all_bytes(const uint8_t *buf, size_t len, uint8_t value) {
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != value) {
            return false;
        }
    }
    return true;
}

/* A barrier that keeps this rank's UCX worker progressing: over tcp and shared-memory FIFOs
 * the peers' puts and gets complete only while the target progresses. */
static void progress_barrier(cgt_ucx_t *ucx) {
    MPI_Request req;
    int done = 0;

    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (ucx != NULL) {
            cgt_ucx_progress(ucx);
        }
    }
}

static bool check_status(cgt_status_t got, cgt_status_t want, const char *what) {
    if (got != want) {
        tu_fail("%s: status %d, expected %d (%s)", what, (int)got, (int)want, cgt_ucx_last_error());
        return false;
    }
    return true;
}

static void team_params(cgt_team_params_t *params, MPI_Comm *comm, const accel_ops_t *accel,
                        double timeout) {
    memset(params, 0, sizeof(*params));
    params->rank = rank;
    params->size = nranks;
    params->oob_allgather = oob_mpi_allgather;
    params->oob_ctx = comm;
    params->accel = accel;
    params->backends = CGT_BACKEND_UCX;
    params->timeout = timeout;
    params->ucx_tls = opt.tls;
    params->log = test_log;
    params->verbose = opt.verbose;
}

/* Map a local buffer, allgather the packed rkeys, unpack every rank's (own included). */
static cgt_status_t exchange(cgt_ucx_t *ucx, void *buf, size_t len, cgt_ucx_mem_t **mem_p,
                             cgt_ucx_rkey_t **rkeys) {
    typedef struct {
        uint32_t len;
        uint8_t buf[CGT_UCX_PACKED_MAX];
    } packed_t;
    packed_t *mine = calloc((size_t)nranks + 1, sizeof(*mine)), *all = mine + 1;
    cgt_status_t status;
    size_t packed_len = sizeof(mine->buf);
    int r;

    status = cgt_ucx_mem_map(ucx, buf, len, ACCEL_MEM_HOST, mem_p);
    if (status == CGT_OK) {
        status = cgt_ucx_mem_pack(ucx, *mem_p, mine->buf, &packed_len);
        mine->len = (uint32_t)packed_len;
    }
    MPI_Allgather(mine, sizeof(*mine), MPI_BYTE, all, sizeof(*mine), MPI_BYTE, MPI_COMM_WORLD);
    for (r = 0; (r < nranks) && (status == CGT_OK); ++r) {
        status = (all[r].len > 0) ? cgt_ucx_rkey_unpack(ucx, r, all[r].buf, all[r].len, &rkeys[r])
                                  : CGT_ERR_INVALID;
    }
    free(mine);
    return status;
}

static bool team_open(team_t *t, MPI_Comm *comm, const accel_ops_t *accel, double timeout) {
    cgt_team_params_t params;

    memset(t, 0, sizeof(*t));
    team_params(&params, comm, accel, timeout);
    if (!check_status(cgt_ucx_create(&params, &t->ucx), CGT_OK, "cgt_ucx_create")) {
        return false;
    }
    t->window = malloc(WINDOW_LEN + CANARY_LEN);
    t->signals = calloc(NUM_SIGNALS, sizeof(uint64_t));
    t->window_rkeys = calloc((size_t)nranks, sizeof(*t->window_rkeys));
    t->signal_rkeys = calloc((size_t)nranks, sizeof(*t->signal_rkeys));
    memset(t->window, 0, WINDOW_LEN);
    memset(t->window + WINDOW_LEN, CANARY, CANARY_LEN);
    return check_status(exchange(t->ucx, t->window, WINDOW_LEN, &t->window_mem, t->window_rkeys),
                        CGT_OK, "window exchange") &&
           check_status(exchange(t->ucx, t->signals, NUM_SIGNALS * sizeof(uint64_t),
                                 &t->signals_mem, t->signal_rkeys),
                        CGT_OK, "signal exchange");
}

static void team_close(team_t *t) {
    int r;

    if (t->ucx != NULL) {
        for (r = 0; r < nranks; ++r) {
            cgt_ucx_rkey_release(t->ucx, t->window_rkeys[r]);
            cgt_ucx_rkey_release(t->ucx, t->signal_rkeys[r]);
        }
        cgt_ucx_mem_unmap(t->ucx, t->window_mem);
        cgt_ucx_mem_unmap(t->ucx, t->signals_mem);
        cgt_ucx_destroy(t->ucx);
    }
    free(t->window);
    free(t->signals);
    free(t->window_rkeys);
    free(t->signal_rkeys);
    memset(t, 0, sizeof(*t));
}

static long fd_count(void) {
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *e;
    long n = 0;

    if (dir == NULL) {
        return -1;
    }
    while ((e = readdir(dir)) != NULL) {
        n += (e->d_name[0] != '.');
    }
    closedir(dir);
    return n;
}

static long rss_kib(void) {
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL) {
        return -1;
    }
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) {
        resident = -1;
    }
    fclose(f);
    return (resident < 0) ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ------------------------------------------------------------------------------------------ */
/* Cases                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static const size_t sizes[] = {8,
                               1,
                               3,
                               13,
                               4095,
                               4096,
                               65537,
                               1024 * 1024,
                               1024 * 1024 + 13,
                               4 * 1024 * 1024 + 3,
                               16 * 1024 * 1024};

/* Leaves the stack below the caller full of "#$,": a callee that reads a local it did not set
 * then finds garbage, not the zeros of a fresh page. */
static __attribute__((noinline)) void dirty_stack(void) {
    volatile char junk[32768];

    for (size_t i = 0; i < sizeof(junk); ++i) {
        junk[i] = "#$,"[i % 3]; /* short tokens: a list's whole names would take them */
    }
    __asm__ volatile("" : : "r"(junk) : "memory");
}

/* An answer of cgt_topo_nearest_nics: "" or "name:1[,name:1...]". */
static bool topo_answer_well_formed(const char *devices) {
    for (const char *p = devices; *p != '\0'; ++p) {
        if (!isalnum((unsigned char)*p) && (strchr("_-.:,", *p) == NULL)) {
            return false;
        }
    }
    return true;
}

/* ACCEL_EMULATED_PCI_BUS_ID: the first PCI device of class network (0x02) or storage
 * (0x01) in sysfs, unless set already; none: the default address (not in hwloc's topology). */
static void topo_place_emulated_gpu(void) {
    DIR *dir;
    struct dirent *ent;

    if ((getenv("ACCEL_EMULATED_PCI_BUS_ID") != NULL) ||
        ((dir = opendir("/sys/bus/pci/devices")) == NULL)) {
        return;
    }
    while ((ent = readdir(dir)) != NULL) {
        char path[512], cls[32] = "";
        FILE *f;

        if (ent->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", ent->d_name);
        if ((f = fopen(path, "r")) == NULL) {
            continue;
        }
        if ((fgets(cls, sizeof(cls), f) != NULL) &&
            ((strncmp(cls, "0x02", 4) == 0) || (strncmp(cls, "0x01", 4) == 0))) {
            setenv("ACCEL_EMULATED_PCI_BUS_ID", ent->d_name, 1);
            fclose(f);
            break;
        }
        fclose(f);
    }
    closedir(dir);
}

static void case_topo(void) {
    char buf[128] = "x", why[256] = "";
    const char *reason;

    tu_case_begin("topo: nearest NICs without GPU or NIC");
    check_status(cgt_topo_nearest_nics(NULL, 0, buf, sizeof(buf)), CGT_OK,
                 "cgt_topo_nearest_nics(no accelerator)");
    if (buf[0] != '\0') {
        tu_fail("no accelerator: \"%s\", expected \"\"", buf);
    }
    /* the emulated GPU at the address of a network or storage device of this machine, which
     * hwloc keeps (host bridges it drops): the NIC choice then runs on a topology that has
     * the GPU and, here, no HCA */
    topo_place_emulated_gpu();
    if (tu_accel_init(ACCEL_BACKEND_EMULATED, &reason) != 0) {
        tu_fail("emulated accelerator: %s", reason);
    } else {
        /* the emulated device's bus id (0000:00:00.0) is this machine's host bridge, which
         * hwloc finds: the answer of a topology with no HCA near it, from a dirty stack */
        dirty_stack();
        check_status(cgt_topo_nearest_nics_why(tu_accel, 0, buf, sizeof(buf), why, sizeof(why)),
                     CGT_OK, "cgt_topo_nearest_nics(emulated)");
        if (!topo_answer_well_formed(buf)) {
            tu_fail("emulated accelerator: network devices \"%.60s\" (why \"%s\"): not a "
                    "device list",
                    buf, why);
        } else if ((buf[0] != '\0') || (why[0] == '\0')) {
            tu_fail("emulated accelerator: \"%s\" (why \"%s\"), expected \"\" and a reason", buf,
                    why);
        }
        if ((rank == 0) && (opt.verbose > 0)) {
            tu_note("topo: %s", why);
        }
    }
    check_status(cgt_topo_nearest_nics(NULL, 0, NULL, 0), CGT_ERR_INVALID,
                 "cgt_topo_nearest_nics(NULL buffer)");
    tu_case_end();
}

static void case_put_get(team_t *t) {
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    uint8_t *buf = malloc(opt.max_size + 16);
    size_t i, off, len, bad;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        len = sizes[i];
        if (len > opt.max_size) {
            continue;
        }
        off = (len & 1) ? 5 : 0;

        tu_case_begin("put %zu bytes at offset %zu to rank %d", len, off, right);
        memset(t->window + off + len, SENTINEL, 16);
        pattern_fill(buf, len, (uint32_t)(rank * 1000 + i));
        progress_barrier(t->ucx);
        check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], off, buf, len), CGT_OK, "put");
        check_status(cgt_ucx_flush(t->ucx, right), CGT_OK, "flush");
        progress_barrier(t->ucx);
        bad = pattern_check(t->window + off, len, (uint32_t)(left * 1000 + i));
        if (bad != len) {
            tu_fail("byte %zu of %zu from rank %d differs", bad, len, left);
        }
        if (!all_bytes(t->window + off + len, 16, SENTINEL)) {
            tu_fail("bytes after the %zu put were written", len);
        }
        tu_case_end();

        tu_case_begin("get %zu bytes at offset %zu from rank %d", len, off, right);
        pattern_fill(t->window + off, len, (uint32_t)(rank * 7777 + i));
        memset(buf + len, SENTINEL, 16);
        progress_barrier(t->ucx);
        check_status(cgt_ucx_get(t->ucx, buf, t->window_rkeys[right], off, len), CGT_OK, "get");
        check_status(cgt_ucx_flush(t->ucx, right), CGT_OK, "flush");
        bad = pattern_check(buf, len, (uint32_t)(right * 7777 + i));
        if (bad != len) {
            tu_fail("byte %zu of %zu got from rank %d differs", bad, len, right);
        }
        if (!all_bytes(buf + len, 16, SENTINEL)) {
            tu_fail("bytes after the %zu get were written", len);
        }
        progress_barrier(t->ucx);
        tu_case_end();
    }
    free(buf);
}

/* Every rank puts data to every peer and signals it, no flush between: the signal must not
 * arrive before the data.  Receivers poll with cgt_ucx_progress only. */
static void case_signal(team_t *t, int iterations) {
    size_t region = (WINDOW_LEN / (size_t)nranks) & ~(size_t)7;
    uint8_t **src = calloc((size_t)nranks, sizeof(*src));
    int iter, p;

    for (p = 0; p < nranks; ++p) {
        src[p] = malloc(region);
    }
    memset(t->signals, 0, NUM_SIGNALS * sizeof(uint64_t));
    progress_barrier(t->ucx);
    tu_case_begin("put then put_signal to every peer, %d rounds", iterations);
    for (iter = 1; iter <= iterations; ++iter) {
        size_t len = (iter % 3 == 0) ? region - 1 : ((iter % 3 == 1) ? 8 : 100003);
        double deadline;

        for (p = 0; p < nranks; ++p) {
            if (p == rank) {
                continue;
            }
            pattern_fill(src[p], len, (uint32_t)(iter * 100 + rank * 10 + p));
            check_status(
                cgt_ucx_put(t->ucx, t->window_rkeys[p], (size_t)rank * region, src[p], len), CGT_OK,
                "put");
            check_status(cgt_ucx_put_signal(t->ucx, t->signal_rkeys[p],
                                            (size_t)rank * sizeof(uint64_t), (uint64_t)iter),
                         CGT_OK, "put_signal");
        }
        deadline = now_s() + 30;
        for (p = 0; p < nranks; ++p) {
            volatile uint64_t *flag = &t->signals[p];
            size_t bad;
            if (p == rank) {
                continue;
            }
            while ((*flag < (uint64_t)iter) && (now_s() < deadline)) {
                cgt_ucx_progress(t->ucx);
            }
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (*flag != (uint64_t)iter) {
                tu_fail("round %d: signal of rank %d is %" PRIu64, iter, p, (uint64_t)*flag);
                continue;
            }
            bad = pattern_check(t->window + (size_t)p * region, len,
                                (uint32_t)(iter * 100 + p * 10 + rank));
            if (bad != len) {
                tu_fail("round %d: signal of rank %d seen before its data (byte %zu of %zu)", iter,
                        p, bad, len);
            }
        }
        /* the sources are reused next round; the windows are overwritten once all checked */
        check_status(cgt_ucx_flush(t->ucx, -1), CGT_OK, "flush(-1)");
        progress_barrier(t->ucx);
    }
    tu_case_end();
    for (p = 0; p < nranks; ++p) {
        free(src[p]);
    }
    free(src);
}

/* Signals only, back to back, to one slot of every peer: what the target sees never goes
 * down and ends at the last value. */
static void case_signal_storm(team_t *t, int count) {
    uint64_t seen[64] = {0};
    double deadline;
    int p, done;

    memset(t->signals, 0, NUM_SIGNALS * sizeof(uint64_t));
    progress_barrier(t->ucx);
    tu_case_begin("%d signals of growing value to every peer, back to back", count);
    for (int v = 1; v <= count; ++v) {
        for (p = 0; p < nranks; ++p) {
            if (p != rank) {
                check_status(cgt_ucx_put_signal(t->ucx, t->signal_rkeys[p],
                                                (size_t)rank * sizeof(uint64_t), (uint64_t)v),
                             CGT_OK, "put_signal");
            }
        }
    }
    deadline = now_s() + 30;
    do {
        cgt_ucx_progress(t->ucx);
        done = 0;
        for (p = 0; (p < nranks) && (p < 64); ++p) {
            uint64_t now = __atomic_load_n(&t->signals[p], __ATOMIC_ACQUIRE);
            if (p == rank) {
                ++done;
                continue;
            }
            if (now < seen[p]) {
                tu_fail("the slot of rank %d went down from %" PRIu64 " to %" PRIu64, p, seen[p],
                        now);
            }
            seen[p] = now;
            done += (now == (uint64_t)count);
        }
    } while ((done < nranks) && (now_s() < deadline));
    if (done != nranks) {
        tu_fail("%d of %d slots at %d after 30 s", done, nranks, count);
    }
    check_status(cgt_ucx_flush(t->ucx, -1), CGT_OK, "flush(-1)");
    progress_barrier(t->ucx);
    tu_case_end();
}

static void case_bounds(team_t *t) {
    int right = (rank + 1) % nranks;
    uint8_t buf[16] = {0};
    cgt_ucx_rkey_t *rkey = NULL;
    uint8_t garbage[64];

    tu_case_begin("bounds: nothing written past a mapping");
    progress_barrier(t->ucx);
    if (cgt_ucx_rkey_size(t->window_rkeys[right]) != WINDOW_LEN) {
        tu_fail("rkey size %zu, expected %u", cgt_ucx_rkey_size(t->window_rkeys[right]),
                (unsigned)WINDOW_LEN);
    }
    check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], WINDOW_LEN - 4, buf, 8),
                 CGT_ERR_INVALID, "put across the end");
    check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], WINDOW_LEN + 1, buf, 0),
                 CGT_ERR_INVALID, "empty put past the end");
    check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], SIZE_MAX - 2, buf, 8), CGT_ERR_INVALID,
                 "put at an offset that wraps");
    check_status(cgt_ucx_get(t->ucx, buf, t->window_rkeys[right], WINDOW_LEN - 1, 2),
                 CGT_ERR_INVALID, "get across the end");
    check_status(cgt_ucx_put_signal(t->ucx, t->signal_rkeys[right], 4, 1), CGT_ERR_INVALID,
                 "misaligned signal");
    check_status(
        cgt_ucx_put_signal(t->ucx, t->signal_rkeys[right], NUM_SIGNALS * sizeof(uint64_t), 1),
        CGT_ERR_INVALID, "signal past the end");
    if (cgt_ucx_last_error()[0] == '\0') {
        tu_fail("no error text after CGT_ERR_INVALID");
    }
    check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], WINDOW_LEN - 8, buf, 8), CGT_OK,
                 "put of the last 8 bytes");
    check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], WINDOW_LEN, buf, 0), CGT_OK,
                 "empty put at the end");
    check_status(cgt_ucx_flush(t->ucx, right), CGT_OK, "flush");
    memset(garbage, 0x3c, sizeof(garbage));
    check_status(cgt_ucx_rkey_unpack(t->ucx, right, garbage, sizeof(garbage), &rkey),
                 CGT_ERR_INVALID, "unpack of garbage");
    check_status(cgt_ucx_rkey_unpack(t->ucx, nranks, garbage, sizeof(garbage), &rkey),
                 CGT_ERR_INVALID, "unpack for a rank out of range");
    check_status(cgt_ucx_flush(t->ucx, nranks), CGT_ERR_INVALID, "flush of rank out of range");
    progress_barrier(t->ucx);
    if (!all_bytes(t->window + WINDOW_LEN, CANARY_LEN, CANARY)) {
        tu_fail("bytes after the window were written");
    }
    tu_case_end();
}

/* Emulated device memory through the bounce pipeline, to and from remote host memory. */
static void case_staged(team_t *t) {
    static const size_t staged_sizes[] = {8, 4097, 1024 * 1024, 3 * 1024 * 1024 + 7,
                                          16 * 1024 * 1024};
    const accel_ops_t *accel = tu_accel;
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    uint8_t *host = malloc(opt.max_size + 16);
    cgt_ucx_mem_t *mem;
    size_t i, off, len, bad;
    uint64_t copies;
    void *dev;

    tu_case_begin("staged: mapping device memory is refused without CUDA in UCX");
    if (accel->mem_alloc(ACCEL_MEM_DEVICE, 4096, &dev) != ACCEL_OK) {
        tu_fail("device allocation");
    } else {
        check_status(cgt_ucx_mem_map(t->ucx, dev, 4096, ACCEL_MEM_DEVICE, &mem),
                     CGT_ERR_UNSUPPORTED, "mem_map of device memory");
        accel->mem_free(dev);
    }
    tu_case_end();

    for (i = 0; i < sizeof(staged_sizes) / sizeof(staged_sizes[0]); ++i) {
        len = staged_sizes[i];
        if (len > opt.max_size) {
            continue;
        }
        off = (len & 1) ? 3 : 0;
        if (accel->mem_alloc(ACCEL_MEM_DEVICE, len, &dev) != ACCEL_OK) {
            tu_fail("device allocation of %zu bytes", len);
            continue;
        }

        tu_case_begin("staged put of %zu device bytes to rank %d", len, right);
        pattern_fill(host, len, (uint32_t)(rank * 31 + i + 5000));
        accel->memcpy(dev, host, len);
        memset(t->window + off + len, SENTINEL, 16);
        progress_barrier(t->ucx);
        copies = accel_emulated_copy_count();
        check_status(cgt_ucx_put(t->ucx, t->window_rkeys[right], off, dev, len), CGT_OK,
                     "staged put");
        check_status(cgt_ucx_flush(t->ucx, right), CGT_OK, "flush");
        if (accel_emulated_copy_count() - copies < (len + (1 << 20) - 1) / (1 << 20)) {
            tu_fail("%" PRIu64 " accelerator copies for %zu bytes: not staged",
                    accel_emulated_copy_count() - copies, len);
        }
        progress_barrier(t->ucx);
        bad = pattern_check(t->window + off, len, (uint32_t)(left * 31 + i + 5000));
        if (bad != len) {
            tu_fail("byte %zu of %zu from rank %d's device differs", bad, len, left);
        }
        if (!all_bytes(t->window + off + len, 16, SENTINEL)) {
            tu_fail("bytes after the staged put were written");
        }
        tu_case_end();

        tu_case_begin("staged get of %zu bytes from rank %d into device memory", len, right);
        pattern_fill(t->window + off, len, (uint32_t)(rank * 17 + i + 9000));
        memset(host, 0, len);
        accel->memcpy(dev, host, len);
        progress_barrier(t->ucx);
        check_status(cgt_ucx_get(t->ucx, dev, t->window_rkeys[right], off, len), CGT_OK,
                     "staged get");
        check_status(cgt_ucx_flush(t->ucx, right), CGT_OK, "flush");
        accel->memcpy(host, dev, len);
        bad = pattern_check(host, len, (uint32_t)(right * 17 + i + 9000));
        if (bad != len) {
            tu_fail("byte %zu of %zu got into device memory from rank %d differs", bad, len, right);
        }
        progress_barrier(t->ucx);
        tu_case_end();
        accel->mem_free(dev);
    }
    free(host);
}

/* create, map, put/get to the right neighbour, destroy: --cycles times. */
static void case_cycles(MPI_Comm *comm) {
    long warmup = (opt.cycles >= 10) ? opt.cycles / 10 : 1;
    long fds0 = 0, rss0 = 0, c;
    int right = (rank + 1) % nranks;
    uint64_t word[2] = {0, 0};
    cgt_team_params_t params;
    double t0 = now_s();

    team_params(&params, comm, NULL, 20);
    params.verbose = 0;
    /* ~10 ms a cycle on an idle CI machine; much more when other jobs share its 2 cores */
    tu_case_timeout = 280;
    tu_case_begin("%ld create/destroy cycles", opt.cycles);
    for (c = 0; (c < opt.cycles) && !tu_case_failed(); ++c) {
        cgt_ucx_rkey_t **rkeys = calloc((size_t)nranks, sizeof(*rkeys));
        cgt_ucx_mem_t *mem = NULL;
        cgt_ucx_t *ucx = NULL;

        if (c == warmup) {
            fds0 = fd_count();
            rss0 = rss_kib();
        }
        if (check_status(cgt_ucx_create(&params, &ucx), CGT_OK, "create") &&
            check_status(exchange(ucx, word, sizeof(word), &mem, rkeys), CGT_OK, "exchange")) {
            uint64_t value = (uint64_t)c;
            check_status(cgt_ucx_put(ucx, rkeys[right], 0, &value, sizeof(value)), CGT_OK, "put");
            double tf = now_s();
            check_status(cgt_ucx_flush(ucx, -1), CGT_OK, "flush");
            if (now_s() - tf > 1.0) {
                tu_note("cycle %ld: flush took %.2f s", c, now_s() - tf);
            }
            progress_barrier(ucx);
            if (word[0] != (uint64_t)c) {
                tu_fail("cycle %ld: word %" PRIu64, c, word[0]);
            }
            if (cgt_ucx_endpoint_count(ucx) != (size_t)nranks) {
                tu_fail("cycle %ld: %zu endpoints, expected %d", c, cgt_ucx_endpoint_count(ucx),
                        nranks);
            }
        }
        for (int r = 0; (ucx != NULL) && (r < nranks); ++r) {
            cgt_ucx_rkey_release(ucx, rkeys[r]);
        }
        if (mem != NULL) {
            cgt_ucx_mem_unmap(ucx, mem);
        }
        {
            double td = now_s();
            cgt_ucx_destroy(ucx);
            if (now_s() - td > 1.0) {
                tu_note("cycle %ld: destroy took %.2f s", c, now_s() - td);
            }
        }
        free(rkeys);
        if (cgt_ucx_endpoint_count(NULL) != 0) {
            tu_fail("cycle %ld: %zu endpoints left in the process", c,
                    cgt_ucx_endpoint_count(NULL));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (!tu_case_failed() && (opt.cycles > 1)) {
        long fds = fd_count(), rss = rss_kib();
        if (fds != fds0) {
            tu_fail("%ld open files after %ld cycles, %ld after %ld", fds, opt.cycles, fds0,
                    warmup);
        }
        if (rss - rss0 > opt.rss_limit_kib) {
            tu_fail("resident memory grew by %ld KiB over %ld cycles (limit %ld)", rss - rss0,
                    opt.cycles - warmup, opt.rss_limit_kib);
        }
        if ((rank == 0) && (opt.verbose > 0)) {
            tu_note("%ld cycles in %.1f s; fds %ld -> %ld, RSS %ld -> %ld KiB", opt.cycles,
                    now_s() - t0, fds0, fds, rss0, rss);
        }
    }
    tu_case_end();
}

/* ---- a peer that dies: rank 0 and a forked child, OOB over a socketpair ---------------- */

typedef struct {
    int fd;
    int rank;
} sp_oob_t;

static int sp_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int sp_read_all(int fd, void *buf, size_t len) {
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Two ranks: both write, then read (the socket buffer holds what is written). */
static int sp_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx) {
    sp_oob_t *oob = ctx;
    memcpy((char *)rbuf + (size_t)oob->rank * len, sbuf, len);
    if (sp_write_all(oob->fd, sbuf, len) != 0) {
        return -1;
    }
    return sp_read_all(oob->fd, (char *)rbuf + (size_t)(1 - oob->rank) * len, len);
}

static int sp_team(sp_oob_t *oob, double timeout, cgt_ucx_t **ucx_p, void *buf, size_t len,
                   cgt_ucx_mem_t **mem_p, cgt_ucx_rkey_t **peer_rkey_p) {
    uint8_t packed[2][CGT_UCX_PACKED_MAX + 8];
    cgt_team_params_t params;
    size_t packed_len = CGT_UCX_PACKED_MAX;
    uint64_t n;

    memset(&params, 0, sizeof(params));
    params.rank = oob->rank;
    params.size = 2;
    params.oob_allgather = sp_allgather;
    params.oob_ctx = oob;
    params.timeout = timeout;
    params.ucx_tls = opt.tls;
    if ((cgt_ucx_create(&params, ucx_p) != CGT_OK) ||
        (cgt_ucx_mem_map(*ucx_p, buf, len, ACCEL_MEM_HOST, mem_p) != CGT_OK) ||
        (cgt_ucx_mem_pack(*ucx_p, *mem_p, packed[0] + 8, &packed_len) != CGT_OK)) {
        return -1;
    }
    n = packed_len;
    memcpy(packed[0], &n, 8);
    if (sp_allgather(packed[0], packed, sizeof(packed[0]), oob) != 0) {
        return -1;
    }
    memcpy(&n, packed[1 - oob->rank], 8);
    return (cgt_ucx_rkey_unpack(*ucx_p, 1 - oob->rank, packed[1 - oob->rank] + 8, n, peer_rkey_p) ==
            CGT_OK)
               ? 0
               : -1;
}

static void case_dead_peer(void) {
    const double timeout = 3.0;
    static uint8_t window[1 << 16];
    cgt_ucx_rkey_t *rkey = NULL;
    cgt_ucx_mem_t *mem = NULL;
    cgt_ucx_t *ucx = NULL;
    cgt_status_t status;
    int sv[2], wstatus;
    double t0, elapsed;
    sp_oob_t oob;
    pid_t child;
    char go;

    if (rank != 0) {
        return;
    }
    tu_case_begin("dead peer: error within the timeout, no hang");
    fflush(stdout);
    fflush(stderr);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        tu_fail("socketpair: %s", strerror(errno));
        tu_case_end();
        return;
    }
    child = fork();
    if (child == 0) {
        /* the peer: bring UCX up, answer one round of traffic, then die without a word */
        close(sv[0]);
        oob.fd = sv[1];
        oob.rank = 1;
        if (sp_team(&oob, timeout, &ucx, window, sizeof(window), &mem, &rkey) != 0) {
            _exit(2);
        }
        /* progress until rank 0 says "die" */
        for (;;) {
            ssize_t n = recv(oob.fd, &go, 1, MSG_DONTWAIT);
            if (n == 1) {
                break;
            }
            if ((n == 0) || ((n < 0) && (errno != EAGAIN) && (errno != EWOULDBLOCK))) {
                _exit(3);
            }
            cgt_ucx_progress(ucx);
        }
        _exit(0);
    }
    close(sv[1]);
    oob.fd = sv[0];
    oob.rank = 0;
    if (sp_team(&oob, timeout, &ucx, window, sizeof(window), &mem, &rkey) != 0) {
        tu_fail("team with the child: %s", cgt_ucx_last_error());
    } else {
        check_status(cgt_ucx_put(ucx, rkey, 0, window, sizeof(window)), CGT_OK,
                     "put to the live child");
        check_status(cgt_ucx_flush(ucx, 1), CGT_OK, "flush to the live child");
        go = 'x';
        if (sp_write_all(oob.fd, &go, 1) != 0) {
            tu_fail("cannot tell the child to exit");
        }
        waitpid(child, &wstatus, 0);
        child = -1;
        t0 = now_s();
        status = cgt_ucx_put(ucx, rkey, 0, window, sizeof(window));
        if (status == CGT_OK) {
            status = cgt_ucx_flush(ucx, 1);
        }
        elapsed = now_s() - t0;
        if ((status != CGT_ERR_PEER_FAILED) && (status != CGT_ERR_TIMEOUT)) {
            tu_fail("put+flush to a dead peer: status %d (%s), expected PEER_FAILED or TIMEOUT",
                    (int)status, cgt_ucx_last_error());
        }
        if (elapsed > timeout + 2) {
            tu_fail("the error took %.1f s (timeout %.1f s)", elapsed, timeout);
        }
        if (!cgt_ucx_peer_failed(ucx, 1)) {
            tu_fail("the dead peer is not marked failed");
        }
        if (cgt_ucx_put(ucx, rkey, 0, window, 8) != CGT_ERR_PEER_FAILED) {
            tu_fail("a put to a failed peer does not fail at once");
        }
        if (opt.verbose > 0) {
            tu_note("dead peer: status %d after %.2f s: %s", (int)status, elapsed,
                    cgt_ucx_last_error());
        }
    }
    if (child > 0) {
        kill(child, SIGKILL);
        waitpid(child, &wstatus, 0);
    }
    t0 = now_s();
    if (ucx != NULL) {
        cgt_ucx_rkey_release(ucx, rkey);
        cgt_ucx_mem_unmap(ucx, mem);
        cgt_ucx_destroy(ucx);
    }
    if (now_s() - t0 > timeout + 2) {
        tu_fail("destroy with a dead peer took %.1f s", now_s() - t0);
    }
    if (cgt_ucx_endpoint_count(NULL) != 0) {
        tu_fail("%zu endpoints left after destroy", cgt_ucx_endpoint_count(NULL));
    }
    close(sv[0]);
    tu_case_end();
}

/* ------------------------------------------------------------------------------------------ */

static int parse_options(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strncmp(a, "--tls=", 6) == 0) {
            opt.tls = a + 6;
        } else if (strncmp(a, "--cycles=", 9) == 0) {
            opt.cycles = atol(a + 9);
        } else if (strncmp(a, "--max=", 6) == 0) {
            opt.max_size = (size_t)atol(a + 6);
        } else if (strncmp(a, "--rss-limit=", 12) == 0) {
            opt.rss_limit_kib = atol(a + 12);
        } else if (strcmp(a, "--dead-peer") == 0) {
            opt.dead_peer = true;
        } else if (strcmp(a, "-v") == 0) {
            opt.verbose++;
        } else {
            return -1;
        }
    }
    if ((opt.max_size == 0) || (opt.max_size > 16u * 1024 * 1024)) {
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    MPI_Comm comm = MPI_COMM_WORLD;
    team_t team;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    tu_world_rank = rank;
    tu_world_size = nranks;
    tu_verbose = opt.verbose;
    if (parse_options(argc, argv) != 0) {
        if (rank == 0) {
            fprintf(stderr, "usage: test_shmem_ucx [--tls=TLS] [--cycles=N] [--max=BYTES] "
                            "[--rss-limit=KiB] [--dead-peer] [-v]\n");
        }
        tu_finish(TU_EXIT_FAIL);
    }
    tu_verbose = opt.verbose;

    /* first, while UCX has no state yet in this process that a child would inherit */
    if (opt.dead_peer) {
        case_dead_peer();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    case_topo();

    /* one context with the emulated accelerator: host buffers go straight, device staged */
    if (team_open(&team, &comm, tu_accel, 20)) {
        tu_case_begin("endpoints: one per peer used");
        if (cgt_ucx_endpoint_count(team.ucx) != (size_t)nranks) {
            tu_fail("%zu endpoints, expected %d", cgt_ucx_endpoint_count(team.ucx), nranks);
        }
        if ((getenv("UCX_NET_DEVICES") == NULL) && (strcmp(cgt_ucx_devices(team.ucx), "all"))) {
            tu_fail("devices \"%s\" without a NIC, expected \"all\"", cgt_ucx_devices(team.ucx));
        }
        tu_case_end();
        case_put_get(&team);
        case_signal(&team, 12);
        case_signal_storm(&team, 1000);
        case_bounds(&team);
        if (tu_accel != NULL) {
            case_staged(&team);
        }
    }
    team_close(&team);
    tu_case_begin("endpoints: none left after destroy");
    if (cgt_ucx_endpoint_count(NULL) != 0) {
        tu_fail("%zu endpoints left in the process", cgt_ucx_endpoint_count(NULL));
    }
    tu_case_end();
    MPI_Barrier(MPI_COMM_WORLD);

    if (opt.cycles > 0) {
        case_cycles(&comm);
    }
    tu_finish(tu_summary(MPI_COMM_WORLD));
}

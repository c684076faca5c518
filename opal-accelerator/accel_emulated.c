/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated backend: CPU memory that behaves as device memory, for tests.
 *
 * Address space (fixed, so that every copy of this code in a process finds
 * the same state and a host pointer is told apart with one compare):
 *
 *   HEADER_ADDR  [header: allocator state, table, counters, fault plan]  RW private
 *   BASE         [device window: own allocations | IPC]  PROT_NONE, memfd offset 0
 *   HOSTACC_BASE [managed and pinned memory]             RW, memfd offset DEVICE_SIZE
 *   (memfd only) [export table]                          memfd offset TOTAL_SIZE
 *
 * The backend reaches device memory through a second, RW "alias" mapping of
 * the same memfd (its address is in the header).  Both windows are
 * MAP_NORESERVE and freed pages are punched out of the memfd, so only live,
 * touched memory costs anything.  Nothing here is ever unmapped: other copies
 * of this code in the process may still use it.
 *
 * IPC: the top of the device window (IPC_BASE) is where allocations of other
 * processes are mapped, so that imported memory is classified as device
 * memory and a host access faults, as with CUDA IPC.  The importer opens the
 * exporter's memfd through /proc/<pid>/fd/<fd> and maps the allocation's
 * pages twice: a DEVICE allocation RW at an address of its own (the view the
 * backend copies through) while the window stays PROT_NONE; a MANAGED one RW
 * in the window itself.  Whether a handle still names a live allocation is
 * read from the exporter's export table, which lives in its memfd (the header
 * is private to the exporter).
 *
 * Allocator: the table of live allocations is kept sorted by address; free
 * space is the gaps between entries (coalescing is implicit), allocation is
 * first fit.  A zero-length allocation is refused (ACCEL_ERR_INVALID), as
 * cuMemAlloc(0) is.
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel_emulated.h"
#include "accel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Valgrind's memcheck client requests (accel_emu_valgrind_mark): optional. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define ACCEL_EMU_HAVE_MEMCHECK 1
#endif
#endif
#ifndef ACCEL_EMU_HAVE_MEMCHECK
#define VALGRIND_MAKE_MEM_NOACCESS(_addr, _len) ((void)(_addr), (void)(_len))
#define VALGRIND_MAKE_MEM_DEFINED(_addr, _len) ((void)(_addr), (void)(_len))
#endif

#define ACCEL_EMU_BASE ((uintptr_t)0x200000000000ULL)
#define ACCEL_EMU_DEVICE_ALLOC_SIZE ((size_t)32 << 30) /* own device allocations */
#define ACCEL_EMU_IPC_BASE (ACCEL_EMU_BASE + ACCEL_EMU_DEVICE_ALLOC_SIZE)
#define ACCEL_EMU_IPC_SIZE ((size_t)8 << 30) /* allocations imported from other processes */
#define ACCEL_EMU_DEVICE_SIZE (ACCEL_EMU_DEVICE_ALLOC_SIZE + ACCEL_EMU_IPC_SIZE)
#define ACCEL_EMU_HOSTACC_BASE (ACCEL_EMU_BASE + ACCEL_EMU_DEVICE_SIZE)
#define ACCEL_EMU_HOSTACC_SIZE ((size_t)16 << 30)
#define ACCEL_EMU_TOTAL_SIZE (ACCEL_EMU_DEVICE_SIZE + ACCEL_EMU_HOSTACC_SIZE)
#define ACCEL_EMU_HEADER_SIZE ((size_t)4 << 20)
#define ACCEL_EMU_HEADER_ADDR (ACCEL_EMU_BASE - ACCEL_EMU_HEADER_SIZE)

#define ACCEL_EMU_ALIGN ((uintptr_t)256)
#define ACCEL_EMU_MAX_ALLOCS 65536
#define ACCEL_EMU_MAX_IMPORTS 1024
#define ACCEL_EMU_MAX_EXPORTS 4096
#define ACCEL_EMU_MAGIC 0x61636365656d7531ULL /* "acceemu1" */
#define ACCEL_EMU_VERSION 4u
#define ACCEL_EMU_EXPORTS_MAGIC 0x61636365656d7832ULL /* "acceemx2": export table, this layout */
#define ACCEL_EMU_IPC_MAGIC 0x61636365656d6932ULL     /* "acceemi2": handle data, this layout */
#define ACCEL_EMU_IPC_KIND 0x454d5531u                /* "EMU1" in accel_ipc_handle_t.kind */
#define ACCEL_EMU_MEMFD_NAME "accel-emulated"

#define ACCEL_EMU_STREAM_MAGIC 0x5354524du /* "STRM" */
#define ACCEL_EMU_EVENT_MAGIC 0x45564e54u  /* "EVNT" */
#define ACCEL_EMU_DEAD_MAGIC 0xdeadbeefu

/* Error codes of the emulated "driver" (CUDA's numbers where one exists). */
enum {
    ACCEL_EMU_ERROR_INVALID_VALUE = 1,
    ACCEL_EMU_ERROR_OUT_OF_MEMORY = 2,
    ACCEL_EMU_ERROR_NOT_INITIALIZED = 3,
    ACCEL_EMU_ERROR_INVALID_HANDLE = 400,
    ACCEL_EMU_ERROR_INJECTED = 10000,
};

typedef struct {
    uintptr_t base;
    size_t size; /* as asked for; the allocator reserves it rounded to ACCEL_EMU_ALIGN */
    uint64_t buffer_id;
    accel_mem_type_t type;
    uint32_t export_slot; /* 1 + its entry in the export table; 0 when never exported */
} accel_emu_alloc_t;

/*
 * One exported allocation, as importers read it from the exporter's memfd.
 * Written under the exporter's lock, read without one by other processes:
 * buffer_id is published last and cleared first (0: free slot), and a reader
 * checks it again after reading the rest (buffer ids are never reused).
 */
typedef struct {
    _Atomic uint64_t buffer_id;
    _Atomic uint64_t offset; /* in the memfd */
    _Atomic uint64_t size;
    _Atomic uint64_t type;
} accel_emu_export_t;

typedef struct {
    _Atomic uint64_t magic; /* ACCEL_EMU_EXPORTS_MAGIC once initialized */
    uint64_t token;         /* the exporter's state instance: tells a recycled pid apart */
    int32_t pid;
    uint32_t capacity;
    uint64_t reserved[5];
    accel_emu_export_t entries[ACCEL_EMU_MAX_EXPORTS];
} accel_emu_exports_t;

#define ACCEL_EMU_EXPORTS_MAP_SIZE ((sizeof(accel_emu_exports_t) + 4095) & ~(size_t)4095)

/* What an emulated handle carries in accel_ipc_handle_t.data. */
typedef struct {
    uint64_t magic;        /* ACCEL_EMU_IPC_MAGIC */
    uint64_t token;        /* accel_emu_exports_t.token of the exporter */
    uint64_t memfd_offset; /* of the allocation's base */
    int32_t memfd;         /* the exporter's fd of its memfd */
    uint32_t slot;         /* the allocation's entry in the export table */
    uint32_t type;         /* ACCEL_MEM_DEVICE or ACCEL_MEM_MANAGED */
} accel_emu_ipc_data_t;

_Static_assert(sizeof(accel_emu_ipc_data_t) <= ACCEL_IPC_DATA_SIZE,
               "emulated IPC data does not fit the handle");

/*
 * An allocation of another process mapped here (or, pid being ours, one of
 * our own allocations handed back by ipc_import: no mapping, map_len 0).
 */
typedef struct {
    uintptr_t base;     /* the allocation as this process sees it */
    size_t size;        /* bytes of the allocation */
    uintptr_t map_addr; /* page-aligned start of its range in the IPC region */
    size_t map_len;     /* bytes mapped there, 0 for own memory */
    uintptr_t view;     /* RW mapping of the same pages the backend copies through */
    uint64_t buffer_id; /* this process's id of the mapping */
    uint64_t peer_buffer_id;
    uint64_t peer_token;
    int32_t pid;
    accel_mem_type_t type;
    unsigned refs; /* imports not closed yet */
} accel_emu_import_t;

typedef struct {
    bool armed;
    bool repeat;
    int remaining; /* operations until the one that fails, that one included */
} accel_emu_fault_plan_t;

/*
 * The process-wide state.  The first four fields keep their offsets in every
 * version: a copy of this code reads them before it knows whether the rest
 * matches its own layout.
 */
typedef struct {
    _Atomic uint64_t magic; /* set last: the state below is complete */
    uint32_t version;
    uint32_t header_size;
    atomic_int init_lock; /* pid of the process initializing, 0 when free */

    pid_t pid;                    /* process that built this state (a forked child did not) */
    atomic_bool stale;            /* set in a forked child: rebuild before use */
    int memfd;                    /* backs the device window and the host-accessible region */
    uintptr_t alias;              /* RW mapping of the device window */
    uint64_t token;               /* this state's instance, in every handle it exports */
    accel_emu_exports_t *exports; /* RW mapping of the export table in the memfd */
    uint32_t export_cursor;       /* where the search for a free export slot starts */
    pthread_mutex_t lock;         /* protects everything below */
    unsigned open_count;          /* copies of the backend currently open */
    uint64_t next_buffer_id;
    size_t live[ACCEL_MEM_DEVICE + 1];
    size_t live_streams;
    size_t live_events;
    _Atomic uint64_t copy_count;
    _Atomic uint64_t copy_bytes;
    _Atomic uint64_t async_pending; /* stream operations queued, not completed yet */
    accel_emu_fault_plan_t faults[ACCEL_EMULATED_FAULT_KINDS];
    size_t nallocs;
    accel_emu_alloc_t allocs[ACCEL_EMU_MAX_ALLOCS]; /* sorted by base */
    size_t nimports;
    accel_emu_import_t imports[ACCEL_EMU_MAX_IMPORTS]; /* sorted by base */
} accel_emu_header_t;

_Static_assert(sizeof(accel_emu_header_t) <= ACCEL_EMU_HEADER_SIZE,
               "emulated header does not fit its mapping");

/* This copy's view of the shared header: NULL until attached, then constant
 * (published with release order: whoever sees it sees the state built). */
static accel_emu_header_t *_Atomic accel_emu_hdr;

static pthread_once_t accel_emu_atfork_once = PTHREAD_ONCE_INIT;

static void accel_emu_streams_atfork_child(void);
static void accel_emu_wait_idle(accel_emu_header_t *hdr);

static inline accel_emu_header_t *accel_emu_hdr_get(void) {
    return atomic_load_explicit(&accel_emu_hdr, memory_order_acquire);
}

static inline uintptr_t accel_emu_align_up(uintptr_t x, uintptr_t align) {
    return (x + align - 1) & ~(align - 1);
}

static inline bool accel_emu_in_window(uintptr_t addr) {
    return addr - ACCEL_EMU_BASE < ACCEL_EMU_TOTAL_SIZE;
}

static inline bool accel_emu_in_device_window(uintptr_t addr) {
    return addr - ACCEL_EMU_BASE < ACCEL_EMU_DEVICE_SIZE;
}

static inline bool accel_emu_in_ipc_region(uintptr_t addr) {
    return addr - ACCEL_EMU_IPC_BASE < ACCEL_EMU_IPC_SIZE;
}

/* This process's id, kept (the checks of every stream and event operation would otherwise
 * make a system call each); 0 until first asked, set anew in a forked child. */
static pid_t accel_emu_pid;

static void accel_emu_atfork_child(void) {
    /* The child shares the parent's memfd pages but has its own copy of the
     * header: mark it so that the first use rebuilds private state. */
    accel_emu_header_t *hdr = accel_emu_hdr_get();

    __atomic_store_n(&accel_emu_pid, getpid(), __ATOMIC_RELAXED);

    if (hdr != NULL) {
        atomic_store_explicit(&hdr->stale, true, memory_order_relaxed);
    }
    accel_emu_streams_atfork_child();
}

static void accel_emu_atfork_register(void) { pthread_atfork(NULL, NULL, accel_emu_atfork_child); }

static pid_t accel_emu_self(void) {
    pid_t self = __atomic_load_n(&accel_emu_pid, __ATOMIC_RELAXED);

    if (ACCEL_UNLIKELY(0 == self)) {
        pthread_once(&accel_emu_atfork_once, accel_emu_atfork_register); /* before it is kept */
        self = getpid();
        __atomic_store_n(&accel_emu_pid, self, __ATOMIC_RELAXED);
    }
    return self;
}

/* Whether [addr, addr + len) is inside one readable and writable mapping: the
 * header may only be read after this holds, since anything could be there. */
static bool accel_emu_range_is_rw(uintptr_t addr, size_t len) {
    unsigned long start, end;
    char perms[8];
    char line[512];
    bool found = false;
    FILE *maps;

    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        return false;
    }
    while (fgets(line, sizeof(line), maps) != NULL) {
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3) {
            continue;
        }
        if (start <= addr && addr < end) {
            found = (addr + len <= end) && (perms[0] == 'r') && (perms[1] == 'w');
            break;
        }
    }
    fclose(maps);
    return found;
}

/* Map the header, or find the one another copy of this code mapped. */
static accel_status_t accel_emu_header_map(const char **reason_p) {
    void *want = (void *)ACCEL_EMU_HEADER_ADDR;
    void *addr;

    addr = mmap(want, ACCEL_EMU_HEADER_SIZE, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (addr == want) {
        return ACCEL_OK;
    }
    if (addr != MAP_FAILED) {
        /* A kernel before 4.17 takes the flag as a hint: something is there. */
        munmap(addr, ACCEL_EMU_HEADER_SIZE);
        errno = EEXIST;
    }
    if (errno != EEXIST) {
        accel_log(ACCEL_LOG_INFO, "emulated: mmap of the header at %p failed: %s", want,
                  strerror(errno));
        *reason_p = "cannot map the emulated backend's header";
        return ACCEL_ERR_NO_MEMORY;
    }
    if (!accel_emu_range_is_rw(ACCEL_EMU_HEADER_ADDR, ACCEL_EMU_HEADER_SIZE)) {
        *reason_p = "the emulated backend's header address is taken by another mapping";
        return ACCEL_ERR_NO_MEMORY;
    }
    return ACCEL_OK;
}

/* A spin lock that a forked child can take over from its parent's thread. */
static void accel_emu_init_lock(accel_emu_header_t *hdr) {
    int self = (int)accel_emu_self();
    int holder;

    for (;;) {
        holder = 0;
        if (atomic_compare_exchange_strong(&hdr->init_lock, &holder, self)) {
            return;
        }
        /* The header is private to the process: another pid can only be a
         * parent that was initializing when it forked. */
        if ((holder != self) && atomic_compare_exchange_strong(&hdr->init_lock, &holder, self)) {
            return;
        }
        sched_yield();
    }
}

static void accel_emu_init_unlock(accel_emu_header_t *hdr) { atomic_store(&hdr->init_lock, 0); }

/* A number that tells this state apart from any other, also from that of an
 * earlier process with the same pid. */
static uint64_t accel_emu_new_token(void) {
    struct timespec ts;
    uint64_t token = 0;

    if (getrandom(&token, sizeof(token), GRND_NONBLOCK) != (ssize_t)sizeof(token)) {
        clock_gettime(CLOCK_REALTIME, &ts);
        token =
            ((uint64_t)accel_emu_self() << 40) ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)ts.tv_nsec;
    }
    return (token == 0) ? 1 : token;
}

/* Close the memfd a forked child inherited, if the fd still is that memfd. */
static void accel_emu_close_inherited_memfd(int fd) {
    char path[64];
    char target[128];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0) {
        return;
    }
    target[n] = '\0';
    if (strncmp(target, "/memfd:" ACCEL_EMU_MEMFD_NAME, strlen("/memfd:" ACCEL_EMU_MEMFD_NAME)) ==
        0) {
        close(fd);
    }
}

/*
 * Build the state: memfd, device window, host-accessible region, alias.
 * fixed_flag is MAP_FIXED_NOREPLACE on first use, MAP_FIXED in a forked child
 * that replaces the mappings it inherited.
 */
static accel_status_t accel_emu_state_build(accel_emu_header_t *hdr, int fixed_flag,
                                            const char **reason_p) {
    int mflags = MAP_SHARED | MAP_NORESERVE;
    void *window, *hostacc, *alias, *exports;
    int memfd;

    memfd = memfd_create(ACCEL_EMU_MEMFD_NAME, MFD_CLOEXEC);
    if (memfd < 0) {
        accel_log(ACCEL_LOG_INFO, "emulated: memfd_create failed: %s", strerror(errno));
        *reason_p = "memfd_create failed";
        goto err;
    }
    if (ftruncate(memfd, (off_t)(ACCEL_EMU_TOTAL_SIZE + ACCEL_EMU_EXPORTS_MAP_SIZE)) != 0) {
        accel_log(ACCEL_LOG_INFO, "emulated: ftruncate failed: %s", strerror(errno));
        *reason_p = "cannot size the emulated memory file";
        goto err_close_memfd;
    }

    window = mmap((void *)ACCEL_EMU_BASE, ACCEL_EMU_DEVICE_SIZE, PROT_NONE, mflags | fixed_flag,
                  memfd, 0);
    if (window != (void *)ACCEL_EMU_BASE) {
        accel_log(ACCEL_LOG_INFO,
                  "emulated: cannot reserve the device window at 0x%" PRIxPTR ": %s",
                  ACCEL_EMU_BASE, (window == MAP_FAILED) ? strerror(errno) : "placed elsewhere");
        if (window != MAP_FAILED) {
            munmap(window, ACCEL_EMU_DEVICE_SIZE);
        }
        *reason_p = "cannot reserve the emulated device window (address range in use)";
        goto err_close_memfd;
    }

    hostacc = mmap((void *)ACCEL_EMU_HOSTACC_BASE, ACCEL_EMU_HOSTACC_SIZE, PROT_READ | PROT_WRITE,
                   mflags | fixed_flag, memfd, (off_t)ACCEL_EMU_DEVICE_SIZE);
    if (hostacc != (void *)ACCEL_EMU_HOSTACC_BASE) {
        accel_log(ACCEL_LOG_INFO, "emulated: cannot reserve the host region at 0x%" PRIxPTR ": %s",
                  ACCEL_EMU_HOSTACC_BASE,
                  (hostacc == MAP_FAILED) ? strerror(errno) : "placed elsewhere");
        if (hostacc != MAP_FAILED) {
            munmap(hostacc, ACCEL_EMU_HOSTACC_SIZE);
        }
        *reason_p = "cannot reserve the emulated host region (address range in use)";
        goto err_unmap_window;
    }

    alias = mmap(NULL, ACCEL_EMU_DEVICE_SIZE, PROT_READ | PROT_WRITE, mflags, memfd, 0);
    if (alias == MAP_FAILED) {
        accel_log(ACCEL_LOG_INFO, "emulated: cannot map the device alias: %s", strerror(errno));
        *reason_p = "cannot map the emulated device memory";
        goto err_unmap_hostacc;
    }

    exports = mmap(NULL, ACCEL_EMU_EXPORTS_MAP_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
                   (off_t)ACCEL_EMU_TOTAL_SIZE);
    if (exports == MAP_FAILED) {
        accel_log(ACCEL_LOG_INFO, "emulated: cannot map the export table: %s", strerror(errno));
        *reason_p = "cannot map the emulated export table";
        goto err_unmap_alias;
    }

    /* A core dump would read every page of the sparse memfd, allocating it. */
    madvise(hostacc, ACCEL_EMU_HOSTACC_SIZE, MADV_DONTDUMP);
    madvise(alias, ACCEL_EMU_DEVICE_SIZE, MADV_DONTDUMP);
    /* For valgrind: memory is addressable only while allocated (see
     * accel_emu_valgrind_mark). */
    VALGRIND_MAKE_MEM_NOACCESS(alias, ACCEL_EMU_DEVICE_SIZE);
    VALGRIND_MAKE_MEM_NOACCESS(hostacc, ACCEL_EMU_HOSTACC_SIZE);

    if (fixed_flag == MAP_FIXED) {
        /* Forked child: drop the parent's alias, export table, memfd and the
         * views of its imports, now replaced (imports mapped in the window
         * went with the window). */
        munmap((void *)hdr->alias, ACCEL_EMU_DEVICE_SIZE);
        munmap(hdr->exports, ACCEL_EMU_EXPORTS_MAP_SIZE);
        for (size_t i = 0; i < hdr->nimports; ++i) {
            if ((hdr->imports[i].map_len != 0) &&
                (hdr->imports[i].view != hdr->imports[i].map_addr)) {
                munmap((void *)hdr->imports[i].view, hdr->imports[i].map_len);
            }
        }
        accel_emu_close_inherited_memfd(hdr->memfd);
    }

    /* Everything past the fixed prefix starts over (a forked child too). */
    memset((char *)hdr + offsetof(accel_emu_header_t, pid), 0,
           sizeof(*hdr) - offsetof(accel_emu_header_t, pid));
    hdr->version = ACCEL_EMU_VERSION;
    hdr->header_size = (uint32_t)sizeof(*hdr);
    hdr->pid = accel_emu_self();
    hdr->memfd = memfd;
    hdr->alias = (uintptr_t)alias;
    hdr->token = accel_emu_new_token();
    hdr->exports = exports;
    hdr->exports->token = hdr->token;
    hdr->exports->pid = (int32_t)hdr->pid;
    hdr->exports->capacity = ACCEL_EMU_MAX_EXPORTS;
    atomic_store_explicit(&hdr->exports->magic, ACCEL_EMU_EXPORTS_MAGIC, memory_order_release);
    hdr->next_buffer_id = 1;
    pthread_mutex_init(&hdr->lock, NULL);
    atomic_store(&hdr->magic, ACCEL_EMU_MAGIC);
    return ACCEL_OK;

err_unmap_alias:
    munmap(alias, ACCEL_EMU_DEVICE_SIZE);
err_unmap_hostacc:
    if (fixed_flag != MAP_FIXED) {
        munmap((void *)ACCEL_EMU_HOSTACC_BASE, ACCEL_EMU_HOSTACC_SIZE);
    }
err_unmap_window:
    if (fixed_flag != MAP_FIXED) {
        munmap((void *)ACCEL_EMU_BASE, ACCEL_EMU_DEVICE_SIZE);
    }
err_close_memfd:
    close(memfd);
err:
    return ACCEL_ERR_NO_MEMORY;
}

accel_status_t accel_emulated_state_attach(void **header_p, const char **reason_p) {
    accel_emu_header_t *hdr = (accel_emu_header_t *)ACCEL_EMU_HEADER_ADDR;
    const char *reason = "";
    accel_status_t status;
    uint64_t magic;

    pthread_once(&accel_emu_atfork_once, accel_emu_atfork_register);

    status = accel_emu_header_map(&reason);
    if (status != ACCEL_OK) {
        goto out;
    }

    accel_emu_init_lock(hdr);
    magic = atomic_load(&hdr->magic);
    if (magic == 0) {
        status = accel_emu_state_build(hdr, MAP_FIXED_NOREPLACE, &reason);
        if (status == ACCEL_OK) {
            accel_log(ACCEL_LOG_DEBUG,
                      "emulated: device window at 0x%" PRIxPTR
                      " (%zu GiB), host region at 0x%" PRIxPTR " (%zu GiB)",
                      ACCEL_EMU_BASE, ACCEL_EMU_DEVICE_SIZE >> 30, ACCEL_EMU_HOSTACC_BASE,
                      ACCEL_EMU_HOSTACC_SIZE >> 30);
        }
    } else if (magic != ACCEL_EMU_MAGIC) {
        reason = "the emulated backend's header address holds something else";
        status = ACCEL_ERR_NO_MEMORY;
    } else if ((hdr->version != ACCEL_EMU_VERSION) || (hdr->header_size != sizeof(*hdr))) {
        accel_log(ACCEL_LOG_INFO, "emulated: state version %u size %u, this copy %u size %zu",
                  hdr->version, hdr->header_size, ACCEL_EMU_VERSION, sizeof(*hdr));
        reason = "another copy of the emulated backend with a different layout is loaded";
        status = ACCEL_ERR_UNSUPPORTED;
    } else if (hdr->pid != accel_emu_self()) {
        accel_log(ACCEL_LOG_DEBUG, "emulated: state inherited from process %d, rebuilding",
                  (int)hdr->pid);
        status = accel_emu_state_build(hdr, MAP_FIXED, &reason);
    } else {
        accel_log(ACCEL_LOG_DEBUG, "emulated: attached to the existing state");
        status = ACCEL_OK;
    }
    accel_emu_init_unlock(hdr);

    if (status == ACCEL_OK) {
        atomic_store_explicit(&accel_emu_hdr, hdr, memory_order_release);
        if (header_p != NULL) {
            *header_p = hdr;
        }
    }
out:
    if (reason_p != NULL) {
        *reason_p = reason;
    }
    return status;
}

/* The header, rebuilt first when this is a forked child. */
static accel_emu_header_t *accel_emu_state(void) {
    accel_emu_header_t *hdr = accel_emu_hdr_get();

    if (ACCEL_UNLIKELY(hdr == NULL) ||
        ACCEL_UNLIKELY(atomic_load_explicit(&hdr->stale, memory_order_relaxed))) {
        if (accel_emulated_state_attach(NULL, NULL) != ACCEL_OK) {
            return NULL;
        }
        hdr = accel_emu_hdr_get();
    }
    return hdr;
}

static accel_status_t accel_emu_no_state(const char *call) {
    return accel_set_error(call, "EMULATED_ERROR_NOT_INITIALIZED", ACCEL_EMU_ERROR_NOT_INITIALIZED);
}

/* Index of the last allocation with base <= addr, or -1.  Lock held. */
static ssize_t accel_emu_find(const accel_emu_header_t *hdr, uintptr_t addr) {
    size_t lo = 0, hi = hdr->nallocs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hdr->allocs[mid].base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (ssize_t)lo - 1;
}

/* The live allocation holding addr, or NULL.  Lock held. */
static const accel_emu_alloc_t *accel_emu_lookup(const accel_emu_header_t *hdr, uintptr_t addr) {
    ssize_t i = accel_emu_find(hdr, addr);

    if ((i < 0) || (addr - hdr->allocs[i].base >= hdr->allocs[i].size)) {
        return NULL;
    }
    return &hdr->allocs[i];
}

/* Index of the last import with base <= addr, or -1.  Lock held. */
static ssize_t accel_emu_import_find(const accel_emu_header_t *hdr, uintptr_t addr) {
    size_t lo = 0, hi = hdr->nimports;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hdr->imports[mid].base <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (ssize_t)lo - 1;
}

/* The allocation of another process mapped at addr, or NULL.  Lock held. */
static const accel_emu_import_t *accel_emu_import_lookup(const accel_emu_header_t *hdr,
                                                         uintptr_t addr) {
    ssize_t i = accel_emu_import_find(hdr, addr);

    if ((i < 0) || (hdr->imports[i].map_len == 0) ||
        (addr - hdr->imports[i].base >= hdr->imports[i].size)) {
        return NULL;
    }
    return &hdr->imports[i];
}

/* Whether the next operation of this kind fails by plan.  Lock held. */
static bool accel_emu_fault_hit(accel_emu_header_t *hdr, accel_emulated_fault_t what) {
    accel_emu_fault_plan_t *plan = &hdr->faults[what];

    if (!plan->armed) {
        return false;
    }
    if (plan->remaining > 1) {
        --plan->remaining;
        return false;
    }
    if (!plan->repeat) {
        plan->armed = false;
    }
    return true;
}

static accel_status_t accel_emu_invalid(const char *call) {
    accel_set_error(call, "EMULATED_ERROR_INVALID_VALUE", ACCEL_EMU_ERROR_INVALID_VALUE);
    return ACCEL_ERR_INVALID;
}

static accel_status_t accel_emu_injected(const char *call) {
    return accel_set_error(call, "EMULATED_ERROR_INJECTED", ACCEL_EMU_ERROR_INJECTED);
}

static void accel_emu_attr_fill(const accel_emu_alloc_t *alloc, accel_mem_attr_t *attr_p) {
    attr_p->type = alloc->type;
    attr_p->device = (alloc->type == ACCEL_MEM_HOST_PINNED) ? -1 : 0;
    attr_p->base = alloc->base;
    attr_p->size = alloc->size;
    attr_p->buffer_id = alloc->buffer_id;
}

static accel_status_t accel_emu_mem_query_slow(uintptr_t addr, accel_mem_attr_t *attr_p) {
    accel_emu_header_t *hdr = accel_emu_state();
    const accel_emu_alloc_t *alloc;
    const accel_emu_import_t *imp;
    accel_status_t status = ACCEL_OK;

    if (hdr == NULL) {
        return accel_emu_no_state("emuPointerGetAttributes");
    }

    pthread_mutex_lock(&hdr->lock);
    alloc = accel_emu_lookup(hdr, addr);
    if (alloc != NULL) {
        accel_emu_attr_fill(alloc, attr_p);
    } else if (accel_emu_in_ipc_region(addr) &&
               ((imp = accel_emu_import_lookup(hdr, addr)) != NULL)) {
        /* Another process's allocation: device (or managed) memory here too. */
        attr_p->type = imp->type;
        attr_p->device = 0;
        attr_p->base = imp->base;
        attr_p->size = imp->size;
        attr_p->buffer_id = imp->buffer_id;
    } else {
        status = ACCEL_ERR_INVALID;
    }
    pthread_mutex_unlock(&hdr->lock);

    if (status != ACCEL_OK) {
        /* In the window but in no live allocation: a dangling device pointer. */
        return accel_emu_invalid("emuPointerGetAttributes");
    }
    return ACCEL_OK;
}

static accel_status_t accel_emu_mem_query(const void *ptr, accel_mem_attr_t *attr_p) {
    uintptr_t addr = (uintptr_t)ptr;

    /* Runs on every MPI call: a host pointer costs one compare. */
    if (ACCEL_LIKELY(!accel_emu_in_window(addr))) {
        attr_p->type = ACCEL_MEM_HOST;
        attr_p->device = -1;
        attr_p->base = 0;
        attr_p->size = 0;
        attr_p->buffer_id = 0;
        return ACCEL_OK;
    }
    return accel_emu_mem_query_slow(addr, attr_p);
}

/* Give the pages of freed memory back, those no live allocation shares.
 * Index i is where the freed entry was; lock held. */
static void accel_emu_release_pages(accel_emu_header_t *hdr, size_t i, uintptr_t base,
                                    size_t size) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t region_lo =
        accel_emu_in_device_window(base) ? ACCEL_EMU_BASE : ACCEL_EMU_HOSTACC_BASE;
    uintptr_t gap_lo = region_lo, gap_hi = ACCEL_EMU_BASE + ACCEL_EMU_TOTAL_SIZE;
    uintptr_t lo, hi;

    if (i > 0) {
        const accel_emu_alloc_t *prev = &hdr->allocs[i - 1];
        if (prev->base + prev->size > gap_lo) {
            gap_lo = prev->base + prev->size;
        }
    }
    if (i < hdr->nallocs) {
        gap_hi = hdr->allocs[i].base;
    }

    lo = accel_emu_align_up((base & ~(page - 1)) > gap_lo ? (base & ~(page - 1)) : gap_lo, page);
    hi = accel_emu_align_up(base + size, page);
    if (hi > gap_hi) {
        hi = gap_hi & ~(page - 1);
    }
    if (lo < hi) {
        fallocate(hdr->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)(lo - ACCEL_EMU_BASE), (off_t)(hi - lo));
    }
}

/* Tell valgrind an allocation came or went: the host touches managed and
 * pinned memory where it is, the backend touches device memory through the
 * alias.  Both stay unaddressable outside live allocations, so that a stray
 * access is reported and the leak checker does not read the whole sparse
 * memfd (each read of a hole allocates a page).  No-op outside valgrind. */
static void accel_emu_valgrind_mark(const accel_emu_header_t *hdr, uintptr_t base, size_t len,
                                    bool live) {
    void *addr = accel_emu_in_device_window(base) ? (void *)(hdr->alias + (base - ACCEL_EMU_BASE))
                                                  : (void *)base;

    if (live) {
        VALGRIND_MAKE_MEM_DEFINED(addr, len);
    } else {
        VALGRIND_MAKE_MEM_NOACCESS(addr, len);
    }
}

static const char *accel_emu_alloc_call(accel_mem_type_t type) {
    switch (type) {
    case ACCEL_MEM_DEVICE:
        return "emuMemAlloc";
    case ACCEL_MEM_MANAGED:
        return "emuMemAllocManaged";
    case ACCEL_MEM_HOST_PINNED:
        return "emuMemHostAlloc";
    case ACCEL_MEM_HOST:
        break;
    }
    return "emuMemAlloc";
}

static accel_status_t accel_emu_mem_alloc(accel_mem_type_t type, size_t len, void **ptr_p) {
    const char *call = accel_emu_alloc_call(type);
    accel_emu_header_t *hdr;
    accel_emulated_fault_t fault;
    uintptr_t lo, hi, cursor, need;
    accel_emu_alloc_t *alloc;
    size_t i;

    switch (type) {
    case ACCEL_MEM_DEVICE:
        lo = ACCEL_EMU_BASE;
        hi = ACCEL_EMU_BASE + ACCEL_EMU_DEVICE_ALLOC_SIZE;
        fault = ACCEL_EMULATED_FAULT_DEVICE_ALLOC;
        break;
    case ACCEL_MEM_MANAGED:
        lo = ACCEL_EMU_HOSTACC_BASE;
        hi = ACCEL_EMU_HOSTACC_BASE + ACCEL_EMU_HOSTACC_SIZE;
        fault = ACCEL_EMULATED_FAULT_DEVICE_ALLOC;
        break;
    case ACCEL_MEM_HOST_PINNED:
        lo = ACCEL_EMU_HOSTACC_BASE;
        hi = ACCEL_EMU_HOSTACC_BASE + ACCEL_EMU_HOSTACC_SIZE;
        fault = ACCEL_EMULATED_FAULT_PINNED_ALLOC;
        break;
    default:
        return accel_emu_invalid(call);
    }
    if ((len == 0) || (ptr_p == NULL)) {
        return accel_emu_invalid(call);
    }

    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }

    pthread_mutex_lock(&hdr->lock);
    if (accel_emu_fault_hit(hdr, fault)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_injected(call);
    }
    if ((len > hi - lo) || (hdr->nallocs == ACCEL_EMU_MAX_ALLOCS)) {
        goto err_no_memory;
    }
    need = accel_emu_align_up(len, ACCEL_EMU_ALIGN);

    /* First fit: the gaps between the region's live allocations. */
    i = (size_t)(accel_emu_find(hdr, lo - 1) + 1);
    cursor = lo;
    for (; (i < hdr->nallocs) && (hdr->allocs[i].base < hi); ++i) {
        if (hdr->allocs[i].base - cursor >= need) {
            break;
        }
        cursor = accel_emu_align_up(hdr->allocs[i].base + hdr->allocs[i].size, ACCEL_EMU_ALIGN);
    }
    if (hi - cursor < need) {
        goto err_no_memory;
    }

    memmove(&hdr->allocs[i + 1], &hdr->allocs[i], (hdr->nallocs - i) * sizeof(hdr->allocs[0]));
    ++hdr->nallocs;
    alloc = &hdr->allocs[i];
    alloc->base = cursor;
    alloc->size = len;
    alloc->buffer_id = hdr->next_buffer_id++;
    alloc->type = type;
    alloc->export_slot = 0;
    ++hdr->live[type];
    accel_emu_valgrind_mark(hdr, cursor, len, true);
    pthread_mutex_unlock(&hdr->lock);

    accel_log(ACCEL_LOG_DEBUG, "emulated: %s %zu bytes at 0x%" PRIxPTR " id %" PRIu64, call, len,
              cursor, alloc->buffer_id);
    *ptr_p = (void *)cursor;
    return ACCEL_OK;

err_no_memory:
    pthread_mutex_unlock(&hdr->lock);
    accel_set_error(call, "EMULATED_ERROR_OUT_OF_MEMORY", ACCEL_EMU_ERROR_OUT_OF_MEMORY);
    return ACCEL_ERR_NO_MEMORY;
}

static accel_status_t accel_emu_mem_free(void *ptr) {
    uintptr_t addr = (uintptr_t)ptr;
    accel_emu_header_t *hdr;
    accel_emu_alloc_t freed;
    ssize_t i;

    if (ptr == NULL) {
        return ACCEL_OK;
    }
    if (!accel_emu_in_window(addr)) {
        return accel_emu_invalid("emuMemFree");
    }

    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state("emuMemFree");
    }
    /* As cuMemFree: after the work queued so far (it may use the memory). */
    accel_emu_wait_idle(hdr);

    pthread_mutex_lock(&hdr->lock);
    i = accel_emu_find(hdr, addr);
    if ((i < 0) || (hdr->allocs[i].base != addr)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_invalid(accel_emu_in_device_window(addr) ? "emuMemFree"
                                                                  : "emuMemFreeHost");
    }
    freed = hdr->allocs[i];
    memmove(&hdr->allocs[i], &hdr->allocs[i + 1],
            (hdr->nallocs - (size_t)i - 1) * sizeof(hdr->allocs[0]));
    --hdr->nallocs;
    --hdr->live[freed.type];
    if (freed.export_slot != 0) {
        /* Importers must see it gone from now on (a handle of it is stale). */
        atomic_store_explicit(&hdr->exports->entries[freed.export_slot - 1].buffer_id, 0,
                              memory_order_release);
    }
    /* Under the lock: an allocation placed here next must not lose its data. */
    accel_emu_release_pages(hdr, (size_t)i, freed.base, freed.size);
    accel_emu_valgrind_mark(hdr, freed.base, freed.size, false);
    pthread_mutex_unlock(&hdr->lock);

    accel_log(ACCEL_LOG_DEBUG, "emulated: freed 0x%" PRIxPTR " id %" PRIu64, freed.base,
              freed.buffer_id);
    return ACCEL_OK;
}

/*
 * Where the backend touches [addr, addr + len): device memory through the
 * alias.  A range in the emulated regions must lie in one live allocation;
 * a host range must not reach into them.  Lock held.
 */
static bool accel_emu_resolve(const accel_emu_header_t *hdr, uintptr_t addr, size_t len,
                              char **out_p) {
    const accel_emu_alloc_t *alloc;

    if (addr + len < addr) {
        return false;
    }
    if (!accel_emu_in_window(addr)) {
        if ((addr < ACCEL_EMU_BASE) && (addr + len > ACCEL_EMU_BASE)) {
            return false;
        }
        *out_p = (char *)addr;
        return true;
    }

    alloc = accel_emu_lookup(hdr, addr);
    if ((alloc == NULL) && accel_emu_in_ipc_region(addr)) {
        const accel_emu_import_t *imp = accel_emu_import_lookup(hdr, addr);

        if ((imp == NULL) || (len > imp->base + imp->size - addr)) {
            return false;
        }
        *out_p = (char *)(imp->view + (addr - imp->map_addr));
        return true;
    }
    if ((alloc == NULL) || (len > alloc->base + alloc->size - addr)) {
        return false;
    }
    if (accel_emu_in_device_window(addr)) {
        *out_p = (char *)(hdr->alias + (addr - ACCEL_EMU_BASE));
    } else {
        *out_p = (char *)addr;
    }
    return true;
}

/*
 * Streams and events.
 *
 * Asynchronous (the default): every stream has an in-order queue of
 * operations, run by a worker thread of its own (started at the first
 * operation, joined when the stream is destroyed), so that work really
 * completes after the call that queued it, as on a GPU: a host read of a copy's
 * destination before a synchronization sees the old bytes, an event is reached
 * only when the worker gets to it.  Arguments are checked and pointers
 * resolved when the operation is queued (an invalid copy fails at the call,
 * as cuMemcpyAsync does; so do the MEMCPY and REDUCE fault plans, launch
 * errors); the EXEC fault plan makes an operation fail while it runs, which
 * the next stream_synchronize, or the synchronize / query of an event
 * recorded after it, reports.
 *
 * The default stream (NULL) is a stream like the others, of this copy of the
 * code (the CUDA backend's streams are non-blocking: the legacy default
 * stream does not order them); the synchronous memcpy first waits for it, as
 * cuMemcpy does.  mem_free and ipc_close wait until no queued operation of
 * the process is left (cuMemFree waits for the device), so a worker never
 * touches memory that went away.
 *
 * ACCEL_EMULATED_DELAY_US=N makes the worker sleep N us before each copy,
 * reduction and write_value: a missing synchronization then reads stale data
 * every time rather than when the worker happens to be late.
 *
 * ACCEL_EMULATED_SYNC=1 in the environment (read at open) runs every
 * operation in the calling thread before the call returns: the backend's
 * former behaviour, for debugging (a missing synchronization goes unseen
 * there; a stream_wait_value32 blocks the caller).
 *
 * A forked child has no workers: streams and events of its parent are
 * invalid handles there, its own default stream starts empty.
 */

typedef enum {
    ACCEL_EMU_OP_COPY = 0,
    ACCEL_EMU_OP_REDUCE,
    ACCEL_EMU_OP_RECORD,
    ACCEL_EMU_OP_WAIT_EVENT,
    ACCEL_EMU_OP_WAIT_VALUE,
    ACCEL_EMU_OP_WRITE_VALUE,
    ACCEL_EMU_OP_NODE,
    ACCEL_EMU_OP_HOST_FUNC,
} accel_emu_op_kind_t;

/* One queued operation; pointers are the backend's views (resolved at the call). */
typedef struct accel_emu_op {
    struct accel_emu_op *next;
    accel_emu_op_kind_t kind;
    union {
        struct {
            char *dst;
            const char *src;
            size_t len;            /* of a row */
            size_t dpitch, spitch; /* rows' strides (a plain copy: one row) */
            size_t rows;
        } copy;
        struct {
            void *dst;
            const void *srcs[ACCEL_REDUCE_MAX_INPUTS];
            int nsrcs;
            size_t count;
            accel_dtype_t dtype;
            accel_op_t op;
        } reduce;
        struct {
            accel_event_h event; /* one reference held by the operation */
            uint64_t gen;        /* the record this operation is, or waits for */
        } event;
        struct {
            _Atomic uint32_t *addr;
            uint32_t value;
            accel_wait_value_t flags;
        } value;
        struct {
            accel_node_args_t args; /* areas, src, dst: the backend's views */
            accel_dtype_t dtype;
            accel_op_t op;
        } node;
        struct {
            void (*fn)(void *arg);
            void *arg;
        } host;
    } u;
} accel_emu_op_t;

struct accel_stream {
    uint32_t magic;
    pid_t pid;                /* the process that created it: a forked child has no worker */
    pthread_mutex_t lock;     /* protects what follows */
    pthread_cond_t work_cond; /* the worker: work queued, or stop */
    pthread_cond_t done_cond; /* synchronizers: an operation completed */
    accel_emu_op_t *head;     /* the operation running or next to run */
    accel_emu_op_t *tail;
    uint64_t queued; /* operations ever queued */
    uint64_t done;   /* operations ever completed */
    bool started;    /* the worker runs */
    bool sleeping;   /* the worker waits on work_cond: a submission wakes it */
    bool stop;       /* the worker ends once the queue is empty */
    bool failed;     /* an operation failed while running: the next synchronize says so */
    bool capturing;  /* between stream_begin_capture and _end_capture: work is recorded */
    accel_emu_op_t *captured_head, *captured_tail; /* what was recorded so far, in order */
    pthread_t thread;
};

struct accel_event {
    uint32_t magic;
    pid_t pid;
    pthread_mutex_t lock; /* protects what follows */
    pthread_cond_t cond;  /* a record was reached */
    unsigned refs;        /* the handle (until destroyed) and the queued operations naming it */
    uint64_t recorded;    /* records issued */
    uint64_t reached;     /* the latest record a worker reached */
    bool failed;          /* the work before the reached record had failed */
};

static bool accel_emu_sync_mode;
/* ACCEL_EMULATED_DELAY_US: the worker sleeps this long before each copy,
 * reduction and write (0: none), to widen the window in which a missing
 * synchronization reads stale data. */
static unsigned accel_emu_delay_us;
/* Whether a node collective's blocks run apart (accel_node_run_host): ACCEL_EMULATED_LANES=apart.
 */
static bool accel_emu_lanes_apart;

/* This copy's default stream (NULL); reset in a forked child. */
static struct accel_stream accel_emu_default_stream;
static pthread_mutex_t accel_emu_default_lock = PTHREAD_MUTEX_INITIALIZER;

static accel_status_t accel_emu_invalid_handle(const char *call) {
    accel_set_error(call, "EMULATED_ERROR_INVALID_HANDLE", ACCEL_EMU_ERROR_INVALID_HANDLE);
    return ACCEL_ERR_INVALID;
}

static void accel_emu_stream_init(accel_stream_h stream) {
    memset(stream, 0, sizeof(*stream));
    stream->magic = ACCEL_EMU_STREAM_MAGIC;
    stream->pid = accel_emu_self();
    pthread_mutex_init(&stream->lock, NULL);
    pthread_cond_init(&stream->work_cond, NULL);
    pthread_cond_init(&stream->done_cond, NULL);
}

/* The stream a handle names (NULL: the default stream), or NULL when it is not
 * a live stream of this process. */
static accel_stream_h accel_emu_stream_get(accel_stream_h stream) {
    accel_stream_h dflt = &accel_emu_default_stream;

    if (stream == NULL) {
        if (ACCEL_UNLIKELY(atomic_load_explicit((_Atomic uint32_t *)&dflt->magic,
                                                memory_order_acquire) != ACCEL_EMU_STREAM_MAGIC)) {
            pthread_mutex_lock(&accel_emu_default_lock);
            if (dflt->magic != ACCEL_EMU_STREAM_MAGIC) {
                accel_emu_stream_init(dflt);
                dflt->magic = 0;
                atomic_store_explicit((_Atomic uint32_t *)&dflt->magic, ACCEL_EMU_STREAM_MAGIC,
                                      memory_order_release);
            }
            pthread_mutex_unlock(&accel_emu_default_lock);
        }
        return dflt;
    }
    if ((stream->magic != ACCEL_EMU_STREAM_MAGIC) || (stream->pid != accel_emu_self())) {
        return NULL;
    }
    return stream;
}

static accel_event_h accel_emu_event_get(accel_event_h event) {
    if ((event == NULL) || (event->magic != ACCEL_EMU_EVENT_MAGIC) ||
        (event->pid != accel_emu_self())) {
        return NULL;
    }
    return event;
}

static void accel_emu_event_unref(accel_event_h event) {
    bool last;

    pthread_mutex_lock(&event->lock);
    last = (--event->refs == 0);
    pthread_mutex_unlock(&event->lock);
    if (last) {
        pthread_mutex_destroy(&event->lock);
        pthread_cond_destroy(&event->cond);
        free(event);
    }
}

/* The condition of a wait-value, as CUDA defines it. */
static bool accel_emu_value_reached(uint32_t cur, uint32_t value, accel_wait_value_t flags) {
    switch (flags) {
    case ACCEL_WAIT_VALUE_GEQ:
        return (int32_t)(cur - value) >= 0;
    case ACCEL_WAIT_VALUE_EQ:
        return cur == value;
    case ACCEL_WAIT_VALUE_AND:
        return (cur & value) != 0;
    case ACCEL_WAIT_VALUE_NOR:
        return ~(cur | value) != 0;
    }
    return true;
}

/* Poll a flag another thread, process or stream writes: yield first, then
 * sleep a little longer each time (up to 50 us). */
static void accel_emu_wait_value(_Atomic uint32_t *addr, uint32_t value, accel_wait_value_t flags) {
    struct timespec ts = {0, 0};
    unsigned polls = 0;

    while (
        !accel_emu_value_reached(atomic_load_explicit(addr, memory_order_acquire), value, flags)) {
        if (++polls < 64) {
            sched_yield();
            continue;
        }
        ts.tv_nsec = (ts.tv_nsec < 50000) ? ts.tv_nsec + 1000 : 50000;
        nanosleep(&ts, NULL);
    }
}

/* Mark a record reached; wake whoever waits on the event. */
static void accel_emu_event_reach(accel_event_h event, uint64_t gen, bool failed) {
    pthread_mutex_lock(&event->lock);
    if (gen > event->reached) {
        event->reached = gen;
        event->failed = failed;
    }
    pthread_cond_broadcast(&event->cond);
    pthread_mutex_unlock(&event->lock);
}

/* Run one operation; false when it failed (the EXEC fault plan). */
static bool accel_emu_op_run(accel_stream_h stream, accel_emu_op_t *op) {
    accel_emu_header_t *hdr = accel_emu_hdr_get();
    accel_event_h event;
    bool failed;

    if ((accel_emu_delay_us != 0) && !accel_emu_sync_mode &&
        ((op->kind == ACCEL_EMU_OP_COPY) || (op->kind == ACCEL_EMU_OP_REDUCE) ||
         (op->kind == ACCEL_EMU_OP_WRITE_VALUE) || (op->kind == ACCEL_EMU_OP_NODE))) {
        usleep(accel_emu_delay_us);
    }
    switch (op->kind) {
    case ACCEL_EMU_OP_COPY:
    case ACCEL_EMU_OP_REDUCE:
        /* The plan's lock only when a plan is armed (a racy peek is enough:
         * plans are set between operations). */
        if (__atomic_load_n(&hdr->faults[ACCEL_EMULATED_FAULT_EXEC].armed, __ATOMIC_RELAXED)) {
            pthread_mutex_lock(&hdr->lock);
            failed = accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_EXEC);
            pthread_mutex_unlock(&hdr->lock);
            if (failed) {
                return false;
            }
        }
        if (op->kind == ACCEL_EMU_OP_COPY) {
            for (size_t r = 0; r < op->u.copy.rows; ++r) {
                memmove(op->u.copy.dst + r * op->u.copy.dpitch,
                        op->u.copy.src + r * op->u.copy.spitch, op->u.copy.len);
            }
            return true;
        }
        return accel_reduce_cpu(op->u.reduce.dst, op->u.reduce.srcs, op->u.reduce.nsrcs,
                                op->u.reduce.count, op->u.reduce.dtype,
                                op->u.reduce.op) == ACCEL_OK;
    case ACCEL_EMU_OP_RECORD:
        pthread_mutex_lock(&stream->lock);
        failed = stream->failed;
        pthread_mutex_unlock(&stream->lock);
        accel_emu_event_reach(op->u.event.event, op->u.event.gen, failed);
        return true;
    case ACCEL_EMU_OP_WAIT_EVENT:
        event = op->u.event.event;
        pthread_mutex_lock(&event->lock);
        while (event->reached < op->u.event.gen) {
            pthread_cond_wait(&event->cond, &event->lock);
        }
        pthread_mutex_unlock(&event->lock);
        return true;
    case ACCEL_EMU_OP_WAIT_VALUE:
        accel_emu_wait_value(op->u.value.addr, op->u.value.value, op->u.value.flags);
        return true;
    case ACCEL_EMU_OP_WRITE_VALUE:
        /* After everything before it, as the default cuStreamWriteValue32. */
        atomic_thread_fence(memory_order_seq_cst);
        atomic_store_explicit(op->u.value.addr, op->u.value.value, memory_order_release);
        return true;
    case ACCEL_EMU_OP_NODE:
        failed = false;
        if ((op->u.node.args.src != NULL) &&
            __atomic_load_n(&hdr->faults[ACCEL_EMULATED_FAULT_EXEC].armed, __ATOMIC_RELAXED)) {
            pthread_mutex_lock(&hdr->lock);
            failed = accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_EXEC);
            pthread_mutex_unlock(&hdr->lock);
        }
        if (failed) {
            op->u.node.args.src = NULL; /* the flags only: the peers go on */
        }
        return accel_node_run_host(&op->u.node.args, op->u.node.dtype, op->u.node.op,
                                   accel_emu_lanes_apart) &&
               !failed;
    case ACCEL_EMU_OP_HOST_FUNC:
        /* what the stream wrote before is visible to fn, what fn writes to the work after */
        atomic_thread_fence(memory_order_seq_cst);
        op->u.host.fn(op->u.host.arg);
        atomic_thread_fence(memory_order_seq_cst);
        return true;
    }
    return true;
}

/* Drop what an operation holds once it ran. */
static void accel_emu_op_release(accel_emu_op_t *op) {
    if ((op->kind == ACCEL_EMU_OP_RECORD) || (op->kind == ACCEL_EMU_OP_WAIT_EVENT)) {
        accel_emu_event_unref(op->u.event.event);
    }
}

static void *accel_emu_worker(void *arg) {
    accel_stream_h stream = arg;
    accel_emu_header_t *hdr = accel_emu_hdr_get();
    accel_emu_op_t *op;
    bool ok;

    /* Woken on the submitter's core, a worker of the default policy would run first (the
     * scheduler favours a thread that slept) and the submitting call would wait for the
     * kernel's first steps, where a GPU's launch returns at once.  SCHED_BATCH: no preemption
     * on wakeup, the same share of the core otherwise. */
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &(struct sched_param){0});
    pthread_mutex_lock(&stream->lock);
    for (;;) {
        while ((stream->head == NULL) && !stream->stop) {
            stream->sleeping = true;
            pthread_cond_wait(&stream->work_cond, &stream->lock);
            stream->sleeping = false;
        }
        op = stream->head;
        if (op == NULL) {
            break; /* stopped, and nothing left */
        }
        /* Stays at the head while it runs: the queue is the work not done. */
        pthread_mutex_unlock(&stream->lock);
        ok = accel_emu_op_run(stream, op);
        accel_emu_op_release(op);
        pthread_mutex_lock(&stream->lock);
        stream->head = op->next;
        if (stream->head == NULL) {
            stream->tail = NULL;
        }
        if (!ok) {
            stream->failed = true;
        }
        ++stream->done;
        atomic_fetch_sub_explicit(&hdr->async_pending, 1, memory_order_release);
        pthread_cond_broadcast(&stream->done_cond);
        free(op);
    }
    pthread_mutex_unlock(&stream->lock);
    return NULL;
}

/* Start the worker of a stream (lock held).  It takes no signal: those are
 * the application's threads' business. */
static bool accel_emu_worker_start(accel_stream_h stream) {
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&stream->thread, NULL, accel_emu_worker, stream);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        accel_log(ACCEL_LOG_INFO, "emulated: cannot start a stream worker: %s", strerror(rc));
        return false;
    }
    stream->started = true;
    return true;
}

/*
 * Queue a copy of *tmpl on stream (valid), or in synchronous mode run it now.
 * The event an event operation names carries a reference for it already.
 */
static accel_status_t accel_emu_submit(const char *call, accel_stream_h stream,
                                       const accel_emu_op_t *tmpl) {
    accel_emu_header_t *hdr = accel_emu_state(); /* rebuilt first in a forked child */
    accel_emu_op_t *op;
    bool recorded = false;

    if (hdr == NULL) {
        accel_emu_op_release((accel_emu_op_t *)tmpl);
        return accel_emu_no_state(call);
    }
    /* A stream being captured records the work into the graph instead (a graph holds no
     * events: CUDA would make them graph nodes, no test needs that) */
    pthread_mutex_lock(&stream->lock);
    if (stream->capturing) {
        recorded = true;
        op = ((tmpl->kind != ACCEL_EMU_OP_RECORD) && (tmpl->kind != ACCEL_EMU_OP_WAIT_EVENT))
                 ? malloc(sizeof(*op))
                 : NULL;
        if (op != NULL) {
            *op = *tmpl;
            op->next = NULL;
            if (stream->captured_tail != NULL) {
                stream->captured_tail->next = op;
            } else {
                stream->captured_head = op;
            }
            stream->captured_tail = op;
        }
    }
    pthread_mutex_unlock(&stream->lock);
    if (recorded) {
        if (op != NULL) {
            return ACCEL_OK;
        }
        accel_emu_op_release((accel_emu_op_t *)tmpl);
        accel_set_error(call, "EMULATED_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                        ACCEL_EMU_ERROR_INVALID_VALUE);
        return ACCEL_ERR_UNSUPPORTED;
    }

    if (accel_emu_sync_mode) {
        accel_emu_op_t now = *tmpl;
        bool ok = accel_emu_op_run(stream, &now);

        accel_emu_op_release(&now);
        return ok ? ACCEL_OK : accel_emu_injected(call);
    }

    op = malloc(sizeof(*op));
    if (op == NULL) {
        accel_emu_op_release((accel_emu_op_t *)tmpl);
        accel_set_error(call, "EMULATED_ERROR_OUT_OF_MEMORY", ACCEL_EMU_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    *op = *tmpl;
    op->next = NULL;

    pthread_mutex_lock(&stream->lock);
    if (!stream->started && !accel_emu_worker_start(stream)) {
        pthread_mutex_unlock(&stream->lock);
        free(op);
        accel_emu_op_release((accel_emu_op_t *)tmpl);
        accel_set_error(call, "EMULATED_ERROR_OUT_OF_MEMORY", ACCEL_EMU_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    atomic_fetch_add_explicit(&hdr->async_pending, 1, memory_order_relaxed);
    if (stream->tail != NULL) {
        stream->tail->next = op;
    } else {
        stream->head = op;
    }
    stream->tail = op;
    ++stream->queued;
    if (stream->sleeping) {
        stream->sleeping = false; /* one wake for a burst of submissions */
        pthread_cond_signal(&stream->work_cond);
    }
    pthread_mutex_unlock(&stream->lock);
    return ACCEL_OK;
}

/* Wait until the work queued on stream so far completed; whether some of it
 * failed since the last time this was asked. */
static bool accel_emu_stream_drain(accel_stream_h stream) {
    uint64_t target;
    bool failed;

    pthread_mutex_lock(&stream->lock);
    target = stream->queued;
    while (stream->done < target) {
        pthread_cond_wait(&stream->done_cond, &stream->lock);
    }
    failed = stream->failed;
    stream->failed = false;
    pthread_mutex_unlock(&stream->lock);
    return !failed;
}

/* Let the worker finish the queue and end; join it. */
static void accel_emu_stream_stop(accel_stream_h stream) {
    bool started;

    pthread_mutex_lock(&stream->lock);
    stream->stop = true;
    started = stream->started;
    pthread_cond_signal(&stream->work_cond);
    pthread_mutex_unlock(&stream->lock);
    if (started) {
        pthread_join(stream->thread, NULL);
    }
    pthread_mutex_lock(&stream->lock);
    stream->started = false;
    stream->stop = false;
    pthread_mutex_unlock(&stream->lock);
}

/* Wait until no operation queued by this process is left (before memory
 * goes away: a worker may still read or write it). */
static void accel_emu_wait_idle(accel_emu_header_t *hdr) {
    struct timespec ts = {0, 0};
    unsigned polls = 0;

    while (atomic_load_explicit(&hdr->async_pending, memory_order_acquire) != 0) {
        if (++polls < 64) {
            sched_yield();
            continue;
        }
        ts.tv_nsec = (ts.tv_nsec < 50000) ? ts.tv_nsec + 1000 : 50000;
        nanosleep(&ts, NULL);
    }
}

/* In a forked child: the default stream's worker and queue stayed with the
 * parent. */
static void accel_emu_streams_atfork_child(void) {
    memset(&accel_emu_default_stream, 0, sizeof(accel_emu_default_stream));
    pthread_mutex_init(&accel_emu_default_lock, NULL);
}

/* rows rows of len bytes (a plain copy: one row, pitches 0); one operation, counted once. */
static accel_status_t accel_emu_copy_rows(const char *call, void *dst, size_t dpitch,
                                          const void *src, size_t spitch, size_t len, size_t rows,
                                          accel_stream_h stream, bool async) {
    accel_emu_header_t *hdr;
    accel_emu_op_t op;
    size_t dspan, sspan;
    char *d, *s;
    bool ok;

    if ((len == 0) || (rows == 0)) {
        return ACCEL_OK; /* as cuMemcpy: nothing to do, the pointers are not checked */
    }
    if ((rows > 1) &&
        ((dpitch < len) || (spitch < len) || (dpitch > (SIZE_MAX - len) / (rows - 1)) ||
         (spitch > (SIZE_MAX - len) / (rows - 1)))) {
        return accel_emu_invalid(call);
    }
    /* every row lies in the extent of its side: the first byte to the last row's end */
    dspan = (rows - 1) * dpitch + len;
    sspan = (rows - 1) * spitch + len;

    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }

    pthread_mutex_lock(&hdr->lock);
    ok = accel_emu_resolve(hdr, (uintptr_t)dst, dspan, &d) &&
         accel_emu_resolve(hdr, (uintptr_t)src, sspan, &s);
    if (!ok) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_invalid(call);
    }
    if (accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_MEMCPY)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_injected(call);
    }
    pthread_mutex_unlock(&hdr->lock);
    atomic_fetch_add_explicit(&hdr->copy_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&hdr->copy_bytes, len * rows, memory_order_relaxed);

    if (async) {
        memset(&op, 0, sizeof(op));
        op.kind = ACCEL_EMU_OP_COPY;
        op.u.copy.dst = d;
        op.u.copy.src = s;
        op.u.copy.len = len;
        op.u.copy.dpitch = dpitch;
        op.u.copy.spitch = spitch;
        op.u.copy.rows = rows;
        return accel_emu_submit(call, stream, &op);
    }
    /* Outside the lock: copies run in parallel.  A racing free cannot fault,
     * the mappings stay. */
    for (size_t r = 0; r < rows; ++r) {
        memmove(d + r * dpitch, s + r * spitch, len);
    }
    return ACCEL_OK;
}

static accel_status_t accel_emu_copy(const char *call, void *dst, const void *src, size_t len,
                                     accel_stream_h stream, bool async) {
    return accel_emu_copy_rows(call, dst, 0, src, 0, len, 1, stream, async);
}

static accel_status_t accel_emu_memcpy(void *dst, const void *src, size_t len) {
    /* On the default stream, as cuMemcpy: after the work queued there (and
     * failing when some of it failed). */
    if (!accel_emu_sync_mode && (len != 0) && !accel_emu_stream_drain(accel_emu_stream_get(NULL))) {
        return accel_emu_injected("emuMemcpy");
    }
    return accel_emu_copy("emuMemcpy", dst, src, len, NULL, false);
}

static accel_status_t accel_emu_memcpy_async(void *dst, const void *src, size_t len,
                                             accel_stream_h stream) {
    accel_stream_h s = accel_emu_stream_get(stream);

    if (s == NULL) {
        return accel_emu_invalid_handle("emuMemcpyAsync");
    }
    return accel_emu_copy("emuMemcpyAsync", dst, src, len, s, true);
}

static accel_status_t accel_emu_memcpy2d_async(void *dst, size_t dpitch, const void *src,
                                               size_t spitch, size_t width, size_t height,
                                               accel_stream_h stream) {
    accel_stream_h s = accel_emu_stream_get(stream);

    if (s == NULL) {
        return accel_emu_invalid_handle("emuMemcpy2DAsync");
    }
    return accel_emu_copy_rows("emuMemcpy2DAsync", dst, dpitch, src, spitch, width, height, s,
                               true);
}

/* Adjust a live stream/event counter under the lock. */
static void accel_emu_count(accel_emu_header_t *hdr, size_t *counter, int delta) {
    pthread_mutex_lock(&hdr->lock);
    *counter += (size_t)(ssize_t)delta;
    pthread_mutex_unlock(&hdr->lock);
}

static accel_status_t accel_emu_stream_create(accel_stream_h *stream_p) {
    accel_emu_header_t *hdr = accel_emu_state();
    accel_stream_h stream;
    bool hit;

    if (hdr == NULL) {
        return accel_emu_no_state("emuStreamCreate");
    }
    if (stream_p == NULL) {
        return accel_emu_invalid("emuStreamCreate");
    }
    pthread_mutex_lock(&hdr->lock);
    hit = accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_STREAM_CREATE);
    pthread_mutex_unlock(&hdr->lock);
    if (hit) {
        return accel_emu_injected("emuStreamCreate");
    }
    stream = malloc(sizeof(*stream));
    if (stream == NULL) {
        accel_set_error("emuStreamCreate", "EMULATED_ERROR_OUT_OF_MEMORY",
                        ACCEL_EMU_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    accel_emu_stream_init(stream); /* the worker starts with the first operation */
    accel_emu_count(hdr, &hdr->live_streams, 1);
    *stream_p = stream;
    return ACCEL_OK;
}

/* Operations recorded by a capture (a graph's, or a capture never ended). */
static void accel_emu_ops_free(accel_emu_op_t *head) {
    while (head != NULL) {
        accel_emu_op_t *op = head;

        head = op->next;
        free(op);
    }
}

static accel_status_t accel_emu_stream_destroy(accel_stream_h stream) {
    accel_emu_header_t *hdr = accel_emu_state();

    if ((stream == NULL) || (stream->magic != ACCEL_EMU_STREAM_MAGIC) || (hdr == NULL)) {
        return accel_emu_invalid_handle("emuStreamDestroy");
    }
    stream->magic = ACCEL_EMU_DEAD_MAGIC;
    if (stream->pid == accel_emu_self()) {
        /* Queued work completes first, as with cuStreamDestroy; the worker ends. */
        accel_emu_stream_stop(stream);
        pthread_mutex_destroy(&stream->lock);
        pthread_cond_destroy(&stream->work_cond);
        pthread_cond_destroy(&stream->done_cond);
    }
    accel_emu_ops_free(stream->captured_head); /* a capture never ended */
    free(stream);
    accel_emu_count(hdr, &hdr->live_streams, -1);
    return ACCEL_OK;
}

static accel_status_t accel_emu_stream_synchronize(accel_stream_h stream) {
    accel_stream_h s = accel_emu_stream_get(stream);

    if (s == NULL) {
        return accel_emu_invalid_handle("emuStreamSynchronize");
    }
    if (!accel_emu_stream_drain(s)) {
        return accel_emu_injected("emuStreamSynchronize");
    }
    return ACCEL_OK;
}

static accel_status_t accel_emu_event_create(accel_event_h *event_p) {
    accel_emu_header_t *hdr = accel_emu_state();
    accel_event_h event;

    if (hdr == NULL) {
        return accel_emu_no_state("emuEventCreate");
    }
    if (event_p == NULL) {
        return accel_emu_invalid("emuEventCreate");
    }
    event = calloc(1, sizeof(*event));
    if (event == NULL) {
        accel_set_error("emuEventCreate", "EMULATED_ERROR_OUT_OF_MEMORY",
                        ACCEL_EMU_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    event->magic = ACCEL_EMU_EVENT_MAGIC;
    event->pid = accel_emu_self();
    pthread_mutex_init(&event->lock, NULL);
    pthread_cond_init(&event->cond, NULL);
    event->refs = 1;
    accel_emu_count(hdr, &hdr->live_events, 1);
    *event_p = event;
    return ACCEL_OK;
}

static accel_status_t accel_emu_event_destroy(accel_event_h event) {
    accel_emu_header_t *hdr = accel_emu_state();

    if ((event == NULL) || (event->magic != ACCEL_EMU_EVENT_MAGIC) || (hdr == NULL)) {
        return accel_emu_invalid_handle("emuEventDestroy");
    }
    event->magic = ACCEL_EMU_DEAD_MAGIC;
    if (event->pid == accel_emu_self()) {
        /* Freed when the last queued operation naming it ran (cuEventDestroy
         * returns at once too). */
        accel_emu_event_unref(event);
    } else {
        free(event);
    }
    accel_emu_count(hdr, &hdr->live_events, -1);
    return ACCEL_OK;
}

static accel_status_t accel_emu_event_record(accel_event_h event, accel_stream_h stream) {
    accel_event_h e = accel_emu_event_get(event);
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_op_t op;
    bool capturing;

    if ((e == NULL) || (s == NULL)) {
        return accel_emu_invalid_handle("emuEventRecord");
    }
    /* refused before the record counts (a graph holds no events: accel_emu_submit) */
    pthread_mutex_lock(&s->lock);
    capturing = s->capturing;
    pthread_mutex_unlock(&s->lock);
    if (capturing) {
        accel_set_error("emuEventRecord", "EMULATED_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                        ACCEL_EMU_ERROR_INVALID_VALUE);
        return ACCEL_ERR_UNSUPPORTED;
    }
    memset(&op, 0, sizeof(op));
    op.kind = ACCEL_EMU_OP_RECORD;
    op.u.event.event = e;
    pthread_mutex_lock(&e->lock);
    op.u.event.gen = ++e->recorded;
    ++e->refs;
    pthread_mutex_unlock(&e->lock);
    return accel_emu_submit("emuEventRecord", s, &op);
}

/* Whether the event's latest record was reached (lock held); false in
 * *failed_p unless work before it failed. */
static bool accel_emu_event_done(accel_event_h event, bool *failed_p) {
    bool done = (event->reached >= event->recorded);

    *failed_p = done && (event->recorded > 0) && event->failed;
    return done;
}

static accel_status_t accel_emu_event_synchronize(accel_event_h event) {
    accel_event_h e = accel_emu_event_get(event);
    uint64_t target;
    bool failed;

    /* An event never recorded is complete, as in CUDA. */
    if (e == NULL) {
        return accel_emu_invalid_handle("emuEventSynchronize");
    }
    pthread_mutex_lock(&e->lock);
    target = e->recorded;
    while (e->reached < target) {
        pthread_cond_wait(&e->cond, &e->lock);
    }
    failed = (target > 0) && e->failed;
    pthread_mutex_unlock(&e->lock);
    return failed ? accel_emu_injected("emuEventSynchronize") : ACCEL_OK;
}

static accel_status_t accel_emu_event_query(accel_event_h event, bool *done_p) {
    accel_event_h e = accel_emu_event_get(event);
    bool done, failed;

    if ((e == NULL) || (done_p == NULL)) {
        return accel_emu_invalid_handle("emuEventQuery");
    }
    pthread_mutex_lock(&e->lock);
    done = accel_emu_event_done(e, &failed);
    pthread_mutex_unlock(&e->lock);
    *done_p = done;
    return failed ? accel_emu_injected("emuEventQuery") : ACCEL_OK;
}

static accel_status_t accel_emu_stream_wait_event(accel_stream_h stream, accel_event_h event) {
    accel_event_h e = accel_emu_event_get(event);
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_op_t op;

    if ((e == NULL) || (s == NULL)) {
        return accel_emu_invalid_handle("emuStreamWaitEvent");
    }
    memset(&op, 0, sizeof(op));
    op.kind = ACCEL_EMU_OP_WAIT_EVENT;
    op.u.event.event = e;
    pthread_mutex_lock(&e->lock);
    op.u.event.gen = e->recorded;
    if (e->reached >= op.u.event.gen) {
        /* Never recorded, or already reached: nothing to wait for. */
        pthread_mutex_unlock(&e->lock);
        return ACCEL_OK;
    }
    ++e->refs;
    pthread_mutex_unlock(&e->lock);
    return accel_emu_submit("emuStreamWaitEvent", s, &op);
}

/* The backend's view of a 32-bit flag (4-byte aligned, in memory it can reach). */
static accel_status_t accel_emu_value_addr(const char *call, uint32_t *addr,
                                           _Atomic uint32_t **view_p) {
    accel_emu_header_t *hdr;
    char *view;
    bool ok;

    if ((addr == NULL) || (((uintptr_t)addr & 3) != 0)) {
        return accel_emu_invalid(call);
    }
    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }
    pthread_mutex_lock(&hdr->lock);
    ok = accel_emu_resolve(hdr, (uintptr_t)addr, sizeof(*addr), &view);
    pthread_mutex_unlock(&hdr->lock);
    if (!ok) {
        return accel_emu_invalid(call);
    }
    *view_p = (_Atomic uint32_t *)(void *)view;
    return ACCEL_OK;
}

static accel_status_t accel_emu_stream_wait_value32(accel_stream_h stream, uint32_t *addr,
                                                    uint32_t value, accel_wait_value_t flags) {
    const char *call = "emuStreamWaitValue32";
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_op_t op;
    accel_status_t status;

    if (s == NULL) {
        return accel_emu_invalid_handle(call);
    }
    if ((unsigned)flags > ACCEL_WAIT_VALUE_NOR) {
        return accel_emu_invalid(call);
    }
    memset(&op, 0, sizeof(op));
    op.kind = ACCEL_EMU_OP_WAIT_VALUE;
    op.u.value.value = value;
    op.u.value.flags = flags;
    status = accel_emu_value_addr(call, addr, &op.u.value.addr);
    if (status != ACCEL_OK) {
        return status;
    }
    return accel_emu_submit(call, s, &op);
}

static accel_status_t accel_emu_stream_write_value32(accel_stream_h stream, uint32_t *addr,
                                                     uint32_t value) {
    const char *call = "emuStreamWriteValue32";
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_op_t op;
    accel_status_t status;

    if (s == NULL) {
        return accel_emu_invalid_handle(call);
    }
    memset(&op, 0, sizeof(op));
    op.kind = ACCEL_EMU_OP_WRITE_VALUE;
    op.u.value.value = value;
    status = accel_emu_value_addr(call, addr, &op.u.value.addr);
    if (status != ACCEL_OK) {
        return status;
    }
    return accel_emu_submit(call, s, &op);
}

static accel_status_t accel_emu_stream_host_func(accel_stream_h stream, void (*fn)(void *arg),
                                                 void *arg) {
    const char *call = "emuLaunchHostFunc";
    accel_emu_header_t *hdr = accel_emu_state();
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_op_t op;
    bool hit;

    if ((s == NULL) || (hdr == NULL)) {
        return accel_emu_invalid_handle(call);
    }
    if (fn == NULL) {
        return accel_emu_invalid(call);
    }
    pthread_mutex_lock(&hdr->lock);
    hit = accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_HOST_FUNC);
    pthread_mutex_unlock(&hdr->lock);
    if (hit) {
        return accel_emu_injected(call);
    }
    memset(&op, 0, sizeof(op));
    op.kind = ACCEL_EMU_OP_HOST_FUNC;
    op.u.host.fn = fn;
    op.u.host.arg = arg;
    return accel_emu_submit(call, s, &op);
}

static accel_status_t accel_emu_stream_is_capturing(accel_stream_h stream, bool *capturing_p) {
    accel_stream_h s = accel_emu_stream_get(stream);

    if (s == NULL) {
        return accel_emu_invalid_handle("emuStreamIsCapturing");
    }
    pthread_mutex_lock(&s->lock);
    *capturing_p = s->capturing;
    pthread_mutex_unlock(&s->lock);
    return ACCEL_OK;
}

/* A graph: the operations a capture recorded, queued again at every launch (events cannot be
 * captured: ACCEL_ERR_UNSUPPORTED at the call that would record one). */
struct accel_graph {
    accel_emu_op_t *head;
};

static accel_status_t accel_emu_stream_begin_capture(accel_stream_h stream) {
    accel_stream_h s = accel_emu_stream_get(stream);
    bool already;

    if (s == NULL) {
        return accel_emu_invalid_handle("emuStreamBeginCapture");
    }
    pthread_mutex_lock(&s->lock);
    already = s->capturing;
    s->capturing = true;
    pthread_mutex_unlock(&s->lock);
    return already ? accel_emu_invalid("emuStreamBeginCapture") : ACCEL_OK;
}

static accel_status_t accel_emu_stream_end_capture(accel_stream_h stream, accel_graph_h *graph_p) {
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_graph_h graph = calloc(1, sizeof(*graph));
    accel_emu_op_t *recorded;
    bool capturing;

    if (s == NULL) {
        free(graph);
        return accel_emu_invalid_handle("emuStreamEndCapture");
    }
    pthread_mutex_lock(&s->lock);
    capturing = s->capturing;
    recorded = s->captured_head;
    s->capturing = false;
    s->captured_head = s->captured_tail = NULL;
    pthread_mutex_unlock(&s->lock);
    if (!capturing || (graph == NULL)) {
        accel_emu_ops_free(recorded);
        free(graph);
        if (!capturing) {
            return accel_emu_invalid("emuStreamEndCapture");
        }
        accel_set_error("emuStreamEndCapture", "EMULATED_ERROR_OUT_OF_MEMORY",
                        ACCEL_EMU_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    graph->head = recorded;
    *graph_p = graph;
    return ACCEL_OK;
}

static accel_status_t accel_emu_graph_launch(accel_graph_h graph, accel_stream_h stream) {
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_status_t status = ACCEL_OK;

    if ((s == NULL) || (graph == NULL)) {
        return accel_emu_invalid_handle("emuGraphLaunch");
    }
    for (const accel_emu_op_t *op = graph->head; (op != NULL) && (status == ACCEL_OK);
         op = op->next) {
        status = accel_emu_submit("emuGraphLaunch", s, op);
    }
    return status;
}

static accel_status_t accel_emu_graph_destroy(accel_graph_h graph) {
    if (graph != NULL) {
        accel_emu_ops_free(graph->head);
        free(graph);
    }
    return ACCEL_OK;
}

static int accel_emu_device_count(void) { return 1; }

/* The CPU reduction on the backend's view of every operand, queued on the
 * stream like a kernel. */
static accel_status_t accel_emu_reduce(void *dst, const void *const *srcs, int nsrcs, size_t count,
                                       accel_dtype_t dtype, accel_op_t op, accel_stream_h stream) {
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_header_t *hdr;
    accel_emu_op_t work;
    size_t len;
    char *view;
    bool ok;

    if (s == NULL) {
        return accel_emu_invalid_handle("emuReduce");
    }
    if ((nsrcs < 2) || (nsrcs > ACCEL_REDUCE_MAX_INPUTS) || (srcs == NULL) ||
        ((unsigned)dtype >= ACCEL_DT_COUNT) || ((unsigned)op >= ACCEL_OP_COUNT)) {
        return accel_emu_invalid("emuReduce");
    }
    if (!accel_reduce_supported(op, dtype)) {
        accel_set_error("emuReduce", "EMULATED_ERROR_NOT_SUPPORTED", ACCEL_EMU_ERROR_INVALID_VALUE);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        return ACCEL_OK;
    }
    len = count * accel_dtype_size(dtype);
    if (len / accel_dtype_size(dtype) != count) {
        return accel_emu_invalid("emuReduce");
    }

    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state("emuReduce");
    }
    memset(&work, 0, sizeof(work));
    work.kind = ACCEL_EMU_OP_REDUCE;
    work.u.reduce.nsrcs = nsrcs;
    work.u.reduce.count = count;
    work.u.reduce.dtype = dtype;
    work.u.reduce.op = op;
    pthread_mutex_lock(&hdr->lock);
    ok = accel_emu_resolve(hdr, (uintptr_t)dst, len, &view);
    work.u.reduce.dst = view;
    for (int i = 0; ok && (i < nsrcs); ++i) {
        ok = accel_emu_resolve(hdr, (uintptr_t)srcs[i], len, &view);
        work.u.reduce.srcs[i] = view;
    }
    if (ok && accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_REDUCE)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_injected("emuReduce");
    }
    pthread_mutex_unlock(&hdr->lock);
    if (!ok) {
        return accel_emu_invalid("emuReduce");
    }
    return accel_emu_submit("emuReduce", s, &work);
}

/* This rank's part of a node collective (accel.h), queued on the stream like a kernel: every
 * pointer resolved now, the REDUCE fault plan as a failed launch (of every kind: the kernel's
 * launch fails, whether it reduces or only moves data). */
static accel_status_t accel_emu_node_collective(const accel_node_plan_t *plan,
                                                const accel_node_call_t *c, accel_stream_h stream) {
    const char *call = "emuNodeCollective";
    accel_stream_h s = accel_emu_stream_get(stream);
    accel_emu_header_t *hdr;
    accel_emu_op_t work;
    size_t size, len, area, src_len, dst_len;
    char *view;
    bool ok, data, reduces;

    if (s == NULL) {
        return accel_emu_invalid_handle(call);
    }
    if (!accel_node_call_check(plan, c)) {
        return accel_emu_invalid(call);
    }
    reduces = accel_node_reduces(c->kind);
    /* a call without data stands in for one that failed, whatever made it fail: it needs only
     * the plan and the lanes' and steps' count (count * size) */
    if ((c->src != NULL) && reduces &&
        (((unsigned)c->op >= ACCEL_OP_COUNT) || !accel_reduce_supported(c->op, c->dtype))) {
        accel_set_error(call, "EMULATED_ERROR_NOT_SUPPORTED", ACCEL_EMU_ERROR_INVALID_VALUE);
        return ACCEL_ERR_UNSUPPORTED;
    }
    size = accel_dtype_size(c->dtype);
    len = c->count * size;
    src_len = (c->kind == ACCEL_NODE_REDUCE_SCATTER) ? len * (size_t)plan->nranks : len;
    dst_len = (c->kind == ACCEL_NODE_ALLGATHER) ? len * (size_t)plan->nranks : len;
    area = accel_node_head_bytes(plan->nranks) + 2 * plan->half;
    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }
    memset(&work, 0, sizeof(work));
    work.kind = ACCEL_EMU_OP_NODE;
    work.u.node.args.count = c->count;
    work.u.node.args.size = size;
    work.u.node.args.half = plan->half;
    work.u.node.args.nranks = plan->nranks;
    work.u.node.args.rank = plan->rank;
    work.u.node.args.kind = (int)c->kind;
    work.u.node.args.root = c->root;
    work.u.node.args.nnodes = accel_node_nnodes(plan, c->kind);
    work.u.node.args.node = (work.u.node.args.nnodes > 1) ? plan->node : 0;
    work.u.node.dtype = c->dtype;
    work.u.node.op = c->op;
    data = (c->src != NULL) && (c->count > 0);
    pthread_mutex_lock(&hdr->lock);
    ok = true;
    for (int p = 0; ok && (p < plan->nranks); ++p) {
        ok = accel_emu_resolve(hdr, (uintptr_t)plan->areas[p], area, &view) &&
             accel_emu_in_window((uintptr_t)plan->areas[p]);
        work.u.node.args.areas[p] = view;
    }
    if (ok && (work.u.node.args.nnodes > 1)) {
        ok = accel_emu_resolve(hdr, (uintptr_t)plan->stage,
                               accel_node_stage_bytes(plan->half, plan->nranks, plan->nnodes),
                               &view);
        work.u.node.args.stage = view;
    }
    if (ok && data) {
        ok = accel_emu_resolve(hdr, (uintptr_t)c->src, src_len, &view);
        work.u.node.args.src = view;
        if (ok && accel_node_writes_dst(c->kind, plan->rank, c->root)) {
            ok = accel_emu_resolve(hdr, (uintptr_t)c->dst, dst_len, &view);
            work.u.node.args.dst = view;
        }
    }
    if (ok && data && accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_REDUCE)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_injected(call);
    }
    pthread_mutex_unlock(&hdr->lock);
    if (!ok) {
        return accel_emu_invalid(call);
    }
    return accel_emu_submit(call, s, &work);
}

/*
 * IPC.  Export publishes the allocation in this process's export table (in
 * the memfd) and names it by (memfd fd, offset, slot, token); import maps it
 * from /proc/<pid>/fd/<fd> after checking the exporter's table still lists
 * it.  Imports are counted per (pid, token, buffer id): a second import maps
 * nothing and returns the same base.
 */

static accel_status_t accel_emu_ipc_export(const void *ptr, accel_ipc_handle_t *handle) {
    const char *call = "emuIpcGetMemHandle";
    uintptr_t addr = (uintptr_t)ptr;
    accel_emu_ipc_data_t data;
    accel_emu_header_t *hdr;
    accel_emu_export_t *entry;
    accel_emu_alloc_t *alloc;
    uint32_t slot;
    ssize_t i;

    if ((handle == NULL) || !accel_emu_in_window(addr)) {
        return accel_emu_invalid(call); /* host memory: nothing to export */
    }
    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }

    pthread_mutex_lock(&hdr->lock);
    if (accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_IPC_EXPORT)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_injected(call);
    }
    i = accel_emu_find(hdr, addr);
    if ((i < 0) || (addr - hdr->allocs[i].base >= hdr->allocs[i].size) ||
        (hdr->allocs[i].type == ACCEL_MEM_HOST_PINNED)) {
        /* Not an allocation of ours (an imported one included), or pinned host memory. */
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_invalid(call);
    }
    alloc = &hdr->allocs[i];

    if (alloc->export_slot == 0) {
        for (slot = 0; slot < ACCEL_EMU_MAX_EXPORTS; ++slot) {
            entry = &hdr->exports->entries[(hdr->export_cursor + slot) % ACCEL_EMU_MAX_EXPORTS];
            if (atomic_load_explicit(&entry->buffer_id, memory_order_relaxed) == 0) {
                break;
            }
        }
        if (slot == ACCEL_EMU_MAX_EXPORTS) {
            pthread_mutex_unlock(&hdr->lock);
            accel_log(ACCEL_LOG_ERROR_DETAIL, "emulated: all %d export slots in use",
                      ACCEL_EMU_MAX_EXPORTS);
            accel_set_error(call, "EMULATED_ERROR_OUT_OF_MEMORY", ACCEL_EMU_ERROR_OUT_OF_MEMORY);
            return ACCEL_ERR_NO_MEMORY;
        }
        slot = (hdr->export_cursor + slot) % ACCEL_EMU_MAX_EXPORTS;
        hdr->export_cursor = slot + 1;
        /* The fields before the id: a reader that sees the id sees them. */
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&entry->offset, alloc->base - ACCEL_EMU_BASE, memory_order_relaxed);
        atomic_store_explicit(&entry->size, alloc->size, memory_order_relaxed);
        atomic_store_explicit(&entry->type, (uint64_t)alloc->type, memory_order_relaxed);
        atomic_store_explicit(&entry->buffer_id, alloc->buffer_id, memory_order_release);
        alloc->export_slot = slot + 1;
    }

    memset(handle, 0, sizeof(*handle));
    memset(&data, 0, sizeof(data));
    handle->buffer_id = alloc->buffer_id;
    handle->alloc_size = alloc->size;
    handle->offset = addr - alloc->base;
    handle->pid = (int32_t)accel_emu_self();
    handle->kind = ACCEL_EMU_IPC_KIND;
    data.magic = ACCEL_EMU_IPC_MAGIC;
    data.token = hdr->token;
    data.memfd_offset = alloc->base - ACCEL_EMU_BASE;
    data.memfd = hdr->memfd;
    data.slot = alloc->export_slot - 1;
    data.type = (uint32_t)alloc->type;
    memcpy(handle->data, &data, sizeof(data));
    pthread_mutex_unlock(&hdr->lock);
    return ACCEL_OK;
}

/* Whether a handle is well formed: what import checks before trusting any
 * of it (it may be garbage). */
static bool accel_emu_ipc_handle_valid(const accel_ipc_handle_t *handle,
                                       const accel_emu_ipc_data_t *data) {
    uint64_t lo, hi;

    if ((handle->kind != ACCEL_EMU_IPC_KIND) || (data->magic != ACCEL_EMU_IPC_MAGIC) ||
        (handle->pid <= 0) || (data->memfd < 0) || (data->slot >= ACCEL_EMU_MAX_EXPORTS) ||
        (handle->buffer_id == 0) || (handle->alloc_size == 0) ||
        (handle->offset >= handle->alloc_size) || (handle->alloc_size > ACCEL_EMU_IPC_SIZE)) {
        return false;
    }
    if (data->type == ACCEL_MEM_DEVICE) {
        lo = 0;
        hi = ACCEL_EMU_DEVICE_ALLOC_SIZE;
    } else if (data->type == ACCEL_MEM_MANAGED) {
        lo = ACCEL_EMU_DEVICE_SIZE;
        hi = ACCEL_EMU_TOTAL_SIZE;
    } else {
        return false;
    }
    return (data->memfd_offset >= lo) && (data->memfd_offset < hi) &&
           (handle->alloc_size <= hi - data->memfd_offset);
}

/* Whether fd is an emulated backend's memfd, big enough to hold an export table. */
static bool accel_emu_fd_is_memfd(int fd) {
    static const char prefix[] = "/memfd:" ACCEL_EMU_MEMFD_NAME;
    char path[64], target[128];
    struct stat st;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0) {
        return false;
    }
    target[n] = '\0';
    /* Also fstat: an export table past the end of the file would SIGBUS. */
    return (strncmp(target, prefix, sizeof(prefix) - 1) == 0) && (fstat(fd, &st) == 0) &&
           ((uint64_t)st.st_size >= ACCEL_EMU_TOTAL_SIZE + ACCEL_EMU_EXPORTS_MAP_SIZE);
}

/* Whether the exporter's table still lists the handle's allocation, as the
 * handle describes it: false once the exporter freed it (or is another
 * process than the one that exported). */
static bool accel_emu_ipc_handle_live(int fd, const accel_ipc_handle_t *handle,
                                      const accel_emu_ipc_data_t *data) {
    accel_emu_exports_t *exports;
    accel_emu_export_t *entry;
    uint64_t offset, size, type;
    bool live = false;
    void *map;

    map = mmap(NULL, ACCEL_EMU_EXPORTS_MAP_SIZE, PROT_READ, MAP_SHARED, fd,
               (off_t)ACCEL_EMU_TOTAL_SIZE);
    if (map == MAP_FAILED) {
        accel_log(ACCEL_LOG_ERROR_DETAIL, "emulated: cannot map the export table of %d: %s",
                  (int)handle->pid, strerror(errno));
        return false;
    }
    exports = map;
    if ((atomic_load_explicit(&exports->magic, memory_order_acquire) == ACCEL_EMU_EXPORTS_MAGIC) &&
        (exports->token == data->token) && (exports->pid == handle->pid)) {
        entry = &exports->entries[data->slot];
        if (atomic_load_explicit(&entry->buffer_id, memory_order_acquire) == handle->buffer_id) {
            offset = atomic_load_explicit(&entry->offset, memory_order_relaxed);
            size = atomic_load_explicit(&entry->size, memory_order_relaxed);
            type = atomic_load_explicit(&entry->type, memory_order_relaxed);
            /* Still the same id after reading the rest: they belong to it. */
            atomic_thread_fence(memory_order_acquire);
            live = (atomic_load_explicit(&entry->buffer_id, memory_order_relaxed) ==
                    handle->buffer_id) &&
                   (offset == data->memfd_offset) && (size == handle->alloc_size) &&
                   (type == data->type);
        }
    }
    munmap(map, ACCEL_EMU_EXPORTS_MAP_SIZE);
    return live;
}

/* Where a range of len bytes (page multiple) fits in the IPC region: first
 * fit between the mapped imports.  Lock held; 0 when full. */
static uintptr_t accel_emu_ipc_reserve(const accel_emu_header_t *hdr, size_t len) {
    uintptr_t cursor = ACCEL_EMU_IPC_BASE, hi = ACCEL_EMU_IPC_BASE + ACCEL_EMU_IPC_SIZE;
    size_t i = (size_t)(accel_emu_import_find(hdr, ACCEL_EMU_IPC_BASE - 1) + 1);

    for (; (i < hdr->nimports) && (hdr->imports[i].base < hi); ++i) {
        if (hdr->imports[i].map_addr - cursor >= len) {
            break;
        }
        cursor = hdr->imports[i].map_addr + hdr->imports[i].map_len;
    }
    return (hi - cursor < len) ? 0 : cursor;
}

/* Insert an import at its sorted place.  Lock held, room checked. */
static accel_emu_import_t *accel_emu_import_insert(accel_emu_header_t *hdr, uintptr_t base) {
    size_t i = (size_t)(accel_emu_import_find(hdr, base) + 1);

    memmove(&hdr->imports[i + 1], &hdr->imports[i], (hdr->nimports - i) * sizeof(hdr->imports[0]));
    ++hdr->nimports;
    memset(&hdr->imports[i], 0, sizeof(hdr->imports[i]));
    hdr->imports[i].base = base;
    return &hdr->imports[i];
}

/* Import of one of our own allocations: the allocation itself, counted.  Lock held. */
static accel_status_t accel_emu_ipc_import_own(accel_emu_header_t *hdr,
                                               const accel_ipc_handle_t *handle,
                                               const accel_emu_ipc_data_t *data,
                                               uintptr_t *base_p) {
    const accel_emu_alloc_t *alloc = accel_emu_lookup(hdr, ACCEL_EMU_BASE + data->memfd_offset);
    accel_emu_import_t *imp;

    if ((alloc == NULL) || (alloc->base != ACCEL_EMU_BASE + data->memfd_offset) ||
        (alloc->buffer_id != handle->buffer_id) || (alloc->size != handle->alloc_size) ||
        (data->token != hdr->token)) {
        accel_log(ACCEL_LOG_ERROR_DETAIL,
                  "emulated: own handle of id %" PRIu64 " names no live allocation",
                  handle->buffer_id);
        return ACCEL_ERR_INVALID;
    }
    if (hdr->nimports == ACCEL_EMU_MAX_IMPORTS) {
        return ACCEL_ERR_NO_MEMORY;
    }
    imp = accel_emu_import_insert(hdr, alloc->base);
    imp->size = alloc->size;
    imp->buffer_id = alloc->buffer_id;
    imp->peer_buffer_id = alloc->buffer_id;
    imp->peer_token = hdr->token;
    imp->pid = handle->pid;
    imp->type = alloc->type;
    imp->refs = 1;
    *base_p = alloc->base;
    return ACCEL_OK;
}

/* Map another process's allocation into the IPC region.  Lock held. */
static accel_status_t accel_emu_ipc_import_peer(accel_emu_header_t *hdr,
                                                const accel_ipc_handle_t *handle,
                                                const accel_emu_ipc_data_t *data,
                                                uintptr_t *base_p) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uint64_t page_off = data->memfd_offset & ~(uint64_t)(page - 1);
    size_t map_len = accel_emu_align_up(data->memfd_offset + handle->alloc_size, page) - page_off;
    accel_emu_import_t *imp;
    uintptr_t map_addr;
    accel_status_t status;
    char path[64];
    void *view;
    int fd;

    if (hdr->nimports == ACCEL_EMU_MAX_IMPORTS) {
        return ACCEL_ERR_NO_MEMORY;
    }
    /* The exporter's memfd, as its own fd table holds it: fails for a dead
     * process or another user's (ptrace read access is needed). */
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)handle->pid, (int)data->memfd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        accel_log(ACCEL_LOG_ERROR_DETAIL, "emulated: cannot open %s: %s", path, strerror(errno));
        return ACCEL_ERR_INVALID;
    }
    if (!accel_emu_fd_is_memfd(fd) || !accel_emu_ipc_handle_live(fd, handle, data)) {
        accel_log(ACCEL_LOG_ERROR_DETAIL,
                  "emulated: %s does not hold allocation %" PRIu64 " of process %d (freed?)", path,
                  handle->buffer_id, (int)handle->pid);
        status = ACCEL_ERR_INVALID;
        goto out_close_fd;
    }

    map_addr = accel_emu_ipc_reserve(hdr, map_len);
    if (map_addr == 0) {
        accel_log(ACCEL_LOG_ERROR_DETAIL, "emulated: no room for %zu bytes in the IPC region",
                  map_len);
        status = ACCEL_ERR_NO_MEMORY;
        goto out_close_fd;
    }
    if (data->type == ACCEL_MEM_MANAGED) {
        /* Host accessible: RW in the window itself, which is also the view. */
        view = mmap((void *)map_addr, map_len, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_NORESERVE | MAP_FIXED, fd, (off_t)page_off);
    } else {
        /* Device memory: the window stays PROT_NONE there (a host access
         * faults); the backend goes through a view of its own. */
        view = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
                    (off_t)page_off);
    }
    if (view == MAP_FAILED) {
        accel_log(ACCEL_LOG_ERROR_DETAIL, "emulated: mmap of %zu bytes of %s failed: %s", map_len,
                  path, strerror(errno));
        status = ACCEL_ERR_NO_MEMORY;
        goto out_close_fd;
    }
    madvise(view, map_len, MADV_DONTDUMP);

    imp = accel_emu_import_insert(hdr, map_addr + (data->memfd_offset - page_off));
    imp->size = handle->alloc_size;
    imp->map_addr = map_addr;
    imp->map_len = map_len;
    imp->view = (uintptr_t)view;
    imp->buffer_id = hdr->next_buffer_id++;
    imp->peer_buffer_id = handle->buffer_id;
    imp->peer_token = data->token;
    imp->pid = handle->pid;
    imp->type = (accel_mem_type_t)data->type;
    imp->refs = 1;
    *base_p = imp->base;
    accel_log(ACCEL_LOG_DEBUG,
              "emulated: imported %" PRIu64 " bytes of process %d (id %" PRIu64 ") at 0x%" PRIxPTR,
              handle->alloc_size, (int)handle->pid, handle->buffer_id, imp->base);
    status = ACCEL_OK;

out_close_fd:
    close(fd); /* the mapping keeps the memfd */
    return status;
}

static accel_status_t accel_emu_ipc_import(const accel_ipc_handle_t *handle, void **base_p) {
    const char *call = "emuIpcOpenMemHandle";
    accel_emu_ipc_data_t data;
    accel_emu_header_t *hdr;
    accel_status_t status;
    uintptr_t base = 0;

    if ((handle == NULL) || (base_p == NULL)) {
        return accel_emu_invalid(call);
    }
    memcpy(&data, handle->data, sizeof(data));
    if (!accel_emu_ipc_handle_valid(handle, &data)) {
        return accel_emu_invalid_handle(call);
    }
    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }

    pthread_mutex_lock(&hdr->lock);
    if (accel_emu_fault_hit(hdr, ACCEL_EMULATED_FAULT_IPC_IMPORT)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_injected(call);
    }
    for (size_t i = 0; i < hdr->nimports; ++i) {
        accel_emu_import_t *imp = &hdr->imports[i];

        if ((imp->pid == handle->pid) && (imp->peer_buffer_id == handle->buffer_id) &&
            (imp->peer_token == data.token)) {
            ++imp->refs;
            *base_p = (void *)imp->base;
            pthread_mutex_unlock(&hdr->lock);
            return ACCEL_OK;
        }
    }
    if (handle->pid == (int32_t)accel_emu_self()) {
        status = accel_emu_ipc_import_own(hdr, handle, &data, &base);
    } else {
        status = accel_emu_ipc_import_peer(hdr, handle, &data, &base);
    }
    pthread_mutex_unlock(&hdr->lock);

    switch (status) {
    case ACCEL_OK:
        *base_p = (void *)base;
        return ACCEL_OK;
    case ACCEL_ERR_NO_MEMORY:
        accel_set_error(call, "EMULATED_ERROR_OUT_OF_MEMORY", ACCEL_EMU_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    default:
        return accel_emu_invalid_handle(call);
    }
}

static accel_status_t accel_emu_ipc_close(void *base) {
    const char *call = "emuIpcCloseMemHandle";
    uintptr_t addr = (uintptr_t)base;
    accel_emu_header_t *hdr;
    accel_emu_import_t imp;
    ssize_t i;
    void *restored;

    hdr = accel_emu_state();
    if (hdr == NULL) {
        return accel_emu_no_state(call);
    }
    /* Queued work may still go through the mapping. */
    accel_emu_wait_idle(hdr);

    pthread_mutex_lock(&hdr->lock);
    i = accel_emu_import_find(hdr, addr);
    if ((i < 0) || (hdr->imports[i].base != addr)) {
        pthread_mutex_unlock(&hdr->lock);
        return accel_emu_invalid(call);
    }
    if (--hdr->imports[i].refs > 0) {
        pthread_mutex_unlock(&hdr->lock);
        return ACCEL_OK;
    }
    imp = hdr->imports[i];
    memmove(&hdr->imports[i], &hdr->imports[i + 1],
            (hdr->nimports - (size_t)i - 1) * sizeof(hdr->imports[0]));
    --hdr->nimports;

    /* Unmapped under the lock: the range may be reserved again at once. */
    if (imp.map_len == 0) {
        /* Own memory: nothing was mapped. */
    } else if (imp.view == imp.map_addr) {
        /* Put the window back over a managed import's range. */
        restored = mmap((void *)imp.map_addr, imp.map_len, PROT_NONE,
                        MAP_SHARED | MAP_NORESERVE | MAP_FIXED, hdr->memfd,
                        (off_t)(imp.map_addr - ACCEL_EMU_BASE));
        if (restored == MAP_FAILED) {
            accel_log(ACCEL_LOG_INFO, "emulated: cannot restore the window at 0x%" PRIxPTR ": %s",
                      imp.map_addr, strerror(errno));
        }
    } else {
        munmap((void *)imp.view, imp.map_len);
    }
    pthread_mutex_unlock(&hdr->lock);
    return ACCEL_OK;
}

/* One emulated device, a fixed fake address: every process of the node sees
 * the same "GPU", as ranks sharing one device do. */
static char accel_emu_bus_id[32] = "0000:00:00.0";

static accel_status_t accel_emu_device_pci_bus_id(int dev, char *buf, size_t len) {
    size_t need = strlen(accel_emu_bus_id) + 1;

    if ((dev != 0) || (buf == NULL) || (len < need)) {
        return accel_emu_invalid("emuDeviceGetPCIBusId");
    }
    memcpy(buf, accel_emu_bus_id, need);
    return ACCEL_OK;
}

static const accel_ops_t accel_emu_ops = {
    .name = "emulated",
    .device_va_lo = ACCEL_EMU_BASE,
    .device_va_span = ACCEL_EMU_TOTAL_SIZE,
    .mem_query = accel_emu_mem_query,
    .mem_alloc = accel_emu_mem_alloc,
    .mem_free = accel_emu_mem_free,
    .memcpy = accel_emu_memcpy,
    .memcpy_async = accel_emu_memcpy_async,
    .memcpy2d_async = accel_emu_memcpy2d_async,
    .stream_create = accel_emu_stream_create,
    .stream_destroy = accel_emu_stream_destroy,
    .stream_synchronize = accel_emu_stream_synchronize,
    .event_create = accel_emu_event_create,
    .event_destroy = accel_emu_event_destroy,
    .event_record = accel_emu_event_record,
    .event_synchronize = accel_emu_event_synchronize,
    .event_query = accel_emu_event_query,
    .stream_wait_event = accel_emu_stream_wait_event,
    .stream_wait_value32 = accel_emu_stream_wait_value32,
    .stream_write_value32 = accel_emu_stream_write_value32,
    .stream_host_func = accel_emu_stream_host_func,
    .stream_is_capturing = accel_emu_stream_is_capturing,
    .stream_begin_capture = accel_emu_stream_begin_capture,
    .stream_end_capture = accel_emu_stream_end_capture,
    .graph_launch = accel_emu_graph_launch,
    .graph_destroy = accel_emu_graph_destroy,
    .device_count = accel_emu_device_count,
    .reduce = accel_emu_reduce,
    .node_collective = accel_emu_node_collective,
    .ipc_export = accel_emu_ipc_export,
    .ipc_import = accel_emu_ipc_import,
    .ipc_close = accel_emu_ipc_close,
    .device_pci_bus_id = accel_emu_device_pci_bus_id,
};

accel_status_t accel_emulated_open(const accel_ops_t **ops_p, const char **reason_p) {
    const char *sync_env, *delay_env, *bus_env, *lanes_env;
    accel_emu_header_t *hdr;
    accel_status_t status;

    status = accel_emulated_state_attach(NULL, reason_p);
    if (status != ACCEL_OK) {
        return status;
    }
    hdr = accel_emu_state();
    if (hdr == NULL) {
        *reason_p = "cannot rebuild the emulated state after fork";
        return ACCEL_ERR_NO_MEMORY;
    }

    pthread_mutex_lock(&hdr->lock);
    ++hdr->open_count;
    pthread_mutex_unlock(&hdr->lock);
    sync_env = getenv("ACCEL_EMULATED_SYNC");
    accel_emu_sync_mode =
        (sync_env != NULL) && (sync_env[0] != '\0') && (strcmp(sync_env, "0") != 0);
    delay_env = getenv("ACCEL_EMULATED_DELAY_US");
    accel_emu_delay_us = (delay_env != NULL) ? (unsigned)strtoul(delay_env, NULL, 10) : 0;
    lanes_env = getenv("ACCEL_EMULATED_LANES");
    accel_emu_lanes_apart = (lanes_env != NULL) && (strcmp(lanes_env, "apart") == 0);
    /* where the emulated GPU sits on the PCI bus: a real device's address puts it in hwloc's
     * topology (the NIC choice's tests) */
    bus_env = getenv("ACCEL_EMULATED_PCI_BUS_ID");
    snprintf(accel_emu_bus_id, sizeof(accel_emu_bus_id), "%s",
             ((bus_env != NULL) && (bus_env[0] != '\0')) ? bus_env : "0000:00:00.0");
    accel_log(ACCEL_LOG_DEBUG, "emulated: stream work runs %s, delayed %u us%s",
              accel_emu_sync_mode ? "in the caller (ACCEL_EMULATED_SYNC)" : "asynchronously",
              accel_emu_delay_us,
              accel_emu_lanes_apart ? ", a node collective's blocks apart" : "");
    *ops_p = &accel_emu_ops;
    return ACCEL_OK;
}

void accel_emulated_close(void) {
    accel_emu_header_t *hdr = accel_emu_hdr_get();

    /* This copy's default stream: its worker ends (this copy's code may be
     * unloaded next). */
    if ((accel_emu_default_stream.magic == ACCEL_EMU_STREAM_MAGIC) &&
        (accel_emu_default_stream.pid == accel_emu_self())) {
        accel_emu_stream_stop(&accel_emu_default_stream);
    }
    /* Only marked closed: other copies may still use the state. */
    if (hdr != NULL) {
        pthread_mutex_lock(&hdr->lock);
        if (hdr->open_count > 0) {
            --hdr->open_count;
        }
        pthread_mutex_unlock(&hdr->lock);
    }
}

void accel_emulated_inject_fault(accel_emulated_fault_t what, int n, bool repeat) {
    accel_emu_header_t *hdr = accel_emu_state();
    accel_emu_fault_plan_t *plan;

    if ((hdr == NULL) || ((unsigned)what >= ACCEL_EMULATED_FAULT_KINDS)) {
        return;
    }
    pthread_mutex_lock(&hdr->lock);
    plan = &hdr->faults[what];
    plan->armed = (n > 0);
    plan->repeat = repeat;
    plan->remaining = (n > 0) ? n : 0;
    pthread_mutex_unlock(&hdr->lock);
}

/* Read a counter of the shared state under its lock. */
static size_t accel_emu_read_count(accel_emu_header_t *hdr, const size_t *counter) {
    size_t value;

    pthread_mutex_lock(&hdr->lock);
    value = *counter;
    pthread_mutex_unlock(&hdr->lock);
    return value;
}

size_t accel_emulated_live_allocations(accel_mem_type_t type) {
    accel_emu_header_t *hdr = accel_emu_state();

    if ((hdr == NULL) || ((unsigned)type > ACCEL_MEM_DEVICE)) {
        return 0;
    }
    return accel_emu_read_count(hdr, &hdr->live[type]);
}

size_t accel_emulated_live_streams(void) {
    accel_emu_header_t *hdr = accel_emu_state();

    return (hdr == NULL) ? 0 : accel_emu_read_count(hdr, &hdr->live_streams);
}

size_t accel_emulated_live_events(void) {
    accel_emu_header_t *hdr = accel_emu_state();

    return (hdr == NULL) ? 0 : accel_emu_read_count(hdr, &hdr->live_events);
}

uint64_t accel_emulated_copy_count(void) {
    accel_emu_header_t *hdr = accel_emu_state();

    return (hdr == NULL) ? 0 : atomic_load(&hdr->copy_count);
}

uint64_t accel_emulated_copy_bytes(void) {
    accel_emu_header_t *hdr = accel_emu_state();

    return (hdr == NULL) ? 0 : atomic_load(&hdr->copy_bytes);
}

size_t accel_emulated_live_ipc_mappings(void) {
    accel_emu_header_t *hdr = accel_emu_state();

    return (hdr == NULL) ? 0 : accel_emu_read_count(hdr, &hdr->nimports);
}

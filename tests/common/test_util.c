/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers of the coll/gpu MPI tests: see test_util.h.
 */
/* strdup, strtok_r, strcasecmp, alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const accel_ops_t *tu_accel;
accel_backend_kind_t tu_accel_backend = ACCEL_BACKEND_EMULATED;
int tu_world_rank;
int tu_world_size = 1;
int tu_verbose;

/* Bytes after the span of every checked buffer: an overrun shows up there. */
#define TU_GUARD_BYTES 64
/* Report limits: enough to diagnose, not enough to drown a CI log. */
#define TU_MAX_MESSAGES_PER_CASE 6
#define TU_MAX_MISMATCHES_PER_BUFFER 4
#define TU_MAX_FAIL_LINES 400

/* ------------------------------------------------------------------------------------------ */
/* Accounting                                                                                 */
/* ------------------------------------------------------------------------------------------ */

static struct {
    char desc[512];
    bool active;
    bool failed;
    int messages;
    long passed;
    long failed_cases;
    long lines;
} tu_acct;

/* The watchdog: a case that does not end within tu_case_timeout seconds has hung (a peer
 * never joined a collective, a request never completes).  Say which case, and end the process
 * so that mpirun ends the job at once instead of at the script's timeout. */
int tu_case_timeout = 120;
static char tu_hang_msg[sizeof(tu_acct.desc) + 128];
static size_t tu_hang_len;

static void tu_on_alarm(int sig) {
    (void)sig;
    if (write(STDOUT_FILENO, tu_hang_msg, tu_hang_len) < 0) {
        /* nothing else can be done in a signal handler */
    }
    _exit(TU_EXIT_FAIL);
}

void tu_case_begin(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tu_acct.desc, sizeof(tu_acct.desc), fmt, ap);
    va_end(ap);
    tu_acct.active = true;
    tu_acct.failed = false;
    tu_acct.messages = 0;
    if (tu_case_timeout > 0) {
        int len = snprintf(tu_hang_msg, sizeof(tu_hang_msg),
                           "FAIL [rank %d] %s: did not complete within %d s (hang)\n",
                           tu_world_rank, tu_acct.desc, tu_case_timeout);
        tu_hang_len = len < (int)sizeof(tu_hang_msg) ? (size_t)len : sizeof(tu_hang_msg) - 1;
        signal(SIGALRM, tu_on_alarm);
        alarm(tu_case_timeout);
    }
}

void tu_case_context(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tu_acct.desc, sizeof(tu_acct.desc), fmt, ap);
    va_end(ap);
}

void tu_fail(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    if (!tu_acct.active) {
        /* A failure outside a case counts as a failed case of its own. */
        tu_acct.failed_cases++;
    } else {
        tu_acct.failed = true;
    }
    /* outside a case every message is printed (up to the global limit) */
    if ((!tu_acct.active || tu_acct.messages++ < TU_MAX_MESSAGES_PER_CASE) &&
        tu_acct.lines++ < TU_MAX_FAIL_LINES) {
        fprintf(stdout, "FAIL [rank %d] %s%s%s\n", tu_world_rank,
                tu_acct.active ? tu_acct.desc : "", tu_acct.active ? ": " : "", msg);
        fflush(stdout);
    }
}

bool tu_case_failed(void) { return tu_acct.active && tu_acct.failed; }

bool tu_case_end(void) {
    bool passed = !tu_acct.failed;
    alarm(0);
    if (!tu_acct.active) {
        return true;
    }
    if (passed) {
        tu_acct.passed++;
        if (tu_verbose >= 2) {
            printf("ok   [rank %d] %s\n", tu_world_rank, tu_acct.desc);
            fflush(stdout);
        }
    } else {
        tu_acct.failed_cases++;
    }
    tu_acct.active = false;
    tu_acct.messages = 0;
    return passed;
}

void tu_note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("NOTE [rank %d] ", tu_world_rank);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

int tu_summary(MPI_Comm comm) {
    long local[2] = {tu_acct.passed, tu_acct.failed_cases};
    long total[2] = {0, 0};
    int rank;

    MPI_Comm_rank(comm, &rank);
    if (MPI_SUCCESS != MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, comm)) {
        printf("FAIL [rank %d] MPI_Allreduce of the result counts failed\n", tu_world_rank);
        return TU_EXIT_FAIL;
    }
    fflush(stdout);
    fflush(stderr);
    if (0 == rank) {
        printf("%ld passed, %ld failed\n", total[0], total[1]);
        fflush(stdout);
    }
    return total[1] > 0 ? TU_EXIT_FAIL : TU_EXIT_PASS;
}

void tu_finish(int code) {
    int initialized = 0, finalized = 0;
    tu_types_free();
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
        MPI_Finalize();
    }
    if (NULL != tu_accel) {
        accel_finalize();
        tu_accel = NULL;
    }
    exit(code);
}

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static const char *const tu_mem_names[TU_MEM_NUM] = {"host", "pinned", "managed", "device"};

const char *tu_mem_name(tu_mem_t mem) { return mem < TU_MEM_NUM ? tu_mem_names[mem] : "?"; }

static accel_mem_type_t tu_mem_accel_type(tu_mem_t mem) {
    switch (mem) {
    case TU_MEM_PINNED:
        return ACCEL_MEM_HOST_PINNED;
    case TU_MEM_MANAGED:
        return ACCEL_MEM_MANAGED;
    case TU_MEM_DEVICE:
        return ACCEL_MEM_DEVICE;
    default:
        return ACCEL_MEM_HOST;
    }
}

int tu_mem_alloc(tu_mem_t mem, size_t size, void **ptr_p) {
    accel_status_t status;

    /* Zero-sized buffers still get real memory of their kind: a count-0 call on device
     * memory must see a device pointer. */
    if (size < 64) {
        size = 64;
    }
    if (TU_MEM_HOST == mem) {
        *ptr_p = malloc(size);
        return NULL == *ptr_p ? -1 : 0;
    }
    if (NULL == tu_accel) {
        fprintf(stderr, "[rank %d] %s memory needs the accelerator\n", tu_world_rank,
                tu_mem_name(mem));
        return -1;
    }
    status = tu_accel->mem_alloc(tu_mem_accel_type(mem), size, ptr_p);
    if (ACCEL_OK != status) {
        fprintf(stderr, "[rank %d] mem_alloc(%s, %zu): %s\n", tu_world_rank, tu_mem_name(mem), size,
                accel_status_string(status));
        return -1;
    }
    return 0;
}

void tu_mem_free(tu_mem_t mem, void *ptr) {
    if (NULL == ptr) {
        return;
    }
    if (TU_MEM_HOST == mem) {
        free(ptr);
    } else if (NULL != tu_accel) {
        tu_accel->mem_free(ptr);
    }
}

int tu_mem_write(tu_mem_t mem, void *dst, const void *host_src, size_t len) {
    if (0 == len) {
        return 0;
    }
    if (TU_MEM_DEVICE != mem) {
        memcpy(dst, host_src, len);
        return 0;
    }
    return ACCEL_OK == tu_accel->memcpy(dst, host_src, len) ? 0 : -1;
}

int tu_mem_read(tu_mem_t mem, void *host_dst, const void *src, size_t len) {
    if (0 == len) {
        return 0;
    }
    if (TU_MEM_DEVICE != mem) {
        memcpy(host_dst, src, len);
        return 0;
    }
    return ACCEL_OK == tu_accel->memcpy(host_dst, src, len) ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Options and setup                                                                          */
/* ------------------------------------------------------------------------------------------ */

void tu_options_default(tu_options_t *opts) {
    memset(opts, 0, sizeof(*opts));
    opts->backend = ACCEL_BACKEND_EMULATED;
    opts->big_bytes = 4 << 20;
    opts->component = true;
}

static int tu_mem_from_name(const char *name) {
    for (int mem = 0; mem < TU_MEM_NUM; mem++) {
        if (0 == strcasecmp(name, tu_mem_names[mem])) {
            return mem;
        }
    }
    return -1;
}

static void tu_kind_set(tu_kind_t *kind, tu_mem_t send, tu_mem_t recv) {
    kind->send = send;
    kind->recv = recv;
    if (send == recv) {
        snprintf(kind->name, sizeof(kind->name), "%s", tu_mem_name(send));
    } else {
        snprintf(kind->name, sizeof(kind->name), "%s>%s", tu_mem_name(send), tu_mem_name(recv));
    }
}

static int tu_parse_kinds(tu_options_t *opts, const char *list) {
    char *copy = strdup(list), *save = NULL;
    int rc = 0;

    opts->num_kinds = 0;
    for (char *tok = strtok_r(copy, ",", &save); NULL != tok; tok = strtok_r(NULL, ",", &save)) {
        char *arrow = strchr(tok, '>');
        int mem;
        if (opts->num_kinds + 2 > TU_MAX_KINDS) {
            rc = -1;
            break;
        }
        if (0 == strcasecmp(tok, "mixed")) {
            /* send buffer on host, receive on device, and vice versa */
            tu_kind_set(&opts->kinds[opts->num_kinds++], TU_MEM_HOST, TU_MEM_DEVICE);
            tu_kind_set(&opts->kinds[opts->num_kinds++], TU_MEM_DEVICE, TU_MEM_HOST);
        } else if (NULL != arrow) {
            int send, recv;
            *arrow = '\0';
            send = tu_mem_from_name(tok);
            recv = tu_mem_from_name(arrow + 1);
            if (send < 0 || recv < 0) {
                rc = -1;
                break;
            }
            tu_kind_set(&opts->kinds[opts->num_kinds++], send, recv);
        } else if ((mem = tu_mem_from_name(tok)) >= 0) {
            tu_kind_set(&opts->kinds[opts->num_kinds++], mem, mem);
        } else {
            rc = -1;
            break;
        }
    }
    free(copy);
    return rc;
}

static int tu_parse_rank_kinds(tu_options_t *opts, const char *list) {
    char *copy = strdup(list), *save = NULL;
    int rc = 0;

    opts->num_rank_mems = 0;
    for (char *tok = strtok_r(copy, ",", &save); NULL != tok; tok = strtok_r(NULL, ",", &save)) {
        int mem = tu_mem_from_name(tok);
        if (mem < 0 || opts->num_rank_mems >= TU_MAX_KINDS) {
            rc = -1;
            break;
        }
        opts->rank_mems[opts->num_rank_mems++] = mem;
    }
    free(copy);
    return rc;
}

static int tu_parse_size(const char *text, size_t *size_p) {
    char *end;
    unsigned long long value = strtoull(text, &end, 0);
    if (end == text) {
        return -1;
    }
    if ('k' == *end || 'K' == *end) {
        value <<= 10;
        end++;
    } else if ('m' == *end || 'M' == *end) {
        value <<= 20;
        end++;
    }
    if ('\0' != *end) {
        return -1;
    }
    *size_p = value;
    return 0;
}

int tu_options_parse_one(tu_options_t *opts, const char *arg) {
    if (0 == strncmp(arg, "--kinds=", 8)) {
        return tu_parse_kinds(opts, arg + 8) ? -1 : 1;
    }
    if (0 == strncmp(arg, "--rank-kinds=", 13)) {
        return tu_parse_rank_kinds(opts, arg + 13) ? -1 : 1;
    }
    if (0 == strncmp(arg, "--device=", 9)) {
        if (0 == strcmp(arg + 9, "emulated")) {
            opts->backend = ACCEL_BACKEND_EMULATED;
        } else if (0 == strcmp(arg + 9, "cuda")) {
            opts->backend = ACCEL_BACKEND_CUDA;
        } else {
            return -1;
        }
        return 1;
    }
    if (0 == strncmp(arg, "--big=", 6)) {
        return tu_parse_size(arg + 6, &opts->big_bytes) ? -1 : 1;
    }
    if (0 == strcmp(arg, "--no-component")) {
        opts->component = false;
        return 1;
    }
    if (0 == strncmp(arg, "--verbose=", 10)) {
        opts->verbose = atoi(arg + 10);
        return 1;
    }
    if (0 == strncmp(arg, "--case-timeout=", 15)) {
        tu_case_timeout = atoi(arg + 15);
        return 1;
    }
    if (0 == strcmp(arg, "-v")) {
        opts->verbose++;
        return 1;
    }
    return 0;
}

/* 1: arg is one of own and is stored, 0: not one of them, -1: one of them with a bad value */
static int tu_parse_own_arg(const tu_arg_t *own, const char *arg) {
    for (; NULL != own && NULL != own->name; ++own) {
        size_t len = strlen(own->name);
        const char *value = arg + len;

        if (TU_ARG_FLAG == own->kind) {
            if (0 == strcmp(arg, own->name)) {
                *(bool *)own->value = true;
                return 1;
            }
            continue;
        }
        if (0 != strncmp(arg, own->name, len)) {
            continue;
        }
        switch (own->kind) {
        case TU_ARG_SIZE:
            *(size_t *)own->value = strtoull(value, NULL, 0);
            break;
        case TU_ARG_INT:
            *(int *)own->value = atoi(value);
            break;
        case TU_ARG_COUNT:
            if (atol(value) <= 0) {
                return -1;
            }
            *(size_t *)own->value = (size_t)atol(value);
            break;
        default:
            *(const char **)own->value = value;
            break;
        }
        return 1;
    }
    return 0;
}

void tu_parse_args(int argc, char **argv, const char *program, const tu_arg_t *own,
                   tu_options_t *opts) {
    MPI_Comm_rank(MPI_COMM_WORLD, &tu_world_rank);
    tu_options_default(opts);
    for (int i = 1; i < argc; ++i) {
        int rc = tu_parse_own_arg(own, argv[i]);
        if (0 == rc) {
            rc = tu_options_parse_one(opts, argv[i]);
        }
        if (1 != rc) {
            if (0 == tu_world_rank) {
                fprintf(stderr, "%s: bad argument %s\n", program, argv[i]);
            }
            tu_finish(TU_EXIT_FAIL);
        }
    }
}

void tu_options_usage(void) {
    printf(
        "common options:\n"
        "  --kinds=LIST       buffer kinds: host, device, managed, pinned, mixed (host>device and\n"
        "                     device>host) or SEND>RECV; default host\n"
        "  --rank-kinds=LIST  world rank r puts all its buffers in LIST[r %% n] (ranks use\n"
        "                     different kinds: run with coll_gpu_check_memory_kinds 1)\n"
        "  --device=emulated|cuda  the accelerator behind pinned/managed/device memory\n"
        "                     (cuda without a GPU: SKIP, exit 77)\n"
        "  --big=BYTES[k|m]   size of the big cases (0: none; default 4m)\n"
        "  --no-component     run without coll/gpu: no counter checks (host memory only)\n"
        "  --case-timeout=S   a case running longer has hung: fail (default 120, 0: never)\n"
        "  --verbose=N, -v    print passing cases too\n");
}

tu_kind_t tu_options_rank_kind(const tu_options_t *opts, const tu_kind_t *kind, int world_rank) {
    tu_kind_t rank_kind;
    if (opts->num_rank_mems > 0) {
        tu_mem_t mem = opts->rank_mems[world_rank % opts->num_rank_mems];
        tu_kind_set(&rank_kind, mem, mem);
        return rank_kind;
    }
    return *kind;
}

bool tu_options_ranks_differ(const tu_options_t *opts) {
    for (int i = 1; i < opts->num_rank_mems && i < tu_world_size; i++) {
        if (opts->rank_mems[i] != opts->rank_mems[0]) {
            return true;
        }
    }
    return false;
}

static bool tu_options_need_accel(const tu_options_t *opts) {
    for (int i = 0; i < opts->num_kinds; i++) {
        if (TU_MEM_HOST != opts->kinds[i].send || TU_MEM_HOST != opts->kinds[i].recv) {
            return true;
        }
    }
    for (int i = 0; i < opts->num_rank_mems; i++) {
        if (TU_MEM_HOST != opts->rank_mems[i]) {
            return true;
        }
    }
    return false;
}

void tu_setup_or_exit(const tu_options_t *opts) {
    int rc = tu_setup(opts);
    if (TU_EXIT_PASS != rc) {
        tu_finish(rc);
    }
}

int tu_accel_init(accel_backend_kind_t backend, const char **reason_p) {
    const char *reason = NULL;
    if (NULL != tu_accel) {
        return 0;
    }
    if (ACCEL_OK != accel_init(backend, &tu_accel, &reason)) {
        tu_accel = NULL;
        *reason_p = NULL != reason ? reason : "accelerator initialization failed";
        return -1;
    }
    tu_accel_backend = backend;
    return 0;
}

/* Pointers for arguments MPI says are ignored; kept as integers, never dereferenced. */
static uintptr_t tu_freed_host_ptr;
static uintptr_t tu_freed_device_ptr;

int tu_setup(const tu_options_t *opts) {
    int ok = 1, all_ok = 0;
    const char *reason = "";

    MPI_Comm_rank(MPI_COMM_WORLD, &tu_world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tu_world_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    tu_verbose = opts->verbose;

    if (tu_options_need_accel(opts) && 0 != tu_accel_init(opts->backend, &reason)) {
        ok = 0;
    }
    /* Every rank must agree, or some would start collectives the others never join. */
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (0 == tu_world_rank) {
            printf("SKIP: %s backend unavailable: %s\n",
                   ACCEL_BACKEND_CUDA == opts->backend ? "cuda" : "emulated", reason);
            fflush(stdout);
        }
        /* Only a GPU that is not there is a reason to skip; an emulated backend that does
         * not come up is a broken build. */
        return ACCEL_BACKEND_CUDA == opts->backend ? TU_EXIT_SKIP : TU_EXIT_FAIL;
    }

    {
        void *p = malloc(64);
        tu_freed_host_ptr = (uintptr_t)p;
        free(p);
        tu_freed_device_ptr = tu_freed_host_ptr;
        if (NULL != tu_accel && 0 == tu_mem_alloc(TU_MEM_DEVICE, 4096, &p)) {
            tu_freed_device_ptr = (uintptr_t)p;
            tu_mem_free(TU_MEM_DEVICE, p);
        }
    }

    tu_types_create();
    if (opts->component && !tu_counters_open(true)) {
        /* nothing can be proven without the counters, and device memory would reach Open MPI
         * unstaged (and fault): stop here with the closing line */
        return tu_summary(MPI_COMM_WORLD);
    }
    return TU_EXIT_PASS;
}

/* ------------------------------------------------------------------------------------------ */
/* MPI_T                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static bool tu_mpit_ready;
static MPI_T_pvar_session tu_session;

static int tu_mpit_init(void) {
    int provided;
    if (tu_mpit_ready) {
        return 0;
    }
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) {
        return -1;
    }
    if (MPI_SUCCESS != MPI_T_pvar_session_create(&tu_session)) {
        return -1;
    }
    tu_mpit_ready = true;
    return 0;
}

void tu_pvar_open_required(const char *name, tu_pvar_t *pvar) {
    if (0 != tu_pvar_open(name, pvar)) {
        tu_case_begin("pvar");
        tu_fail("%s not found: component not loaded?", name);
        tu_case_end();
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }
}

int tu_pvar_open(const char *name, tu_pvar_t *pvar) {
    int num = 0;

    if (0 != tu_mpit_init() || MPI_SUCCESS != MPI_T_pvar_get_num(&num)) {
        return -1;
    }
    /* By name in every class: the contract names the counters, not their class. */
    for (int i = 0; i < num; i++) {
        char var_name[256], desc[1024];
        int name_len = sizeof(var_name), desc_len = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;

        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, var_name, &name_len, &verbosity, &var_class,
                                               &datatype, &enumtype, desc, &desc_len, &bind,
                                               &readonly, &continuous, &atomic)) {
            continue;
        }
        if (0 != strcmp(var_name, name)) {
            continue;
        }
        pvar->index = i;
        pvar->datatype = datatype;
        if (MPI_SUCCESS !=
            MPI_T_pvar_handle_alloc(tu_session, i, NULL, &pvar->handle, &pvar->count)) {
            return -1;
        }
        if (!continuous) {
            MPI_T_pvar_start(tu_session, pvar->handle);
        }
        return 0;
    }
    return -1;
}

static int tu_type_size_of(MPI_Datatype datatype) {
    int size = 0;
    MPI_Type_size(datatype, &size);
    return size;
}

/* One value of a predefined MPI integer (or double) type as uint64_t. */
static uint64_t tu_mpit_value(MPI_Datatype datatype, const void *p) {
    if (MPI_UNSIGNED_LONG_LONG == datatype || MPI_COUNT == datatype) {
        return *(const unsigned long long *)p;
    }
    if (MPI_UNSIGNED_LONG == datatype) {
        return *(const unsigned long *)p;
    }
    if (MPI_UNSIGNED == datatype) {
        return *(const unsigned *)p;
    }
    if (MPI_INT == datatype) {
        return (uint64_t)(int64_t) * (const int *)p;
    }
    if (MPI_LONG == datatype) {
        return (uint64_t)(int64_t) * (const long *)p;
    }
    if (MPI_LONG_LONG == datatype) {
        return (uint64_t) * (const long long *)p;
    }
    if (MPI_DOUBLE == datatype) {
        return (uint64_t) * (const double *)p;
    }
    if (MPI_C_BOOL == datatype) {
        return *(const _Bool *)p;
    }
    if (MPI_CHAR == datatype || MPI_SIGNED_CHAR == datatype || MPI_UNSIGNED_CHAR == datatype) {
        return *(const unsigned char *)p;
    }
    return 0;
}

int tu_pvar_read(const tu_pvar_t *pvar, uint64_t *values, int max_values) {
    int size = tu_type_size_of(pvar->datatype);
    int n = pvar->count < max_values ? pvar->count : max_values;
    char *raw = calloc(pvar->count > 0 ? pvar->count : 1, size > 0 ? size : 8);

    if (NULL == raw || MPI_SUCCESS != MPI_T_pvar_read(tu_session, pvar->handle, raw)) {
        free(raw);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        values[i] = tu_mpit_value(pvar->datatype, raw + (size_t)i * size);
    }
    free(raw);
    return n;
}

uint64_t tu_pvar_read_element(const tu_pvar_t *pvar, int element) {
    uint64_t values[256] = {0};
    if (element < 0 || element >= 256 || tu_pvar_read(pvar, values, 256) <= element) {
        return 0;
    }
    return values[element];
}

void tu_settle_retired_teams(void) {
    static tu_pvar_t pvar;
    static int opened = 0; /* 1: open, -1: no such pvar */
    uint64_t mine, any = 1;

    if (0 == opened) {
        opened = (0 == tu_pvar_open("coll_gpu_teams_retiring", &pvar)) ? 1 : -1;
    }
    for (int round = 0; (opened > 0) && (0 != any); ++round) {
        MPI_Barrier(MPI_COMM_WORLD);
        mine = tu_pvar_read_element(&pvar, 0);
        MPI_Allreduce(&mine, &any, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    }
}

int tu_cvar_read_int(const char *name, long long *value_p) {
    int num = 0;

    if (0 != tu_mpit_init() || MPI_SUCCESS != MPI_T_cvar_get_num(&num)) {
        return -1;
    }
    for (int i = 0; i < num; i++) {
        char var_name[256], desc[1024];
        int name_len = sizeof(var_name), desc_len = sizeof(desc);
        int verbosity, bind, scope, count;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        MPI_T_cvar_handle handle;
        union {
            long long ll;
            char bytes[64];
        } raw;

        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, var_name, &name_len, &verbosity, &datatype,
                                               &enumtype, desc, &desc_len, &bind, &scope)) {
            continue;
        }
        if (0 != strcmp(var_name, name)) {
            continue;
        }
        if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &handle, &count)) {
            return -1;
        }
        memset(&raw, 0, sizeof(raw));
        if (count != 1 || tu_type_size_of(datatype) > (int)sizeof(raw) ||
            MPI_SUCCESS != MPI_T_cvar_read(handle, &raw)) {
            MPI_T_cvar_handle_free(&handle);
            return -1;
        }
        *value_p = (long long)tu_mpit_value(datatype, &raw);
        MPI_T_cvar_handle_free(&handle);
        return 0;
    }
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Component counters                                                                         */
/* ------------------------------------------------------------------------------------------ */

static const char *const tu_coll_names[COLL_GPU_NUM_COLLS] = {
#define TU_COLL_NAME(id, name) name,
    COLL_GPU_FOREACH_COLL(TU_COLL_NAME)
#undef TU_COLL_NAME
};

const char *tu_coll_name(coll_gpu_coll_t coll) {
    return coll < COLL_GPU_NUM_COLLS ? tu_coll_names[coll] : "?";
}

/* coll_gpu_colls.h: two groups, each its blocking collectives, then their i-variants in the
 * same order (reduce_local has none). */
bool tu_coll_is_nonblocking(coll_gpu_coll_t coll) {
    return (coll >= COLL_GPU_IALLGATHER && coll < COLL_GPU_ALLTOALLW) ||
           coll >= COLL_GPU_IALLTOALLW;
}

coll_gpu_coll_t tu_coll_blocking(coll_gpu_coll_t coll) {
    if (!tu_coll_is_nonblocking(coll)) {
        return coll;
    }
    return (coll >= COLL_GPU_IALLTOALLW) ? coll - COLL_GPU_IALLTOALLW + COLL_GPU_ALLTOALLW
                                         : coll - COLL_GPU_IALLGATHER + COLL_GPU_ALLGATHER;
}

coll_gpu_coll_t tu_coll_nonblocking(coll_gpu_coll_t coll) {
    if (tu_coll_is_nonblocking(coll) || COLL_GPU_REDUCE_LOCAL == coll) {
        return coll;
    }
    return (coll >= COLL_GPU_ALLTOALLW) ? coll - COLL_GPU_ALLTOALLW + COLL_GPU_IALLTOALLW
                                        : coll - COLL_GPU_ALLGATHER + COLL_GPU_IALLGATHER;
}

bool tu_coll_case_supported(coll_gpu_coll_t coll) { return coll < COLL_GPU_ALLTOALLW; }

int tu_coll_from_name(const char *name) {
    if (0 == strncasecmp(name, "MPI_", 4)) {
        name += 4;
    }
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        if (0 == strcasecmp(name, tu_coll_names[coll] + 4)) {
            return coll;
        }
    }
    return -1;
}

struct tu_counter_vars {
    bool available;
    tu_pvar_t passthrough, staged, native, bytes, chunks, fallbacks, errors;
};
static struct tu_counter_vars tu_ctr;

bool tu_counters_open(bool required) {
    static const struct {
        const char *name;
        size_t offset;
        int count;
    } vars[] = {
        {"coll_gpu_calls_passthrough", offsetof(struct tu_counter_vars, passthrough),
         COLL_GPU_NUM_COLLS},
        {"coll_gpu_calls_staged", offsetof(struct tu_counter_vars, staged), COLL_GPU_NUM_COLLS},
        {"coll_gpu_calls_native", offsetof(struct tu_counter_vars, native), COLL_GPU_NUM_COLLS},
        {"coll_gpu_staged_bytes", offsetof(struct tu_counter_vars, bytes), 1},
        {"coll_gpu_staged_chunks", offsetof(struct tu_counter_vars, chunks), 1},
        {"coll_gpu_pageable_fallbacks", offsetof(struct tu_counter_vars, fallbacks), 1},
        {"coll_gpu_accelerator_errors", offsetof(struct tu_counter_vars, errors), 1},
    };
    bool all = true;

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        tu_pvar_t *pvar = (tu_pvar_t *)((char *)&tu_ctr + vars[i].offset);
        if (0 != tu_pvar_open(vars[i].name, pvar)) {
            all = false;
            if (required) {
                tu_fail("MPI_T pvar %s not found: the coll/gpu component was not loaded "
                        "(mca_base_component_path?)",
                        vars[i].name);
            }
        } else if (pvar->count != vars[i].count) {
            all = false;
            tu_fail("MPI_T pvar %s has %d elements, expected %d (coll_gpu_colls.h)", vars[i].name,
                    pvar->count, vars[i].count);
        }
    }
    tu_ctr.available = all;
    return all;
}

bool tu_counters_available(void) { return tu_ctr.available; }

void tu_counters_read(tu_counters_t *counters) {
    memset(counters, 0, sizeof(*counters));
    if (tu_ctr.available) {
        tu_pvar_read(&tu_ctr.passthrough, counters->passthrough, COLL_GPU_NUM_COLLS);
        tu_pvar_read(&tu_ctr.staged, counters->staged, COLL_GPU_NUM_COLLS);
        tu_pvar_read(&tu_ctr.native, counters->native, COLL_GPU_NUM_COLLS);
        tu_pvar_read(&tu_ctr.bytes, &counters->staged_bytes, 1);
        tu_pvar_read(&tu_ctr.chunks, &counters->staged_chunks, 1);
        tu_pvar_read(&tu_ctr.fallbacks, &counters->pageable_fallbacks, 1);
        tu_pvar_read(&tu_ctr.errors, &counters->accelerator_errors, 1);
    }
    if (NULL != tu_accel && ACCEL_BACKEND_EMULATED == tu_accel_backend) {
        counters->emu_copies = accel_emulated_copy_count();
        counters->emu_copy_bytes = accel_emulated_copy_bytes();
    }
}

void tu_gpu_config_read(tu_gpu_config_t *config) {
    long long value;

    config->found = false;
    config->staging_buffer_size = 4 << 20;
    config->pipeline = true;
    config->check_memory_kinds = false;
    if (0 == tu_cvar_read_int("coll_gpu_staging_buffer_size", &value)) {
        config->found = true;
        config->staging_buffer_size = value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_staged_pipeline", &value)) {
        config->pipeline = 0 != value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_check_memory_kinds", &value)) {
        config->check_memory_kinds = 0 != value;
    }
    config->native = true;
    config->allreduce_algorithm = TU_ALG_AUTO;
    config->ranks_per_node = 0;
    config->one_shot_max_bytes = 65536;
    if (0 == tu_cvar_read_int("coll_gpu_native", &value)) {
        config->native = 0 != value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_allreduce_algorithm", &value)) {
        config->allreduce_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_ranks_per_node", &value)) {
        config->ranks_per_node = value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_allreduce_one_shot_max_bytes", &value)) {
        config->one_shot_max_bytes = value;
    }
    config->host_buffers = false;
    if (0 == tu_cvar_read_int("coll_gpu_host_buffers", &value)) {
        config->host_buffers = 0 != value;
    }
    config->reduce_scatter_block_algorithm = TU_ALG_AUTO;
    config->allgather_algorithm = TU_ALG_AUTO;
    config->bcast_algorithm = TU_ALG_AUTO;
    if (0 == tu_cvar_read_int("coll_gpu_reduce_scatter_block_algorithm", &value)) {
        config->reduce_scatter_block_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_allgather_algorithm", &value)) {
        config->allgather_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_bcast_algorithm", &value)) {
        config->bcast_algorithm = (int)value;
    }
    config->allgatherv_algorithm = TU_ALG_AUTO;
    config->reduce_scatter_algorithm = TU_ALG_AUTO;
    config->alltoall_algorithm = TU_ALG_AUTO;
    config->alltoallv_algorithm = TU_ALG_AUTO;
    if (0 == tu_cvar_read_int("coll_gpu_allgatherv_algorithm", &value)) {
        config->allgatherv_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_reduce_scatter_algorithm", &value)) {
        config->reduce_scatter_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_alltoall_algorithm", &value)) {
        config->alltoall_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_alltoallv_algorithm", &value)) {
        config->alltoallv_algorithm = (int)value;
    }
    config->reduce_algorithm = config->gather_algorithm = config->scatter_algorithm = TU_ALG_AUTO;
    if (0 == tu_cvar_read_int("coll_gpu_reduce_algorithm", &value)) {
        config->reduce_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_gather_algorithm", &value)) {
        config->gather_algorithm = (int)value;
    }
    if (0 == tu_cvar_read_int("coll_gpu_scatter_algorithm", &value)) {
        config->scatter_algorithm = (int)value;
    }
}

int tu_emulated_node(const tu_gpu_config_t *config, int comm_rank) {
    return (config->ranks_per_node > 0) ? comm_rank / (int)config->ranks_per_node : 0;
}

bool tu_multi_node(const tu_gpu_config_t *config, int comm_size) {
    /* emulated nodes: a communicator larger than ranks_per_node spans several (the tests run
     * on one machine, so every communicator's ranks share one real node) */
    return config->ranks_per_node > 0 && comm_size > config->ranks_per_node;
}

bool tu_allreduce_native_expected(const tu_gpu_config_t *config, int comm_size) {
    /* one_shot and two_shot load every peer's scratch: one node only */
    bool one_node_only = TU_ALG_ONE_SHOT == config->allreduce_algorithm ||
                         TU_ALG_TWO_SHOT == config->allreduce_algorithm ||
                         TU_ALG_RECURSIVE_DOUBLING == config->allreduce_algorithm;
    return config->native && TU_ALG_STAGED != config->allreduce_algorithm &&
           !(one_node_only && tu_multi_node(config, comm_size));
}

bool tu_coll_native_expected(const tu_gpu_config_t *config, int coll, int comm_size) {
    int alg;

    (void)comm_size; /* every native algorithm but allreduce's one-node ones spans nodes */
    switch (coll) {
    case COLL_GPU_ALLREDUCE:
        return tu_allreduce_native_expected(config, comm_size);
    case COLL_GPU_REDUCE_SCATTER_BLOCK:
        alg = config->reduce_scatter_block_algorithm;
        break;
    case COLL_GPU_ALLGATHER:
        alg = config->allgather_algorithm;
        break;
    case COLL_GPU_ALLGATHERV:
        alg = config->allgatherv_algorithm;
        break;
    case COLL_GPU_REDUCE_SCATTER:
        alg = config->reduce_scatter_algorithm;
        break;
    case COLL_GPU_ALLTOALL:
        alg = config->alltoall_algorithm;
        break;
    case COLL_GPU_ALLTOALLV:
        alg = config->alltoallv_algorithm;
        break;
    case COLL_GPU_BCAST:
        alg = config->bcast_algorithm;
        break;
    case COLL_GPU_REDUCE:
        alg = config->reduce_algorithm;
        break;
    case COLL_GPU_GATHER:
        alg = config->gather_algorithm;
        break;
    case COLL_GPU_SCATTER:
        alg = config->scatter_algorithm;
        break;
    default:
        return false;
    }
    return config->native && TU_ALG_STAGED != alg;
}

const char *tu_path_name(tu_path_t path) {
    switch (path) {
    case TU_PATH_PASSTHROUGH:
        return "passthrough";
    case TU_PATH_STAGED:
        return "staged";
    case TU_PATH_NATIVE:
        return "native";
    case TU_PATH_EITHER:
        return "any-path";
    default:
        return "not-reached-or-either";
    }
}

void tu_check_counters(const tu_counters_t *before, const tu_counters_t *after,
                       coll_gpu_coll_t coll, int ncalls, const tu_expect_t *expect) {
    uint64_t pass, staged, native, bytes, chunks, errors, emu;

    if (!tu_ctr.available) {
        return;
    }
    pass = after->passthrough[coll] - before->passthrough[coll];
    staged = after->staged[coll] - before->staged[coll];
    native = after->native[coll] - before->native[coll];
    bytes = after->staged_bytes - before->staged_bytes;
    chunks = after->staged_chunks - before->staged_chunks;
    errors = after->accelerator_errors - before->accelerator_errors;
    emu = after->emu_copies - before->emu_copies;

    switch (expect->path) {
    case TU_PATH_PASSTHROUGH:
        if (pass != (uint64_t)ncalls || 0 != staged || 0 != native) {
            tu_fail("expected passthrough: calls_passthrough[%s] +%llu, calls_staged +%llu, "
                    "calls_native +%llu (expected +%d, +0, +0)",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)native, ncalls);
        }
        if (0 != bytes || 0 != emu) {
            tu_fail("passthrough call copied device data: staged_bytes +%llu, emulated copies "
                    "+%llu",
                    (unsigned long long)bytes, (unsigned long long)emu);
        }
        break;
    case TU_PATH_STAGED:
        if (staged != (uint64_t)ncalls || 0 != pass || 0 != native) {
            tu_fail("expected staged: calls_staged[%s] +%llu, calls_passthrough +%llu, "
                    "calls_native +%llu (expected +%d, +0, +0)",
                    tu_coll_name(coll), (unsigned long long)staged, (unsigned long long)pass,
                    (unsigned long long)native, ncalls);
        }
        if (expect->device_payload > 0 && 0 == bytes) {
            tu_fail("staged call with %zu bytes of device data: staged_bytes +0",
                    expect->device_payload);
        }
        break;
    case TU_PATH_NATIVE:
        if (native != (uint64_t)ncalls || 0 != pass || 0 != staged) {
            tu_fail("expected native: calls_native[%s] +%llu, calls_passthrough +%llu, "
                    "calls_staged +%llu (expected +%d, +0, +0)",
                    tu_coll_name(coll), (unsigned long long)native, (unsigned long long)pass,
                    (unsigned long long)staged, ncalls);
        }
        if (0 != bytes) {
            tu_fail("native call staged %llu bytes", (unsigned long long)bytes);
        }
        break;
    case TU_PATH_EITHER:
        if (pass + staged + native != (uint64_t)ncalls) {
            tu_fail("calls_passthrough[%s] +%llu + calls_staged +%llu + calls_native +%llu != "
                    "%d calls",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)native, ncalls);
        }
        break;
    default:
        if (pass + staged + native > (uint64_t)ncalls || 0 != bytes) {
            tu_fail("zero-count call: calls_passthrough[%s] +%llu, calls_staged +%llu, "
                    "staged_bytes +%llu (expected at most %d call, no bytes)",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)bytes, ncalls);
        }
        break;
    }
    if (TU_CHUNKS_NONE == expect->chunks && 0 != chunks) {
        tu_fail("staged_chunks +%llu, expected no pipelined chunks", (unsigned long long)chunks);
    } else if (TU_CHUNKS_SOME == expect->chunks && 0 == chunks) {
        tu_fail("staged_chunks +0: a pipelined staging was expected");
    }
    if (0 != errors) {
        tu_fail("accelerator_errors +%llu", (unsigned long long)errors);
    }
    if (tu_verbose >= 3) {
        printf("     [rank %d] %s: passthrough +%llu staged +%llu bytes +%llu chunks +%llu\n",
               tu_world_rank, tu_coll_name(coll), (unsigned long long)pass,
               (unsigned long long)staged, (unsigned long long)bytes, (unsigned long long)chunks);
    }
}

void tu_check_counters_group(const tu_counters_t *before, const tu_counters_t *after, int ncalls,
                             const coll_gpu_coll_t *colls, const tu_expect_t *expects) {
    bool all_passthrough = true, staged_payload = false, all_no_chunks = true, some_chunks = false;
    uint64_t bytes, chunks, errors, emu;

    if (!tu_ctr.available) {
        return;
    }
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        uint64_t want_pass = 0, want_staged = 0, want_native = 0, want_either = 0, want_maybe = 0;
        uint64_t pass, staged, native;
        for (int i = 0; i < ncalls; i++) {
            if ((int)colls[i] != coll) {
                continue;
            }
            switch (expects[i].path) {
            case TU_PATH_PASSTHROUGH:
                want_pass++;
                break;
            case TU_PATH_STAGED:
                want_staged++;
                break;
            case TU_PATH_NATIVE:
                want_native++;
                break;
            case TU_PATH_EITHER:
                want_either++;
                break;
            default:
                want_maybe++;
                break;
            }
        }
        pass = after->passthrough[coll] - before->passthrough[coll];
        staged = after->staged[coll] - before->staged[coll];
        native = after->native[coll] - before->native[coll];
        if (pass < want_pass || staged < want_staged || native < want_native ||
            pass + staged + native < want_pass + want_staged + want_native + want_either ||
            pass + staged + native >
                want_pass + want_staged + want_native + want_either + want_maybe) {
            tu_fail("%s: calls_passthrough +%llu, calls_staged +%llu, calls_native +%llu; "
                    "expected %llu passthrough, %llu staged, %llu native, %llu any way, %llu "
                    "zero-count",
                    tu_coll_name(coll), (unsigned long long)pass, (unsigned long long)staged,
                    (unsigned long long)native, (unsigned long long)want_pass,
                    (unsigned long long)want_staged, (unsigned long long)want_native,
                    (unsigned long long)want_either, (unsigned long long)want_maybe);
        }
    }
    for (int i = 0; i < ncalls; i++) {
        all_passthrough = all_passthrough && TU_PATH_PASSTHROUGH == expects[i].path;
        staged_payload =
            staged_payload || (TU_PATH_STAGED == expects[i].path && expects[i].device_payload > 0);
        all_no_chunks = all_no_chunks && TU_CHUNKS_NONE == expects[i].chunks;
        some_chunks = some_chunks || TU_CHUNKS_SOME == expects[i].chunks;
    }
    bytes = after->staged_bytes - before->staged_bytes;
    chunks = after->staged_chunks - before->staged_chunks;
    errors = after->accelerator_errors - before->accelerator_errors;
    emu = after->emu_copies - before->emu_copies;
    if (all_passthrough && (0 != bytes || 0 != emu)) {
        tu_fail("host-only calls copied device data: staged_bytes +%llu, emulated copies +%llu",
                (unsigned long long)bytes, (unsigned long long)emu);
    }
    if (staged_payload && 0 == bytes) {
        tu_fail("staged calls with device data: staged_bytes +0");
    }
    if (all_no_chunks && 0 != chunks) {
        tu_fail("staged_chunks +%llu, expected no pipelined chunks", (unsigned long long)chunks);
    } else if (some_chunks && 0 == chunks) {
        tu_fail("staged_chunks +0: a pipelined staging was expected");
    }
    if (0 != errors) {
        tu_fail("accelerator_errors +%llu", (unsigned long long)errors);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Types and ops                                                                              */
/* ------------------------------------------------------------------------------------------ */

static tu_type_t tu_types[TU_NUM_TYPES];
static MPI_Op tu_user_ops[2] = {MPI_OP_NULL, MPI_OP_NULL};
static bool tu_types_ready;

static const char *const tu_op_names[TU_NUM_OPS] = {"sum", "max", "bxor", "user-comm",
                                                    "user-noncomm"};

const tu_type_t *tu_type(tu_type_id_t id) { return &tu_types[id]; }

int tu_type_from_name(const char *name) {
    static const char *const names[TU_NUM_TYPES] = {"int8",  "uint8",  "int32",  "int64",
                                                    "float", "double", "vector", "lb"};
    for (int i = 0; i < TU_NUM_TYPES; i++) {
        if (0 == strcasecmp(name, names[i])) {
            return i;
        }
    }
    return -1;
}

const char *tu_op_name(tu_op_id_t op) { return op < TU_NUM_OPS ? tu_op_names[op] : "?"; }

int tu_op_from_name(const char *name) {
    for (int i = 0; i < TU_NUM_OPS; i++) {
        if (0 == strcasecmp(name, tu_op_names[i])) {
            return i;
        }
    }
    return -1;
}

MPI_Op tu_op_handle(tu_op_id_t op) {
    switch (op) {
    case TU_OP_SUM:
        return MPI_SUM;
    case TU_OP_MAX:
        return MPI_MAX;
    case TU_OP_BXOR:
        return MPI_BXOR;
    case TU_OP_USER_COMM:
        return tu_user_ops[0];
    default:
        return tu_user_ops[1];
    }
}

bool tu_op_valid(tu_op_id_t op, tu_type_id_t type) {
    const tu_type_t *t = &tu_types[type];
    switch (op) {
    case TU_OP_SUM:
    case TU_OP_MAX:
        return t->contiguous;
    case TU_OP_BXOR:
        return t->contiguous && t->is_integer;
    default:
        return true;
    }
}

size_t tu_type_span(const tu_type_t *type, size_t n) {
    return 0 == n ? 0 : (n - 1) * (size_t)type->extent + type->true_lb + type->true_extent;
}

static const tu_type_t *tu_type_by_handle(MPI_Datatype datatype) {
    for (int i = 0; i < TU_NUM_TYPES; i++) {
        if (tu_types[i].datatype == datatype) {
            return &tu_types[i];
        }
    }
    return NULL;
}

/* MPI user functions: gather each element's values into packed form, apply the op the
 * reference uses, scatter back.  MPI passes the datatype of the call, so the layout is
 * known. */
static void tu_user_apply(tu_op_id_t op, void *in, void *inout, int *len, MPI_Datatype *datatype) {
    const tu_type_t *type = tu_type_by_handle(*datatype);
    unsigned char packed_in[16], packed_inout[16];

    if (NULL == type) {
        char name[MPI_MAX_OBJECT_NAME] = "?";
        int name_len;
        MPI_Type_get_name(*datatype, name, &name_len);
        fprintf(stderr, "[rank %d] user op called with unknown datatype %s\n", tu_world_rank, name);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (type->contiguous) {
        tu_ref_apply(type, op, in, inout, (size_t)*len);
        return;
    }
    for (int e = 0; e < *len; e++) {
        char *elem_in = (char *)in + (size_t)e * type->extent;
        char *elem_inout = (char *)inout + (size_t)e * type->extent;
        for (int v = 0; v < type->nvals; v++) {
            memcpy(packed_in + v * type->base_size, elem_in + type->val_offset[v], type->base_size);
            memcpy(packed_inout + v * type->base_size, elem_inout + type->val_offset[v],
                   type->base_size);
        }
        tu_ref_apply(type, op, packed_in, packed_inout, 1);
        for (int v = 0; v < type->nvals; v++) {
            memcpy(elem_inout + type->val_offset[v], packed_inout + v * type->base_size,
                   type->base_size);
        }
    }
}

static void tu_user_comm_fn(void *in, void *inout, int *len, MPI_Datatype *datatype) {
    tu_user_apply(TU_OP_USER_COMM, in, inout, len, datatype);
}

static void tu_user_noncomm_fn(void *in, void *inout, int *len, MPI_Datatype *datatype) {
    tu_user_apply(TU_OP_USER_NONCOMM, in, inout, len, datatype);
}

static void tu_type_predefined(tu_type_id_t id, const char *name, MPI_Datatype datatype,
                               tu_base_t base, size_t size, bool is_integer) {
    tu_type_t *t = &tu_types[id];
    t->id = id;
    t->name = name;
    t->datatype = datatype;
    t->base = base;
    t->base_size = size;
    t->nvals = 1;
    t->val_offset[0] = 0;
    t->extent = (MPI_Aint)size;
    t->true_lb = 0;
    t->true_extent = (MPI_Aint)size;
    t->contiguous = true;
    t->is_integer = is_integer;
}

void tu_types_create(void) {
    MPI_Aint lb, extent;
    tu_type_t *t;

    if (tu_types_ready) {
        return;
    }
    tu_type_predefined(TU_TYPE_INT8, "int8", MPI_INT8_T, TU_BASE_INT8, 1, true);
    tu_type_predefined(TU_TYPE_UINT8, "uint8", MPI_UINT8_T, TU_BASE_UINT8, 1, true);
    tu_type_predefined(TU_TYPE_INT32, "int32", MPI_INT32_T, TU_BASE_INT32, 4, true);
    tu_type_predefined(TU_TYPE_INT64, "int64", MPI_INT64_T, TU_BASE_INT64, 8, true);
    tu_type_predefined(TU_TYPE_FLOAT, "float", MPI_FLOAT, TU_BASE_FLOAT, 4, false);
    tu_type_predefined(TU_TYPE_DOUBLE, "double", MPI_DOUBLE, TU_BASE_DOUBLE, 8, false);

    /* Two int32 with a 4-byte hole between them: extent 12, data at 0 and 8. */
    t = &tu_types[TU_TYPE_VECTOR];
    t->id = TU_TYPE_VECTOR;
    t->name = "vector";
    MPI_Type_vector(2, 1, 2, MPI_INT32_T, &t->datatype);
    MPI_Type_set_name(t->datatype, "tu_vector_int32");
    MPI_Type_commit(&t->datatype);
    t->base = TU_BASE_INT32;
    t->base_size = 4;
    t->nvals = 2;
    t->val_offset[0] = 0;
    t->val_offset[1] = 8;
    t->contiguous = false;
    t->is_integer = true;

    /* A double resized to lower bound -8 and extent 24: 16 bytes of holes per element, and
     * the 8 bytes before the buffer belong to no allocation -- staging that copies from
     * buf + lb, or count * extent bytes, is caught.  (No type with an initial gap, true_lb >
     * 0: Open MPI's own base algorithms mishandle those, open-mpi/ompi#1764.) */
    t = &tu_types[TU_TYPE_LB];
    t->id = TU_TYPE_LB;
    t->name = "lb";
    MPI_Type_create_resized(MPI_DOUBLE, -8, 24, &t->datatype);
    MPI_Type_set_name(t->datatype, "tu_resized_double_lb-8");
    MPI_Type_commit(&t->datatype);
    t->base = TU_BASE_DOUBLE;
    t->base_size = 8;
    t->nvals = 1;
    t->val_offset[0] = 0;
    t->contiguous = false;
    t->is_integer = false;

    for (int i = TU_TYPE_VECTOR; i <= TU_TYPE_LB; i++) {
        t = &tu_types[i];
        MPI_Type_get_extent(t->datatype, &lb, &extent);
        t->extent = extent;
        MPI_Type_get_true_extent(t->datatype, &t->true_lb, &t->true_extent);
    }
    if (12 != tu_types[TU_TYPE_VECTOR].extent || 0 != tu_types[TU_TYPE_VECTOR].true_lb ||
        24 != tu_types[TU_TYPE_LB].extent || 0 != tu_types[TU_TYPE_LB].true_lb ||
        8 != tu_types[TU_TYPE_LB].true_extent) {
        tu_fail("derived datatypes do not have the layout the test assumes");
    }

    MPI_Op_create(tu_user_comm_fn, 1, &tu_user_ops[0]);
    MPI_Op_create(tu_user_noncomm_fn, 0, &tu_user_ops[1]);
    tu_types_ready = true;
}

void tu_types_free(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!tu_types_ready || finalized) {
        return;
    }
    MPI_Type_free(&tu_types[TU_TYPE_VECTOR].datatype);
    MPI_Type_free(&tu_types[TU_TYPE_LB].datatype);
    MPI_Op_free(&tu_user_ops[0]);
    MPI_Op_free(&tu_user_ops[1]);
    tu_types_ready = false;
}

/* ------------------------------------------------------------------------------------------ */
/* Inputs and reference                                                                       */
/* ------------------------------------------------------------------------------------------ */

static uint64_t tu_mix64(uint64_t x) {
    /* splitmix64 finalizer */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* "First non-zero" is the non-commutative op on scalars: it needs zeros, placed so the first
 * non-zero source of element i is source i % (nsrc + 1) -- any reordering of the sources by
 * the library changes the result somewhere. */
static bool tu_gen_zero(const tu_type_t *type, tu_op_id_t op, int src, int nsrc, size_t index) {
    return TU_OP_USER_NONCOMM == op && TU_TYPE_VECTOR != type->id &&
           (size_t)src < index % (size_t)(nsrc + 1);
}

void tu_gen(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int src, int nsrc, size_t first,
            size_t count, void *packed) {
    unsigned char *out = packed;
    uint64_t seed = tu_mix64(((uint64_t)stream << 32) ^ (uint64_t)(uint32_t)src);

    for (size_t e = 0; e < count; e++) {
        size_t index = first + e;
        bool zero = tu_gen_zero(type, op, src, nsrc, index);
        for (int v = 0; v < type->nvals; v++) {
            uint64_t h = tu_mix64(seed ^ (index * 2 + v));
            unsigned char *dst = out + (e * type->nvals + v) * type->base_size;
            switch (type->base) {
            case TU_BASE_INT8: {
                /* full range: sums overflow and must wrap */
                int8_t x = zero ? 0 : (int8_t)(uint8_t)h;
                if (!zero && 0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 1;
                }
                memcpy(dst, &x, 1);
                break;
            }
            case TU_BASE_UINT8: {
                /* >= 128: any two of them overflow */
                uint8_t x = zero ? 0 : (uint8_t)(128 + h % 128);
                memcpy(dst, &x, 1);
                break;
            }
            case TU_BASE_INT32: {
                int32_t x = zero ? 0 : (int32_t)(uint32_t)h;
                if (!zero && 0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 1;
                }
                memcpy(dst, &x, 4);
                break;
            }
            case TU_BASE_INT64: {
                int64_t x = zero ? 0 : (int64_t)h;
                if (!zero && 0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 1;
                }
                memcpy(dst, &x, 8);
                break;
            }
            case TU_BASE_FLOAT:
            case TU_BASE_DOUBLE: {
                /* multiples of 1/4 in [-16, 16]: every sum, in any order, is exact */
                double x = zero ? 0.0 : ((int)(h % 129) - 64) * 0.25;
                if (!zero && 0.0 == x && TU_OP_USER_NONCOMM == op) {
                    x = 0.5;
                }
                if (TU_BASE_FLOAT == type->base) {
                    float f = (float)x;
                    memcpy(dst, &f, 4);
                } else {
                    memcpy(dst, &x, 8);
                }
                break;
            }
            }
        }
    }
}

/* Integer ops on the unsigned type so that overflow wraps without undefined behaviour. */
#define TU_APPLY_INT(T, U)                                                                         \
    do {                                                                                           \
        const T *a = in;                                                                           \
        T *b = inout;                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            switch (op) {                                                                          \
            case TU_OP_SUM:                                                                        \
                b[i] = (T)(U)((U)x + (U)y);                                                        \
                break;                                                                             \
            case TU_OP_MAX:                                                                        \
                b[i] = x > y ? x : y;                                                              \
                break;                                                                             \
            case TU_OP_BXOR:                                                                       \
                b[i] = (T)(U)((U)x ^ (U)y);                                                        \
                break;                                                                             \
            case TU_OP_USER_COMM:                                                                  \
                b[i] = (T)(U)((U)x + (U)y + 1u);                                                   \
                break;                                                                             \
            default:                                                                               \
                b[i] = 0 != x ? x : y;                                                             \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#define TU_APPLY_FLOAT(T)                                                                          \
    do {                                                                                           \
        const T *a = in;                                                                           \
        T *b = inout;                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            T x = a[i], y = b[i];                                                                  \
            switch (op) {                                                                          \
            case TU_OP_SUM:                                                                        \
                b[i] = x + y;                                                                      \
                break;                                                                             \
            case TU_OP_MAX:                                                                        \
                b[i] = x > y ? x : y;                                                              \
                break;                                                                             \
            case TU_OP_USER_COMM:                                                                  \
                b[i] = x + y + 1;                                                                  \
                break;                                                                             \
            default:                                                                               \
                b[i] = 0 != x ? x : y;                                                             \
                break;                                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

void tu_ref_apply(const tu_type_t *type, tu_op_id_t op, const void *in, void *inout, size_t count) {
    size_t n = count * type->nvals;

    if (TU_OP_USER_NONCOMM == op && TU_TYPE_VECTOR == type->id) {
        /* (a, b) is x -> a*x + b; in o inout is the composition in(inout(x)):
         * (a1, b1) o (a2, b2) = (a1*a2, a1*b2 + b1), modulo 2^32. */
        const uint32_t *a = in;
        uint32_t *b = inout;
        for (size_t i = 0; i < count; i++) {
            uint32_t a1 = a[2 * i], b1 = a[2 * i + 1], a2 = b[2 * i], b2 = b[2 * i + 1];
            b[2 * i] = a1 * a2;
            b[2 * i + 1] = a1 * b2 + b1;
        }
        return;
    }
    switch (type->base) {
    case TU_BASE_INT8:
        TU_APPLY_INT(int8_t, uint8_t);
        break;
    case TU_BASE_UINT8:
        TU_APPLY_INT(uint8_t, uint8_t);
        break;
    case TU_BASE_INT32:
        TU_APPLY_INT(int32_t, uint32_t);
        break;
    case TU_BASE_INT64:
        TU_APPLY_INT(int64_t, uint64_t);
        break;
    case TU_BASE_FLOAT:
        TU_APPLY_FLOAT(float);
        break;
    case TU_BASE_DOUBLE:
        TU_APPLY_FLOAT(double);
        break;
    }
}

void tu_ref_reduce(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int nsrc_used, int nsrc,
                   size_t first, size_t count, void *packed) {
    size_t bytes = count * type->nvals * type->base_size;
    void *tmp;

    if (nsrc_used <= 0 || 0 == count) {
        return;
    }
    /* MPI order a0 op (a1 op (... op a_{n-1})): fold from the last source leftwards. */
    tu_gen(type, op, stream, nsrc_used - 1, nsrc, first, count, packed);
    tmp = malloc(bytes);
    for (int src = nsrc_used - 2; src >= 0; src--) {
        tu_gen(type, op, stream, src, nsrc, first, count, tmp);
        tu_ref_apply(type, op, tmp, packed, count);
    }
    free(tmp);
}

bool tu_op_avx_int8_bug_present(void) {
    /* 100 + 100 in int8 must wrap to -56; op/avx (ompi#8045) saturates to 127 from 16
     * elements on. */
    int8_t a[64], b[64];
    for (int i = 0; i < 64; i++) {
        a[i] = 100;
        b[i] = 100;
    }
    MPI_Reduce_local(a, b, 64, MPI_INT8_T, MPI_SUM);
    return -56 != b[0];
}

/* ------------------------------------------------------------------------------------------ */
/* Checked buffers                                                                            */
/* ------------------------------------------------------------------------------------------ */

static unsigned char tu_sentinel(size_t offset) {
    /* position dependent: a hole copied to the wrong place does not look right */
    return (unsigned char)(0xA5 ^ (offset * 7));
}

int tu_buf_init(tu_buf_t *buf, tu_mem_t mem, const tu_type_t *type, size_t nelems) {
    memset(buf, 0, sizeof(*buf));
    buf->mem = mem;
    buf->type = type;
    buf->nelems = nelems;
    buf->size = tu_type_span(type, nelems) + TU_GUARD_BYTES;
    buf->image = malloc(buf->size);
    buf->care = malloc(buf->size);
    if (NULL == buf->image || NULL == buf->care ||
        0 != tu_mem_alloc(mem, buf->size, (void **)&buf->alloc)) {
        free(buf->image);
        free(buf->care);
        return -1;
    }
    for (size_t i = 0; i < buf->size; i++) {
        buf->image[i] = tu_sentinel(i);
    }
    memset(buf->care, 1, buf->size);
    return 0;
}

void tu_buf_free(tu_buf_t *buf) {
    if (NULL != buf->alloc) {
        tu_mem_free(buf->mem, buf->alloc);
    }
    free(buf->image);
    free(buf->care);
    memset(buf, 0, sizeof(*buf));
}

void tu_buf_put(tu_buf_t *buf, size_t first, size_t count, const void *packed) {
    const tu_type_t *t = buf->type;
    const unsigned char *src = packed;
    for (size_t e = 0; e < count; e++) {
        for (int v = 0; v < t->nvals; v++) {
            memcpy(buf->image + (first + e) * t->extent + t->val_offset[v],
                   src + (e * t->nvals + v) * t->base_size, t->base_size);
        }
    }
}

void tu_buf_dont_care(tu_buf_t *buf, size_t first, size_t count) {
    const tu_type_t *t = buf->type;
    for (size_t e = first; e < first + count; e++) {
        for (int v = 0; v < t->nvals; v++) {
            memset(buf->care + e * t->extent + t->val_offset[v], 0, t->base_size);
        }
    }
}

int tu_buf_upload(const tu_buf_t *buf) {
    return tu_mem_write(buf->mem, buf->alloc, buf->image, buf->size);
}

static void tu_format_value(tu_base_t base, const unsigned char *p, char *out, size_t len) {
    switch (base) {
    case TU_BASE_INT8:
        snprintf(out, len, "%d", (int)*(const int8_t *)p);
        break;
    case TU_BASE_UINT8:
        snprintf(out, len, "%u", (unsigned)*p);
        break;
    case TU_BASE_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        snprintf(out, len, "%d", (int)x);
        break;
    }
    case TU_BASE_INT64: {
        int64_t x;
        memcpy(&x, p, 8);
        snprintf(out, len, "%lld", (long long)x);
        break;
    }
    case TU_BASE_FLOAT: {
        float x;
        memcpy(&x, p, 4);
        snprintf(out, len, "%.9g", x);
        break;
    }
    case TU_BASE_DOUBLE: {
        double x;
        memcpy(&x, p, 8);
        snprintf(out, len, "%.17g", x);
        break;
    }
    }
}

/* Which value of which element the byte at `offset` belongs to; false for holes, gaps and
 * the guard. */
static bool tu_buf_locate(const tu_buf_t *buf, size_t offset, size_t *elem_p, int *val_p) {
    const tu_type_t *t = buf->type;
    size_t elem = offset / (size_t)t->extent, within = offset % (size_t)t->extent;
    if (offset >= tu_type_span(t, buf->nelems) || elem >= buf->nelems) {
        return false;
    }
    for (int v = 0; v < t->nvals; v++) {
        if (within >= t->val_offset[v] && within < t->val_offset[v] + t->base_size) {
            *elem_p = elem;
            *val_p = v;
            return true;
        }
    }
    return false;
}

long tu_buf_verify(const tu_buf_t *buf, const char *what) {
    unsigned char *got = malloc(buf->size);
    long bad = 0;
    int reported = 0;
    size_t span = tu_type_span(buf->type, buf->nelems);

    if (NULL == got || 0 != tu_mem_read(buf->mem, got, buf->alloc, buf->size)) {
        tu_fail("%s: cannot read the %s buffer back", what, tu_mem_name(buf->mem));
        free(got);
        return -1;
    }
    for (size_t i = 0; i < buf->size; i++) {
        size_t elem;
        int val;
        if (!buf->care[i] || got[i] == buf->image[i]) {
            continue;
        }
        if (tu_buf_locate(buf, i, &elem, &val)) {
            /* a whole value: compare floats by value (so -0 == 0), report once */
            size_t start = elem * buf->type->extent + buf->type->val_offset[val];
            size_t end = start + buf->type->base_size;
            bool equal = false;
            if (TU_BASE_FLOAT == buf->type->base) {
                float x, y;
                memcpy(&x, got + start, 4);
                memcpy(&y, buf->image + start, 4);
                equal = x == y;
            } else if (TU_BASE_DOUBLE == buf->type->base) {
                double x, y;
                memcpy(&x, got + start, 8);
                memcpy(&y, buf->image + start, 8);
                equal = x == y;
            }
            if (!equal) {
                bad++;
                if (reported++ < TU_MAX_MISMATCHES_PER_BUFFER) {
                    char g[64], e[64];
                    tu_format_value(buf->type->base, got + start, g, sizeof(g));
                    tu_format_value(buf->type->base, buf->image + start, e, sizeof(e));
                    if (buf->type->nvals > 1) {
                        tu_fail("%s[%zu].%d: got %s, expected %s", what, elem, val, g, e);
                    } else {
                        tu_fail("%s[%zu]: got %s, expected %s", what, elem, g, e);
                    }
                }
            }
            i = end - 1;
        } else {
            bad++;
            if (reported++ < TU_MAX_MISMATCHES_PER_BUFFER) {
                tu_fail("%s: %s byte %zu (of %zu-byte span) changed: got 0x%02x, expected 0x%02x",
                        what, i >= span ? "guard" : "hole/gap", i, span, got[i], buf->image[i]);
            }
        }
    }
    if (reported > TU_MAX_MISMATCHES_PER_BUFFER) {
        tu_fail("%s: %ld mismatches in all", what, bad);
    }
    free(got);
    return bad;
}

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                              */
/* ------------------------------------------------------------------------------------------ */

int tu_comm_wrap(MPI_Comm mpi_comm, const char *name, tu_comm_t *comm) {
    MPI_Group group, world_group;
    int *ranks;

    comm->comm = mpi_comm;
    snprintf(comm->name, sizeof(comm->name), "%s", name);
    MPI_Comm_rank(mpi_comm, &comm->rank);
    MPI_Comm_size(mpi_comm, &comm->size);
    MPI_Comm_set_errhandler(mpi_comm, MPI_ERRORS_RETURN);
    comm->world_ranks = malloc(sizeof(int) * comm->size);
    ranks = malloc(sizeof(int) * comm->size);
    for (int i = 0; i < comm->size; i++) {
        ranks[i] = i;
    }
    MPI_Comm_group(mpi_comm, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(group, comm->size, ranks, world_group, comm->world_ranks);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    free(ranks);
    return 0;
}

int tu_comm_create(tu_comm_id_t id, tu_comm_t *comm) {
    MPI_Comm mpi_comm;
    int rc;

    switch (id) {
    case TU_COMM_WORLD:
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm);
        break;
    case TU_COMM_SPLIT_ODD_EVEN:
        rc = MPI_Comm_split(MPI_COMM_WORLD, tu_world_rank % 2, tu_world_rank, &mpi_comm);
        break;
    default:
        /* one group, ranks in reverse order: comm rank order != world rank order */
        rc = MPI_Comm_split(MPI_COMM_WORLD, 0, tu_world_size - tu_world_rank, &mpi_comm);
        break;
    }
    if (MPI_SUCCESS != rc) {
        return -1;
    }
    return tu_comm_wrap(mpi_comm,
                        TU_COMM_WORLD == id            ? "world"
                        : TU_COMM_SPLIT_ODD_EVEN == id ? "odd-even"
                                                       : "reversed",
                        comm);
}

void tu_comm_free(tu_comm_t *comm) {
    if (MPI_COMM_NULL != comm->comm) {
        MPI_Comm_free(&comm->comm);
    }
    free(comm->world_ranks);
    comm->world_ranks = NULL;
}

void tu_comms_create_all(tu_comm_t comms[TU_NUM_COMMS]) {
    for (int i = 0; i < TU_NUM_COMMS; i++) {
        if (0 != tu_comm_create((tu_comm_id_t)i, &comms[i])) {
            tu_fail("cannot create communicator %d", i);
            tu_finish(tu_summary(MPI_COMM_WORLD));
        }
    }
}

void tu_comms_free_all(tu_comm_t comms[TU_NUM_COMMS]) {
    for (int i = 0; i < TU_NUM_COMMS; i++) {
        tu_comm_free(&comms[i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Collective cases                                                                           */
/* ------------------------------------------------------------------------------------------ */

struct tu_coll_case {
    tu_coll_params_t p;
    coll_gpu_coll_t base; /* blocking equivalent */
    const tu_type_t *type;
    MPI_Comm comm;
    int rank;
    int size;
    bool is_root;
    bool has_sbuf;
    bool has_rbuf;
    tu_buf_t sbuf;
    tu_buf_t rbuf;
    /* the arguments of the call */
    void *sptr;
    void *rptr;
    int scount;
    int rcount;
    MPI_Datatype stype;
    MPI_Datatype rtype;
    int *scounts;
    int *sdispls;
    int *rcounts;
    int *rdispls;
    const int *scounts_arg;
    const int *sdispls_arg;
    const int *rcounts_arg;
    const int *rdispls_arg;
    size_t device_payload;
    char desc[256];
};

bool tu_coll_is_reduction(coll_gpu_coll_t coll) {
    switch (tu_coll_blocking(coll)) {
    case COLL_GPU_ALLREDUCE:
    case COLL_GPU_REDUCE:
    case COLL_GPU_REDUCE_SCATTER:
    case COLL_GPU_REDUCE_SCATTER_BLOCK:
    case COLL_GPU_SCAN:
    case COLL_GPU_EXSCAN:
    case COLL_GPU_REDUCE_LOCAL:
        return true;
    default:
        return false;
    }
}

bool tu_coll_has_root(coll_gpu_coll_t coll) {
    switch (tu_coll_blocking(coll)) {
    case COLL_GPU_REDUCE:
    case COLL_GPU_BCAST:
    case COLL_GPU_GATHER:
    case COLL_GPU_GATHERV:
    case COLL_GPU_SCATTER:
    case COLL_GPU_SCATTERV:
        return true;
    default:
        return false;
    }
}

bool tu_coll_allows_in_place(coll_gpu_coll_t coll) {
    coll_gpu_coll_t base = tu_coll_blocking(coll);
    return COLL_GPU_BCAST != base && COLL_GPU_REDUCE_LOCAL != base;
}

bool tu_coll_pipelines(coll_gpu_coll_t coll) {
    switch (coll) {
    case COLL_GPU_ALLREDUCE:
    case COLL_GPU_REDUCE:
    case COLL_GPU_BCAST:
    case COLL_GPU_SCAN:
    case COLL_GPU_EXSCAN:
    case COLL_GPU_REDUCE_LOCAL:
        return true;
    default:
        return false;
    }
}

const char *tu_coll_case_desc(const tu_coll_case_t *c) { return c->desc; }

size_t tu_coll_case_data_bytes(const tu_coll_case_t *c) {
    return c->p.count * c->type->nvals * c->type->base_size;
}

static size_t tu_data_bytes(const tu_type_t *type, size_t nelems) {
    return nelems * type->nvals * type->base_size;
}

static void *tu_garbage_ptr(tu_garbage_t garbage) {
    switch (garbage) {
    case TU_GARBAGE_NULL:
        return NULL;
    case TU_GARBAGE_ONE:
        return (void *)(uintptr_t)1;
    case TU_GARBAGE_FREED_HOST:
        return (void *)tu_freed_host_ptr;
    default:
        return (void *)tu_freed_device_ptr;
    }
}

/* Per-rank counts of the v-variants: vary with the rank, with a zero block every third rank
 * (from rank 1 on) so empty contributions are exercised. */
static int tu_vcount(int rank, size_t count) {
    return (0 == count || 1 == rank % 3) ? 0 : (int)count + rank % 4;
}

/* alltoallv: elements rank i sends to rank j; symmetric for MPI_IN_PLACE (which needs the
 * same type map in both directions). */
static int tu_a2a_count(int i, int j, size_t count, bool symmetric) {
    int key = symmetric ? i + j : i + 2 * j;
    return (0 == count || 1 == key % 3) ? 0 : (int)count + (symmetric ? key : 3 * i + j) % 4;
}

/* Blocks in reverse rank order, one unused element between blocks: the displacements are not
 * monotonic and the gaps must stay untouched.  Returns the elements spanned. */
static size_t tu_layout_blocks(const int *counts, int n, int *displs) {
    size_t pos = 0;
    for (int j = n - 1; j >= 0; j--) {
        displs[j] = (int)pos;
        pos += (size_t)counts[j] + 1;
    }
    return pos;
}

/* Stream of the data rank `src` sends to rank `dst` (alltoall, scatter blocks). */
static uint32_t tu_stream(uint32_t salt, int dst) {
    return salt * 2654435761u + 0x10000u * (uint32_t)(dst + 1);
}

/* Generates count elements of (stream, src) and puts them at element `at` of buf. */
static void tu_put_gen(tu_buf_t *buf, tu_op_id_t op, uint32_t stream, int src, int nsrc,
                       size_t first, size_t count, size_t at) {
    const tu_type_t *t = buf->type;
    void *tmp;
    if (0 == count) {
        return;
    }
    tmp = malloc(tu_data_bytes(t, count));
    tu_gen(t, op, stream, src, nsrc, first, count, tmp);
    tu_buf_put(buf, at, count, tmp);
    free(tmp);
}

static void tu_put_reduce(tu_buf_t *buf, tu_op_id_t op, uint32_t stream, int nsrc_used, int nsrc,
                          size_t first, size_t count, size_t at) {
    const tu_type_t *t = buf->type;
    void *tmp;
    if (0 == count) {
        return;
    }
    tmp = malloc(tu_data_bytes(t, count));
    tu_ref_reduce(t, op, stream, nsrc_used, nsrc, first, count, tmp);
    tu_buf_put(buf, at, count, tmp);
    free(tmp);
}

static int tu_case_buf(tu_coll_case_t *c, tu_buf_t *buf, tu_mem_t mem, size_t nelems) {
    if (0 != tu_buf_init(buf, mem, c->type, nelems)) {
        fprintf(stderr, "[rank %d] cannot allocate %zu elements of %s memory for %s\n",
                tu_world_rank, nelems, tu_mem_name(mem), c->desc);
        return -1;
    }
    if (buf == &c->sbuf) {
        c->has_sbuf = true;
    } else {
        c->has_rbuf = true;
    }
    return 0;
}

/* Payload accounting: device bytes this rank's call must read or write. */
static void tu_payload(tu_coll_case_t *c, tu_mem_t mem, size_t nelems) {
    if (TU_MEM_DEVICE == mem) {
        c->device_payload += tu_data_bytes(c->type, nelems);
    }
}

static int *tu_int_array(int n) { return calloc(n > 0 ? n : 1, sizeof(int)); }

static int tu_case_setup_reduction(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank, n = c->size;
    size_t count = p->count;
    tu_mem_t in_mem = p->in_place ? p->kind.recv : p->kind.send;
    bool root_in_place = p->in_place && (COLL_GPU_REDUCE != c->base || c->is_root);
    bool has_result = COLL_GPU_REDUCE != c->base || c->is_root;

    c->scount = c->rcount = (int)count;
    c->stype = c->rtype = c->type->datatype;
    if (COLL_GPU_REDUCE_LOCAL == c->base) {
        /* inoutbuf = inbuf op inoutbuf, with two "sources" 0 (inbuf) and 1 (inoutbuf) */
        if (tu_case_buf(c, &c->sbuf, p->kind.send, count) ||
            tu_case_buf(c, &c->rbuf, p->kind.recv, count)) {
            return -1;
        }
        tu_put_gen(&c->sbuf, p->op, p->salt, 0, 2, 0, count, 0);
        tu_put_gen(&c->rbuf, p->op, p->salt, 1, 2, 0, count, 0);
        /* inbuf is read; inoutbuf is read and written */
        tu_payload(c, p->kind.send, count);
        tu_payload(c, p->kind.recv, 2 * count);
        if (tu_buf_upload(&c->sbuf) || tu_buf_upload(&c->rbuf)) {
            return -1;
        }
        tu_put_reduce(&c->rbuf, p->op, p->salt, 2, 2, 0, count, 0);
        c->sptr = c->sbuf.alloc;
        c->rptr = c->rbuf.alloc;
        return 0;
    }

    if (COLL_GPU_REDUCE_SCATTER == c->base || COLL_GPU_REDUCE_SCATTER_BLOCK == c->base) {
        size_t total = 0, offset = 0, mine;
        c->rcounts = tu_int_array(n);
        for (int j = 0; j < n; j++) {
            c->rcounts[j] =
                COLL_GPU_REDUCE_SCATTER_BLOCK == c->base ? (int)count : tu_vcount(j, count);
            if (j < r) {
                offset += c->rcounts[j];
            }
            total += c->rcounts[j];
        }
        mine = c->rcounts[r];
        c->rcounts_arg = c->rcounts;
        if (p->in_place) {
            /* input from the receive buffer, result in its first rcounts[r] elements */
            if (tu_case_buf(c, &c->rbuf, p->kind.recv, total)) {
                return -1;
            }
            tu_put_gen(&c->rbuf, p->op, p->salt, r, n, 0, total, 0);
            c->sptr = MPI_IN_PLACE;
        } else {
            if (tu_case_buf(c, &c->sbuf, p->kind.send, total) ||
                tu_case_buf(c, &c->rbuf, p->kind.recv, mine)) {
                return -1;
            }
            tu_put_gen(&c->sbuf, p->op, p->salt, r, n, 0, total, 0);
            c->sptr = c->sbuf.alloc;
        }
        tu_payload(c, in_mem, total);
        tu_payload(c, p->kind.recv, mine);
        if ((c->has_sbuf && tu_buf_upload(&c->sbuf)) || tu_buf_upload(&c->rbuf)) {
            return -1;
        }
        tu_put_reduce(&c->rbuf, p->op, p->salt, n, n, offset, mine, 0);
        if (p->in_place && total > mine) {
            tu_buf_dont_care(&c->rbuf, mine, total - mine);
        }
        c->rptr = c->rbuf.alloc;
        return 0;
    }

    /* allreduce, reduce, scan, exscan */
    if (root_in_place) {
        if (tu_case_buf(c, &c->rbuf, p->kind.recv, count)) {
            return -1;
        }
        tu_put_gen(&c->rbuf, p->op, p->salt, r, n, 0, count, 0);
        c->sptr = MPI_IN_PLACE;
    } else {
        if (tu_case_buf(c, &c->sbuf, p->kind.send, count)) {
            return -1;
        }
        tu_put_gen(&c->sbuf, p->op, p->salt, r, n, 0, count, 0);
        c->sptr = c->sbuf.alloc;
        if (has_result && tu_case_buf(c, &c->rbuf, p->kind.recv, count)) {
            return -1;
        }
    }
    tu_payload(c, root_in_place ? p->kind.recv : p->kind.send, count);
    if ((c->has_sbuf && tu_buf_upload(&c->sbuf)) || (c->has_rbuf && tu_buf_upload(&c->rbuf))) {
        return -1;
    }
    if (!has_result) {
        c->rptr = tu_garbage_ptr(p->garbage);
        return 0;
    }
    c->rptr = c->rbuf.alloc;
    switch (c->base) {
    case COLL_GPU_SCAN:
        tu_put_reduce(&c->rbuf, p->op, p->salt, r + 1, n, 0, count, 0);
        tu_payload(c, p->kind.recv, count);
        break;
    case COLL_GPU_EXSCAN:
        if (0 == r) {
            /* MPI leaves rank 0's receive buffer undefined (the guard must still hold) */
            tu_buf_dont_care(&c->rbuf, 0, count);
        } else {
            tu_put_reduce(&c->rbuf, p->op, p->salt, r, n, 0, count, 0);
            tu_payload(c, p->kind.recv, count);
        }
        break;
    default:
        tu_put_reduce(&c->rbuf, p->op, p->salt, n, n, 0, count, 0);
        tu_payload(c, p->kind.recv, count);
        break;
    }
    return 0;
}

static int tu_case_setup_bcast(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    /* the root's buffer is the "send" side, the others' the "receive" side */
    tu_mem_t mem = c->is_root ? p->kind.send : p->kind.recv;

    if (tu_case_buf(c, &c->rbuf, mem, p->count)) {
        return -1;
    }
    if (c->is_root) {
        tu_put_gen(&c->rbuf, p->op, p->salt, p->root, c->size, 0, p->count, 0);
    }
    if (tu_buf_upload(&c->rbuf)) {
        return -1;
    }
    tu_put_gen(&c->rbuf, p->op, p->salt, p->root, c->size, 0, p->count, 0);
    tu_payload(c, mem, p->count);
    c->rptr = c->rbuf.alloc;
    c->rcount = (int)p->count;
    c->rtype = c->type->datatype;
    return 0;
}

/* allgather(v), gather(v): block j of the result is rank j's input */
static int tu_case_setup_gather(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank, n = c->size;
    bool v = COLL_GPU_ALLGATHERV == c->base || COLL_GPU_GATHERV == c->base;
    bool rooted = COLL_GPU_GATHER == c->base || COLL_GPU_GATHERV == c->base;
    bool has_result = !rooted || c->is_root;
    bool in_place = p->in_place && has_result;
    size_t span;

    c->rcounts = tu_int_array(n);
    c->rdispls = tu_int_array(n);
    for (int j = 0; j < n; j++) {
        c->rcounts[j] = v ? tu_vcount(j, p->count) : (int)p->count;
        c->rdispls[j] = j * (int)p->count;
    }
    span = v ? tu_layout_blocks(c->rcounts, n, c->rdispls) : (size_t)n * p->count;

    if (has_result) {
        if (tu_case_buf(c, &c->rbuf, p->kind.recv, span)) {
            return -1;
        }
        c->rptr = c->rbuf.alloc;
        c->rcount = (int)p->count;
        c->rtype = c->type->datatype;
        c->rcounts_arg = c->rcounts;
        c->rdispls_arg = c->rdispls;
    } else {
        /* significant only at the root */
        c->rptr = tu_garbage_ptr(p->garbage);
        if (TU_GARBAGE_NULL == p->garbage) {
            c->rcount = 0;
            c->rtype = MPI_DATATYPE_NULL;
        } else {
            c->rcount = (int)p->count;
            c->rtype = c->type->datatype;
            c->rcounts_arg = c->rcounts;
            c->rdispls_arg = c->rdispls;
        }
    }
    if (in_place) {
        tu_put_gen(&c->rbuf, p->op, p->salt, r, n, 0, c->rcounts[r], c->rdispls[r]);
        c->sptr = MPI_IN_PLACE;
        /* sendcount and sendtype are ignored */
        c->scount = 0;
        c->stype = MPI_DATATYPE_NULL;
        tu_payload(c, p->kind.recv, c->rcounts[r]);
    } else {
        if (tu_case_buf(c, &c->sbuf, p->kind.send, c->rcounts[r])) {
            return -1;
        }
        tu_put_gen(&c->sbuf, p->op, p->salt, r, n, 0, c->rcounts[r], 0);
        c->sptr = c->sbuf.alloc;
        c->scount = c->rcounts[r];
        c->stype = c->type->datatype;
        tu_payload(c, p->kind.send, c->rcounts[r]);
    }
    if ((c->has_sbuf && tu_buf_upload(&c->sbuf)) || (c->has_rbuf && tu_buf_upload(&c->rbuf))) {
        return -1;
    }
    if (has_result) {
        for (int j = 0; j < n; j++) {
            tu_put_gen(&c->rbuf, p->op, p->salt, j, n, 0, c->rcounts[j], c->rdispls[j]);
            tu_payload(c, p->kind.recv, c->rcounts[j]);
        }
    }
    return 0;
}

/* scatter(v): the root's block j goes to rank j */
static int tu_case_setup_scatter(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank, n = c->size;
    bool v = COLL_GPU_SCATTERV == c->base;
    bool in_place = p->in_place && c->is_root;
    size_t span;

    c->scounts = tu_int_array(n);
    c->sdispls = tu_int_array(n);
    for (int j = 0; j < n; j++) {
        c->scounts[j] = v ? tu_vcount(j, p->count) : (int)p->count;
        c->sdispls[j] = j * (int)p->count;
    }
    span = v ? tu_layout_blocks(c->scounts, n, c->sdispls) : (size_t)n * p->count;

    if (c->is_root) {
        if (tu_case_buf(c, &c->sbuf, p->kind.send, span)) {
            return -1;
        }
        for (int j = 0; j < n; j++) {
            tu_put_gen(&c->sbuf, p->op, tu_stream(p->salt, j), r, n, 0, c->scounts[j],
                       c->sdispls[j]);
            tu_payload(c, p->kind.send, c->scounts[j]);
        }
        c->sptr = c->sbuf.alloc;
        c->scount = (int)p->count;
        c->stype = c->type->datatype;
        c->scounts_arg = c->scounts;
        c->sdispls_arg = c->sdispls;
    } else {
        c->sptr = tu_garbage_ptr(p->garbage);
        if (TU_GARBAGE_NULL == p->garbage) {
            c->scount = 0;
            c->stype = MPI_DATATYPE_NULL;
        } else {
            c->scount = (int)p->count;
            c->stype = c->type->datatype;
            c->scounts_arg = c->scounts;
            c->sdispls_arg = c->sdispls;
        }
    }
    if (in_place) {
        /* the root's own block stays in the send buffer; recvcount/recvtype are ignored */
        c->rptr = MPI_IN_PLACE;
        c->rcount = 0;
        c->rtype = MPI_DATATYPE_NULL;
    } else {
        if (tu_case_buf(c, &c->rbuf, p->kind.recv, c->scounts[r])) {
            return -1;
        }
        c->rptr = c->rbuf.alloc;
        c->rcount = c->scounts[r];
        c->rtype = c->type->datatype;
    }
    if ((c->has_sbuf && tu_buf_upload(&c->sbuf)) || (c->has_rbuf && tu_buf_upload(&c->rbuf))) {
        return -1;
    }
    if (c->has_rbuf) {
        tu_put_gen(&c->rbuf, p->op, tu_stream(p->salt, r), p->root, n, 0, c->scounts[r], 0);
        tu_payload(c, p->kind.recv, c->scounts[r]);
    }
    return 0;
}

static int tu_case_setup_alltoall(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank, n = c->size;
    bool v = COLL_GPU_ALLTOALLV == c->base;
    size_t sspan, rspan;

    c->scounts = tu_int_array(n);
    c->sdispls = tu_int_array(n);
    c->rcounts = tu_int_array(n);
    c->rdispls = tu_int_array(n);
    for (int j = 0; j < n; j++) {
        c->scounts[j] = v ? tu_a2a_count(r, j, p->count, p->in_place) : (int)p->count;
        c->rcounts[j] = v ? tu_a2a_count(j, r, p->count, p->in_place) : (int)p->count;
        c->sdispls[j] = c->rdispls[j] = j * (int)p->count;
    }
    sspan = v ? tu_layout_blocks(c->scounts, n, c->sdispls) : (size_t)n * p->count;
    rspan = v ? tu_layout_blocks(c->rcounts, n, c->rdispls) : (size_t)n * p->count;

    if (tu_case_buf(c, &c->rbuf, p->kind.recv, rspan)) {
        return -1;
    }
    if (p->in_place) {
        /* what goes to j is taken from where j's data arrives; counts are symmetric */
        for (int j = 0; j < n; j++) {
            tu_put_gen(&c->rbuf, p->op, tu_stream(p->salt, j), r, n, 0, c->rcounts[j],
                       c->rdispls[j]);
            tu_payload(c, p->kind.recv, c->rcounts[j]);
        }
        c->sptr = MPI_IN_PLACE;
        c->scount = 0;
        c->stype = MPI_DATATYPE_NULL;
        /* sendcounts/sdispls are ignored: pass NULL */
    } else {
        if (tu_case_buf(c, &c->sbuf, p->kind.send, sspan)) {
            return -1;
        }
        for (int j = 0; j < n; j++) {
            tu_put_gen(&c->sbuf, p->op, tu_stream(p->salt, j), r, n, 0, c->scounts[j],
                       c->sdispls[j]);
            tu_payload(c, p->kind.send, c->scounts[j]);
        }
        c->sptr = c->sbuf.alloc;
        c->scount = (int)p->count;
        c->stype = c->type->datatype;
        c->scounts_arg = c->scounts;
        c->sdispls_arg = c->sdispls;
    }
    c->rptr = c->rbuf.alloc;
    c->rcount = (int)p->count;
    c->rtype = c->type->datatype;
    c->rcounts_arg = c->rcounts;
    c->rdispls_arg = c->rdispls;
    if ((c->has_sbuf && tu_buf_upload(&c->sbuf)) || tu_buf_upload(&c->rbuf)) {
        return -1;
    }
    for (int j = 0; j < n; j++) {
        tu_put_gen(&c->rbuf, p->op, tu_stream(p->salt, r), j, n, 0, c->rcounts[j], c->rdispls[j]);
        tu_payload(c, p->kind.recv, c->rcounts[j]);
    }
    return 0;
}

int tu_coll_case_create(const tu_coll_params_t *params, tu_coll_case_t **case_p) {
    tu_coll_case_t *c;
    int rc;

    if (!tu_coll_case_supported(params->coll)) {
        return -1;
    }
    c = calloc(1, sizeof(*c));

    c->p = *params;
    c->base = tu_coll_blocking(params->coll);
    c->type = tu_type(params->type);
    c->stype = c->rtype = MPI_DATATYPE_NULL;
    if (COLL_GPU_REDUCE_LOCAL == c->base) {
        c->comm = MPI_COMM_NULL;
        c->rank = 0;
        c->size = 1;
    } else {
        c->comm = params->comm->comm;
        c->rank = params->comm->rank;
        c->size = params->comm->size;
    }
    c->is_root = tu_coll_has_root(c->base) && c->rank == params->root;

    {
        int len =
            snprintf(c->desc, sizeof(c->desc), "%s %s", tu_coll_name(params->coll), c->type->name);
        if (tu_coll_is_reduction(c->base)) {
            len += snprintf(c->desc + len, sizeof(c->desc) - len, " %s", tu_op_name(params->op));
        }
        len += snprintf(c->desc + len, sizeof(c->desc) - len, " count=%zu%s", params->count,
                        params->in_place ? " in-place" : "");
        if (COLL_GPU_REDUCE_LOCAL != c->base) {
            len += snprintf(c->desc + len, sizeof(c->desc) - len, " comm=%s(%d/%d)",
                            params->comm->name, c->rank, c->size);
        }
        if (tu_coll_has_root(c->base)) {
            len += snprintf(c->desc + len, sizeof(c->desc) - len, " root=%d", params->root);
        }
        snprintf(c->desc + len, sizeof(c->desc) - len, " kind=%s", params->kind.name);
    }

    switch (c->base) {
    case COLL_GPU_BCAST:
        rc = tu_case_setup_bcast(c);
        break;
    case COLL_GPU_ALLGATHER:
    case COLL_GPU_ALLGATHERV:
    case COLL_GPU_GATHER:
    case COLL_GPU_GATHERV:
        rc = tu_case_setup_gather(c);
        break;
    case COLL_GPU_SCATTER:
    case COLL_GPU_SCATTERV:
        rc = tu_case_setup_scatter(c);
        break;
    case COLL_GPU_ALLTOALL:
    case COLL_GPU_ALLTOALLV:
        rc = tu_case_setup_alltoall(c);
        break;
    default:
        rc = tu_case_setup_reduction(c);
        break;
    }
    if (0 != rc) {
        tu_coll_case_destroy(c);
        return -1;
    }
    *case_p = c;
    return 0;
}

int tu_coll_case_start(tu_coll_case_t *c, MPI_Request *request) {
    const tu_coll_params_t *p = &c->p;
    MPI_Op op = tu_op_handle(p->op);
    MPI_Datatype dt = c->type->datatype;
    int count = (int)p->count;
    MPI_Request dummy;

    if (NULL == request) {
        request = &dummy;
    }
    *request = MPI_REQUEST_NULL;
    switch (p->coll) {
    case COLL_GPU_ALLGATHER:
        return MPI_Allgather(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, c->comm);
    case COLL_GPU_ALLGATHERV:
        return MPI_Allgatherv(c->sptr, c->scount, c->stype, c->rptr, c->rcounts_arg, c->rdispls_arg,
                              c->rtype, c->comm);
    case COLL_GPU_ALLREDUCE:
        return MPI_Allreduce(c->sptr, c->rptr, count, dt, op, c->comm);
    case COLL_GPU_ALLTOALL:
        return MPI_Alltoall(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, c->comm);
    case COLL_GPU_ALLTOALLV:
        return MPI_Alltoallv(c->sptr, c->scounts_arg, c->sdispls_arg, c->stype, c->rptr,
                             c->rcounts_arg, c->rdispls_arg, c->rtype, c->comm);
    case COLL_GPU_BCAST:
        return MPI_Bcast(c->rptr, count, dt, p->root, c->comm);
    case COLL_GPU_EXSCAN:
        return MPI_Exscan(c->sptr, c->rptr, count, dt, op, c->comm);
    case COLL_GPU_GATHER:
        return MPI_Gather(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, p->root,
                          c->comm);
    case COLL_GPU_GATHERV:
        return MPI_Gatherv(c->sptr, c->scount, c->stype, c->rptr, c->rcounts_arg, c->rdispls_arg,
                           c->rtype, p->root, c->comm);
    case COLL_GPU_REDUCE:
        return MPI_Reduce(c->sptr, c->rptr, count, dt, op, p->root, c->comm);
    case COLL_GPU_REDUCE_SCATTER:
        return MPI_Reduce_scatter(c->sptr, c->rptr, c->rcounts_arg, dt, op, c->comm);
    case COLL_GPU_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(c->sptr, c->rptr, count, dt, op, c->comm);
    case COLL_GPU_SCAN:
        return MPI_Scan(c->sptr, c->rptr, count, dt, op, c->comm);
    case COLL_GPU_SCATTER:
        return MPI_Scatter(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, p->root,
                           c->comm);
    case COLL_GPU_SCATTERV:
        return MPI_Scatterv(c->sptr, c->scounts_arg, c->sdispls_arg, c->stype, c->rptr, c->rcount,
                            c->rtype, p->root, c->comm);
    case COLL_GPU_REDUCE_LOCAL:
        return MPI_Reduce_local(c->sptr, c->rptr, count, dt, op);
    case COLL_GPU_IALLGATHER:
        return MPI_Iallgather(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, c->comm,
                              request);
    case COLL_GPU_IALLGATHERV:
        return MPI_Iallgatherv(c->sptr, c->scount, c->stype, c->rptr, c->rcounts_arg,
                               c->rdispls_arg, c->rtype, c->comm, request);
    case COLL_GPU_IALLREDUCE:
        return MPI_Iallreduce(c->sptr, c->rptr, count, dt, op, c->comm, request);
    case COLL_GPU_IALLTOALL:
        return MPI_Ialltoall(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, c->comm,
                             request);
    case COLL_GPU_IALLTOALLV:
        return MPI_Ialltoallv(c->sptr, c->scounts_arg, c->sdispls_arg, c->stype, c->rptr,
                              c->rcounts_arg, c->rdispls_arg, c->rtype, c->comm, request);
    case COLL_GPU_IBCAST:
        return MPI_Ibcast(c->rptr, count, dt, p->root, c->comm, request);
    case COLL_GPU_IEXSCAN:
        return MPI_Iexscan(c->sptr, c->rptr, count, dt, op, c->comm, request);
    case COLL_GPU_IGATHER:
        return MPI_Igather(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, p->root,
                           c->comm, request);
    case COLL_GPU_IGATHERV:
        return MPI_Igatherv(c->sptr, c->scount, c->stype, c->rptr, c->rcounts_arg, c->rdispls_arg,
                            c->rtype, p->root, c->comm, request);
    case COLL_GPU_IREDUCE:
        return MPI_Ireduce(c->sptr, c->rptr, count, dt, op, p->root, c->comm, request);
    case COLL_GPU_IREDUCE_SCATTER:
        return MPI_Ireduce_scatter(c->sptr, c->rptr, c->rcounts_arg, dt, op, c->comm, request);
    case COLL_GPU_IREDUCE_SCATTER_BLOCK:
        return MPI_Ireduce_scatter_block(c->sptr, c->rptr, count, dt, op, c->comm, request);
    case COLL_GPU_ISCAN:
        return MPI_Iscan(c->sptr, c->rptr, count, dt, op, c->comm, request);
    case COLL_GPU_ISCATTER:
        return MPI_Iscatter(c->sptr, c->scount, c->stype, c->rptr, c->rcount, c->rtype, p->root,
                            c->comm, request);
    case COLL_GPU_ISCATTERV:
        return MPI_Iscatterv(c->sptr, c->scounts_arg, c->sdispls_arg, c->stype, c->rptr, c->rcount,
                             c->rtype, p->root, c->comm, request);
    default:
        return MPI_ERR_OTHER;
    }
}

bool tu_coll_case_verify(tu_coll_case_t *c) {
    long bad = 0;
    if (c->has_sbuf) {
        /* send buffers are read-only for every collective */
        bad += labs(tu_buf_verify(&c->sbuf, "sendbuf"));
    }
    if (c->has_rbuf) {
        bad += labs(tu_buf_verify(&c->rbuf, COLL_GPU_BCAST == c->base ? "buffer" : "recvbuf"));
    }
    return 0 == bad;
}

void tu_coll_case_destroy(tu_coll_case_t *c) {
    if (NULL == c) {
        return;
    }
    if (c->has_sbuf) {
        tu_buf_free(&c->sbuf);
    }
    if (c->has_rbuf) {
        tu_buf_free(&c->rbuf);
    }
    free(c->scounts);
    free(c->sdispls);
    free(c->rcounts);
    free(c->rdispls);
    free(c);
}

typedef enum { TU_CLASS_HOST, TU_CLASS_MANAGED, TU_CLASS_DEVICE } tu_call_class_t;

static tu_call_class_t tu_class_of(tu_mem_t mem) {
    return TU_MEM_DEVICE == mem    ? TU_CLASS_DEVICE
           : TU_MEM_MANAGED == mem ? TU_CLASS_MANAGED
                                   : TU_CLASS_HOST;
}

static tu_call_class_t tu_class_max(tu_call_class_t a, tu_call_class_t b) { return a > b ? a : b; }

/* The memory class of one rank's call: device if any buffer MPI uses on that rank is device
 * memory, managed if any is managed, else host (pageable or pinned).  Buffers MPI ignores on
 * that rank (non-root receive buffers, non-root scatter send buffers, MPI_IN_PLACE) do not
 * count. */
static tu_call_class_t tu_call_class(coll_gpu_coll_t base, bool is_root, bool in_place,
                                     const tu_kind_t *kind) {
    bool send_used, recv_used;

    switch (base) {
    case COLL_GPU_BCAST:
        return tu_class_of(is_root ? kind->send : kind->recv);
    case COLL_GPU_REDUCE:
    case COLL_GPU_GATHER:
    case COLL_GPU_GATHERV:
        send_used = !(is_root && in_place);
        recv_used = is_root;
        break;
    case COLL_GPU_SCATTER:
    case COLL_GPU_SCATTERV:
        send_used = is_root;
        recv_used = !(is_root && in_place);
        break;
    case COLL_GPU_REDUCE_LOCAL:
        send_used = recv_used = true;
        break;
    default:
        send_used = !in_place;
        recv_used = true;
        break;
    }
    return tu_class_max(send_used ? tu_class_of(kind->send) : TU_CLASS_HOST,
                        recv_used ? tu_class_of(kind->recv) : TU_CLASS_HOST);
}

bool tu_coll_case_expect(const tu_coll_case_t *c, const tu_gpu_config_t *config,
                         const tu_kind_t *kind_of_world_rank, tu_expect_t *expect) {
    const tu_coll_params_t *p = &c->p;
    tu_call_class_t mine = tu_call_class(c->base, c->is_root, p->in_place, &p->kind);
    bool uniform = true, any_managed = TU_CLASS_MANAGED == mine, pipelined_size;
    bool native_call = false, native_host_call = false;
    bool device_native = tu_coll_native_expected(config, p->coll, c->size);
    bool host_native = config->host_buffers && tu_coll_native_expected(config, p->coll, c->size);

    if (COLL_GPU_REDUCE_LOCAL != c->base) {
        for (int m = 0; m < c->size; m++) {
            const tu_kind_t *kind = NULL != kind_of_world_rank
                                        ? &kind_of_world_rank[p->comm->world_ranks[m]]
                                        : &p->kind;
            bool root = tu_coll_has_root(c->base) && m == p->root;
            tu_call_class_t other = tu_call_class(c->base, root, p->in_place, kind);
            uniform = uniform && other == mine;
            any_managed = any_managed || TU_CLASS_MANAGED == other;
        }
    }
    /* Contiguous data larger than half the staging buffer is cut into chunks, which changes
     * the number of host collectives: only valid when every rank stages.  MPI_Bcast cuts in
     * bytes of the type signature, whatever the layout (ranks may pass different datatypes). */
    pipelined_size = tu_coll_pipelines(p->coll) &&
                     (c->type->contiguous || (COLL_GPU_BCAST == p->coll)) &&
                     (long long)tu_coll_case_data_bytes(c) > config->staging_buffer_size / 2;
    if (!uniform && pipelined_size && config->pipeline && !config->check_memory_kinds) {
        return false;
    }
    /* Blocking MPI_Allreduce runs natively inside a node when every buffer of every rank is
     * on the device and the kernels define the reduction (predefined op, predefined
     * contiguous type).  Kinds that differ across ranks then make an erroneous program
     * (native on some ranks, host on others), unless check_memory_kinds makes them stage. */
    /* The same for blocking MPI_Reduce_scatter(_block) and MPI_Reduce (a reduction the kernels
     * define), MPI_Allgather(v), MPI_Alltoall(v), MPI_Bcast, MPI_Gather and MPI_Scatter (any
     * datatype: they move bytes of the type signature, a non-dense layout packed).  A native
     * MPI_Alltoallv agrees on its counts (a host allreduce) before it can tell that they are
     * all zero: kinds that differ are erroneous for it even then. */
    if (((COLL_GPU_ALLREDUCE == p->coll || COLL_GPU_REDUCE_SCATTER_BLOCK == p->coll ||
          COLL_GPU_REDUCE_SCATTER == p->coll || COLL_GPU_REDUCE == p->coll)
             ? (TU_OP_USER_COMM != p->op && TU_OP_USER_NONCOMM != p->op)
             : (COLL_GPU_ALLGATHER == p->coll || COLL_GPU_BCAST == p->coll ||
                COLL_GPU_GATHER == p->coll || COLL_GPU_SCATTER == p->coll ||
                COLL_GPU_ALLGATHERV == p->coll || COLL_GPU_ALLTOALL == p->coll ||
                COLL_GPU_ALLTOALLV == p->coll)) &&
        (c->type->contiguous || !tu_coll_is_reduction(p->coll)) &&
        (0 != p->count || COLL_GPU_ALLTOALLV == p->coll) && (device_native || host_native)) {
        bool all_device = true, any_device = false, all_host = true;
        for (int m = 0; m < c->size; m++) {
            const tu_kind_t *kind = NULL != kind_of_world_rank
                                        ? &kind_of_world_rank[p->comm->world_ranks[m]]
                                        : &p->kind;
            bool device =
                (p->in_place || TU_MEM_DEVICE == kind->send) && TU_MEM_DEVICE == kind->recv;
            /* host-buffer mode: every buffer host-accessible (host, pinned, managed) */
            bool host = (p->in_place || TU_MEM_DEVICE != kind->send) && TU_MEM_DEVICE != kind->recv;
            if (COLL_GPU_BCAST == p->coll) {
                /* the root's buffer is its send kind, every other rank's its receive kind */
                tu_mem_t mem = (m == p->root) ? kind->send : kind->recv;
                device = TU_MEM_DEVICE == mem;
                host = !device;
            } else if (tu_coll_has_root(p->coll)) {
                /* only the buffers MPI says are significant on that rank */
                bool root = m == p->root, scatter = COLL_GPU_SCATTER == p->coll;
                bool send_used = scatter ? root : !(root && p->in_place);
                bool recv_used = scatter ? !(root && p->in_place) : root;
                device = (!send_used || TU_MEM_DEVICE == kind->send) &&
                         (!recv_used || TU_MEM_DEVICE == kind->recv);
                host = (!send_used || TU_MEM_DEVICE != kind->send) &&
                       (!recv_used || TU_MEM_DEVICE != kind->recv);
            }
            all_device = all_device && device;
            any_device = any_device || device;
            all_host = all_host && host;
        }
        if (any_device && !all_device && !config->check_memory_kinds) {
            return false;
        }
        native_call = all_device && device_native;
        /* coll_gpu_host_buffers: host buffers everywhere run natively in host memory */
        native_host_call = host_native && all_host;
    }

    expect->device_payload = c->device_payload;
    /* Open MPI's MPI layer returns before any coll module for zero counts (most collectives)
     * and for MPI_(I)bcast on a one-rank communicator */
    if (0 == p->count || (COLL_GPU_BCAST == c->base && 1 == c->size)) {
        expect->path = TU_PATH_MAYBE;
        expect->chunks = TU_CHUNKS_NONE;
        return true;
    }
    switch (mine) {
    case TU_CLASS_HOST:
        /* with check_memory_kinds a mixed call takes the staged path everywhere */
        expect->path =
            (!uniform && config->check_memory_kinds) ? TU_PATH_EITHER : TU_PATH_PASSTHROUGH;
        if (native_host_call) {
            expect->path = TU_PATH_NATIVE;
        }
        break;
    case TU_CLASS_MANAGED:
        expect->path = TU_PATH_EITHER;
        break;
    default:
        /* device pointers with nothing to copy may go either way */
        expect->path = c->device_payload > 0 ? TU_PATH_STAGED : TU_PATH_EITHER;
        if (native_call) {
            expect->path = TU_PATH_NATIVE;
        }
        /* MPI_Reduce_local of a predefined op on a predefined type, both buffers on the
         * device: the accelerator's reduction kernel */
        if (COLL_GPU_REDUCE_LOCAL == c->base && TU_MEM_DEVICE == p->kind.send &&
            TU_MEM_DEVICE == p->kind.recv && c->type->contiguous &&
            (TU_OP_SUM == p->op || TU_OP_MAX == p->op || TU_OP_BXOR == p->op)) {
            expect->path = TU_PATH_NATIVE;
        }
        break;
    }

    if (TU_PATH_PASSTHROUGH == expect->path || TU_PATH_NATIVE == expect->path) {
        expect->chunks = TU_CHUNKS_NONE;
    } else if (any_managed) {
        expect->chunks = TU_CHUNKS_ANY;
    } else if (TU_CLASS_DEVICE == mine && pipelined_size && config->pipeline) {
        expect->chunks = uniform ? TU_CHUNKS_SOME : TU_CHUNKS_NONE;
    } else {
        expect->chunks = TU_CHUNKS_NONE;
    }
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Simple int buffers                                                                         */
/* ------------------------------------------------------------------------------------------ */

int tu_int_buffer_create(tu_mem_t mem, size_t count, int value, void **ptr_p) {
    int *host = malloc(sizeof(int) * (count > 0 ? count : 1));
    int rc;
    for (size_t i = 0; i < count; i++) {
        host[i] = value + (int)i;
    }
    rc = tu_mem_alloc(mem, sizeof(int) * count, ptr_p);
    if (0 == rc) {
        rc = tu_mem_write(mem, *ptr_p, host, sizeof(int) * count);
    }
    free(host);
    return rc;
}

long tu_int_buffer_check(tu_mem_t mem, const void *ptr, size_t count, int expected,
                         const char *what) {
    int *host = malloc(sizeof(int) * (count > 0 ? count : 1));
    long bad = 0;
    if (0 != tu_mem_read(mem, host, ptr, sizeof(int) * count)) {
        tu_fail("%s: cannot read the %s buffer back", what, tu_mem_name(mem));
        free(host);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        if (host[i] != expected + (int)i) {
            if (bad++ < TU_MAX_MISMATCHES_PER_BUFFER) {
                tu_fail("%s[%zu]: got %d, expected %d", what, i, host[i], expected + (int)i);
            }
        }
    }
    free(host);
    return bad;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ranks that pass different memory kinds to one collective, with default parameters: the
 * programs that hung before coll/gpu made such calls meet in one protocol (a rank whose whole
 * call is on host memory passed it to Open MPI's host collective while its peers ran the
 * component's native algorithm or a pipelined staging of several host collectives).  Each case
 * is one program a user may write; its results are checked against a reference every rank
 * computes itself (never Open MPI's reductions: Debian's 4.1.4 op/avx sums int8 wrongly on
 * overflow, open-mpi/ompi#8045), and the counters against the path each rank must take:
 * passed through where the rank's whole call is on host memory, else staged as one host
 * collective (no pipelined chunks) or, where no rank passes through, native.
 *
 * Cases (--cases=LIST, default all):
 *   output      every rank sends a device array, rank 0 receives into host memory:
 *               MPI_Reduce, MPI_Gather; and rank 0's MPI_Reduce in place on host memory
 *   input       rank 0's data in host memory, MPI_Bcast / MPI_Scatter into the others' device
 *               arrays
 *   output_nb, input_nb       the same, nonblocking (MPI_Ireduce, MPI_Igather, MPI_Ibcast,
 *                             MPI_Iscatter)
 *   output_pers, input_pers   the same, persistent (MPI_Reduce_init ..., started twice with
 *                             new inputs)
 *               (every case after one blocking MPI_Allreduce on device memory: the native
 *               context set up, as after a program's first call)
 *   allreduce   even ranks host buffers, odd ranks device buffers: MPI_Allreduce of 8 int8
 *               (sums that overflow) and of a big array
 *   one_host    one rank's buffers on the host (the last), the others' on the device:
 *               MPI_Reduce_scatter_block, MPI_Allgatherv
 *   intercomm   on an intercommunicator of the even and the odd ranks, the odd group's buffers
 *               on the device, the even group's on the device and then on the host:
 *               MPI_Allreduce, _Allgather, _Alltoall, _Bcast, _Reduce, _Gather, _Scatter
 *               (roots MPI_ROOT / MPI_PROC_NULL), MPI_Iallreduce, MPI_Ibcast (the modules below
 *               coll/gpu, coll/inter and libnbc, would hand device memory to the
 *               point-to-point layer)
 *   iallreduce  MPI_Iallreduce on device memory; with --odd-env=OMPI_MCA_coll_gpu_native_
 *               nonblocking=0 one rank has a parameter that changes the protocol
 * --colls=LIST: only these collectives of the cases (reduce,gather,...: their blocking names).
 * Every case runs a small count and a big one (--big=BYTES, default 4m: pipelined through a
 * staging buffer smaller than half of it).
 *
 * --host-ranks=N: the ranks below N pass host memory for every buffer they use (all of an
 * emulated node, coll_gpu_ranks_per_node=N), instead of each case's own pattern (rank 0's
 * host buffer in output and input, even ranks in allreduce, the last rank in one_host).
 * --odd-env=NAME=VALUE: the ranks of odd local rank put NAME=VALUE in their environment before
 * MPI_Init (an OMPI_MCA_ name: a parameter the others have not).
 * --expect-staged: every device rank's nonblocking call is staged (a parameter differs).
 *
 * Closing line (rank 0): "N passed, M failed".
 */
#define _XOPEN_SOURCE 700 /* putenv */

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    bool cases_all;
    const char *cases;
    const char *colls; /* --colls=: only these collectives (blocking names), NULL: all */
    size_t big_bytes;
    int host_ranks;
    bool expect_staged;
    tu_gpu_config_t config;
    tu_comm_t world; /* MPI_COMM_WORLD, for auto's staging (tu_staged_auto) */
    int rank;
    int size;
    uint32_t salt;
} mk_state_t;

static mk_state_t mk;

/* ------------------------------------------------------------------------------------------ */
/* Memory and references                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Memory of kind mem holding `bytes` host bytes (a real pointer for 0 bytes). */
static void *mk_copy_of(tu_mem_t mem, const void *host, size_t bytes) {
    void *p = NULL;

    if (0 != tu_mem_alloc(mem, bytes > 0 ? bytes : 1, &p) ||
        (bytes > 0 && 0 != tu_mem_write(mem, p, host, bytes))) {
        fprintf(stderr, "[rank %d] cannot allocate %zu bytes of %s memory\n", mk.rank, bytes,
                tu_mem_name(mem));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void *mk_zeros(tu_mem_t mem, size_t bytes) {
    void *zeros = calloc(bytes > 0 ? bytes : 1, 1);
    void *p = mk_copy_of(mem, zeros, bytes);

    free(zeros);
    return p;
}

/* Rank r's element i of the case's input: small enough that int32 sums never overflow. */
static int32_t mk_in32(int r, size_t i) {
    return (int32_t)((mk.salt * 7919u + (uint32_t)r * 100003u + (uint32_t)i * 31u) % 1000003u);
}

/* int8 inputs whose sums overflow (the reference wraps, as MPI's sum of int8 must) */
static int8_t mk_in8(int r, size_t i) {
    return (int8_t)(uint8_t)(100u + mk.salt * 3u + (uint32_t)r * 57u + (uint32_t)i * 11u);
}

static int32_t *mk_input32(int r, size_t n) {
    int32_t *v = malloc((n > 0 ? n : 1) * sizeof(*v));

    for (size_t i = 0; i < n; i++) {
        v[i] = mk_in32(r, i);
    }
    return v;
}

/* Reads n int32 of buf (kind mem) and compares them with want; reports the first mismatches. */
static void mk_check32(const char *what, tu_mem_t mem, const void *buf, const int32_t *want,
                       size_t n) {
    int32_t *got = malloc((n > 0 ? n : 1) * sizeof(*got));
    long bad = 0;

    if (0 != tu_mem_read(mem, got, buf, n * sizeof(*got))) {
        tu_fail("%s: cannot read the %s buffer", what, tu_mem_name(mem));
        free(got);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i] && bad++ < 3) {
            tu_fail("%s: element %zu of %zu is %d, expected %d", what, i, n, (int)got[i],
                    (int)want[i]);
        }
    }
    if (bad > 3) {
        tu_fail("%s: %ld of %zu elements wrong", what, bad, n);
    }
    free(got);
}

/* The counts of every case: a few elements, and about --big bytes. */
static size_t mk_count(int which, size_t elem) {
    return (0 == which) ? 5 : (mk.big_bytes / elem > 0 ? mk.big_bytes / elem : 1);
}

/* Whether rank r passes host memory: the case's own pattern, or the first --host-ranks. */
static bool mk_host_rank(int r, bool pattern) {
    return (mk.host_ranks > 0) ? (r < mk.host_ranks) : pattern;
}

static bool mk_case_on(const char *name) {
    char *copy, *save = NULL;
    bool on = false;

    if (mk.cases_all) {
        return true;
    }
    copy = strdup(mk.cases);
    for (char *tok = strtok_r(copy, ",", &save); NULL != tok && !on;
         tok = strtok_r(NULL, ",", &save)) {
        on = (0 == strcmp(tok, name));
    }
    free(copy);
    return on;
}

/* Whether --colls= lets coll (its blocking form) run. */
static bool mk_coll_on(coll_gpu_coll_t coll) {
    char *copy, *save = NULL;
    bool on = false;

    if (NULL == mk.colls) {
        return true;
    }
    copy = strdup(mk.colls);
    for (char *tok = strtok_r(copy, ",", &save); NULL != tok && !on;
         tok = strtok_r(NULL, ",", &save)) {
        on = (tu_coll_from_name(tok) == (int)coll);
    }
    free(copy);
    return on;
}

static void mk_check_rc(const char *call, int rc) {
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;

        MPI_Error_string(rc, msg, &len);
        tu_fail("%s returned %d (%s)", call, rc, msg);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The path of each rank's call                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef enum { MK_BLOCKING, MK_NONBLOCKING, MK_PERSISTENT, MK_NUM_FORMS } mk_form_t;
static const char *const mk_form_names[MK_NUM_FORMS] = {"", " (nonblocking)", " (persistent)"};

/* What this rank's call must have done: passed through where every buffer it uses is on the
 * host; else staged as one host collective (never pipelined in chunks where a peer passes its
 * call through), or, a blocking call where no rank passes through, native or staged (then
 * every rank stages it, pipelined where it is large: a root receiving into host memory). */
static void mk_expect(tu_expect_t *expect, bool host_call, bool any_host_call, mk_form_t form,
                      size_t device_bytes) {
    expect->device_payload = device_bytes;
    /* (a rank alone has no peer of another kind: it may pipeline) */
    expect->chunks = ((mk.size > 1) && (any_host_call || (MK_BLOCKING != form))) ? TU_CHUNKS_NONE
                                                                                 : TU_CHUNKS_ANY;
    if (host_call) {
        expect->path = TU_PATH_PASSTHROUGH;
    } else if (MK_BLOCKING == form && !any_host_call && !mk.expect_staged) {
        expect->path = TU_PATH_STAGED_OR_NATIVE;
    } else {
        expect->path = TU_PATH_STAGED;
    }
}

/* One call of coll in the given form: call() posts it (request: NULL for blocking; the
 * persistent request made for MK_PERSISTENT), reload() writes new inputs and expected results
 * between the starts of a persistent request, check() verifies the results. */
typedef struct {
    const char *name;
    coll_gpu_coll_t coll; /* blocking */
    int (*call)(void *ctx, mk_form_t form, MPI_Request *request);
    void (*check)(void *ctx, const char *what);
    void (*reload)(void *ctx);
    void *ctx;
    tu_expect_t expect;
} mk_call_t;

static coll_gpu_coll_t mk_form_coll(coll_gpu_coll_t coll, mk_form_t form) {
    return MK_BLOCKING == form      ? coll
           : MK_NONBLOCKING == form ? tu_coll_nonblocking(coll)
                                    : tu_coll_persistent(coll);
}

static void mk_run_call(const mk_call_t *c, mk_form_t form, size_t count) {
    coll_gpu_coll_t coll = mk_form_coll(c->coll, form);
    MPI_Request request = MPI_REQUEST_NULL;
    tu_counters_t before, after;
    char what[160];
    int rc;

    snprintf(what, sizeof(what), "%s%s count=%zu np=%d", c->name, mk_form_names[form], count,
             mk.size);
    tu_case_begin("%s", what);
    tu_counters_read(&before);
    rc = c->call(c->ctx, form, MK_BLOCKING == form ? NULL : &request);
    mk_check_rc(tu_coll_name(coll), rc);
    if (MPI_SUCCESS == rc && MK_PERSISTENT == form) {
        rc = MPI_Start(&request);
        mk_check_rc("MPI_Start", rc);
    }
    if (MPI_SUCCESS == rc && MK_BLOCKING != form) {
        rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
        mk_check_rc("MPI_Wait", rc);
    }
    tu_counters_read(&after);
    c->check(c->ctx, what);
    tu_check_counters(&before, &after, coll, 1, &c->expect);
    if (MPI_SUCCESS == rc && MK_PERSISTENT == form) {
        /* a second start with new inputs in the same buffers */
        c->reload(c->ctx);
        tu_case_context("%s, start 2 (new inputs)", what);
        rc = MPI_Start(&request);
        mk_check_rc("MPI_Start", rc);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
            mk_check_rc("MPI_Wait", rc);
        }
        c->check(c->ctx, what);
    }
    if (MPI_REQUEST_NULL != request) {
        MPI_Request_free(&request);
    }
    tu_case_end();
}

/* ------------------------------------------------------------------------------------------ */
/* Rooted: the output (reduce, gather) and input (bcast, scatter) patterns                     */
/* ------------------------------------------------------------------------------------------ */

/* A rooted call of count int32 per rank at root 0: each rank's send and receive memory. */
typedef struct {
    coll_gpu_coll_t coll;
    size_t count;
    bool in_place; /* the root's MPI_Reduce in place */
    tu_mem_t send_mem, recv_mem;
    void *sbuf, *rbuf;
    size_t sbytes, rbytes;
    int32_t *want;
    size_t nwant;
} mk_rooted_t;

/* The inputs (send buffer, or the root's in-place receive buffer) and the expected result. */
static void mk_rooted_fill(mk_rooted_t *t) {
    int r = mk.rank, n = mk.size;
    size_t count = t->count;
    int32_t *in = NULL;

    free(t->want);
    t->want = NULL;
    t->nwant = 0;
    switch (t->coll) {
    case COLL_GPU_REDUCE:
        in = mk_input32(r, count);
        if (0 == r) {
            t->want = calloc(count, sizeof(int32_t));
            t->nwant = count;
            for (int j = 0; j < n; j++) {
                for (size_t i = 0; i < count; i++) {
                    t->want[i] += mk_in32(j, i);
                }
            }
        }
        tu_mem_write(t->in_place && 0 == r ? t->recv_mem : t->send_mem,
                     t->in_place && 0 == r ? t->rbuf : t->sbuf, in, count * sizeof(int32_t));
        break;
    case COLL_GPU_GATHER:
        in = mk_input32(r, count);
        tu_mem_write(t->send_mem, t->sbuf, in, count * sizeof(int32_t));
        if (0 == r) {
            t->nwant = count * (size_t)n;
            t->want = malloc(t->nwant * sizeof(int32_t));
            for (int j = 0; j < n; j++) {
                for (size_t i = 0; i < count; i++) {
                    t->want[(size_t)j * count + i] = mk_in32(j, i);
                }
            }
        }
        break;
    case COLL_GPU_BCAST:
        /* the root's data, the others' buffer holding something else before */
        in = mk_input32(0, count);
        t->want = mk_input32(0, count);
        t->nwant = count;
        if (0 != r) {
            memset(in, 0x5a, count * sizeof(int32_t));
        }
        tu_mem_write(t->recv_mem, t->rbuf, in, count * sizeof(int32_t));
        break;
    default: /* scatter: block j of the root's data to rank j */
        if (0 == r) {
            in = malloc(count * (size_t)n * sizeof(int32_t));
            for (int j = 0; j < n; j++) {
                for (size_t i = 0; i < count; i++) {
                    in[(size_t)j * count + i] = mk_in32(j, i);
                }
            }
            tu_mem_write(t->send_mem, t->sbuf, in, count * (size_t)n * sizeof(int32_t));
        }
        t->want = mk_input32(r, count);
        t->nwant = count;
        break;
    }
    free(in);
}

static int mk_rooted_call(void *ctx, mk_form_t form, MPI_Request *req) {
    mk_rooted_t *t = ctx;
    int count = (int)t->count;
    /* arguments MPI ignores on non-roots: NULL */
    void *root_rbuf = (0 == mk.rank) ? t->rbuf : NULL;
    const void *sbuf = (t->in_place && 0 == mk.rank) ? MPI_IN_PLACE : t->sbuf;
    const void *root_sbuf = (0 == mk.rank) ? t->sbuf : NULL;

    switch (t->coll) {
    case COLL_GPU_REDUCE:
        return MK_BLOCKING == form
                   ? MPI_Reduce(sbuf, root_rbuf, count, MPI_INT32_T, MPI_SUM, 0, MPI_COMM_WORLD)
               : MK_NONBLOCKING == form
                   ? MPI_Ireduce(sbuf, root_rbuf, count, MPI_INT32_T, MPI_SUM, 0, MPI_COMM_WORLD,
                                 req)
                   : TU_PERSISTENT(Reduce_init)(sbuf, root_rbuf, count, MPI_INT32_T, MPI_SUM, 0,
                                                MPI_COMM_WORLD, MPI_INFO_NULL, req);
    case COLL_GPU_GATHER:
        return MK_BLOCKING == form ? MPI_Gather(t->sbuf, count, MPI_INT32_T, root_rbuf, count,
                                                MPI_INT32_T, 0, MPI_COMM_WORLD)
               : MK_NONBLOCKING == form
                   ? MPI_Igather(t->sbuf, count, MPI_INT32_T, root_rbuf, count, MPI_INT32_T, 0,
                                 MPI_COMM_WORLD, req)
                   : TU_PERSISTENT(Gather_init)(t->sbuf, count, MPI_INT32_T, root_rbuf, count,
                                                MPI_INT32_T, 0, MPI_COMM_WORLD, MPI_INFO_NULL, req);
    case COLL_GPU_BCAST:
        return MK_BLOCKING == form ? MPI_Bcast(t->rbuf, count, MPI_INT32_T, 0, MPI_COMM_WORLD)
               : MK_NONBLOCKING == form
                   ? MPI_Ibcast(t->rbuf, count, MPI_INT32_T, 0, MPI_COMM_WORLD, req)
                   : TU_PERSISTENT(Bcast_init)(t->rbuf, count, MPI_INT32_T, 0, MPI_COMM_WORLD,
                                               MPI_INFO_NULL, req);
    default:
        return MK_BLOCKING == form ? MPI_Scatter(root_sbuf, count, MPI_INT32_T, t->rbuf, count,
                                                 MPI_INT32_T, 0, MPI_COMM_WORLD)
               : MK_NONBLOCKING == form
                   ? MPI_Iscatter(root_sbuf, count, MPI_INT32_T, t->rbuf, count, MPI_INT32_T, 0,
                                  MPI_COMM_WORLD, req)
                   : TU_PERSISTENT(Scatter_init)(root_sbuf, count, MPI_INT32_T, t->rbuf, count,
                                                 MPI_INT32_T, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                                                 req);
    }
}

static void mk_rooted_check(void *ctx, const char *what) {
    mk_rooted_t *t = ctx;

    if (NULL != t->want) {
        mk_check32(what, t->recv_mem, t->rbuf, t->want, t->nwant);
    }
}

static void mk_rooted_reload(void *ctx) {
    mk.salt++;
    mk_rooted_fill(ctx);
}

/* One rooted pattern at root 0: output (coll reduce or gather: every rank sends from device
 * memory, the root receives into host memory) or input (bcast or scatter: the root's data in
 * host memory, the others receive into device memory). */
static void mk_run_rooted(coll_gpu_coll_t coll, mk_form_t form, bool in_place) {
    bool output = COLL_GPU_REDUCE == coll || COLL_GPU_GATHER == coll;
    int r = mk.rank, n = mk.size;

    if (!mk_coll_on(coll)) {
        return;
    }
    for (int which = 0; which < 2; which++) {
        size_t count = mk_count(which, sizeof(int32_t));
        mk_rooted_t t = {.coll = coll, .count = count, .in_place = in_place};
        mk_call_t call = {.coll = coll,
                          .call = mk_rooted_call,
                          .check = mk_rooted_check,
                          .reload = mk_rooted_reload,
                          .ctx = &t};
        bool host_all = mk_host_rank(r, false), any_host_call = false, host_call;
        char name[96];

        /* output: the root's receive buffer on the host (its send buffer on the device, or
         * none in place); input: the root's data on the host, its own block received into
         * host memory too (scatter) */
        t.send_mem = (host_all || (!output && 0 == r)) ? TU_MEM_HOST : TU_MEM_DEVICE;
        t.recv_mem = (host_all || 0 == r) ? TU_MEM_HOST : TU_MEM_DEVICE;
        switch (coll) {
        case COLL_GPU_REDUCE:
            t.sbytes = count * sizeof(int32_t);
            t.rbytes = count * sizeof(int32_t);
            /* the root's whole call on the host: in place, or a host rank */
            host_call = (0 == r) ? (in_place || host_all) : host_all;
            for (int j = 0; j < n; j++) {
                any_host_call = any_host_call || mk_host_rank(j, false) || (0 == j && in_place);
            }
            break;
        case COLL_GPU_GATHER:
            t.sbytes = count * sizeof(int32_t);
            t.rbytes = (0 == r) ? count * (size_t)n * sizeof(int32_t) : 0;
            host_call = host_all;
            for (int j = 0; j < n; j++) {
                any_host_call = any_host_call || mk_host_rank(j, false);
            }
            break;
        case COLL_GPU_BCAST:
            t.sbytes = 0;
            t.rbytes = count * sizeof(int32_t);
            host_call = host_all || 0 == r;
            any_host_call = true;
            break;
        default:
            t.sbytes = (0 == r) ? count * (size_t)n * sizeof(int32_t) : 0;
            t.rbytes = count * sizeof(int32_t);
            host_call = host_all || 0 == r;
            any_host_call = true;
            break;
        }
        t.sbuf = mk_zeros(t.send_mem, t.sbytes);
        t.rbuf = mk_zeros(t.recv_mem, t.rbytes);
        mk_rooted_fill(&t);
        mk_expect(&call.expect, host_call, any_host_call, form,
                  (TU_MEM_DEVICE == t.send_mem ? t.sbytes : 0) +
                      (TU_MEM_DEVICE == t.recv_mem ? t.rbytes : 0));
        if (output && !in_place && !any_host_call && (MK_BLOCKING == form) && !mk.expect_staged &&
            tu_coll_native_expected(&mk.config, coll, n) &&
            !tu_staged_auto(&mk.config, coll, &mk.world, t.sbytes)) {
            /* a root's host receive buffer beside its device send buffer leaves no rank off the
             * native path: the algorithm writes through a device temporary */
            call.expect.path = TU_PATH_NATIVE;
        }
        if (1 == n && (COLL_GPU_BCAST == coll) && MK_PERSISTENT != form) {
            /* Open MPI returns before any coll module for a bcast on one rank */
            call.expect.path = TU_PATH_MAYBE;
        }
        snprintf(name, sizeof(name), "%s%s, root 0 %s", tu_coll_name(coll),
                 in_place ? " in place" : "",
                 output ? "receiving into host memory, device senders"
                        : "sending from host memory into device receivers");
        call.name = name;
        mk_run_call(&call, form, count);
        tu_mem_free(t.send_mem, t.sbuf);
        tu_mem_free(t.recv_mem, t.rbuf);
        free(t.want);
        mk.salt++;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Every rank's buffers of one kind, the kinds differing across ranks                         */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    coll_gpu_coll_t coll;
    size_t count;
    tu_mem_t mem;
    void *sbuf, *rbuf;
    int *counts, *displs; /* allgatherv */
    size_t rtotal;
    bool int8;
} mk_flat_t;

static int mk_flat_call(void *ctx, mk_form_t form, MPI_Request *req) {
    mk_flat_t *t = ctx;
    int count = (int)t->count;

    (void)form;
    (void)req;
    switch (t->coll) {
    case COLL_GPU_ALLREDUCE:
        return MPI_Allreduce(t->sbuf, t->rbuf, count, t->int8 ? MPI_INT8_T : MPI_INT32_T, MPI_SUM,
                             MPI_COMM_WORLD);
    case COLL_GPU_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(t->sbuf, t->rbuf, count, MPI_INT32_T, MPI_SUM,
                                        MPI_COMM_WORLD);
    default:
        return MPI_Allgatherv(t->sbuf, t->counts[mk.rank], MPI_INT32_T, t->rbuf, t->counts,
                              t->displs, MPI_INT32_T, MPI_COMM_WORLD);
    }
}

static void mk_flat_check(void *ctx, const char *what) {
    mk_flat_t *t = ctx;
    int n = mk.size;

    switch (t->coll) {
    case COLL_GPU_ALLREDUCE:
        if (t->int8) {
            int8_t *got = malloc(t->count), *want = malloc(t->count);
            for (size_t i = 0; i < t->count; i++) {
                uint8_t sum = 0;
                for (int j = 0; j < n; j++) {
                    sum = (uint8_t)(sum + (uint8_t)mk_in8(j, i));
                }
                want[i] = (int8_t)sum;
            }
            tu_mem_read(t->mem, got, t->rbuf, t->count);
            for (size_t i = 0; i < t->count; i++) {
                if (got[i] != want[i]) {
                    tu_fail("%s: element %zu is %d, expected %d (int8 sums wrap)", what, i,
                            (int)got[i], (int)want[i]);
                    break;
                }
            }
            free(got);
            free(want);
        } else {
            int32_t *want = calloc(t->count, sizeof(int32_t));
            for (int j = 0; j < n; j++) {
                for (size_t i = 0; i < t->count; i++) {
                    want[i] += mk_in32(j, i);
                }
            }
            mk_check32(what, t->mem, t->rbuf, want, t->count);
            free(want);
        }
        break;
    case COLL_GPU_REDUCE_SCATTER_BLOCK: {
        int32_t *want = calloc(t->count, sizeof(int32_t));
        for (int j = 0; j < n; j++) {
            for (size_t i = 0; i < t->count; i++) {
                want[i] += mk_in32(j, (size_t)mk.rank * t->count + i);
            }
        }
        mk_check32(what, t->mem, t->rbuf, want, t->count);
        free(want);
        break;
    }
    default: {
        int32_t *want = calloc(t->rtotal > 0 ? t->rtotal : 1, sizeof(int32_t));
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < t->counts[j]; i++) {
                want[t->displs[j] + i] = mk_in32(j, (size_t)i);
            }
        }
        mk_check32(what, t->mem, t->rbuf, want, t->rtotal);
        free(want);
        break;
    }
    }
}

/* coll with this rank's buffers on the host where host(rank), else on the device. */
static void mk_run_flat(coll_gpu_coll_t coll, bool int8, bool (*host)(int r), const char *pattern) {
    int r = mk.rank, n = mk.size;

    if (!mk_coll_on(coll)) {
        return;
    }
    for (int which = 0; which < 2; which++) {
        size_t count = int8 && 0 == which ? 8 : mk_count(which, int8 ? 1 : sizeof(int32_t));
        mk_flat_t t = {.coll = coll, .int8 = int8};
        mk_call_t call = {.coll = coll, .call = mk_flat_call, .check = mk_flat_check, .ctx = &t};
        size_t sbytes, rbytes;
        bool any_host = false;
        char name[128];

        if (COLL_GPU_REDUCE_SCATTER_BLOCK == coll || COLL_GPU_ALLGATHERV == coll) {
            count = count / (size_t)n > 0 ? count / (size_t)n : 1;
        }
        t.count = count;
        t.mem = host(r) ? TU_MEM_HOST : TU_MEM_DEVICE;
        for (int j = 0; j < n; j++) {
            any_host = any_host || host(j);
        }
        if (COLL_GPU_ALLREDUCE == coll && int8) {
            int8_t *in = malloc(count);
            for (size_t i = 0; i < count; i++) {
                in[i] = mk_in8(r, i);
            }
            t.sbuf = mk_copy_of(t.mem, in, count);
            free(in);
            sbytes = rbytes = count;
        } else if (COLL_GPU_ALLGATHERV == coll) {
            int32_t *in;
            /* blocks of different lengths, rank 1's empty, laid out in reverse rank order */
            t.counts = calloc((size_t)n, sizeof(int));
            t.displs = calloc((size_t)n, sizeof(int));
            for (int j = n - 1; j >= 0; j--) {
                t.counts[j] = (1 == j) ? 0 : (int)count + j;
                t.displs[j] = (int)t.rtotal;
                t.rtotal += (size_t)t.counts[j];
            }
            in = mk_input32(r, (size_t)t.counts[r]);
            sbytes = (size_t)t.counts[r] * sizeof(int32_t);
            t.sbuf = mk_copy_of(t.mem, in, sbytes);
            rbytes = t.rtotal * sizeof(int32_t);
            free(in);
        } else {
            size_t nin = COLL_GPU_REDUCE_SCATTER_BLOCK == coll ? count * (size_t)n : count;
            int32_t *in = mk_input32(r, nin);
            sbytes = nin * sizeof(int32_t);
            t.sbuf = mk_copy_of(t.mem, in, sbytes);
            rbytes = count * sizeof(int32_t);
            free(in);
        }
        t.rbuf = mk_zeros(t.mem, rbytes);
        mk_expect(&call.expect, host(r), any_host, MK_BLOCKING,
                  TU_MEM_DEVICE == t.mem ? sbytes + rbytes : 0);
        snprintf(name, sizeof(name), "%s %s, %s", tu_coll_name(coll), int8 ? "int8" : "int32",
                 pattern);
        call.name = name;
        mk_run_call(&call, MK_BLOCKING, count);
        tu_mem_free(t.mem, t.sbuf);
        tu_mem_free(t.mem, t.rbuf);
        free(t.counts);
        free(t.displs);
        mk.salt++;
    }
}

static bool mk_host_even(int r) { return mk_host_rank(r, 0 == r % 2); }
static bool mk_host_last(int r) { return mk_host_rank(r, r == mk.size - 1); }

/* ------------------------------------------------------------------------------------------ */
/* Intercommunicator                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* One collective on an intercommunicator of the even (color 0) and the odd world ranks, the
 * even group's buffers of kind mem0, the odd group's device memory.  allreduce gives each group
 * the sum of the other's inputs, allgather and alltoall the other's inputs in its rank order;
 * the rooted calls have the even group's leader as root (MPI_ROOT, its group's others
 * MPI_PROC_NULL): bcast and scatter send to the odd group, reduce and gather receive from it.
 * The nonblocking forms of allreduce and bcast likewise. */
static void mk_run_inter_call(MPI_Comm inter, coll_gpu_coll_t coll, int color, int lrank, int rsize,
                              size_t count, tu_mem_t mem0) {
    int r = mk.rank, n = mk.size, rc;
    tu_mem_t mem = (0 == color) ? mem0 : TU_MEM_DEVICE;
    /* the even group's root, the ranks with no part, and the rooted calls' remote ranks */
    int root = (0 == color) ? (0 == lrank ? MPI_ROOT : MPI_PROC_NULL) : 0;
    bool is_root = (MPI_ROOT == root);
    size_t blocks = count * (size_t)rsize;
    int32_t *in = mk_input32(r, blocks), *want = calloc(blocks, sizeof(int32_t));
    void *sbuf = mk_copy_of(mem, in, blocks * sizeof(int32_t));
    void *rbuf = mk_zeros(mem, blocks * sizeof(int32_t));
    size_t nwant = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    char what[160];

    snprintf(what, sizeof(what),
             "%s on an intercommunicator, even group %s, odd group device, "
             "count=%zu np=%d",
             tu_coll_name(coll), tu_mem_name(mem0), count, n);
    tu_case_begin("%s", what);
    switch (coll) {
    case COLL_GPU_ALLREDUCE:
    case COLL_GPU_IALLREDUCE:
        rc = (COLL_GPU_ALLREDUCE == coll)
                 ? MPI_Allreduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, inter)
                 : MPI_Iallreduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, inter, &req);
        for (int j = 1 - color; j < n; j += 2) {
            for (size_t i = 0; i < count; i++) {
                want[i] += mk_in32(j, i);
            }
        }
        nwant = count;
        break;
    case COLL_GPU_ALLGATHER:
        rc = MPI_Allgather(sbuf, (int)count, MPI_INT32_T, rbuf, (int)count, MPI_INT32_T, inter);
        for (int k = 0; k < rsize; k++) {
            for (size_t i = 0; i < count; i++) {
                want[(size_t)k * count + i] = mk_in32(2 * k + 1 - color, i);
            }
        }
        nwant = blocks;
        break;
    case COLL_GPU_ALLTOALL:
        /* block k of remote rank j's input comes to remote rank k as its block j */
        rc = MPI_Alltoall(sbuf, (int)count, MPI_INT32_T, rbuf, (int)count, MPI_INT32_T, inter);
        for (int k = 0; k < rsize; k++) {
            for (size_t i = 0; i < count; i++) {
                want[(size_t)k * count + i] = mk_in32(2 * k + 1 - color, (size_t)lrank * count + i);
            }
        }
        nwant = blocks;
        break;
    case COLL_GPU_REDUCE:
        rc = MPI_Reduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, root, inter);
        for (int j = 1; is_root && j < n; j += 2) {
            for (size_t i = 0; i < count; i++) {
                want[i] += mk_in32(j, i);
            }
        }
        nwant = is_root ? count : 0;
        break;
    case COLL_GPU_GATHER:
        rc = MPI_Gather(sbuf, (int)count, MPI_INT32_T, rbuf, (int)count, MPI_INT32_T, root, inter);
        for (int k = 0; is_root && k < rsize; k++) {
            for (size_t i = 0; i < count; i++) {
                want[(size_t)k * count + i] = mk_in32(2 * k + 1, i);
            }
        }
        nwant = is_root ? blocks : 0;
        break;
    case COLL_GPU_SCATTER:
        rc = MPI_Scatter(sbuf, (int)count, MPI_INT32_T, rbuf, (int)count, MPI_INT32_T, root, inter);
        for (size_t i = 0; (1 == color) && i < count; i++) {
            want[i] = mk_in32(0, (size_t)lrank * count + i);
        }
        nwant = (1 == color) ? count : 0;
        break;
    default: /* bcast, ibcast: the even group's root sends, the odd group receives */
        if (COLL_GPU_BCAST == coll) {
            rc = MPI_Bcast(0 == color ? sbuf : rbuf, (int)count, MPI_INT32_T, root, inter);
        } else {
            rc = MPI_Ibcast(0 == color ? sbuf : rbuf, (int)count, MPI_INT32_T, root, inter, &req);
        }
        for (size_t i = 0; i < count; i++) {
            want[i] = mk_in32(0, i);
        }
        nwant = (1 == color) ? count : 0;
        break;
    }
    if ((MPI_SUCCESS == rc) && (MPI_REQUEST_NULL != req)) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    mk_check_rc(tu_coll_name(coll), rc);
    mk_check32(what, mem, rbuf, want, nwant);
    tu_case_end();
    free(in);
    free(want);
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    mk.salt++;
}

static void mk_run_intercomm(void) {
    static const coll_gpu_coll_t colls[] = {
        COLL_GPU_ALLREDUCE, COLL_GPU_ALLGATHER,  COLL_GPU_ALLTOALL,
        COLL_GPU_BCAST,     COLL_GPU_REDUCE,     COLL_GPU_GATHER,
        COLL_GPU_SCATTER,   COLL_GPU_IALLREDUCE, COLL_GPU_IBCAST};
    static const tu_mem_t even_kinds[] = {TU_MEM_DEVICE, TU_MEM_HOST};
    MPI_Comm local, inter;
    int r = mk.rank, color = r % 2, lrank, rsize;

    if (mk.size < 2) {
        return;
    }
    MPI_Comm_split(MPI_COMM_WORLD, color, r, &local);
    /* the other group's leader: world rank 1 for the even group, 0 for the odd one */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_remote_size(inter, &rsize);
    for (size_t m = 0; m < sizeof(even_kinds) / sizeof(even_kinds[0]); m++) {
        for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); k++) {
            for (int which = 0; which < 2 && mk_coll_on(colls[k]); which++) {
                mk_run_inter_call(inter, colls[k], color, lrank, rsize,
                                  mk_count(which, sizeof(int32_t)), even_kinds[m]);
            }
        }
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* ------------------------------------------------------------------------------------------ */
/* MPI_Iallreduce after the native context's setup                                            */
/* ------------------------------------------------------------------------------------------ */

static void mk_run_iallreduce(void) {
    MPI_Comm comm = MPI_COMM_WORLD;
    int n = mk.size;

    /* (main set the native context up: nonblocking calls on device memory may run natively
     * after it) */
    for (int which = 0; which < 2; which++) {
        size_t count = mk_count(which, sizeof(int32_t));
        int32_t *in = mk_input32(mk.rank, count), *want = calloc(count, sizeof(int32_t));
        void *sbuf = mk_copy_of(TU_MEM_DEVICE, in, count * sizeof(int32_t));
        void *rbuf = mk_zeros(TU_MEM_DEVICE, count * sizeof(int32_t));
        MPI_Request request = MPI_REQUEST_NULL;
        tu_counters_t before, after;
        tu_expect_t expect = {.chunks = TU_CHUNKS_NONE,
                              .device_payload = 2 * count * sizeof(int32_t)};
        char what[128];
        int rc;

        /* staged, unless every rank promised uniform kinds and runs it natively (a parameter
         * that differs takes every rank to staging) */
        expect.path =
            (!mk.expect_staged && tu_coll_native_expected(&mk.config, COLL_GPU_IALLREDUCE, n))
                ? TU_PATH_NATIVE
                : TU_PATH_STAGED;
        snprintf(what, sizeof(what),
                 "MPI_Iallreduce on device memory after the native context's setup, count=%zu "
                 "np=%d",
                 count, n);
        tu_case_begin("%s", what);
        tu_counters_read(&before);
        rc = MPI_Iallreduce(sbuf, rbuf, (int)count, MPI_INT32_T, MPI_SUM, comm, &request);
        mk_check_rc("MPI_Iallreduce", rc);
        if (MPI_SUCCESS == rc) {
            mk_check_rc("MPI_Wait", MPI_Wait(&request, MPI_STATUS_IGNORE));
        }
        tu_counters_read(&after);
        for (int j = 0; j < n; j++) {
            for (size_t i = 0; i < count; i++) {
                want[i] += mk_in32(j, i);
            }
        }
        mk_check32(what, TU_MEM_DEVICE, rbuf, want, count);
        tu_check_counters(&before, &after, COLL_GPU_IALLREDUCE, 1, &expect);
        tu_case_end();
        free(in);
        free(want);
        tu_mem_free(TU_MEM_DEVICE, sbuf);
        tu_mem_free(TU_MEM_DEVICE, rbuf);
        mk.salt++;
    }
}

/* ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    const char *cases = NULL, *odd_env = NULL;
    tu_options_t opts;
    const tu_arg_t own[] = {
        {"--cases=", TU_ARG_STRING, &cases},
        {"--colls=", TU_ARG_STRING, &mk.colls},
        {"--host-ranks=", TU_ARG_INT, &mk.host_ranks},
        {"--odd-env=", TU_ARG_STRING, &odd_env},
        {"--expect-staged", TU_ARG_FLAG, &mk.expect_staged},
        {NULL, TU_ARG_FLAG, NULL},
    };
    static const coll_gpu_coll_t output_colls[] = {COLL_GPU_REDUCE, COLL_GPU_GATHER};
    static const coll_gpu_coll_t input_colls[] = {COLL_GPU_BCAST, COLL_GPU_SCATTER};
    static const char *const form_suffix[MK_NUM_FORMS] = {"", "_nb", "_pers"};

    /* --odd-env before MPI_Init: the parameter must be in the environment when Open MPI reads
     * it (argv outlives the process's use of it) */
    for (int i = 1; i < argc; i++) {
        if (0 == strncmp(argv[i], "--odd-env=", 10) && NULL != strchr(argv[i] + 10, '=') &&
            NULL != local_rank && 1 == atoi(local_rank) % 2) {
            putenv(argv[i] + 10);
        }
    }
    MPI_Init(&argc, &argv);
    tu_parse_args(argc, argv, "test_memory_kinds", own, &opts);
    MPI_Comm_rank(MPI_COMM_WORLD, &mk.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mk.size);
    mk.cases_all = (NULL == cases);
    mk.cases = cases;
    mk.big_bytes = opts.big_bytes;
    /* device memory is what every case is about */
    opts.num_kinds = 1;
    tu_kind_set(&opts.kinds[0], TU_MEM_DEVICE, TU_MEM_DEVICE);
    tu_setup_or_exit(&opts);
    tu_gpu_config_read(&mk.config);
    mk.world = (tu_comm_t){.comm = MPI_COMM_WORLD,
                           .rank = mk.rank,
                           .size = mk.size,
                           .world_ranks = malloc((size_t)mk.size * sizeof(int))};
    for (int i = 0; (NULL != mk.world.world_ranks) && (i < mk.size); i++) {
        mk.world.world_ranks[i] = i;
    }
    {
        /* one blocking MPI_Allreduce on device memory first, as a program's first call may be:
         * the native context, after which nonblocking and persistent calls on device memory
         * may run natively (only where every rank promised uniform kinds) */
        MPI_Comm world = MPI_COMM_WORLD;

        tu_native_scratch_setup(&world, 1, &mk.config);
    }

    for (int form = 0; form < MK_NUM_FORMS; form++) {
        char name[32];

        snprintf(name, sizeof(name), "output%s", form_suffix[form]);
        if (mk_case_on(name)) {
            for (size_t k = 0; k < sizeof(output_colls) / sizeof(output_colls[0]); k++) {
                mk_run_rooted(output_colls[k], form, false);
            }
            mk_run_rooted(COLL_GPU_REDUCE, form, true);
        }
        snprintf(name, sizeof(name), "input%s", form_suffix[form]);
        if (mk_case_on(name)) {
            for (size_t k = 0; k < sizeof(input_colls) / sizeof(input_colls[0]); k++) {
                mk_run_rooted(input_colls[k], form, false);
            }
        }
    }
    if (mk_case_on("allreduce")) {
        mk_run_flat(COLL_GPU_ALLREDUCE, true, mk_host_even,
                    mk.host_ranks > 0 ? "the first ranks host, the others device"
                                      : "even ranks host, odd ranks device");
        mk_run_flat(COLL_GPU_ALLREDUCE, false, mk_host_even,
                    mk.host_ranks > 0 ? "the first ranks host, the others device"
                                      : "even ranks host, odd ranks device");
    }
    if (mk_case_on("one_host")) {
        const char *pattern = mk.host_ranks > 0 ? "the first ranks host, the others device"
                                                : "the last rank host, the others device";
        mk_run_flat(COLL_GPU_REDUCE_SCATTER_BLOCK, false, mk_host_last, pattern);
        mk_run_flat(COLL_GPU_ALLGATHERV, false, mk_host_last, pattern);
    }
    if (mk_case_on("intercomm")) {
        mk_run_intercomm();
    }
    if (mk_case_on("iallreduce")) {
        mk_run_iallreduce();
    }
    free(mk.world.world_ranks);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}

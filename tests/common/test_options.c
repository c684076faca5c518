/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command line and set-up of the coll/gpu MPI tests: see test_options.h.
 */
/* strdup, strtok_r: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "test_cases.h"
#include "test_counters.h"
#include "test_report.h"
#include "test_types.h"

void tu_options_default(tu_options_t *opts) {
    memset(opts, 0, sizeof(*opts));
    opts->backend = ACCEL_BACKEND_EMULATED;
    opts->big_bytes = 4 << 20;
    opts->component = true;
}

/* Calls parse_one on every comma-separated token of list (a copy it may modify) until one
 * fails (< 0); 0 or -1. */
static int tu_parse_list(tu_options_t *opts, const char *list,
                         int (*parse_one)(tu_options_t *opts, char *tok)) {
    char *copy = strdup(list), *save = NULL;
    int rc = 0;

    for (char *tok = strtok_r(copy, ",", &save); NULL != tok; tok = strtok_r(NULL, ",", &save)) {
        if (parse_one(opts, tok) < 0) {
            rc = -1;
            break;
        }
    }
    free(copy);
    return rc;
}

/* SEND>RECV or a memory name (both buffers) into *kind; -1 if neither. */
static int tu_parse_kind_pair(char *tok, tu_kind_t *kind) {
    char *arrow = strchr(tok, '>');
    int send, recv;

    if (NULL != arrow) {
        *arrow = '\0';
        send = tu_mem_from_name(tok);
        recv = tu_mem_from_name(arrow + 1);
    } else {
        send = recv = tu_mem_from_name(tok);
    }
    if (send < 0 || recv < 0) {
        return -1;
    }
    tu_kind_set(kind, send, recv);
    return 0;
}

/* One token of --kinds=: "mixed", SEND>RECV or a memory name. */
static int tu_parse_kind(tu_options_t *opts, char *tok) {
    if (opts->num_kinds + 2 > TU_MAX_KINDS) {
        return -1;
    }
    if (0 == strcasecmp(tok, "mixed")) {
        /* send buffer on host, receive on device, and vice versa */
        tu_kind_set(&opts->kinds[opts->num_kinds++], TU_MEM_HOST, TU_MEM_DEVICE);
        tu_kind_set(&opts->kinds[opts->num_kinds++], TU_MEM_DEVICE, TU_MEM_HOST);
        return 0;
    }
    return tu_parse_kind_pair(tok, &opts->kinds[opts->num_kinds++]);
}

/* One token of --rank-kinds=: SEND>RECV or a memory name. */
static int tu_parse_rank_kind(tu_options_t *opts, char *tok) {
    if (opts->num_rank_kinds >= TU_MAX_KINDS) {
        return -1;
    }
    return tu_parse_kind_pair(tok, &opts->rank_kinds[opts->num_rank_kinds++]);
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
        opts->num_kinds = 0;
        return tu_parse_list(opts, arg + 8, tu_parse_kind) ? -1 : 1;
    }
    if (0 == strncmp(arg, "--rank-kinds=", 13)) {
        opts->num_rank_kinds = 0;
        return tu_parse_list(opts, arg + 13, tu_parse_rank_kind) ? -1 : 1;
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
    if (0 == strncmp(arg, "--odd-env=", 10)) {
        return (NULL != strchr(arg + 10, '=')) ? 1 : -1; /* (tu_odd_env_apply, before MPI_Init) */
    }
    if (0 == strcmp(arg, "-v")) {
        opts->verbose++;
        return 1;
    }
    return 0;
}

void tu_odd_env_apply(int argc, char **argv) {
    const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");

    if ((NULL == local_rank) || (1 != atoi(local_rank) % 2)) {
        return;
    }
    for (int i = 1; i < argc; ++i) {
        const char *pair = argv[i] + 10, *eq;
        char name[256];

        if ((0 != strncmp(argv[i], "--odd-env=", 10)) || (NULL == (eq = strchr(pair, '='))) ||
            ((size_t)(eq - pair) >= sizeof(name))) {
            continue;
        }
        memcpy(name, pair, (size_t)(eq - pair));
        name[eq - pair] = '\0';
        setenv(name, eq + 1, 1);
    }
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
        "  --rank-kinds=LIST  world rank r passes LIST[r %% n]: a memory name (all its buffers)\n"
        "                     or SEND>RECV; the ranks of one call pass different kinds\n"
        "  --device=emulated|cuda  the accelerator behind pinned/managed/device memory\n"
        "                     (cuda without a GPU: SKIP, exit 77)\n"
        "  --big=BYTES[k|m]   size of the big cases (0: none; default 4m)\n"
        "  --no-component     run without coll/gpu: no counter checks (host memory only)\n"
        "  --case-timeout=S   a case running longer has hung: fail (default 120, 0: never)\n"
        "  --odd-env=NAME=VALUE  the ranks of odd local rank put NAME=VALUE in their\n"
        "                     environment before MPI_Init (programs that call tu_odd_env_apply)\n"
        "  --verbose=N, -v    print passing cases too\n");
}

tu_kind_t tu_options_rank_kind(const tu_options_t *opts, const tu_kind_t *kind, int world_rank) {
    if (opts->num_rank_kinds > 0) {
        return opts->rank_kinds[world_rank % opts->num_rank_kinds];
    }
    return *kind;
}

bool tu_options_ranks_differ(const tu_options_t *opts) {
    for (int i = 1; i < opts->num_rank_kinds && i < tu_world_size; i++) {
        if (opts->rank_kinds[i].send != opts->rank_kinds[0].send ||
            opts->rank_kinds[i].recv != opts->rank_kinds[0].recv) {
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
    for (int i = 0; i < opts->num_rank_kinds; i++) {
        if (TU_MEM_HOST != opts->rank_kinds[i].send || TU_MEM_HOST != opts->rank_kinds[i].recv) {
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

    tu_garbage_init();
    tu_types_create();
    if (opts->component && !tu_counters_open(true)) {
        /* nothing can be proven without the counters, and device memory would reach Open MPI
         * unstaged (and fault): stop here with the closing line */
        return tu_summary(MPI_COMM_WORLD);
    }
    return TU_EXIT_PASS;
}

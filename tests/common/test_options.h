/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The command line of the coll/gpu MPI tests (the common options and a program's own, from a
 * table) and their set-up: the accelerator when a buffer kind needs it, the datatypes and ops,
 * the component's counters.
 */
#ifndef TEST_OPTIONS_H
#define TEST_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "test_buffers.h"

typedef struct {
    tu_kind_t kinds[TU_MAX_KINDS]; /* --kinds=host,device,managed,pinned,mixed */
    int num_kinds;
    /* --rank-kinds=host,device>host,...: world rank r passes rank_kinds[r % num_rank_kinds] */
    tu_kind_t rank_kinds[TU_MAX_KINDS];
    int num_rank_kinds;
    accel_backend_kind_t backend; /* --device=emulated|cuda */
    size_t big_bytes;             /* --big=BYTES[k|m]: size of the big cases, 0 = none */
    bool component;               /* false with --no-component: validate a test against plain
                                     Open MPI (host memory only), no counter checks */
    int verbose;                  /* --verbose=N */
} tu_options_t;

void tu_options_default(tu_options_t *opts);
/* 1: arg was a common option and is consumed, 0: not a common option, -1: bad value. */
int tu_options_parse_one(tu_options_t *opts, const char *arg);
void tu_options_usage(void);
/* The kind pair world rank `world_rank` uses for a case of kind `kind`: with --rank-kinds
 * every rank has its own (a memory for all its buffers, or SEND>RECV), else every rank uses
 * `kind`. */
tu_kind_t tu_options_rank_kind(const tu_options_t *opts, const tu_kind_t *kind, int world_rank);
bool tu_options_ranks_differ(const tu_options_t *opts);

/* A program's own command-line option, looked at before the common ones.  A name ending in
 * '=' takes a value ("--big-bytes="), any other is a flag matched whole ("--small"). */
typedef enum {
    TU_ARG_FLAG,   /* bool *: set to true */
    TU_ARG_SIZE,   /* size_t *: strtoull, any base */
    TU_ARG_INT,    /* int *: atoi */
    TU_ARG_COUNT,  /* size_t *: a number > 0, anything else is a bad argument */
    TU_ARG_STRING, /* const char **: the text after '=' */
} tu_arg_kind_t;

typedef struct {
    const char *name;
    tu_arg_kind_t kind;
    void *value;
} tu_arg_t;

/* After MPI_Init: sets tu_world_rank, the defaults in opts, then reads argv[1..] into the
 * program's options (`own`, ended by a NULL name; NULL for none) and the common ones.  An
 * argument that is neither: rank 0 prints "PROGRAM: bad argument ARG" and the program ends
 * (TU_EXIT_FAIL). */
void tu_parse_args(int argc, char **argv, const char *program, const tu_arg_t *own,
                   tu_options_t *opts);

/* Before MPI_Init: each --odd-env=NAME=VALUE of argv is put in the environment of the ranks of odd
 * local rank (OMPI_COMM_WORLD_LOCAL_RANK): an OMPI_MCA_ name gives them a parameter the others
 * have not (on one node of 3 ranks, world rank 1 alone).  tu_parse_args takes the option as a
 * common one and ignores it. */
void tu_odd_env_apply(int argc, char **argv);

/* After MPI_Init and option parsing: brings up the accelerator when a kind needs it and opens
 * the component's counters.  Returns TU_EXIT_PASS, TU_EXIT_SKIP (kind cuda without a GPU:
 * "SKIP: <reason>" printed by rank 0) or TU_EXIT_FAIL.  Collective over MPI_COMM_WORLD. */
int tu_setup(const tu_options_t *opts);
/* tu_setup, ending the program (tu_finish) with its code unless it passed. */
void tu_setup_or_exit(const tu_options_t *opts);

#endif /* TEST_OPTIONS_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether coll/gpu is in the call path, and that it stays out of the way when it must.
 *
 *   --expect=enabled   the component is loaded and active: its MPI_T counters exist with the
 *                      contract's shape (arrays of MPI_UNSIGNED_LONG_LONG, one element per
 *                      collective of coll_gpu_colls.h; continuous, read-only, no binding) and
 *                      its parameters are control variables; every collective on host memory
 *                      passes straight through (calls_passthrough +1, nothing staged, no device
 *                      copy); with --kinds=...,device every collective on device memory is
 *                      staged.
 *   --expect=disabled  the component was found (its parameters exist) but is disabled
 *                      (coll_gpu_enable 0, or an accelerator that is not there): collectives
 *                      on host memory are correct, and its counters, if registered, stay 0.
 *   --expect=absent    the component is not loaded at all: collectives are correct.
 *
 * Prints "staged calls: N" (all ranks together) for check_selection.sh's verbose-output check.
 * Closing line (rank 0): "N passed, M failed".
 */
/* strdup, strtok_r, strcasecmp, alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { EXPECT_ENABLED, EXPECT_DISABLED, EXPECT_ABSENT } expect_mode_t;

static const char *const parameters[] = {
    "coll_gpu_priority",
    "coll_gpu_enable",
    "coll_gpu_verbose",
    "coll_gpu_accelerator",
    "coll_gpu_staging_buffer_size",
    "coll_gpu_staged_pipeline",
    "coll_gpu_check_memory_kinds",
};

static const struct {
    const char *name;
    int count;
} counters[] = {
    {"coll_gpu_calls_passthrough", COLL_GPU_NUM_COLLS},
    {"coll_gpu_calls_staged", COLL_GPU_NUM_COLLS},
    {"coll_gpu_staged_bytes", 1},
    {"coll_gpu_staged_chunks", 1},
    {"coll_gpu_pageable_fallbacks", 1},
    {"coll_gpu_accelerator_errors", 1},
};

#define NUM_COUNTERS (int)(sizeof(counters) / sizeof(counters[0]))

static void usage(void) {
    printf("usage: test_selection --expect=enabled|disabled|absent [options]\n");
    tu_options_usage();
}

/* Returns true if a cvar of that name exists (whatever its type). */
static bool cvar_exists(const char *name) {
    int num = 0, provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_cvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char var_name[256], desc[1024];
        int name_len = sizeof(var_name), desc_len = sizeof(desc), verbosity, bind, scope;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS == MPI_T_cvar_get_info(i, var_name, &name_len, &verbosity, &datatype,
                                               &enumtype, desc, &desc_len, &bind, &scope) &&
            0 == strcmp(var_name, name)) {
            return true;
        }
    }
    return false;
}

/* The pvar's properties as the contract states them; false if it does not exist. */
static bool check_pvar_shape(const char *name, int count) {
    int num = 0;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char var_name[256], desc[1024];
        int name_len = sizeof(var_name), desc_len = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype datatype;
        MPI_T_enum enumtype;
        tu_pvar_t pvar;

        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, var_name, &name_len, &verbosity, &var_class,
                                               &datatype, &enumtype, desc, &desc_len, &bind,
                                               &readonly, &continuous, &atomic) ||
            0 != strcmp(var_name, name)) {
            continue;
        }
        if (!readonly || !continuous || MPI_T_BIND_NO_OBJECT != bind) {
            tu_fail("pvar %s: readonly %d, continuous %d, bind %d (expected 1, 1, "
                    "MPI_T_BIND_NO_OBJECT)",
                    name, readonly, continuous, bind);
        }
        if (COLL_GPU_NUM_COLLS == count && MPI_UNSIGNED_LONG_LONG != datatype) {
            tu_fail("pvar %s is not an array of MPI_UNSIGNED_LONG_LONG", name);
        }
        if (0 == desc_len || '\0' == desc[0]) {
            tu_fail("pvar %s has no description", name);
        }
        if (0 == tu_pvar_open(name, &pvar) && pvar.count != count) {
            tu_fail("pvar %s has %d elements, expected %d", name, pvar.count, count);
        }
        return true;
    }
    return false;
}

/* One small call of every collective in `kind`, each checked. */
static long run_all(const tu_comm_t *comms, const tu_kind_t *kind, const tu_gpu_config_t *config,
                    bool check_path) {
    long staged = 0;
    for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
        if (!tu_coll_case_supported(coll)) {
            continue; /* test_neighbor's */
        }
        for (int cm = 0; cm < 2; cm++) {
            tu_coll_case_t *c;
            tu_expect_t expect;
            tu_counters_t before, after;
            MPI_Request req = MPI_REQUEST_NULL;
            tu_coll_params_t p = {
                .coll = coll,
                .type = cm ? TU_TYPE_DOUBLE : TU_TYPE_INT32,
                .op = TU_OP_SUM,
                .count = 5,
                .comm = &comms[cm],
                .root = comms[cm].size - 1,
                .kind = *kind,
                .salt = (uint32_t)(coll * 2 + cm),
            };
            int rc;

            if (0 != tu_coll_case_create(&p, &c)) {
                fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            tu_coll_case_expect(c, config, NULL, &expect);
            tu_case_begin("%s", tu_coll_case_desc(c));
            tu_counters_read(&before);
            rc = tu_coll_case_start(c, &req);
            if (MPI_SUCCESS == rc && tu_coll_is_persistent(coll)) {
                rc = MPI_Start(&req); /* made by the call above, inactive */
            }
            if (MPI_SUCCESS == rc && MPI_REQUEST_NULL != req) {
                rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            if (MPI_REQUEST_NULL != req) {
                MPI_Request_free(&req); /* a persistent one */
            }
            tu_counters_read(&after);
            if (MPI_SUCCESS != rc) {
                tu_fail("returned %d", rc);
            }
            tu_coll_case_verify(c);
            if (check_path) {
                tu_check_counters(&before, &after, coll, 1, &expect);
                staged += TU_PATH_STAGED == expect.path;
            }
            tu_case_end();
            tu_coll_case_destroy(c);
        }
    }
    return staged;
}

int main(int argc, char **argv) {
    tu_options_t opts;
    expect_mode_t mode = EXPECT_ENABLED;
    tu_gpu_config_t config;
    tu_comm_t comms[2];
    long staged = 0, staged_all = 0;
    int rc;

    MPI_Init(&argc, &argv);
    tu_options_default(&opts);
    for (int i = 1; i < argc; i++) {
        rc = tu_options_parse_one(&opts, argv[i]);
        if (rc > 0) {
            continue;
        }
        if (0 == rc && 0 == strcmp(argv[i], "--expect=enabled")) {
            mode = EXPECT_ENABLED;
        } else if (0 == rc && 0 == strcmp(argv[i], "--expect=disabled")) {
            mode = EXPECT_DISABLED;
        } else if (0 == rc && 0 == strcmp(argv[i], "--expect=absent")) {
            mode = EXPECT_ABSENT;
        } else {
            MPI_Comm_rank(MPI_COMM_WORLD, &tu_world_rank);
            if (0 == tu_world_rank) {
                fprintf(stderr, "test_selection: bad argument %s\n", argv[i]);
                usage();
            }
            tu_finish(TU_EXIT_FAIL);
        }
    }
    if (0 == opts.num_kinds) {
        tu_options_parse_one(&opts, "--kinds=host");
    }
    /* the counters are required only when the component must be active */
    opts.component = EXPECT_ENABLED == mode;
    tu_setup_or_exit(&opts);
    tu_gpu_config_read(&config);

    tu_case_begin("the component's parameters and counters (%s)", EXPECT_ENABLED == mode ? "enabled"
                                                                  : EXPECT_DISABLED == mode
                                                                      ? "disabled"
                                                                      : "absent");
    for (size_t i = 0; i < sizeof(parameters) / sizeof(parameters[0]); i++) {
        bool exists = cvar_exists(parameters[i]);
        if (EXPECT_ABSENT == mode && exists) {
            tu_fail("parameter %s exists: the component was loaded", parameters[i]);
        } else if (EXPECT_ABSENT != mode && !exists) {
            tu_fail("parameter %s is not an MPI_T control variable: the component was not "
                    "found (mca_base_component_path?)",
                    parameters[i]);
        }
    }
    for (int i = 0; i < NUM_COUNTERS; i++) {
        bool exists = check_pvar_shape(counters[i].name, counters[i].count);
        if (EXPECT_ENABLED == mode && !exists) {
            tu_fail("pvar %s not found", counters[i].name);
        } else if (EXPECT_ABSENT == mode && exists) {
            tu_fail("pvar %s exists: the component was loaded", counters[i].name);
        }
    }
    tu_case_end();

    if (0 != tu_comm_create(TU_COMM_WORLD, &comms[0]) ||
        0 != tu_comm_create(TU_COMM_SPLIT_REVERSED, &comms[1])) {
        tu_fail("cannot create the communicators");
        tu_finish(tu_summary(MPI_COMM_WORLD));
    }

    if (EXPECT_ENABLED == mode) {
        /* the scratch the device calls run in, set up first: nonblocking device calls then run
         * natively, wherever they come in the list */
        MPI_Comm mpi_comms[2] = {comms[0].comm, comms[1].comm};
        tu_native_scratch_setup(mpi_comms, 2, &config);
        for (int k = 0; k < opts.num_kinds; k++) {
            staged += run_all(comms, &opts.kinds[k], &config, true);
        }
    } else {
        /* host memory only: device memory would reach Open MPI unstaged */
        tu_kind_t host = {"host", TU_MEM_HOST, TU_MEM_HOST};
        bool have_counters = tu_counters_open(false);
        tu_counters_t start, end;
        tu_counters_read(&start);
        run_all(comms, &host, &config, false);
        tu_counters_read(&end);
        tu_case_begin("the disabled component counted nothing");
        if (EXPECT_DISABLED == mode && have_counters) {
            for (int coll = 0; coll < COLL_GPU_NUM_COLLS; coll++) {
                if (0 != end.passthrough[coll] || 0 != end.staged[coll]) {
                    tu_fail("%s: calls_passthrough %llu, calls_staged %llu (expected 0)",
                            tu_coll_name(coll), (unsigned long long)end.passthrough[coll],
                            (unsigned long long)end.staged[coll]);
                }
            }
            if (0 != end.staged_bytes || 0 != end.staged_chunks || 0 != end.accelerator_errors) {
                tu_fail("staged_bytes %llu, staged_chunks %llu, accelerator_errors %llu "
                        "(expected 0)",
                        (unsigned long long)end.staged_bytes, (unsigned long long)end.staged_chunks,
                        (unsigned long long)end.accelerator_errors);
            }
        }
        tu_case_end();
        (void)start;
    }

    MPI_Reduce(&staged, &staged_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == tu_world_rank) {
        printf("staged calls: %ld\n", staged_all);
    }
    tu_comm_free(&comms[0]);
    tu_comm_free(&comms[1]);
    tu_finish(tu_summary(MPI_COMM_WORLD));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_T pvars and cvars of the coll/gpu MPI tests: see test_mpit.h.
 */
#include "test_mpit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "test_report.h"

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

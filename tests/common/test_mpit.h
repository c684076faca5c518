/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_T for the coll/gpu MPI tests: performance variables (the component's counters) and
 * control variables (its parameters), found by name.
 */
#ifndef TEST_MPIT_H
#define TEST_MPIT_H

#include <mpi.h>
#include <stdint.h>

typedef struct {
    int index;
    int count; /* elements */
    MPI_Datatype datatype;
    MPI_T_pvar_handle handle;
} tu_pvar_t;

/* Found by name in any class; 0 on success, -1 when no such pvar exists. */
int tu_pvar_open(const char *name, tu_pvar_t *pvar);
/* A pvar the test cannot do without: when it is missing, a failed case "pvar" ("NAME not
 * found: component not loaded?") and the program ends with the summary. */
void tu_pvar_open_required(const char *name, tu_pvar_t *pvar);
/* Reads all elements (up to max_values) converted to uint64_t; returns the count read. */
int tu_pvar_read(const tu_pvar_t *pvar, uint64_t *values, int max_values);
uint64_t tu_pvar_read_element(const tu_pvar_t *pvar, int element);
/* Collective over MPI_COMM_WORLD: returns once no rank has a freed communicator's team left
 * (the coll_gpu_teams_retiring pvar is 0 everywhere; the barriers progress them), so that
 * resources can be counted.  Does nothing without the pvar. */
void tu_settle_retired_teams(void);
/* An integer or boolean cvar by its full name ("coll_gpu_staging_buffer_size"); 0 or -1. */
int tu_cvar_read_int(const char *name, long long *value_p);

#endif /* TEST_MPIT_H */

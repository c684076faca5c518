/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pass/fail accounting of the coll/gpu MPI tests: cases, failures, notes, the watchdog that
 * fails a case that hangs, and the closing line "N passed, M failed" (parsed by CI).
 */
#ifndef TEST_REPORT_H
#define TEST_REPORT_H

#include <mpi.h>
#include <stdbool.h>

#define TU_EXIT_PASS 0
#define TU_EXIT_FAIL 1
#define TU_EXIT_SKIP 77

extern int tu_world_rank;
extern int tu_world_size;
extern int tu_verbose;
extern int tu_case_timeout; /* seconds; a case running longer fails the process (0: off) */

/* Pass/fail accounting.  A case is one checked call; it fails when any check failed. */
void tu_case_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Changes the description failures are reported under, keeping the case's state (a group
 * of requests checked as one case). */
void tu_case_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool tu_case_failed(void);
bool tu_case_end(void);
void tu_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sums the counts of every rank with MPI_Allreduce, rank 0 prints "N passed, M failed";
 * returns TU_EXIT_PASS or TU_EXIT_FAIL (the same on every rank). */
int tu_summary(MPI_Comm comm);
/* Ends the program: MPI_Finalize then exit(code). */
void tu_finish(int code) __attribute__((noreturn));

#endif /* TEST_REPORT_H */

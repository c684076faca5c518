/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A fork-based launcher for transport tests without MPI: test_oob_run() forks
 * size processes that run the same function, with an out-of-band allgather
 * and barrier over a shared anonymous mapping (the cgt_oob_allgather_fn_t of
 * shmem-transport).  Killing a process is easy here: the parent reaps it at
 * once, and the OOB operations of the others fail instead of hanging.
 */
#ifndef TEST_OOB_FORK_H
#define TEST_OOB_FORK_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TEST_OOB_MAX_PROCS 64
/* Bytes one rank may contribute to one allgather. */
#define TEST_OOB_SLOT_SIZE ((size_t)64 << 10)

typedef struct test_oob test_oob_t;

/* Runs in every process; returns the number of failed checks (0: the process exits 0). */
typedef int (*test_oob_main_fn_t)(test_oob_t *oob, int rank, int size, void *arg);

/*
 * Fork size processes running fn, wait for all of them (at most timeout seconds: then every
 * process left is killed).  Forks once the caller's process has no other thread (a lock another
 * thread holds would be held forever in the children), waiting up to 10 s for them to end.
 * status[r] (may be NULL) receives rank r's exit code, 128 + signal when a signal killed it, -1
 * when it was killed for the timeout.  Returns the number of ranks whose status is not 0, or -1
 * when the launch itself failed.
 */
int test_oob_run(int size, double timeout, test_oob_main_fn_t fn, void *arg, int *status);

/* cgt_oob_allgather_fn_t: ctx is the test_oob_t; 0 on success, -1 when a process died or the
 * wait lasted more than the launch's timeout. */
int test_oob_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx);
int test_oob_barrier(test_oob_t *oob);
pid_t test_oob_pid(const test_oob_t *oob, int rank);
/* Called while this process waits in the OOB (a transport's progress: cgt_team_progress);
 * NULL: none. */
void test_oob_set_progress(test_oob_t *oob, void (*fn)(void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* TEST_OOB_FORK_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fork-based launcher and shared-memory OOB (test_oob_fork.h).
 *
 * One anonymous MAP_SHARED region, made before the fork: a header (barrier
 * counter and generation, the failure flag the parent raises when a process
 * dies, the pids) and one slot of TEST_OOB_SLOT_SIZE bytes per rank.
 */
#define _GNU_SOURCE
#include "test_oob_fork.h"
#include "test_thread_count.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    atomic_uint arrived;
    atomic_uint generation;
    atomic_int failed; /* a process died: OOB calls fail */
    double timeout;
    int size;
    pid_t pids[TEST_OOB_MAX_PROCS];
} test_oob_shared_t;

struct test_oob {
    test_oob_shared_t *shared;
    char *slots;
    int rank;
    int size;
    void (*progress)(void *);
    void *progress_arg;
};

static double test_oob_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int test_oob_barrier(test_oob_t *oob) {
    test_oob_shared_t *sh = oob->shared;
    unsigned gen = atomic_load(&sh->generation);
    double start = 0;

    if (atomic_fetch_add(&sh->arrived, 1) == (unsigned)oob->size - 1) {
        atomic_store(&sh->arrived, 0);
        atomic_fetch_add(&sh->generation, 1);
        return 0;
    }
    for (unsigned spins = 0; atomic_load(&sh->generation) == gen; ++spins) {
        /* the generation first: a peer that left after this barrier is no failure */
        if (atomic_load(&sh->failed)) {
            return -1;
        }
        if (oob->progress != NULL) {
            oob->progress(oob->progress_arg);
        }
        if (spins < 256) {
            continue;
        }
        if (start == 0) {
            start = test_oob_now();
        } else if (test_oob_now() - start > sh->timeout) {
            fprintf(stderr, "test_oob: rank %d: barrier timed out\n", oob->rank);
            return -1;
        }
        sched_yield();
    }
    return 0;
}

int test_oob_allgather(const void *sbuf, void *rbuf, size_t len, void *ctx) {
    test_oob_t *oob = ctx;

    if (len > TEST_OOB_SLOT_SIZE) {
        fprintf(stderr, "test_oob: allgather of %zu bytes per rank (at most %zu)\n", len,
                TEST_OOB_SLOT_SIZE);
        return -1;
    }
    memcpy(oob->slots + (size_t)oob->rank * TEST_OOB_SLOT_SIZE, sbuf, len);
    if (test_oob_barrier(oob) != 0) {
        return -1;
    }
    for (int r = 0; r < oob->size; ++r) {
        memcpy((char *)rbuf + (size_t)r * len, oob->slots + (size_t)r * TEST_OOB_SLOT_SIZE, len);
    }
    /* nobody overwrites a slot before everyone has read it */
    return test_oob_barrier(oob);
}

pid_t test_oob_pid(const test_oob_t *oob, int rank) { return oob->shared->pids[rank]; }

void test_oob_set_progress(test_oob_t *oob, void (*fn)(void *), void *arg) {
    oob->progress = fn;
    oob->progress_arg = arg;
}

/* A child of fork() inherits every lock another thread of the parent holds at that instant,
 * and nothing ever releases it there.  UCX 1.18 starts a short-lived thread at library load
 * (its vfs module's) whose allocations pass through UCM's memory hooks, under UCM's event
 * lock: a child forked at that moment hung in ucp_init, waiting for that lock (the first run
 * of test_shmem_ucx, under load).  So the launcher forks once this process is down to one
 * thread, waiting at most TEST_OOB_THREADS_WAIT_S for the others to end (a test whose parent
 * keeps threads of its own forks after that). */
#define TEST_OOB_THREADS_WAIT_S 10.0

static void test_oob_wait_single_threaded(void) {
    double start = test_oob_now();

    while (test_thread_count() > 1 && test_oob_now() - start < TEST_OOB_THREADS_WAIT_S) {
        usleep(1000);
    }
}

static int test_oob_find(const test_oob_shared_t *sh, pid_t pid) {
    for (int r = 0; r < sh->size; ++r) {
        if (sh->pids[r] == pid) {
            return r;
        }
    }
    return -1;
}

int test_oob_run(int size, double timeout, test_oob_main_fn_t fn, void *arg, int *status) {
    size_t region = sizeof(test_oob_shared_t) + 64 + (size_t)size * TEST_OOB_SLOT_SIZE;
    int codes[TEST_OOB_MAX_PROCS], left = 0, nfailed = 0, wstatus, rank;
    test_oob_shared_t *sh;
    test_oob_t oob;
    double start;
    pid_t pid;

    if (size < 1 || size > TEST_OOB_MAX_PROCS) {
        return -1;
    }
    sh = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("test_oob: mmap");
        return -1;
    }
    memset(sh, 0, sizeof(*sh));
    sh->size = size;
    sh->timeout = timeout;
    test_oob_wait_single_threaded();
    fflush(stdout);
    fflush(stderr);
    for (rank = 0; rank < size; ++rank) {
        codes[rank] = -1;
        pid = fork();
        if (pid < 0) {
            perror("test_oob: fork");
            atomic_store(&sh->failed, 1);
            break;
        }
        if (pid == 0) {
            oob.shared = sh;
            oob.slots = (char *)sh + ((sizeof(*sh) + 63) & ~(size_t)63);
            oob.rank = rank;
            oob.size = size;
            oob.progress = NULL;
            oob.progress_arg = NULL;
            /* every rank knows every pid before it starts */
            sh->pids[rank] = getpid();
            if (test_oob_barrier(&oob) != 0) {
                _exit(2);
            }
            int nfail = fn(&oob, rank, size, arg);
            fflush(stdout);
            fflush(stderr);
            _exit(nfail == 0 ? 0 : 1);
        }
        sh->pids[rank] = pid;
        ++left;
    }
    start = test_oob_now();
    while (left > 0) {
        pid = waitpid(-1, &wstatus, WNOHANG);
        if (pid < 0 && errno != EINTR) {
            break;
        }
        if (pid <= 0) {
            if (test_oob_now() - start > timeout) {
                fprintf(stderr, "test_oob: %d process(es) still running after %.0f s: killed\n",
                        left, timeout);
                for (int r = 0; r < size; ++r) {
                    if (codes[r] == -1 && sh->pids[r] > 0) {
                        kill(sh->pids[r], SIGKILL);
                    }
                }
                while (waitpid(-1, &wstatus, 0) > 0) {
                }
                break;
            }
            usleep(1000);
            continue;
        }
        rank = test_oob_find(sh, pid);
        if (rank < 0) {
            continue;
        }
        --left;
        codes[rank] = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
        if (codes[rank] != 0) {
            /* the others must not wait for it in the OOB */
            atomic_store(&sh->failed, 1);
        }
    }
    for (int r = 0; r < size; ++r) {
        if (status != NULL) {
            status[r] = codes[r];
        }
        nfailed += codes[r] != 0;
    }
    munmap(sh, region);
    return nfailed;
}

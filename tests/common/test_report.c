/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pass/fail accounting of the coll/gpu MPI tests: see test_report.h.
 */
/* alarm: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_report.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_buffers.h"
#include "test_types.h"

int tu_world_rank;
int tu_world_size = 1;
int tu_verbose;

/* Report limits: enough to diagnose, not enough to drown a CI log. */
#define TU_MAX_MESSAGES_PER_CASE 6
#define TU_MAX_FAIL_LINES 400

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
static bool tu_hang_stop;
static size_t tu_hang_len;

static void tu_on_alarm(int sig) {
    (void)sig;
    if (write(STDOUT_FILENO, tu_hang_msg, tu_hang_len) < 0) {
        /* nothing else can be done in a signal handler */
    }
    if (tu_hang_stop) {
        for (;;) {
            pause(); /* TU_HANG_STOP: kept for a debugger's look at where it hung */
        }
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
        tu_hang_stop = (NULL != getenv("TU_HANG_STOP"));
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

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The threads of this process, for tests that check what runs in it (the emulated backend's
 * stream workers) or that must not fork while another thread may hold a lock
 * (test_oob_fork.c).
 */
#ifndef TEST_THREAD_COUNT_H
#define TEST_THREAD_COUNT_H

#include <stdio.h>

/* Threads: in /proc/self/status; -1 when unknown. */
static inline int test_thread_count(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;

    if (status == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), status) != NULL) {
        if (sscanf(line, "Threads: %d", &n) == 1) {
            break;
        }
    }
    fclose(status);
    return n;
}

#endif /* TEST_THREAD_COUNT_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the unit tests share: CHECK, which prints one line per check (and, on
 * a failure, the line and the accelerator's last error), the pass/fail
 * counts behind the closing line, and a byte pattern to fill and compare
 * buffers with.  Header-only: each unit test is a program of its own.
 */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "accel.h"

static int test_passed;
static int test_failed;

static bool check_impl(bool ok, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool check_impl(bool ok, int line, const char *fmt, ...) {
    va_list ap;

    printf("%s: ", ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (!ok) {
        const accel_error_t *err = accel_last_error();
        printf(" (line %d; last error %s %s)", line, err->call ? err->call : "-",
               err->error ? err->error : "-");
        ++test_failed;
    } else {
        ++test_passed;
    }
    printf("\n");
    fflush(stdout);
    return ok;
}

#define CHECK(_cond, ...) check_impl(!!(_cond), __LINE__, __VA_ARGS__)

static inline void fill(void *buf, size_t len, unsigned seed) {
    unsigned char *p = buf;

    for (size_t i = 0; i < len; ++i) {
        p[i] = (unsigned char)(seed + i * 7);
    }
}

static inline bool has_pattern(const void *buf, size_t len, unsigned seed) {
    const unsigned char *p = buf;

    for (size_t i = 0; i < len; ++i) {
        if (p[i] != (unsigned char)(seed + i * 7)) {
            return false;
        }
    }
    return true;
}

#endif /* UNIT_CHECK_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tuning-file parser (ompi-coll-gpu/native/coll_gpu_tuning.c), without Open MPI: a good file
 * and its ranges, sizes and first-match order; malformed lines reported with their line
 * number and the whole file dropped; a rule naming an unknown algorithm skipped with a
 * warning naming it; reading from a file.
 */
#define _POSIX_C_SOURCE 200809L

#include "coll_gpu_tuning.h"
#include "unit_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const algs[] = {"auto", "staged", "one_shot", "two_shot"};
#define NUM_ALGS 4

/* The parser's messages of the last parse, one per line, with their level. */
static char messages[4096];
static int num_errors, num_warnings;

static void log_msg(int level, const char *msg, void *ctx) {
    (void)ctx;
    num_errors += (0 == level);
    num_warnings += (1 == level);
    strncat(messages, msg, sizeof(messages) - strlen(messages) - 2);
    strcat(messages, "\n");
}

static int parse(coll_gpu_tuning_t *t, const char *text) {
    messages[0] = '\0';
    num_errors = num_warnings = 0;
    return coll_gpu_tuning_parse(t, text, "rules.conf", algs, NUM_ALGS, log_msg, NULL);
}

static int alg_of(const coll_gpu_tuning_t *t, const char *coll, uint64_t size, uint64_t ppn,
                  uint64_t bytes) {
    const coll_gpu_tuning_rule_t *r = coll_gpu_tuning_find(t, coll, size, ppn, bytes);
    return (NULL != r) ? r->algorithm : -1;
}

static void test_sizes(void) {
    uint64_t v;

    CHECK(coll_gpu_tuning_parse_size("0", &v) && 0 == v, "0");
    CHECK(coll_gpu_tuning_parse_size("4096", &v) && 4096 == v, "4096");
    CHECK(coll_gpu_tuning_parse_size("64K", &v) && 65536 == v, "64K");
    CHECK(coll_gpu_tuning_parse_size("2m", &v) && (2u << 20) == v, "2m");
    CHECK(coll_gpu_tuning_parse_size("1G", &v) && (1ull << 30) == v, "1G");
    CHECK(!coll_gpu_tuning_parse_size("", &v), "empty");
    CHECK(!coll_gpu_tuning_parse_size("-1", &v), "negative");
    CHECK(!coll_gpu_tuning_parse_size("12KB", &v), "trailing junk");
    CHECK(!coll_gpu_tuning_parse_size("x", &v), "not a number");
    CHECK(!coll_gpu_tuning_parse_size("99999999999999999999", &v), "overflow");
    CHECK(!coll_gpu_tuning_parse_size("17179869184G", &v), "overflow by the suffix");
}

static void test_good(void) {
    coll_gpu_tuning_t t;
    const coll_gpu_tuning_rule_t *r;
    int n = parse(&t, "# coll/gpu tuning\n"
                      "\n"
                      "allreduce 2-4 * 0-64K one_shot   # small, few ranks\n"
                      "MPI_Allreduce 5- 1-8 0-32k one_shot -\n"
                      "allreduce * * 64K-16M two_shot 512K\n"
                      "   allreduce\t*\t*\t*\ttwo_shot\t2M\n"
                      "bcast 1 1 100 staged 0\n");

    CHECK(5 == n, "good file: %d rules", n);
    CHECK(0 == num_errors && 0 == num_warnings, "good file: no message (%s)", messages);
    CHECK(2 == alg_of(&t, "allreduce", 2, 2, 0), "2 ranks, 0 bytes: one_shot");
    CHECK(2 == alg_of(&t, "allreduce", 4, 4, 65536), "64K inclusive");
    CHECK(3 == alg_of(&t, "allreduce", 4, 4, 65537), "above 64K: two_shot");
    CHECK(2 == alg_of(&t, "allreduce", 8, 8, 32768), "MPI_ prefix and 5-: one_shot");
    CHECK(3 == alg_of(&t, "allreduce", 8, 9, 32768), "ranks_per_node 9 outside 1-8");
    r = coll_gpu_tuning_find(&t, "allreduce", 8, 9, 100000);
    CHECK(NULL != r && 512 * 1024 == r->chunk && 5 == r->line, "chunk 512K of line 5");
    r = coll_gpu_tuning_find(&t, "allreduce", 8, 9, 32768);
    CHECK(NULL != r && 6 == r->line, "32K, 9 per node: only the catch-all of line 6 matches");
    r = coll_gpu_tuning_find(&t, "allreduce", 1000, 1000, 1ull << 40);
    CHECK(NULL != r && 6 == r->line && (2u << 20) == r->chunk, "catch-all rule of line 6");
    r = coll_gpu_tuning_find(&t, "allreduce", 2, 2, 0);
    CHECK(NULL != r && 0 == r->chunk, "no chunk: 0 (the default)");
    CHECK(1 == alg_of(&t, "bcast", 1, 1, 100), "bcast exactly 1 1 100");
    CHECK(-1 == alg_of(&t, "bcast", 2, 1, 100), "bcast size 2: no rule");
    CHECK(-1 == alg_of(&t, "reduce", 2, 2, 0), "no rule for reduce");
    CHECK(0 != t.hash, "hash set");
    {
        coll_gpu_tuning_t u;
        parse(&u, "allreduce 2-4 * 0-64K one_shot\n");
        CHECK(u.hash != t.hash, "other rules, other hash");
        coll_gpu_tuning_free(&u);
    }
    coll_gpu_tuning_free(&t);
    CHECK(0 == parse(&t, "# nothing\n\n   \n") && 0 == num_errors, "empty file: 0 rules");
    coll_gpu_tuning_free(&t);
}

static void expect_malformed(const char *text, int line, const char *what) {
    coll_gpu_tuning_t t;
    char needle[64];
    int n = parse(&t, text);

    snprintf(needle, sizeof(needle), "rules.conf:%d: ", line);
    CHECK(-1 == n && 0 == t.num_rules, "%s: file dropped (%d)", what, n);
    CHECK(num_errors >= 1 && NULL != strstr(messages, needle), "%s: line %d reported: %s", what,
          line, messages);
    CHECK(NULL != strstr(messages, "defaults"), "%s: says the defaults apply", what);
    coll_gpu_tuning_free(&t);
}

static void test_malformed(void) {
    const char *good = "allreduce * * 0-1K one_shot\n";
    char text[256];

    expect_malformed("allreduce * * one_shot\n", 1, "too few fields");
    snprintf(text, sizeof(text), "%s%s", good, "allreduce * * * two_shot 1M extra\n");
    expect_malformed(text, 2, "too many fields");
    snprintf(text, sizeof(text), "%s\n# c\n%s", good, "allreduce x * 0-1K one_shot\n");
    expect_malformed(text, 4, "bad comm_size");
    expect_malformed("allreduce * 4-2 0-1K one_shot\n", 1, "reversed range");
    expect_malformed("allreduce * * 1K-2Q one_shot\n", 1, "bad size suffix");
    expect_malformed("allreduce * * 1K-2K two_shot lots\n", 1, "bad chunk");
    expect_malformed("allreduce * * --1 two_shot\n", 1, "bad bytes range");
}

static void test_unknown_algorithm(void) {
    coll_gpu_tuning_t t;
    int n = parse(&t, "allreduce * * 0-1K one_shot\n"
                      "allreduce * * 1K-2K ring\n"
                      "allreduce * * * two_shot\n");

    CHECK(2 == n, "unknown algorithm: the other 2 rules kept (%d)", n);
    CHECK(0 == num_errors && 1 == num_warnings, "one warning (%s)", messages);
    CHECK(NULL != strstr(messages, "rules.conf:2:") && NULL != strstr(messages, "\"ring\""),
          "the warning names the rule and the algorithm: %s", messages);
    CHECK(3 == alg_of(&t, "allreduce", 2, 2, 1500), "1500 bytes: the next rule, two_shot");
    coll_gpu_tuning_free(&t);
}

static void test_load(void) {
    char path[] = "/tmp/test_tuning.XXXXXX";
    const char *text = "allreduce * * 0-4K one_shot\nallreduce * * 4K- two_shot 256K\n";
    coll_gpu_tuning_t t;
    int fd = mkstemp(path), n;

    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) {
        return;
    }
    CHECK((ssize_t)strlen(text) == write(fd, text, strlen(text)), "write");
    close(fd);
    messages[0] = '\0';
    num_errors = 0;
    n = coll_gpu_tuning_load(&t, path, algs, NUM_ALGS, log_msg, NULL);
    CHECK(2 == n && 3 == alg_of(&t, "allreduce", 3, 3, 5000), "file read: %d rules", n);
    coll_gpu_tuning_free(&t);
    unlink(path);
    n = coll_gpu_tuning_load(&t, path, algs, NUM_ALGS, log_msg, NULL);
    CHECK(-1 == n && 1 == num_errors && NULL != strstr(messages, path), "missing file reported: %s",
          messages);
}

int main(void) {
    test_sizes();
    test_good();
    test_malformed();
    test_unknown_algorithm();
    test_load();
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return (0 == test_failed) ? 0 : 1;
}

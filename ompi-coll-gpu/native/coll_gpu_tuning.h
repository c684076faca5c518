/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tuning rules of the native algorithms (coll_gpu_tuning_file): which algorithm and chunk a
 * collective runs for a communicator size, ranks per node and message size; the first rule that
 * matches wins.  The file's format: docs/tuning.md.  Plain C with no Open MPI headers, so that a
 * unit test covers the parser.
 */
#ifndef COLL_GPU_TUNING_H
#define COLL_GPU_TUNING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLL_GPU_TUNING_NAME_MAX 32

typedef struct {
    uint64_t lo, hi; /* inclusive */
} coll_gpu_tuning_range_t;

typedef struct {
    char coll[COLL_GPU_TUNING_NAME_MAX]; /* "allreduce" */
    coll_gpu_tuning_range_t comm_size;
    coll_gpu_tuning_range_t ranks_per_node;
    coll_gpu_tuning_range_t bytes;
    int algorithm; /* index into the caller's algorithm names */
    size_t chunk;  /* 0: the default */
    int line;      /* where the rule was read */
} coll_gpu_tuning_rule_t;

typedef struct {
    coll_gpu_tuning_rule_t *rules;
    int num_rules;
    uint64_t hash; /* of the rules in use: ranks compare it to agree on them */
} coll_gpu_tuning_t;

/* Where the parser's messages go ("<file>:<line>: ..."), with a level: 0 error, 1 warning. */
typedef void (*coll_gpu_tuning_log_fn_t)(int level, const char *msg, void *ctx);

/*
 * Parses text (NUL-terminated) into rules.  algorithms: names of the algorithms a rule may
 * name (index = value stored in the rule), num_algorithms of them.  A malformed line is an
 * error naming its line: the whole file is then dropped (no rules: the parameters' defaults
 * apply) and -1 returned.  A rule naming an unknown algorithm is a warning naming the rule,
 * and only that rule is dropped.  Returns the number of rules kept.  source names the text in
 * messages (the file name).
 */
int coll_gpu_tuning_parse(coll_gpu_tuning_t *tuning, const char *text, const char *source,
                          const char *const *algorithms, int num_algorithms,
                          coll_gpu_tuning_log_fn_t log, void *ctx);

/* Reads path and parses it; a file that cannot be read is an error (-1, logged). */
int coll_gpu_tuning_load(coll_gpu_tuning_t *tuning, const char *path, const char *const *algorithms,
                         int num_algorithms, coll_gpu_tuning_log_fn_t log, void *ctx);

/* The first rule for coll that matches, or NULL. */
const coll_gpu_tuning_rule_t *coll_gpu_tuning_find(const coll_gpu_tuning_t *tuning,
                                                   const char *coll, uint64_t comm_size,
                                                   uint64_t ranks_per_node, uint64_t bytes);

void coll_gpu_tuning_free(coll_gpu_tuning_t *tuning);

/* "4K" -> 4096; false on anything else (trailing junk, overflow). */
bool coll_gpu_tuning_parse_size(const char *s, uint64_t *value_p);

#ifdef __cplusplus
}
#endif

#endif /* COLL_GPU_TUNING_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tuning-file parser (coll_gpu_tuning.h).  No Open MPI here: tests/unit/test_tuning.c
 * links this file alone.
 */
#include "coll_gpu_tuning.h"
#include "coll_gpu_hash.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLL_GPU_TUNING_MAX_FIELDS 8

static void coll_gpu_tuning_log(coll_gpu_tuning_log_fn_t log, void *ctx, int level, const char *fmt,
                                ...) __attribute__((format(printf, 4, 5)));

static void coll_gpu_tuning_log(coll_gpu_tuning_log_fn_t log, void *ctx, int level, const char *fmt,
                                ...) {
    char msg[512];
    va_list ap;

    if (NULL == log) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log(level, msg, ctx);
}

bool coll_gpu_tuning_parse_size(const char *s, uint64_t *value_p) {
    unsigned long long value;
    uint64_t scale = 1;
    char *end;

    if (!isdigit((unsigned char)s[0])) {
        return false;
    }
    errno = 0;
    value = strtoull(s, &end, 10);
    if (0 != errno) {
        return false;
    }
    switch (toupper((unsigned char)*end)) {
    case 'K':
        scale = 1ULL << 10;
        ++end;
        break;
    case 'M':
        scale = 1ULL << 20;
        ++end;
        break;
    case 'G':
        scale = 1ULL << 30;
        ++end;
        break;
    default:
        break;
    }
    if (('\0' != *end) || (value > UINT64_MAX / scale)) {
        return false;
    }
    *value_p = (uint64_t)value * scale;
    return true;
}

/* "*", "N", "N-", "N-M" */
static bool coll_gpu_tuning_parse_range(char *s, coll_gpu_tuning_range_t *range) {
    char *dash;

    if (0 == strcmp(s, "*")) {
        range->lo = 0;
        range->hi = UINT64_MAX;
        return true;
    }
    dash = strchr(s, '-');
    if (NULL == dash) {
        if (!coll_gpu_tuning_parse_size(s, &range->lo)) {
            return false;
        }
        range->hi = range->lo;
        return true;
    }
    *dash = '\0';
    if (!coll_gpu_tuning_parse_size(s, &range->lo)) {
        return false;
    }
    if ('\0' == dash[1]) {
        range->hi = UINT64_MAX;
        return true;
    }
    return coll_gpu_tuning_parse_size(dash + 1, &range->hi) && (range->lo <= range->hi);
}

/* FNV-1a over the fields of the rules kept: ranks compare hashes, not files. */
static uint64_t coll_gpu_tuning_hash(const coll_gpu_tuning_t *tuning) {
    uint64_t hash = COLL_GPU_HASH_SEED;

    for (int i = 0; i < tuning->num_rules; ++i) {
        const coll_gpu_tuning_rule_t *r = &tuning->rules[i];
        uint64_t words[] = {r->comm_size.lo,        r->comm_size.hi,   r->ranks_per_node.lo,
                            r->ranks_per_node.hi,   r->bytes.lo,       r->bytes.hi,
                            (uint64_t)r->algorithm, (uint64_t)r->chunk};

        hash = coll_gpu_hash_bytes(hash, words, sizeof(words));
        hash = coll_gpu_hash_bytes(hash, r->coll, strlen(r->coll));
    }
    return hash;
}

/* Parses one line with its comment stripped.  1: a rule in *rule, 0: nothing (blank, or an
 * unknown algorithm, warned), -1: malformed (logged). */
static int coll_gpu_tuning_parse_line(char *line, int lineno, const char *source,
                                      const char *const *algorithms, int num_algorithms,
                                      coll_gpu_tuning_rule_t *rule, coll_gpu_tuning_log_fn_t log,
                                      void *ctx) {
    char *fields[COLL_GPU_TUNING_MAX_FIELDS + 1], *save = NULL, *tok;
    const char *what = NULL;
    int nfields = 0;
    uint64_t chunk = 0;

    for (tok = strtok_r(line, " \t\r\n", &save);
         NULL != tok && nfields <= COLL_GPU_TUNING_MAX_FIELDS;
         tok = strtok_r(NULL, " \t\r\n", &save)) {
        fields[nfields++] = tok;
    }
    if (0 == nfields) {
        return 0;
    }
    memset(rule, 0, sizeof(*rule));
    rule->line = lineno;
    if ((nfields < 5) || (nfields > 6)) {
        coll_gpu_tuning_log(log, ctx, 0,
                            "%s:%d: expected 5 or 6 fields (collective comm_size ranks_per_node "
                            "bytes algorithm [chunk]), found %d",
                            source, lineno, nfields);
        return -1;
    }
    if (strlen(fields[0]) >= sizeof(rule->coll)) {
        what = "collective";
    } else if (!coll_gpu_tuning_parse_range(fields[1], &rule->comm_size)) {
        what = "comm_size range";
    } else if (!coll_gpu_tuning_parse_range(fields[2], &rule->ranks_per_node)) {
        what = "ranks_per_node range";
    } else if (!coll_gpu_tuning_parse_range(fields[3], &rule->bytes)) {
        what = "bytes range";
    } else if ((6 == nfields) && (0 != strcmp(fields[5], "-")) &&
               !coll_gpu_tuning_parse_size(fields[5], &chunk)) {
        what = "chunk size";
    }
    if (NULL != what) {
        coll_gpu_tuning_log(log, ctx, 0, "%s:%d: malformed %s", source, lineno, what);
        return -1;
    }
    for (char *c = fields[0]; '\0' != *c; ++c) {
        *c = (char)tolower((unsigned char)*c);
    }
    /* "MPI_Allreduce" and "allreduce" alike */
    snprintf(rule->coll, sizeof(rule->coll), "%s",
             (0 == strncmp(fields[0], "mpi_", 4)) ? fields[0] + 4 : fields[0]);
    rule->chunk = (size_t)chunk;
    rule->algorithm = -1;
    for (int a = 0; a < num_algorithms; ++a) {
        if (0 == strcmp(fields[4], algorithms[a])) {
            rule->algorithm = a;
        }
    }
    if (rule->algorithm < 0) {
        coll_gpu_tuning_log(log, ctx, 1,
                            "%s:%d: rule for %s names unknown algorithm \"%s\": "
                            "rule ignored",
                            source, lineno, rule->coll, fields[4]);
        return 0;
    }
    return 1;
}

int coll_gpu_tuning_parse(coll_gpu_tuning_t *tuning, const char *text, const char *source,
                          const char *const *algorithms, int num_algorithms,
                          coll_gpu_tuning_log_fn_t log, void *ctx) {
    char *copy = strdup(text), *line, *next;
    int lineno = 0, rc = 0, cap = 0;

    memset(tuning, 0, sizeof(*tuning));
    if (NULL == copy) {
        coll_gpu_tuning_log(log, ctx, 0, "%s: out of memory", source);
        return -1;
    }
    for (line = copy; NULL != line && 0 == rc; line = next) {
        coll_gpu_tuning_rule_t rule;
        char *hash;
        int got;

        ++lineno;
        next = strchr(line, '\n');
        if (NULL != next) {
            *next++ = '\0';
        }
        hash = strchr(line, '#');
        if (NULL != hash) {
            *hash = '\0';
        }
        got = coll_gpu_tuning_parse_line(line, lineno, source, algorithms, num_algorithms, &rule,
                                         log, ctx);
        if (got < 0) {
            rc = -1;
        } else if (got > 0) {
            if (tuning->num_rules == cap) {
                coll_gpu_tuning_rule_t *grown;
                cap = cap ? 2 * cap : 8;
                grown = realloc(tuning->rules, (size_t)cap * sizeof(*grown));
                if (NULL == grown) {
                    coll_gpu_tuning_log(log, ctx, 0, "%s: out of memory", source);
                    rc = -1;
                    break;
                }
                tuning->rules = grown;
            }
            tuning->rules[tuning->num_rules++] = rule;
        }
    }
    free(copy);
    if (0 != rc) {
        coll_gpu_tuning_log(log, ctx, 0, "%s: not used: the parameters' defaults apply", source);
        coll_gpu_tuning_free(tuning);
        return -1;
    }
    tuning->hash = coll_gpu_tuning_hash(tuning);
    return tuning->num_rules;
}

int coll_gpu_tuning_load(coll_gpu_tuning_t *tuning, const char *path, const char *const *algorithms,
                         int num_algorithms, coll_gpu_tuning_log_fn_t log, void *ctx) {
    FILE *file;
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    int rc;

    memset(tuning, 0, sizeof(*tuning));
    file = fopen(path, "r");
    if (NULL == file) {
        coll_gpu_tuning_log(log, ctx, 0, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    do {
        if (cap - len < 4096) {
            char *grown = realloc(text, cap + 65536);
            if (NULL == grown) {
                free(text);
                fclose(file);
                coll_gpu_tuning_log(log, ctx, 0, "%s: out of memory", path);
                return -1;
            }
            text = grown;
            cap += 65536;
        }
        got = fread(text + len, 1, cap - len - 1, file);
        len += got;
    } while (got > 0);
    fclose(file);
    text[len] = '\0';
    rc = coll_gpu_tuning_parse(tuning, text, path, algorithms, num_algorithms, log, ctx);
    free(text);
    return rc;
}

static bool coll_gpu_tuning_in(const coll_gpu_tuning_range_t *range, uint64_t value) {
    return (range->lo <= value) && (value <= range->hi);
}

const coll_gpu_tuning_rule_t *coll_gpu_tuning_find(const coll_gpu_tuning_t *tuning,
                                                   const char *coll, uint64_t comm_size,
                                                   uint64_t ranks_per_node, uint64_t bytes) {
    for (int i = 0; i < tuning->num_rules; ++i) {
        const coll_gpu_tuning_rule_t *r = &tuning->rules[i];
        if ((0 == strcmp(r->coll, coll)) && coll_gpu_tuning_in(&r->comm_size, comm_size) &&
            coll_gpu_tuning_in(&r->ranks_per_node, ranks_per_node) &&
            coll_gpu_tuning_in(&r->bytes, bytes)) {
            return r;
        }
    }
    return NULL;
}

void coll_gpu_tuning_free(coll_gpu_tuning_t *tuning) {
    free(tuning->rules);
    tuning->rules = NULL;
    tuning->num_rules = 0;
    tuning->hash = 0;
}

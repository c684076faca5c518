/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The set-up and checks shared by the native-collective tests: see test_native_util.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_native_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tn_setup_failed(void) {
    fprintf(stderr, "[rank %d] cannot set up a case: aborting\n", tu_world_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
    abort(); /* MPI_Abort does not return */
}

void *tn_malloc(size_t bytes) {
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (NULL == p) {
        tn_setup_failed();
    }
    return p;
}

void *tn_mem_copy_of(tu_mem_t mem, const void *host, size_t bytes) {
    void *p = NULL;
    if (tu_mem_alloc(mem, bytes > 0 ? bytes : 8, &p) ||
        ((bytes > 0) && tu_mem_write(mem, p, host, bytes))) {
        tn_setup_failed();
    }
    return p;
}

void tn_setup(tu_options_t *opts, tu_mem_t mem) {
    tu_options_parse_one(opts, (TU_MEM_HOST == mem) ? "--kinds=host" : "--kinds=device");
    tu_setup_or_exit(opts);
}

void tn_algorithm_pvar_open(const char *coll, tu_pvar_t *pvar) {
    char name[64];
    snprintf(name, sizeof(name), "coll_gpu_%s_algorithm_calls", coll);
    tu_pvar_open_required(name, pvar);
}

int tn_counts(int world_size, bool small, size_t counts[TN_MAX_COUNTS]) {
    int n = 0;
    counts[n++] = 1;
    counts[n++] = 7;
    counts[n++] = (size_t)world_size * 5 + 3;
    if (!small) {
        /* many steps across nodes: --small leaves it out where that takes too long */
        counts[n++] = 3 * 65536 / 8 + 1;
    }
    return n;
}

void tn_digest_init(tn_digest_t *digest) { digest->integer = digest->fp = TN_HASH_BASIS; }

void tn_digest_add(tn_digest_t *digest, bool fp, const void *data, size_t len) {
    uint64_t *part = fp ? &digest->fp : &digest->integer;
    *part = fnv(*part, data, len);
}

void tn_digest_print(const tn_digest_t *digest) {
    if (0 == tu_world_rank) {
        printf("digest int %016llx fp %016llx\n", (unsigned long long)digest->integer,
               (unsigned long long)digest->fp);
    }
}

void tn_gather_hashes(uint64_t hash, const tu_comm_t *comm, uint64_t *hashes) {
    MPI_Allgather(&hash, 1, MPI_UINT64_T, hashes, 1, MPI_UINT64_T, comm->comm);
}

void tn_check_same_hash(uint64_t hash, const tu_comm_t *comm, const uint64_t *hashes) {
    for (int r = 0; r < comm->size; ++r) {
        if (hashes[r] != hash) {
            tu_fail("rank %d of %s got other bits (hash %016llx, here %016llx)", r, comm->name,
                    (unsigned long long)hashes[r], (unsigned long long)hash);
            return;
        }
    }
}

/* The float or double of t at p, as a double. */
static double tn_fp_value(test_type_t t, const void *p) {
    return (4 == types[t].size) ? *(const float *)p : *(const double *)p;
}

bool tn_fp_close(test_type_t t, const void *got, const void *want) {
    double g = tn_fp_value(t, got), w = tn_fp_value(t, want);
    return fabs(g - w) <= ((4 == types[t].size) ? 1e-4 : 1e-12) * (fabs(w) + 1.0);
}

/* Whether got and want, two sums of terms inputs (their magnitudes adding up to abs_sum) in
 * any order, differ by no more than rounding lets them: each is within (terms - 1) u abs_sum of
 * the exact sum (u the unit roundoff; Higham, Accuracy and Stability, 4.2). */
static bool tn_sum_close(test_type_t t, const void *got, const void *want, double abs_sum,
                         int terms) {
    double u = ldexp(1.0, (4 == types[t].size) ? -24 : -53);

    return fabs(tn_fp_value(t, got) - tn_fp_value(t, want)) <=
           2.0 * (terms > 1 ? terms - 1 : 1) * u * abs_sum * (1.0 + 1e-6);
}

long tn_check_elements(test_type_t t, const char *got, const char *want, size_t n, bool exact,
                       const double *abs_sums, int terms, const char *reference) {
    size_t es = types[t].size;
    long bad = 0;

    for (size_t i = 0; i < n; ++i) {
        bool same = 0 == memcmp(got + i * es, want + i * es, es);
        if (!same && !exact) {
            same = (NULL != abs_sums)
                       ? tn_sum_close(t, got + i * es, want + i * es, abs_sums[i], terms)
                       : tn_fp_close(t, got + i * es, want + i * es);
        }
        if (!same && bad++ < 3) {
            tu_fail("element %zu differs from %s", i, reference);
        }
    }
    if (bad > 0) {
        tu_fail("%ld of %zu elements wrong", bad, n);
    }
    return bad;
}

void tn_check_algorithm_calls(const char *coll, const uint64_t *before, const uint64_t *after,
                              int n, int slot, const char *const *names) {
    if ((slot < -1) || (slot >= n)) {
        tu_fail("coll_gpu_%s_algorithm_calls has %d elements, the call's is %d", coll, n, slot);
    }
    for (int a = 0; a < n; ++a) {
        uint64_t want_delta = (a == slot) ? 1 : 0;
        char element[32];

        if (after[a] - before[a] == want_delta) {
            continue;
        }
        if (NULL != names) {
            snprintf(element, sizeof(element), "%s", names[a]);
        } else {
            snprintf(element, sizeof(element), "%d", a);
        }
        tu_fail("coll_gpu_%s_algorithm_calls[%s] +%llu, expected +%llu", coll, element,
                (unsigned long long)(after[a] - before[a]), (unsigned long long)want_delta);
    }
}

void tn_check_allreduce_elements(tu_mem_t mem, test_type_t t, const void *in, size_t in_elems,
                                 const void *got, size_t first, size_t n, const tu_comm_t *comm) {
    size_t es = types[t].size, bytes = in_elems * es;
    char *ar = tn_malloc(bytes);
    void *d_ar = NULL, *d_in = tn_mem_copy_of(mem, in, bytes);
    int rc;

    if (tu_mem_alloc(mem, bytes, &d_ar)) {
        tn_setup_failed();
    }
    rc = MPI_Allreduce(d_in, d_ar, (int)in_elems, type_handle(t), op_handle(t), comm->comm);
    if ((MPI_SUCCESS != rc) || tu_mem_read(mem, ar, d_ar, bytes) ||
        (0 != memcmp(ar + first * es, got, n * es))) {
        tu_fail("result of rank %d differs from MPI_Allreduce's (rc %d)", comm->rank, rc);
    }
    tu_mem_free(mem, d_ar);
    tu_mem_free(mem, d_in);
    free(ar);
}

void tn_run_peer_missing(tu_mem_t mem, const char *call_name, tn_missing_call_t call) {
    MPI_Comm comm;
    void *sbuf = NULL, *rbuf = NULL;
    int rank, size, rc;
    size_t bytes;

    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    bytes = (size_t)size * 1024 * sizeof(float);
    tu_case_begin("a peer missing from a native %s", call_name);
    if (tu_mem_alloc(mem, bytes, &sbuf) || tu_mem_alloc(mem, bytes, &rbuf) ||
        tu_mem_write(mem, sbuf, &rank, sizeof(rank))) {
        tn_setup_failed();
    }
    rc = call(comm, rank, sbuf, rbuf);
    if (MPI_SUCCESS != rc) {
        tu_fail("the first %s returned %d", call_name, rc);
    }
    if (rank != size - 1) {
        rc = call(comm, rank, sbuf, rbuf);
        if (MPI_SUCCESS == rc) {
            tu_fail("%s with a peer missing succeeded", call_name);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_case_end();
    tu_mem_free(mem, sbuf);
    tu_mem_free(mem, rbuf);
    MPI_Comm_free(&comm);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The set-up and checks shared by the native-collective tests (test_allreduce_native,
 * test_native_collectives, test_native_vcolls): buffers of one kind (device, or host with
 * --kinds=host under coll_gpu_host_buffers), the counts every collective runs, the results
 * compared with test_native_ref.h's references, the coll_gpu_<coll>_algorithm_calls pvar of
 * the path taken, the digest rank 0 prints for the check scripts, and a peer missing from a
 * native call.
 */
#ifndef TEST_NATIVE_UTIL_H
#define TEST_NATIVE_UTIL_H

#include "test_native_ref.h"
#include "test_util.h"

/* A case's memory could not be set up: every rank ends (MPI_Abort). */
void tn_setup_failed(void) __attribute__((noreturn));
/* malloc that never fails and gives a real pointer for 0 bytes. */
void *tn_malloc(size_t bytes);
/* Memory of kind mem holding a copy of `bytes` host bytes (a real pointer for 0 bytes). */
void *tn_mem_copy_of(tu_mem_t mem, const void *host, size_t bytes);

/* tu_setup with the buffers in mem: ends the program unless it passed. */
void tn_setup(tu_options_t *opts, tu_mem_t mem);
/* The coll_gpu_<coll>_algorithm_calls pvar (coll: "allreduce"), required. */
void tn_algorithm_pvar_open(const char *coll, tu_pvar_t *pvar);

/* The counts of every case: 1, odd, not a multiple of any communicator size above 1, and
 * unless `small` a few hundred KiB (above the one-shot threshold).  Returns how many. */
#define TN_MAX_COUNTS 4
/* The most elements of a coll_gpu_<coll>_algorithm_calls pvar the tests read (auto, staged, the
 * rows). */
#define TN_MAX_ALGS 16
int tn_counts(int world_size, bool small, size_t counts[TN_MAX_COUNTS]);

/* What rank 0 prints at the end ("digest int X fp Y"): every result's hash, the
 * floating-point reductions apart (Open MPI's staged order rounds them otherwise). */
#define TN_HASH_BASIS 14695981039346656037ULL
typedef struct {
    uint64_t integer; /* integer results and copies */
    uint64_t fp;      /* floating-point reductions */
} tn_digest_t;

void tn_digest_init(tn_digest_t *digest);
void tn_digest_add(tn_digest_t *digest, bool fp, const void *data, size_t len);
void tn_digest_print(const tn_digest_t *digest);
/* hashes[r]: the hash of rank r of comm (collective over comm). */
void tn_gather_hashes(uint64_t hash, const tu_comm_t *comm, uint64_t *hashes);
/* Fails the case unless every rank of comm has this rank's hash. */
void tn_check_same_hash(uint64_t hash, const tu_comm_t *comm, const uint64_t *hashes);

/* got = want within rounding (the float or double of t). */
bool tn_fp_close(test_type_t t, const void *got, const void *want);
/* Compares n elements of t with the reference (named in failures: "the reference"), bit for
 * bit when `exact`, else within rounding: where abs_sums is given, sums of `terms` inputs in any
 * order (element i within the bound of two such sums of inputs whose magnitudes add up to
 * abs_sums[i]), else tn_fp_close; reports the first mismatches.  Returns how many differ. */
long tn_check_elements(test_type_t t, const char *got, const char *want, size_t n, bool exact,
                       const double *abs_sums, int terms, const char *reference);
/* The coll_gpu_<coll>_algorithm_calls pvar, read as before and after (n elements) around one
 * call, grew by 1 at `slot` only (slot -1: nowhere).  Elements are named by `names` where
 * given, else by index. */
void tn_check_algorithm_calls(const char *coll, const uint64_t *before, const uint64_t *after,
                              int n, int slot, const char *const *names);
/* Runs MPI_Allreduce of in (in_elems of t, host memory, copied into mem) on comm and fails the
 * case unless its elements [first, first + n) equal got bit for bit: the reductions that run
 * natively in rank order, as the native one-node allreduce does, must agree with it. */
void tn_check_allreduce_elements(tu_mem_t mem, test_type_t t, const void *in, size_t in_elems,
                                 const void *got, size_t first, size_t n, const tu_comm_t *comm);

/* A native call of a peer-missing test: on comm, with this rank's two buffers of
 * comm size x 1024 floats (the first holding the rank). */
typedef int (*tn_missing_call_t)(MPI_Comm comm, int rank, void *sbuf, void *rbuf);
/* --peer-missing (an erroneous program): on a duplicate of world, a first call sets the native
 * context up on every rank; then the last rank skips the second call.  Run with
 * coll_gpu_transport_timeout set, the job must abort (not hang) with the component's help message
 * naming the call, which the check script looks for; should the call return instead, success is
 * a failure of the case.  One case. */
void tn_run_peer_missing(tu_mem_t mem, const char *call_name, tn_missing_call_t call);

#endif /* TEST_NATIVE_UTIL_H */

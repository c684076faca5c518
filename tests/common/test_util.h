/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers of the coll/gpu MPI tests.
 *
 * - memory of every kind a test passes to MPI (host, pinned, managed, device) through the
 *   project's accelerator layer, with fill/read helpers that work on device memory;
 * - the MPI_T counters of the component (pvars) and its parameters (cvars);
 * - deterministic inputs and an independent reference: every rank generates every peer's
 *   input locally and reduces it itself, never with Open MPI's reductions (Debian's 4.1.4
 *   op/avx saturates int8/uint8 sums, open-mpi/ompi#8045, so it is no oracle);
 * - a collective "case" engine shared by all tests: set up the buffers of one call of any
 *   intercepted collective, post it (blocking or nonblocking), verify every byte the call may
 *   and may not touch, and say which path (passthrough / staged / pipelined) the component
 *   must have taken;
 * - the command line (common options and a program's own), the standard communicators;
 * - pass/fail accounting closed by one line "N passed, M failed" (parsed by CI).
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel.h"
#include "accel_emulated.h"
#include "coll_gpu_colls.h"

#define TU_EXIT_PASS 0
#define TU_EXIT_FAIL 1
#define TU_EXIT_SKIP 77

#define TU_MAX_KINDS 16

/* ------------------------------------------------------------------------------------------ */
/* Memory kinds                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef enum {
    TU_MEM_HOST = 0, /* malloc: what every host path must take straight through */
    TU_MEM_PINNED,   /* page-locked host memory from the accelerator: still host memory */
    TU_MEM_MANAGED,  /* unified memory: the component may stage it or pass it through */
    TU_MEM_DEVICE,   /* device memory: PROT_NONE to the host, must be staged */
    TU_MEM_NUM
} tu_mem_t;

/* A buffer kind of the command line: the memory of send-side and of receive-side buffers.
 * "mixed" expands into host>device and device>host. */
typedef struct {
    char name[32];
    tu_mem_t send;
    tu_mem_t recv;
} tu_kind_t;

const char *tu_mem_name(tu_mem_t mem);

/* Raw allocations of any kind (size may be 0: a small allocation is made so the pointer is a
 * real pointer of that kind). */
int tu_mem_alloc(tu_mem_t mem, size_t size, void **ptr_p);
void tu_mem_free(tu_mem_t mem, void *ptr);
/* Host <-> memory of any kind; device memory goes through the accelerator's memcpy. */
int tu_mem_write(tu_mem_t mem, void *dst, const void *host_src, size_t len);
int tu_mem_read(tu_mem_t mem, void *host_dst, const void *src, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Options, setup, accounting                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    tu_kind_t kinds[TU_MAX_KINDS]; /* --kinds=host,device,managed,pinned,mixed */
    int num_kinds;
    tu_mem_t rank_mems[TU_MAX_KINDS]; /* --rank-kinds=host,device: world rank r puts all its
                                         buffers in rank_mems[r % num_rank_mems] */
    int num_rank_mems;
    accel_backend_kind_t backend; /* --device=emulated|cuda */
    size_t big_bytes;             /* --big=BYTES[k|m]: size of the big cases, 0 = none */
    bool component;               /* false with --no-component: validate a test against plain
                                     Open MPI (host memory only), no counter checks */
    int verbose;                  /* --verbose=N */
} tu_options_t;

void tu_options_default(tu_options_t *opts);
/* 1: arg was a common option and is consumed, 0: not a common option, -1: bad value. */
int tu_options_parse_one(tu_options_t *opts, const char *arg);
void tu_options_usage(void);
/* The kind pair world rank `world_rank` uses for a case of kind `kind`: with --rank-kinds
 * every rank has its own single memory, else every rank uses `kind`. */
tu_kind_t tu_options_rank_kind(const tu_options_t *opts, const tu_kind_t *kind, int world_rank);
bool tu_options_ranks_differ(const tu_options_t *opts);

/* A program's own command-line option, looked at before the common ones.  A name ending in
 * '=' takes a value ("--big-bytes="), any other is a flag matched whole ("--small"). */
typedef enum {
    TU_ARG_FLAG,   /* bool *: set to true */
    TU_ARG_SIZE,   /* size_t *: strtoull, any base */
    TU_ARG_INT,    /* int *: atoi */
    TU_ARG_COUNT,  /* size_t *: a number > 0, anything else is a bad argument */
    TU_ARG_STRING, /* const char **: the text after '=' */
} tu_arg_kind_t;

typedef struct {
    const char *name;
    tu_arg_kind_t kind;
    void *value;
} tu_arg_t;

/* After MPI_Init: sets tu_world_rank, the defaults in opts, then reads argv[1..] into the
 * program's options (`own`, ended by a NULL name; NULL for none) and the common ones.  An
 * argument that is neither: rank 0 prints "PROGRAM: bad argument ARG" and the program ends
 * (TU_EXIT_FAIL). */
void tu_parse_args(int argc, char **argv, const char *program, const tu_arg_t *own,
                   tu_options_t *opts);

/* After MPI_Init and option parsing: brings up the accelerator when a kind needs it and opens
 * the component's counters.  Returns TU_EXIT_PASS, TU_EXIT_SKIP (kind cuda without a GPU:
 * "SKIP: <reason>" printed by rank 0) or TU_EXIT_FAIL.  Collective over MPI_COMM_WORLD. */
int tu_setup(const tu_options_t *opts);
/* tu_setup, ending the program (tu_finish) with its code unless it passed. */
void tu_setup_or_exit(const tu_options_t *opts);
/* Accelerator init usable before MPI_Init (test_faults injects faults before MPI_Init). */
int tu_accel_init(accel_backend_kind_t backend, const char **reason_p);
extern const accel_ops_t *tu_accel;           /* NULL until initialized */
extern accel_backend_kind_t tu_accel_backend; /* the backend tu_accel belongs to */
extern int tu_world_rank;
extern int tu_world_size;
extern int tu_verbose;
extern int tu_case_timeout; /* seconds; a case running longer fails the process (0: off) */

/* Pass/fail accounting.  A case is one checked call; it fails when any check failed. */
void tu_case_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Changes the description failures are reported under, keeping the case's state (a group
 * of requests checked as one case). */
void tu_case_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool tu_case_failed(void);
bool tu_case_end(void);
void tu_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sums the counts of every rank with MPI_Allreduce, rank 0 prints "N passed, M failed";
 * returns TU_EXIT_PASS or TU_EXIT_FAIL (the same on every rank). */
int tu_summary(MPI_Comm comm);
/* Ends the program: MPI_Finalize then exit(code). */
void tu_finish(int code) __attribute__((noreturn));

/* ------------------------------------------------------------------------------------------ */
/* MPI_T: performance variables (counters) and control variables (parameters)                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    int index;
    int count; /* elements */
    MPI_Datatype datatype;
    MPI_T_pvar_handle handle;
} tu_pvar_t;

/* Found by name in any class; 0 on success, -1 when no such pvar exists. */
int tu_pvar_open(const char *name, tu_pvar_t *pvar);
/* A pvar the test cannot do without: when it is missing, a failed case "pvar" ("NAME not
 * found: component not loaded?") and the program ends with the summary. */
void tu_pvar_open_required(const char *name, tu_pvar_t *pvar);
/* Reads all elements (up to max_values) converted to uint64_t; returns the count read. */
int tu_pvar_read(const tu_pvar_t *pvar, uint64_t *values, int max_values);
uint64_t tu_pvar_read_element(const tu_pvar_t *pvar, int element);
/* Collective over MPI_COMM_WORLD: returns once no rank has a freed communicator's team left
 * (the coll_gpu_teams_retiring pvar is 0 everywhere; the barriers progress them), so that
 * resources can be counted.  Does nothing without the pvar. */
void tu_settle_retired_teams(void);
/* An integer or boolean cvar by its full name ("coll_gpu_staging_buffer_size"); 0 or -1. */
int tu_cvar_read_int(const char *name, long long *value_p);

typedef struct {
    uint64_t passthrough[COLL_GPU_NUM_COLLS];
    uint64_t staged[COLL_GPU_NUM_COLLS];
    uint64_t native[COLL_GPU_NUM_COLLS];
    uint64_t staged_bytes;
    uint64_t staged_chunks;
    uint64_t pageable_fallbacks;
    uint64_t accelerator_errors;
    uint64_t emu_copies; /* copies of the emulated backend, process wide (0 without it) */
    uint64_t emu_copy_bytes;
} tu_counters_t;

/* Opens the six coll_gpu pvars.  Returns true when all exist (with the expected array
 * lengths); when `required`, a missing one is reported as a failure (component not loaded). */
bool tu_counters_open(bool required);
bool tu_counters_available(void);
void tu_counters_read(tu_counters_t *counters);
const char *tu_coll_name(coll_gpu_coll_t coll);
bool tu_coll_is_nonblocking(coll_gpu_coll_t coll);
coll_gpu_coll_t tu_coll_blocking(coll_gpu_coll_t coll);    /* IALLREDUCE -> ALLREDUCE */
coll_gpu_coll_t tu_coll_nonblocking(coll_gpu_coll_t coll); /* ALLREDUCE -> IALLREDUCE */
/* Whether the case engine below (tu_coll_case_*) runs coll: not MPI_Alltoallw and the
 * neighborhood collectives, which test_neighbor checks. */
bool tu_coll_case_supported(coll_gpu_coll_t coll);
/* Case-insensitive "allreduce" or "MPI_Allreduce"; -1 if unknown. */
int tu_coll_from_name(const char *name);

/* The component's configuration as its cvars say (defaults of the contract when absent). */
typedef struct {
    bool found;
    long long staging_buffer_size;
    bool pipeline;
    bool check_memory_kinds;
    bool native;             /* coll_gpu_native */
    int allreduce_algorithm; /* coll_gpu_allreduce_algorithm: TU_ALG_* */
    long long ranks_per_node;
    long long one_shot_max_bytes;
    bool host_buffers; /* coll_gpu_host_buffers: host-buffer allreduce native too */
    /* coll_gpu_{reduce_scatter_block,allgather,bcast,reduce,gather,scatter}_algorithm:
     * TU_ALG_AUTO, TU_ALG_STAGED or the native one */
    int reduce_scatter_block_algorithm;
    int allgather_algorithm;
    int bcast_algorithm;
    int reduce_algorithm;
    int gather_algorithm;
    int scatter_algorithm;
    /* coll_gpu_{allgatherv,reduce_scatter,alltoall,alltoallv}_algorithm, alike */
    int allgatherv_algorithm;
    int reduce_scatter_algorithm;
    int alltoall_algorithm;
    int alltoallv_algorithm;
} tu_gpu_config_t;

/* Values of coll_gpu_allreduce_algorithm, and the elements of the
 * coll_gpu_allreduce_algorithm_calls pvar. */
enum {
    TU_ALG_AUTO = 0,
    TU_ALG_STAGED,
    TU_ALG_ONE_SHOT,
    TU_ALG_TWO_SHOT,
    TU_ALG_RING,
    TU_ALG_HIERARCHICAL,
    TU_ALG_RECURSIVE_DOUBLING,
    TU_NUM_ALGS
};

/* The emulated node of comm_rank under coll_gpu_ranks_per_node (the tests run on one machine,
 * where the component numbers emulated nodes by communicator rank / ranks_per_node), and
 * whether a communicator of comm_size ranks spans several. */
int tu_emulated_node(const tu_gpu_config_t *config, int comm_rank);
bool tu_multi_node(const tu_gpu_config_t *config, int comm_size);

/* Whether the component runs an allreduce natively on a communicator of comm_size ranks of
 * this (one) machine, given its parameters, with every rank passing device memory, a
 * predefined op on a predefined contiguous type and count > 0.  Across emulated nodes only
 * the ring runs natively (forced, or auto with one rank per node). */
bool tu_allreduce_native_expected(const tu_gpu_config_t *config, int comm_size);
/* The same for blocking MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast, MPI_Reduce,
 * MPI_Gather, MPI_Scatter, MPI_Allgatherv, MPI_Reduce_scatter, MPI_Alltoall, MPI_Alltoallv (coll:
 * their COLL_GPU_* value; across emulated nodes too) and MPI_Allreduce; false for every other
 * collective. */
bool tu_coll_native_expected(const tu_gpu_config_t *config, int coll, int comm_size);
void tu_gpu_config_read(tu_gpu_config_t *config);

typedef enum {
    TU_PATH_PASSTHROUGH,
    TU_PATH_STAGED,
    TU_PATH_NATIVE, /* run by the component's kernels / algorithms: nothing staged */
    TU_PATH_EITHER, /* any of the three */
    TU_PATH_MAYBE,  /* a zero-count call: Open MPI's MPI layer may return before any coll
                       module; if the component sees it, either way, with nothing copied */
} tu_path_t;
typedef enum { TU_CHUNKS_NONE, TU_CHUNKS_SOME, TU_CHUNKS_ANY } tu_chunks_t;

typedef struct {
    tu_path_t path;
    tu_chunks_t chunks;
    size_t device_payload; /* bytes of device data this rank's call reads or writes */
} tu_expect_t;

const char *tu_path_name(tu_path_t path);
/* Checks one call (or `ncalls` calls of the same expectation) of `coll` between two counter
 * snapshots; failures go to tu_fail.  No-op without counters (--no-component). */
void tu_check_counters(const tu_counters_t *before, const tu_counters_t *after,
                       coll_gpu_coll_t coll, int ncalls, const tu_expect_t *expect);

/* The same for a group of calls made between the two snapshots (outstanding nonblocking
 * requests): per collective, the calls expected on each path must add up. */
void tu_check_counters_group(const tu_counters_t *before, const tu_counters_t *after, int ncalls,
                             const coll_gpu_coll_t *colls, const tu_expect_t *expects);

/* ------------------------------------------------------------------------------------------ */
/* Types, operations, inputs and the reference                                                */
/* ------------------------------------------------------------------------------------------ */

typedef enum {
    TU_TYPE_INT8 = 0,
    TU_TYPE_UINT8,
    TU_TYPE_INT32,
    TU_TYPE_INT64,
    TU_TYPE_FLOAT,
    TU_TYPE_DOUBLE,
    TU_TYPE_VECTOR, /* MPI_Type_vector(2, 1, 2, MPI_INT32_T): a hole inside every element */
    TU_TYPE_LB,     /* MPI_DOUBLE resized to lower bound -8, extent 24 */
    TU_NUM_TYPES
} tu_type_id_t;

typedef enum {
    TU_BASE_INT8,
    TU_BASE_UINT8,
    TU_BASE_INT32,
    TU_BASE_INT64,
    TU_BASE_FLOAT,
    TU_BASE_DOUBLE
} tu_base_t;

typedef struct {
    tu_type_id_t id;
    const char *name;
    MPI_Datatype datatype;
    tu_base_t base;
    size_t base_size;
    int nvals;            /* base values per element */
    size_t val_offset[2]; /* byte offset of each value from the element's address */
    MPI_Aint extent;      /* element stride */
    MPI_Aint true_lb;     /* first byte of data from the element's address */
    MPI_Aint true_extent; /* bytes from the first to the last byte of data of one element */
    bool contiguous;      /* a plain predefined type */
    bool is_integer;
} tu_type_t;

typedef enum {
    TU_OP_SUM = 0,
    TU_OP_MAX,
    TU_OP_BXOR,
    TU_OP_USER_COMM,    /* x + y + 1 (wrapping): commutative user-defined op */
    TU_OP_USER_NONCOMM, /* non-commutative user-defined op: "first non-zero" on scalars,
                           affine map composition on the (a, b) pairs of the vector type */
    TU_NUM_OPS
} tu_op_id_t;

/* Creates the derived types and user ops (after MPI_Init; tu_setup does it). */
void tu_types_create(void);
void tu_types_free(void);
const tu_type_t *tu_type(tu_type_id_t id);
int tu_type_from_name(const char *name);
MPI_Op tu_op_handle(tu_op_id_t op);
const char *tu_op_name(tu_op_id_t op);
int tu_op_from_name(const char *name);
/* Predefined ops are defined by MPI on predefined types only (BXOR on integers only); the
 * derived types are reduced with the user-defined ops. */
bool tu_op_valid(tu_op_id_t op, tu_type_id_t type);

/* Bytes a buffer of n elements spans from its address (0 for n = 0). */
size_t tu_type_span(const tu_type_t *type, size_t n);

/* Input of source `src` (of `nsrc`), elements [first, first + count), as packed base values
 * (count * nvals values of base_size bytes, no holes).  `stream` separates independent
 * inputs of one source (e.g. the blocks of an alltoall). */
void tu_gen(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int src, int nsrc, size_t first,
            size_t count, void *packed);
/* inout[i] = in[i] op inout[i] on packed values (MPI order: `in` is the left operand). */
void tu_ref_apply(const tu_type_t *type, tu_op_id_t op, const void *in, void *inout, size_t count);
/* Reduction over sources [0, nsrc_used) of nsrc, elements [first, first + count). */
void tu_ref_reduce(const tu_type_t *type, tu_op_id_t op, uint32_t stream, int nsrc_used, int nsrc,
                   size_t first, size_t count, void *packed);

/* ------------------------------------------------------------------------------------------ */
/* Checked buffers: memory of one kind plus a host image of what it must hold                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    tu_mem_t mem;
    const tu_type_t *type;
    size_t nelems;
    size_t size;          /* bytes allocated: span of nelems + guard */
    char *alloc;          /* what tu_mem_alloc returned; the MPI buffer address is alloc */
    unsigned char *image; /* expected content, byte for byte */
    unsigned char *care;  /* 1 where the content is defined */
} tu_buf_t;

/* Allocates and sets the image to a position-dependent sentinel (holes, gaps and the guard
 * after the span keep it). */
int tu_buf_init(tu_buf_t *buf, tu_mem_t mem, const tu_type_t *type, size_t nelems);
void tu_buf_free(tu_buf_t *buf);
void tu_buf_put(tu_buf_t *buf, size_t first, size_t count, const void *packed);
void tu_buf_dont_care(tu_buf_t *buf, size_t first, size_t count);
int tu_buf_upload(const tu_buf_t *buf);
/* Reads the memory back and compares it with the image; reports the first mismatches
 * (rank, element, value index, got, expected; or the byte of a hole).  Returns the number of
 * mismatching bytes (0: good), or -1 if it could not be read. */
long tu_buf_verify(const tu_buf_t *buf, const char *what);

/* ------------------------------------------------------------------------------------------ */
/* Sub-communicators                                                                          */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    MPI_Comm comm;
    char name[32];
    int rank;
    int size;
    int *world_ranks; /* world rank of each member */
} tu_comm_t;

typedef enum {
    TU_COMM_WORLD,
    TU_COMM_SPLIT_ODD_EVEN,
    TU_COMM_SPLIT_REVERSED,
    TU_NUM_COMMS
} tu_comm_id_t;

/* Dup of MPI_COMM_WORLD, split by rank parity, and one group ordered by descending world
 * rank; all with MPI_ERRORS_RETURN. */
int tu_comm_create(tu_comm_id_t id, tu_comm_t *comm);
int tu_comm_wrap(MPI_Comm mpi_comm, const char *name, tu_comm_t *comm);
void tu_comm_free(tu_comm_t *comm);
/* Every tu_comm_id_t in order (the order of creation gives Open MPI's communicator names,
 * "MPI COMM 3 DUP FROM 0" for the world dup, which check scripts grep); one that cannot be
 * created is a failure that ends the program. */
void tu_comms_create_all(tu_comm_t comms[TU_NUM_COMMS]);
void tu_comms_free_all(tu_comm_t comms[TU_NUM_COMMS]);

/* ------------------------------------------------------------------------------------------ */
/* Collective cases                                                                           */
/* ------------------------------------------------------------------------------------------ */

typedef enum {
    TU_GARBAGE_NULL = 0,     /* NULL, count 0, MPI_DATATYPE_NULL, NULL count arrays */
    TU_GARBAGE_ONE,          /* (void *)0x1, with the count and type of the root */
    TU_GARBAGE_FREED_HOST,   /* a freed malloc pointer */
    TU_GARBAGE_FREED_DEVICE, /* a freed device pointer (freed host pointer without one) */
    TU_NUM_GARBAGE
} tu_garbage_t;

typedef struct {
    coll_gpu_coll_t coll; /* blocking or nonblocking */
    tu_type_id_t type;
    tu_op_id_t op; /* reductions only */
    size_t count;  /* elements per rank (per block for the v-variants' basis) */
    bool in_place;
    int root;
    const tu_comm_t *comm; /* ignored by REDUCE_LOCAL */
    tu_kind_t kind;        /* this rank's memory */
    uint32_t salt;         /* varies the data from case to case */
    tu_garbage_t garbage;  /* how the arguments MPI says are ignored are passed */
} tu_coll_params_t;

typedef struct tu_coll_case tu_coll_case_t;

bool tu_coll_is_reduction(coll_gpu_coll_t coll);
bool tu_coll_has_root(coll_gpu_coll_t coll);
bool tu_coll_allows_in_place(coll_gpu_coll_t coll);
/* Blocking collectives whose big device calls the component pipelines. */
bool tu_coll_pipelines(coll_gpu_coll_t coll);

/* Allocates the buffers, writes the inputs and computes the expected result. */
int tu_coll_case_create(const tu_coll_params_t *params, tu_coll_case_t **case_p);
/* Calls the collective; *request is set for the nonblocking ones (NULL allowed for blocking).
 * Returns the MPI return code. */
int tu_coll_case_start(tu_coll_case_t *c, MPI_Request *request);
/* Compares every buffer with its expected image, failures go to tu_fail; returns true when
 * everything matched. */
bool tu_coll_case_verify(tu_coll_case_t *c);
void tu_coll_case_destroy(tu_coll_case_t *c);
const char *tu_coll_case_desc(const tu_coll_case_t *c);
size_t tu_coll_case_data_bytes(const tu_coll_case_t *c);

/* What the counters must show for this rank's call, given the memory every member of the
 * communicator uses (kind_of_world_rank: NULL when every rank uses params->kind).  Returns
 * false when the case is invalid under the contract (a pipelined size with different memory
 * kinds across ranks, and no check_memory_kinds): the caller skips it on every rank. */
bool tu_coll_case_expect(const tu_coll_case_t *c, const tu_gpu_config_t *config,
                         const tu_kind_t *kind_of_world_rank, tu_expect_t *expect);

/* Helpers for simple tests: allocate `count` MPI_INT in `mem` filled with `value + index`. */
int tu_int_buffer_create(tu_mem_t mem, size_t count, int value, void **ptr_p);
/* Checks `count` ints equal expected + index; returns mismatches (reports the first). */
long tu_int_buffer_check(tu_mem_t mem, const void *ptr, size_t count, int expected,
                         const char *what);

/* Diagnostic: does this Open MPI's MPI_SUM on int8 saturate (open-mpi/ompi#8045)? */
bool tu_op_avx_int8_bug_present(void);

#endif /* TEST_UTIL_H */

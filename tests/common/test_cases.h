/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives of the coll/gpu MPI tests and the case engine they share.
 *
 * test_case_table.c: the collective table, one row per collective the engine runs, saying as
 * data what a case of it is (how its buffers are laid out and its result computed, which
 * buffers are significant on which rank, whether it reduces, has a root, takes MPI_IN_PLACE,
 * is pipelined, and the component's algorithm parameter that makes it native), and the names
 * and blocking/nonblocking forms of every intercepted collective.
 *
 * test_cases.c: the engine: set up the buffers of one call of any collective of the table, post
 * it (blocking or nonblocking), verify every byte the call may and may not touch, and say which
 * path (passthrough / staged / native) the component must have taken.
 */
#ifndef TEST_CASES_H
#define TEST_CASES_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll_gpu_colls.h"
#include "test_buffers.h"
#include "test_comms.h"
#include "test_counters.h"
#include "test_types.h"

/* ------------------------------------------------------------------------------------------ */
/* The collective table                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* How a case lays out its buffers and where its expected result comes from. */
typedef enum {
    TU_SHAPE_REDUCE,         /* allreduce, reduce, scan, exscan: count elements reduced */
    TU_SHAPE_REDUCE_SCATTER, /* reduce_scatter(_block): block j of the reduction to rank j */
    TU_SHAPE_REDUCE_LOCAL,   /* inoutbuf = inbuf op inoutbuf, no communicator */
    TU_SHAPE_BCAST,          /* one buffer: the root's data everywhere */
    TU_SHAPE_GATHER,         /* allgather(v), gather(v): block j of the result is rank j's input */
    TU_SHAPE_SCATTER,        /* scatter(v): the root's block j goes to rank j */
    TU_SHAPE_ALLTOALL,       /* alltoall(v): block j of rank i goes to block i of rank j */
    TU_NUM_SHAPES
} tu_shape_t;

/* Which buffers MPI says are significant on a rank (the others are ignored: garbage). */
typedef enum {
    TU_SIGNIFICANT_ALL,       /* the send buffer unless MPI_IN_PLACE, the receive buffer */
    TU_SIGNIFICANT_BOTH,      /* both buffers, always (reduce_local: inbuf and inoutbuf) */
    TU_SIGNIFICANT_ONE,       /* one buffer: the root's is its send side, the others' their
                                 receive side (bcast) */
    TU_SIGNIFICANT_ROOT_RECV, /* the receive buffer at the root only; the send buffer unless
                                 the root's call is in place (reduce, gather(v)) */
    TU_SIGNIFICANT_ROOT_SEND, /* the send buffer at the root only; the receive buffer unless
                                 the root's call is in place (scatter(v)) */
} tu_significant_t;

typedef struct {
    tu_shape_t shape;
    tu_significant_t significant;
    bool vector;    /* counts that vary by rank (the v-variants) */
    bool reduction; /* takes an op */
    bool rooted;
    bool in_place; /* takes MPI_IN_PLACE */
    /* big device calls of the blocking collective are pipelined through the staging buffer:
     * contiguous types, or any type (in bytes of the type signature: bcast) */
    bool pipelines;
    bool pipelines_any_type;
    /* the component's coll_gpu_<coll>_algorithm parameter (NULL: none, never native) and its
     * field in tu_gpu_config_t */
    const char *algorithm_cvar;
    size_t algorithm_offset;
    /* the native algorithm runs even with every count 0 (a native MPI_Alltoallv agrees on its
     * counts, a host allreduce, before it can tell that they are all zero) */
    bool native_when_empty;
    /* the value of its device-driven row `device` (0: none): one node of 2 ranks or more, or
     * the call is staged */
    int device_row;
} tu_coll_info_t;

/* The row of coll (a nonblocking collective: its blocking form's), NULL for a collective the
 * engine does not run (tu_coll_case_supported). */
const tu_coll_info_t *tu_coll_info(coll_gpu_coll_t coll);

const char *tu_coll_name(coll_gpu_coll_t coll);
bool tu_coll_is_blocking(coll_gpu_coll_t coll);
bool tu_coll_is_nonblocking(coll_gpu_coll_t coll);
bool tu_coll_is_persistent(coll_gpu_coll_t coll);          /* MPI_*_init */
coll_gpu_coll_t tu_coll_blocking(coll_gpu_coll_t coll);    /* IALLREDUCE -> ALLREDUCE */
coll_gpu_coll_t tu_coll_nonblocking(coll_gpu_coll_t coll); /* ALLREDUCE -> IALLREDUCE */
coll_gpu_coll_t tu_coll_persistent(coll_gpu_coll_t coll);  /* ALLREDUCE -> ALLREDUCE_INIT */
/* Whether the case engine below (tu_coll_case_*) runs coll: not MPI_Alltoallw and the
 * neighborhood collectives, which test_neighbor checks. */
bool tu_coll_case_supported(coll_gpu_coll_t coll);
/* Case-insensitive "allreduce" or "MPI_Allreduce"; -1 if unknown. */
int tu_coll_from_name(const char *name);

bool tu_coll_is_reduction(coll_gpu_coll_t coll);
bool tu_coll_has_root(coll_gpu_coll_t coll);
/* Whether coll takes MPI_IN_PLACE (true for the collectives outside the table). */
bool tu_coll_allows_in_place(coll_gpu_coll_t coll);
/* Blocking collectives whose big device calls the component pipelines. */
bool tu_coll_pipelines(coll_gpu_coll_t coll);
/* Which of its buffers a rank's call of coll uses (tu_significant_t). */
void tu_coll_buffers_used(coll_gpu_coll_t coll, bool is_root, bool in_place, bool *send_used_p,
                          bool *recv_used_p);

/* The persistent collectives: MPI-4's (Open MPI 5), or Open MPI 4.1's extension (mpi-ext.h). */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define TU_PERSISTENT(name) MPI_##name
#else
#include <mpi-ext.h>
#define TU_PERSISTENT(name) MPIX_##name
#endif

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

/* Makes the freed pointers of TU_GARBAGE_FREED_* (tu_setup does it, after the accelerator). */
void tu_garbage_init(void);

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

/* Allocates the buffers, writes the inputs and computes the expected result. */
int tu_coll_case_create(const tu_coll_params_t *params, tu_coll_case_t **case_p);
/* Calls the collective; *request is set for the nonblocking ones (NULL allowed for blocking);
 * for the persistent ones it is the inactive persistent request (MPI_Start starts it).
 * Returns the MPI return code. */
int tu_coll_case_start(tu_coll_case_t *c, MPI_Request *request);
/* Gives c the inputs and expected results of from, a case of the same parameters but its salt
 * (a persistent request on c's buffers is started again with new data). */
int tu_coll_case_reload(tu_coll_case_t *c, const tu_coll_case_t *from);
/* Compares every buffer with its expected image, failures go to tu_fail; returns true when
 * everything matched. */
bool tu_coll_case_verify(tu_coll_case_t *c);
void tu_coll_case_destroy(tu_coll_case_t *c);
const char *tu_coll_case_desc(const tu_coll_case_t *c);
size_t tu_coll_case_data_bytes(const tu_coll_case_t *c);

/* What the counters must show for this rank's call, given the memory every member of the
 * communicator uses (kind_of_world_rank: NULL when every rank uses params->kind).  Ranks may
 * pass any mix of memory kinds to one call, with default parameters: a rank whose whole call
 * is on host-accessible memory passes it through, the others stage it as one host collective
 * (or, where no rank passes through, may run it natively); native where every rank passes
 * device memory for every buffer it uses and the native algorithm takes the call.  Returns
 * false for a case the caller must skip on every rank (none today: every mix is valid). */
bool tu_coll_case_expect(const tu_coll_case_t *c, const tu_gpu_config_t *config,
                         const tu_kind_t *kind_of_world_rank, tu_expect_t *expect);

#endif /* TEST_CASES_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the coll/gpu component did, as the MPI tests see it: its MPI_T counters (calls per path,
 * staged bytes and chunks, accelerator errors), its configuration as its cvars say, and the
 * checks that a call (or a group of calls) took the path it must have taken.
 */
#ifndef TEST_COUNTERS_H
#define TEST_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "coll_gpu_colls.h"
#include "test_comms.h"

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

/* auto's size rule of a binomial algorithm between node leaders: its parameters, and the cost
 * model's band without rails (coll_gpu_model_defaults.h), which a communicator without rails
 * takes where none of them was set (on the command line: OMPI_MCA_ in the environment). */
typedef struct {
    int min_nodes;
    long long min_bytes, max_bytes;
    bool set;
    int no_rails_min_nodes;
    long long no_rails_min_bytes, no_rails_max_bytes;
} tu_binomial_rule_t;

/* auto's staging of small blocking calls on device buffers: up to max_bytes on one node,
 * nodes_max_bytes across nodes. */
typedef struct {
    long long max_bytes, nodes_max_bytes;
} tu_staged_rule_t;

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
    /* the host of each world rank (a hash of its processor name) where the world spans
     * several hosts (tests/multihost), else NULL */
    unsigned *host_of_world_rank;
    /* coll_gpu_<coll>_staged_max_bytes and _staged_nodes_max_bytes of the collectives auto
     * stages small calls of: allreduce, bcast, reduce, gather, scatter, alltoall */
    tu_staged_rule_t allreduce_staged, bcast_staged, reduce_staged, gather_staged, scatter_staged,
        alltoall_staged, allgather_staged, reduce_scatter_staged;
    long long native_chunk_size;            /* coll_gpu_native_chunk_size */
    long long ring_min_bytes;               /* coll_gpu_allreduce_ring_min_bytes */
    long long doubling_max_bytes;           /* coll_gpu_allreduce_doubling_max_bytes */
    int doubling_min_nodes;                 /* coll_gpu_allreduce_doubling_min_nodes */
    int rabenseifner_min_nodes;             /* coll_gpu_allreduce_rabenseifner_min_nodes */
    int allgather_doubling_min_nodes;       /* coll_gpu_allgather_doubling_min_nodes */
    long long allgather_doubling_max_bytes; /* coll_gpu_allgather_doubling_max_bytes */
    int rs_halving_min_nodes;               /* coll_gpu_reduce_scatter_halving_min_nodes */
    long long rs_halving_max_bytes;         /* coll_gpu_reduce_scatter_halving_max_bytes */
    /* coll_gpu_<coll>_binomial_{min_nodes,min_bytes,max_bytes} (max: -1 for SIZE_MAX) */
    tu_binomial_rule_t bcast_binomial, reduce_binomial, gather_binomial, scatter_binomial;
    /* coll_gpu_{gather,scatter,alltoall}_hierarchical_*: hierarchical's band on nodes of several
     * ranks */
    tu_binomial_rule_t gather_hierarchical, scatter_hierarchical, alltoall_hierarchical;
    int tree_rails;    /* coll_gpu_tree_rails: -1 auto (off on the test machines: their ranks share
                        * one network device), 0 off, 1 on */
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
    bool native_nonblocking; /* coll_gpu_native_nonblocking */
    /* coll_gpu_memory_kinds_uniform: the user promises that every rank passes the same memory
     * kind to a nonblocking or persistent call, which may then run natively (without it they
     * are staged: a rank cannot tell its peers' kinds without a round trip).  False where the
     * component has no such parameter. */
    bool memory_kinds_uniform;
    /* coll_gpu_native_setup=create: every communicator of more than one rank the program
     * creates (the tests' communicators, MPI_COMM_WORLD's duplicate among them; not
     * MPI_COMM_WORLD itself) has its native scratch from its creation on */
    bool native_setup_create;
    /* set by the test, not read: it ran a blocking native collective on device memory on every
     * communicator, which sets up the scratch nonblocking calls need to run natively */
    bool nonblocking_contexts;
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
    TU_ALG_HIERARCHICAL_DOUBLING,
    TU_ALG_HIERARCHICAL_RABENSEIFNER,
    TU_ALG_DEVICE_ONE_SHOT,
    TU_ALG_DEVICE_TWO_SHOT,
    TU_ALG_DEVICE_HIERARCHICAL,
    TU_NUM_ALGS
};

/* The emulated node of comm_rank under coll_gpu_ranks_per_node (the tests run on one machine,
 * where the component numbers emulated nodes by communicator rank / ranks_per_node), and
 * whether a communicator of comm_size ranks spans several. */
int tu_emulated_node(const tu_gpu_config_t *config, int comm_rank);
bool tu_multi_node(const tu_gpu_config_t *config, int comm_size);
/* Whether it spans nodes of as many ranks each, as device_hierarchical needs (at most 64 nodes
 * of at most 32 ranks). */
bool tu_uniform_nodes(const tu_gpu_config_t *config, int comm_size);

/* The element of coll_gpu_<coll>_algorithm_calls a native call of coll (COLL_GPU_*: allgather(v),
 * reduce_scatter(_block), reduce and the others with a "direct" row first) of bytes per rank
 * counts on a communicator of comm_size ranks: the forced algorithm, or auto's (hierarchical,
 * the second row, where the communicator spans nodes and they have several ranks (alltoall:
 * blocks on coll_gpu_alltoall_hierarchical's band), and for a reduce of 64 KiB or more on 3
 * nodes or more; direct, the first, elsewhere; allgather(v): hierarchical_doubling, the third,
 * from coll_gpu_allgather_doubling_min_nodes emulated nodes on where bytes (the largest block)
 * x comm_size <= coll_gpu_allgather_doubling_max_bytes; reduce_scatter(_block):
 * hierarchical_halving, the third, likewise from coll_gpu_reduce_scatter_halving_min_nodes and
 * _max_bytes; bcast: pipelined, its first, or binomial, its second, from
 * coll_gpu_bcast_binomial_min_nodes nodes on for messages (bytes) from _min_bytes up to _max_bytes;
 * reduce: binomial, the third, likewise from coll_gpu_reduce_binomial_min_nodes; gather, scatter:
 * binomial, the third, from coll_gpu_{gather,scatter}_binomial_min_nodes nodes on for calls of
 * bytes x comm_size from _min_bytes up to _max_bytes). */
int tu_native_alg_slot(const tu_gpu_config_t *config, int coll, int comm_size, size_t bytes);
/* Whether comm's ranks are on several nodes: emulated (coll_gpu_ranks_per_node) or real hosts. */
bool tu_comm_multi_node(const tu_gpu_config_t *config, const tu_comm_t *comm);
/* Whether auto stages a blocking call of coll (COLL_GPU_*) on device buffers on comm: bytes a
 * rank's message (allreduce, bcast, reduce) or block (gather, scatter, alltoall, allgather,
 * reduce_scatter_block; the largest of allgatherv and reduce_scatter, which take allgather's and
 * reduce_scatter's thresholds), up to coll_gpu_<coll>_staged_max_bytes on one node,
 * _staged_nodes_max_bytes across nodes, where the call's coll_gpu_<coll>_algorithm is auto.
 * False for every other collective and form. */
bool tu_staged_auto(const tu_gpu_config_t *config, int coll, const tu_comm_t *comm, size_t bytes);
/* Whether auto runs an allreduce of bytes per rank on comm_size ranks hierarchical_doubling (from
 * coll_gpu_allreduce_doubling_min_nodes emulated nodes on, up to
 * coll_gpu_allreduce_doubling_max_bytes). */
bool tu_allreduce_doubling_auto(const tu_gpu_config_t *config, int comm_size, size_t bytes);
/* Whether auto runs it hierarchical_rabenseifner (from coll_gpu_allreduce_rabenseifner_min_nodes
 * emulated nodes on, where hierarchical_doubling does not run). */
bool tu_allreduce_rabenseifner_auto(const tu_gpu_config_t *config, int comm_size, size_t bytes);
/* Whether a native allreduce of bytes per rank on comm_size ranks runs hierarchical (across nodes
 * of several ranks: forced, or auto's choice there above coll_gpu_allreduce_doubling_max_bytes),
 * whose order of reduction reduce_scatter(_block)'s hierarchical shares. */
bool tu_allreduce_hierarchical_expected(const tu_gpu_config_t *config, int comm_size, size_t bytes);

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

/* One blocking MPI_Allreduce of one int on device memory on each of the n communicators, which
 * sets up coll/gpu's native scratch there (nonblocking calls run natively only after); sets
 * config->nonblocking_contexts.  Nothing without a device. */
void tu_native_scratch_setup(const MPI_Comm *comms, int n, tu_gpu_config_t *config);
void tu_gpu_config_read(tu_gpu_config_t *config);

typedef enum {
    TU_PATH_PASSTHROUGH,
    TU_PATH_STAGED,
    TU_PATH_NATIVE, /* run by the component's kernels / algorithms: nothing staged */
    TU_PATH_EITHER, /* any of the three */
    TU_PATH_MAYBE,  /* a zero-count call: Open MPI's MPI layer may return before any coll
                       module; if the component sees it, either way, with nothing copied */
    /* device data in a call whose ranks pass different memory kinds: staged or native, never
     * passed through with device pointers */
    TU_PATH_STAGED_OR_NATIVE,
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

#endif /* TEST_COUNTERS_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/gpu's MCA parameters, each declared once: here.  What is generated from this list:
 * the fields of mca_coll_gpu_component that hold them (coll_gpu.h), their registration with
 * default, enum, help, level and scope, and the configuration hash the ranks of a communicator
 * compare, native_config_hash (both coll_gpu_params.c).  A new parameter is one row.
 *
 * COLL_GPU_FOREACH_PARAM(PARAM, BAND, ALGORITHMS, SYNONYM) lists them in registration (and
 * ompi_info) order, each row one of:
 *
 *   PARAM(name, TYPE, default, ENUM, level, SCOPE, MARK, help)
 *       coll_gpu_<name>, held in the field mca_coll_gpu_component.<name> of TYPE's C type
 *       (COLL_GPU_PARAM_CTYPE_<TYPE>): INT, UNSIGNED_INT, SIZE_T, BOOL, DOUBLE or STRING
 *       (MCA_BASE_VAR_TYPE_<TYPE>).  ENUM: NO_ENUM, VALUES(table) (of
 *       mca_base_var_enum_value_t) or FLAGS(table) (of mca_base_var_enum_value_flag_t), the
 *       enum named coll_gpu_<name>.  level: OPAL_INFO_LVL_<level>; SCOPE:
 *       MCA_BASE_VAR_SCOPE_<SCOPE>.
 *   BAND(coll, alg, MODEL, MARK, bytes_what, what, small_why, large_why)
 *       coll_gpu_<coll>_<alg>_{min_nodes,min_bytes,max_bytes}: the band auto runs alg on,
 *       held in mca_coll_gpu_component.<coll>_<alg> (coll_gpu_band_rule_t), its defaults the
 *       cost model's COLL_GPU_MODEL_<MODEL>_* (coll_gpu_model_defaults.h): what the row does,
 *       why it loses below min_bytes and above max_bytes.
 *   ALGORITHMS(MARK)
 *       coll_gpu_<coll>_algorithm of every collective with native algorithms, named and
 *       described by their algorithm tables (coll_gpu_alg.h), held in
 *       mca_coll_gpu_component.algorithm[coll_gpu_ncoll_t].
 *   SYNONYM(name, old_name)
 *       coll_gpu_<old_name>: a deprecated name of coll_gpu_<name> (a row above it).
 *
 * MARK says whether the ranks must agree on the value (docs/failure-model.md: every
 * parameter that changes a protocol is part of what the ranks compare, by construction):
 *   PROTOCOL        it can change what the ranks do together: whether a call passes through,
 *                   is staged or runs natively, pipelined or not; the algorithm, chunks,
 *                   thresholds, the nodes, the checks that add a collective.  It is part of
 *                   native_config_hash, and its help ends with COLL_GPU_PARAM_PROTOCOL_HELP
 *                   (ompi_info shows it; tests/mpi/check_param_mismatch.sh finds them by it).
 *                   Mark a new parameter PROTOCOL unless it is plainly this rank's own business.
 *   PROTOCOL_RULES  as PROTOCOL, for tuning_file: the rules read from the file are compared,
 *                   not the file's name.
 *   LOCAL           this rank's own business; the comment above the row says why.
 */
#ifndef COLL_GPU_PARAMS_H
#define COLL_GPU_PARAMS_H

#include <stdint.h>

#include "opal/mca/mca.h"

#define COLL_GPU_DEFAULT_PRIORITY 80
#define COLL_GPU_DEFAULT_STAGING_BUFFER_SIZE (4UL << 20)
#define COLL_GPU_MIN_STAGING_BUFFER_SIZE 4096UL
#define COLL_GPU_DEFAULT_NATIVE_CHUNK_SIZE (4UL << 20)

/* The sentence every marked parameter's help ends with (ompi_info). */
#define COLL_GPU_PARAM_PROTOCOL_HELP                                                               \
    "Every rank must be given the same value (the ranks compare it; a mismatch stages the "        \
    "communicator's device collectives)."

typedef enum {
    COLL_GPU_PARAM_LOCAL,
    COLL_GPU_PARAM_PROTOCOL,
    COLL_GPU_PARAM_PROTOCOL_RULES,
} coll_gpu_param_mark_t;

#define COLL_GPU_PARAM_CTYPE_INT int
#define COLL_GPU_PARAM_CTYPE_UNSIGNED_INT unsigned
#define COLL_GPU_PARAM_CTYPE_SIZE_T size_t
#define COLL_GPU_PARAM_CTYPE_BOOL bool
#define COLL_GPU_PARAM_CTYPE_DOUBLE double
#define COLL_GPU_PARAM_CTYPE_STRING char *

/* The staged thresholds of a collective with a staged time model beside allreduce's (which have
 * rows of their own): coll_gpu_<coll>_staged_max_bytes and _staged_nodes_max_bytes, defaults
 * COLL_GPU_MODEL_<MODEL>_STAGED_{,NODES_}MAX_BYTES (coll_gpu_alg.h: COLL_GPU_ALG_STAGED_RULE);
 * what: the bytes they count (a message, a rank's block). */
#define STAGED_PARAMS(PARAM, coll, MODEL, what)                                                    \
    PARAM(coll##_staged_max_bytes, SIZE_T, COLL_GPU_MODEL_##MODEL##_STAGED_MAX_BYTES, NO_ENUM, 5,  \
          READONLY, PROTOCOL,                                                                      \
          "With " #coll "_algorithm auto and no tuning rule, blocking calls on device buffers "    \
          "inside a node: the largest " what " (bytes) staged through host memory (copies and "    \
          "Open MPI's host collective cost less than a native call's launches, synchronizations "  \
          "and signal rounds there); larger ones run natively.  0: never.  The default is the "    \
          "cost model's crossover on one node of 8 H200 (perf/cost_model --crossovers)")           \
    PARAM(coll##_staged_nodes_max_bytes, SIZE_T, COLL_GPU_MODEL_##MODEL##_STAGED_NODES_MAX_BYTES,  \
          NO_ENUM, 5, READONLY, PROTOCOL,                                                          \
          "As " #coll "_staged_max_bytes, across nodes.  The default is the cost model's: the "    \
          "threshold that loses least over 2 to 1,024 nodes of one and of 8 H200 "                 \
          "(perf/cost_model --crossovers prints each layout's, and a tuning file of them)")

#define COLL_GPU_FOREACH_PARAM(PARAM, BAND, ALGORITHMS, SYNONYM)                                   \
    /* priority, enable, accelerator: a rank where they keep the component off a communicator      \
     * runs Open MPI's own collectives there and compares nothing: marked, but only the same       \
     * values on every rank make them agree */                                                     \
    PARAM(priority, INT, COLL_GPU_DEFAULT_PRIORITY, NO_ENUM, 6, READONLY, PROTOCOL,                \
          "Priority of the coll gpu component.  It must be above the components it wraps "         \
          "(tuned 30, han 35, self 75, cuda 78) so that it sits in front of them and hands "       \
          "them host-buffer calls")                                                                \
    /* local: what this rank logs */                                                               \
    PARAM(verbose, INT, 0, NO_ENUM, 9, LOCAL, LOCAL,                                               \
          "Verbosity of the coll gpu component: 1 says which accelerator backend was chosen or "   \
          "why the component is disabled, 10 logs every staged call")                              \
    PARAM(enable, BOOL, true, NO_ENUM, 3, READONLY, PROTOCOL,                                      \
          "Whether coll gpu takes part in collective selection at all (false: Open MPI runs as "   \
          "if the component were not installed)")                                                  \
    PARAM(accelerator, INT, COLL_GPU_ACCELERATOR_AUTO, VALUES(coll_gpu_accelerator_values), 5,     \
          READONLY, PROTOCOL,                                                                      \
          "Accelerator backend: auto (CUDA when a driver and a device are present, otherwise "     \
          "the component stays out of the way), cuda, or emulated (CPU memory that the "           \
          "component treats as device memory; for testing without a GPU)")                         \
    PARAM(staging_buffer_size, SIZE_T, COLL_GPU_DEFAULT_STAGING_BUFFER_SIZE, NO_ENUM, 5, READONLY, \
          PROTOCOL,                                                                                \
          "Bytes of pinned host memory each communicator allocates, on its first collective on "   \
          "device buffers, to stage them through host memory.  Larger messages are pipelined in "  \
          "chunks of a quarter of it (see staged_pipeline) or use temporary host buffers. "        \
          "Minimum 4096")                                                                          \
    PARAM(staged_pipeline, BOOL, true, NO_ENUM, 6, READONLY, PROTOCOL,                             \
          "Pipeline the staging of allreduce, reduce, bcast, scan, exscan and reduce_local on "    \
          "contiguous device data: chunks overlap the device-to-host copy, the host collective "   \
          "and the host-to-device copy.  This issues one host collective per chunk, so every "     \
          "rank must pass the same kind of memory (all device, or all host) to a given call "      \
          "(datatypes may differ if their type signature is the same: bcast cuts in signature "    \
          "bytes); set it to false, or set check_memory_kinds, otherwise")                         \
    PARAM(native, BOOL, true, NO_ENUM, 5, READONLY, PROTOCOL,                                      \
          "Run device-buffer collectives with coll/gpu's own kernels and native algorithms where " \
          "it has them (MPI_Reduce_local and every collective with a coll_gpu_<coll>_algorithm "   \
          "parameter); false: stage every device-buffer collective through host memory and Open "  \
          "MPI's own collectives (a baseline for benchmarks, a fallback)")                         \
    PARAM(                                                                                         \
        native_nonblocking, BOOL, true, NO_ENUM, 5, READONLY, PROTOCOL,                            \
        "Run nonblocking collectives on device memory with the blocking form's native algorithm, " \
        "on a thread of the communicator's own, so that they progress while the application "      \
        "computes: MPI_Iallreduce, MPI_Ireduce_scatter(_block), MPI_Iallgather(v), MPI_Ibcast, "   \
        "MPI_Ireduce, MPI_Igather, MPI_Iscatter and MPI_Ialltoall, and their persistent forms, "   \
        "from the communicator's first call (coll_gpu_native_setup); every rank "                  \
        "must pass device memory, as for the blocking calls.  "                                    \
        "Communicators spanning nodes then lock their UCX worker.  false: every "                  \
        "nonblocking call is staged (inputs copied at post, results when the request completes)")  \
    PARAM(memory_kinds_uniform, BOOL, false, NO_ENUM, 5, READONLY, PROTOCOL,                       \
          "A promise of the program: whenever one rank passes device memory to a nonblocking or "  \
          "persistent collective, every rank of the call does (no host buffer at a root, say).  "  \
          "Lets those calls run natively (native_nonblocking); a program that breaks the "         \
          "promise hangs.  false: they are staged, right for any program, since a nonblocking "    \
          "call cannot wait to learn its peers' memory kinds; blocking calls learn them on the "   \
          "call board and need no promise")                                                        \
    PARAM(                                                                                         \
        native_setup, INT, COLL_GPU_NATIVE_SETUP_FIRST_CALL, VALUES(coll_gpu_native_setup_values), \
        5, READONLY, PROTOCOL,                                                                     \
        "When a communicator's native context is set up (its node map, transport team and "        \
        "device scratch: a few host collectives and device memory of 2 x the larger of "           \
        "allreduce_one_shot_max_bytes and 2 x native_chunk_size per rank): first_call, by its "    \
        "first native collective on device memory (communicators that never see one cost "         \
        "nothing; a nonblocking one, which must not wait for its peers, starts the setup in the "  \
        "background and waits for it in a queue with the calls posted after it); create, when "    \
        "the "                                                                                     \
        "program creates the communicator (MPI_Comm_dup, MPI_Comm_split, MPI_Comm_idup ...; "      \
        "not MPI_COMM_WORLD, created in MPI_Init before many programs choose their GPU: it "       \
        "keeps first_call): the setup starts there and goes on in the background, from any MPI "   \
        "call of the process, until the communicator's first collective on device memory "         \
        "completes it; its nonblocking and persistent collectives run natively from the first "    \
        "call, and every such communicator of more than one rank pays the setup, on the device "   \
        "current at its creation (under MPI_THREAD_MULTIPLE the setup runs on a thread of its "    \
        "own; under MPI_THREAD_SERIALIZED inside the creation, waiting for the peers there).  "    \
        "Every rank must give the same value")                                                     \
    /* local: how long this rank's thread polls before it sleeps: timing only */                   \
    PARAM(                                                                                         \
        native_thread_spin, INT, -1, NO_ENUM, 6, READONLY, LOCAL,                                  \
        "Microseconds a communicator's thread (native nonblocking, persistent and stream-ordered " \
        "calls across nodes) polls for the next call after finishing one, before it sleeps: a "    \
        "call posted meanwhile starts without waking a sleeping thread (a system call and a "      \
        "context switch, most of a post's host time).  -1: 50 where the node has two CPUs per "    \
        "local process and the process may run on more than one, else 0 (the thread would poll "   \
        "on a core the application needs: a rank bound to one core shares it with the thread); "   \
        "0: sleep at once")                                                                        \
    PARAM(check_memory_kinds, BOOL, false, NO_ENUM, 9, READONLY, PROTOCOL,                         \
          "Before every collective the ranks agree on whether they pass device memory and on "     \
          "whether each can run the native algorithms (one small allreduce); a mix is run "        \
          "correctly through the staged path.  Needed by programs whose ranks pass different "     \
          "memory kinds to one call (datatypes that differ across ranks need nothing: calls are "  \
          "decided on the type signature).  Costs a collective per call")                          \
    PARAM(check_counts, BOOL, false, NO_ENUM, 9, READONLY, PROTOCOL,                               \
          "Debug: before the native algorithms of a call are chosen, the ranks compare what they " \
          "passed (count, element size, op; one small allgather per call); a mismatch, which "     \
          "makes the program erroneous, is reported with a help message naming a rank that "       \
          "disagrees, and every rank returns MPI_ERR_COUNT.  Without it such a program reads "     \
          "wrong data or times out, but never writes outside its buffers.  The v-variants "        \
          "compare their count arrays: allgatherv's and reduce_scatter's recvcounts against "      \
          "rank 0's, alltoallv's sendcounts against the receivers' recvcounts")                    \
    PARAM(ranks_per_node, INT, 0, NO_ENUM, 9, READONLY, PROTOCOL,                                  \
          "Split every node into emulated nodes of this many ranks (consecutive ranks of the "     \
          "node, in communicator order), so that the inter-node algorithms and the ucx transport " \
          "run between processes of one machine.  0: nodes are what "                              \
          "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds.  For testing")                         \
    /* which backend carries a pair of ranks, whether a team forms at all */                       \
    PARAM(transports, UNSIGNED_INT, CGT_BACKEND_ALL, FLAGS(coll_gpu_transport_flags), 5, READONLY, \
          PROTOCOL,                                                                                \
          "Comma-separated transports the native algorithms may use: posix (host memory of ranks " \
          "on the same node, shared segments), cuda_ipc (device memory of ranks on the same "      \
          "node, CUDA IPC), ucx (ranks on other nodes: InfiniBand/RoCE, or TCP)")                  \
    /* local: a diagnostic, off by default: it aborts a hung job, never changes a step */          \
    PARAM(                                                                                         \
        transport_timeout, DOUBLE, 0.0, NO_ENUM, 6, READONLY, LOCAL,                               \
        "Hang detector, off by default (0): seconds a native collective may wait for a live peer " \
        "(or a UCX flush) before the job is aborted with a message naming the call.  A slow "      \
        "peer is never an error otherwise; a dead one is found without a timeout (its process "    \
        "gone, its UCX endpoint failed, Open MPI's runtime)")                                      \
    /* local: a test's: this rank reads the call board later, which every outcome must survive */  \
    PARAM(board_test_delay_us, INT, 0, NO_ENUM, 9, READONLY, LOCAL,                                \
          "Testing, off by default (0): microseconds a rank sleeps between reading a word of the " \
          "call board and reading whether its writer went on (its node leader's verdict, a "       \
          "node peer's arrival), to widen the windows in which that rank went on meanwhile "       \
          "(tests/mpi/check_late_rank.sh).  Results stay right; calls are slower")                 \
    /* local: a test's: this rank's proxy completes its puts later, which its peers survive */     \
    PARAM(proxy_test_delay_us, INT, 0, NO_ENUM, 9, READONLY, LOCAL,                                \
          "Testing, off by default (0): microseconds a device-driven call's proxy (across nodes) " \
          "waits once the other nodes' data of the call's last step came, progressing but not "    \
          "completing its own puts, to widen the window in which a peer returns from the call "    \
          "and waits in another (tests/mpi/check_threads.sh).  Results stay right; calls are "     \
          "slower")                                                                                \
    /* local: this rank's caches only: a miss registers or maps again, as a first use does */      \
    PARAM(registration_cache_size, INT, 64, NO_ENUM, 6, READONLY, LOCAL,                           \
          "Registered buffers and mapped peer buffers each communicator keeps for reuse (least "   \
          "recently used evicted beyond it)")                                                      \
    /* local: this rank's own NICs (tree_rails auto: the team agrees on what they imply) */        \
    PARAM(net_devices, STRING, NULL, NO_ENUM, 5, READONLY, LOCAL,                                  \
          "Network devices for the ucx transport, as UCX_NET_DEVICES takes them "                  \
          "(\"mlx5_0:1,mlx5_1:1\").  Empty: the HCA(s) nearest to the rank's GPU, chosen with "    \
          "hwloc (printed at coll_gpu_verbose 1)")                                                 \
    /* a debug check, but one of collectives of its own that only its ranks would run */           \
    PARAM(transport_check, BOOL, false, NO_ENUM, 9, READONLY, PROTOCOL,                            \
          "Debug: on the first blocking collective on device buffers of each communicator, set "   \
          "up its transport (as the native algorithms do on their first call) and check that "     \
          "every rank reaches every other through it: puts into host and device scratch, "         \
          "signals, the node-local barrier.  The result is printed at coll_gpu_verbose 1, a "      \
          "failure with a help message.  Every rank must pass device memory to that call")         \
    /* local: this rank's UCX transports: the same puts, gets and signals over any of them */      \
    PARAM(ucx_tls, STRING, NULL, NO_ENUM, 6, READONLY, LOCAL,                                      \
          "UCX transports for the ucx transport's context, as UCX_TLS takes them "                 \
          "(\"rc,cuda_copy\", \"tcp\").  Empty: UCX's own choice")                                 \
    ALGORITHMS(PROTOCOL)                                                                           \
    PARAM(allreduce_one_shot_max_bytes, SIZE_T, COLL_GPU_MODEL_ONE_SHOT_MAX_BYTES, NO_ENUM, 5,     \
          READONLY, PROTOCOL,                                                                      \
          "With allreduce_algorithm auto and no tuning rule: the largest message (bytes per "      \
          "rank) run one-shot; larger ones run two-shot.  Also sizes the device scratch.  The "    \
          "default is the cost model's crossover on one node of 8 H200 (perf/cost_model "          \
          "--crossovers prints it for other layouts and machines, and a tuning file of them)")     \
    PARAM(                                                                                         \
        allreduce_staged_max_bytes, SIZE_T, COLL_GPU_MODEL_STAGED_MAX_BYTES, NO_ENUM, 5, READONLY, \
        PROTOCOL,                                                                                  \
        "With allreduce_algorithm auto and no tuning rule, on device buffers inside a node: the "  \
        "largest message (bytes per rank) staged through host memory (two copies and Open "        \
        "MPI's host allreduce cost less than a native call's launches, synchronizations and "      \
        "signal rounds there); larger ones run natively.  0: never.  The default is the cost "     \
        "model's crossover on one node of 8 H200 (perf/cost_model --crossovers)")                  \
    PARAM(allreduce_staged_nodes_max_bytes, SIZE_T, COLL_GPU_MODEL_STAGED_NODES_MAX_BYTES,         \
          NO_ENUM, 5, READONLY, PROTOCOL,                                                          \
          "As allreduce_staged_max_bytes, across nodes.  The default is the cost model's: the "    \
          "threshold that loses least over 2 to 1,024 nodes of one and of 8 H200 "                 \
          "(perf/cost_model --crossovers prints each layout's, and a tuning file of them)")        \
    STAGED_PARAMS(PARAM, bcast, BCAST, "message")                                                  \
    STAGED_PARAMS(PARAM, reduce, REDUCE, "message")                                                \
    STAGED_PARAMS(PARAM, gather, GATHER, "block")                                                  \
    STAGED_PARAMS(PARAM, scatter, SCATTER, "block")                                                \
    STAGED_PARAMS(PARAM, alltoall, ALLTOALL,                                                       \
                  "block (and with alltoallv_algorithm auto, MPI_Alltoallv's largest of any pair " \
                  "of ranks)")                                                                     \
    STAGED_PARAMS(PARAM, allgather, ALLGATHER,                                                     \
                  "block (and with allgatherv_algorithm auto, MPI_Allgatherv's largest)")          \
    STAGED_PARAMS(PARAM, reduce_scatter, REDUCE_SCATTER,                                           \
                  "block (MPI_Reduce_scatter's largest, and with reduce_scatter_block_algorithm "  \
                  "auto, MPI_Reduce_scatter_block's)")                                             \
    PARAM(allreduce_ring_min_bytes, SIZE_T, COLL_GPU_MODEL_RING_MIN_BYTES, NO_ENUM, 5, READONLY,   \
          PROTOCOL,                                                                                \
          "With allreduce_algorithm auto and no tuning rule, across nodes of one rank each: the "  \
          "smallest message (bytes per rank) run on the ring (2 (nodes - 1) steps); smaller ones " \
          "run hierarchical (one exchange with every node each way, 3 rounds on the critical "     \
          "path).  The default is the cost model's crossover on 8 nodes of one H200 "              \
          "(perf/cost_model --crossovers: other node counts and machines, a tuning file of them)") \
    PARAM(                                                                                         \
        allreduce_doubling_min_nodes, INT, COLL_GPU_MODEL_DOUBLING_MIN_NODES, NO_ENUM, 5,          \
        READONLY, PROTOCOL,                                                                        \
        "With allreduce_algorithm auto and no tuning rule: from this many nodes on, messages up "  \
        "to allreduce_doubling_max_bytes run hierarchical_doubling (each node reduced by its "     \
        "leader, recursive doubling between the leaders: log2(nodes) rounds of one message each "  \
        "way, where hierarchical's shard owners each exchange with every node).  The default is "  \
        "the cost model's on nodes of 8 H200: the smallest node count from which it wins at "      \
        "every larger one (perf/cost_model --crossovers; its tuning file also takes it on 2 and "  \
        "4 "                                                                                       \
        "nodes, where it wins too)")                                                               \
    PARAM(                                                                                         \
        allreduce_doubling_max_bytes, SIZE_T, COLL_GPU_MODEL_DOUBLING_MAX_BYTES, NO_ENUM, 5,       \
        READONLY, PROTOCOL,                                                                        \
        "With allreduce_algorithm auto and no tuning rule, from allreduce_doubling_min_nodes "     \
        "nodes on: the largest message (bytes per rank) run hierarchical_doubling (it moves the "  \
        "whole message in each of its log2(nodes) rounds); larger ones run hierarchical or the "   \
        "ring.  0: never.  The default is the cost model's crossover on nodes of 8 H200 at "       \
        "allreduce_doubling_min_nodes nodes (more nodes only raise it)")                           \
    PARAM(allreduce_rabenseifner_min_nodes, INT, COLL_GPU_MODEL_RABENSEIFNER_MIN_NODES, NO_ENUM,   \
          5, READONLY, PROTOCOL,                                                                   \
          "With allreduce_algorithm auto and no tuning rule: from this many nodes on, messages "   \
          "hierarchical_doubling does not take run hierarchical_rabenseifner (recursive halving "  \
          "and doubling of each shard between its owners: 2 log2(nodes) rounds of one partner, "   \
          "where hierarchical's owners each exchange with every node per chunk).  The default is " \
          "the cost model's on nodes of 8 H200: the smallest node count from which it is faster "  \
          "than hierarchical at every larger size and node count")                                 \
    PARAM(                                                                                         \
        allgather_doubling_min_nodes, INT, COLL_GPU_MODEL_ALLGATHER_DOUBLING_MIN_NODES, NO_ENUM,   \
        5, READONLY, PROTOCOL,                                                                     \
        "With allgather_algorithm / allgatherv_algorithm auto and no tuning rule: from this many " \
        "nodes on, calls that gather at most allgather_doubling_max_bytes run "                    \
        "hierarchical_doubling (each node's blocks to its leader, recursive doubling between "     \
        "the leaders: log2(nodes) rounds of one message, where hierarchical exchanges with "       \
        "every node).  The default is the cost model's on nodes of one rank and of 8 H200: the "   \
        "smallest node count from which it wins at every larger one (perf/cost_model "             \
        "--crossovers; its tuning file also takes it on fewer nodes where it wins there)")         \
    PARAM(                                                                                         \
        allgather_doubling_max_bytes, SIZE_T, COLL_GPU_MODEL_ALLGATHER_DOUBLING_MAX_BYTES,         \
        NO_ENUM, 5, READONLY, PROTOCOL,                                                            \
        "With allgather(v)_algorithm auto and no tuning rule, from allgather_doubling_min_nodes "  \
        "nodes on: the most bytes a call gathers (its largest block x the ranks) run "             \
        "hierarchical_doubling (a step holds a chunk of every rank: larger calls take more "       \
        "steps than hierarchical's); larger ones run hierarchical or direct.  0: never.  The "     \
        "default is the cost model's: the size that loses least over its layouts from "            \
        "allgather_doubling_min_nodes nodes on")                                                   \
    PARAM(                                                                                         \
        reduce_scatter_halving_min_nodes, INT, COLL_GPU_MODEL_REDUCE_SCATTER_HALVING_MIN_NODES,    \
        NO_ENUM, 5, READONLY, PROTOCOL,                                                            \
        "With reduce_scatter_algorithm / reduce_scatter_block_algorithm auto and no tuning "       \
        "rule: from this many nodes on, calls of at most reduce_scatter_halving_max_bytes run "    \
        "hierarchical_halving (each node's partial to its leader, recursive halving between the "  \
        "leaders: log2(nodes) rounds of one message, where hierarchical exchanges with every "     \
        "node).  The default is the cost model's on nodes of one rank and of 8 H200: the "         \
        "smallest node count from which it wins at every larger one (perf/cost_model "             \
        "--crossovers; its tuning file also takes it on fewer nodes where it wins there)")         \
    PARAM(                                                                                         \
        reduce_scatter_halving_max_bytes, SIZE_T, COLL_GPU_MODEL_REDUCE_SCATTER_HALVING_MAX_BYTES, \
        NO_ENUM, 5, READONLY, PROTOCOL,                                                            \
        "With reduce_scatter(_block)_algorithm auto and no tuning rule, from "                     \
        "reduce_scatter_halving_min_nodes nodes on: the most bytes of a call (its largest block "  \
        "x the ranks) run hierarchical_halving (a step holds a chunk of every rank: larger calls " \
        "take more steps than hierarchical's); larger ones run hierarchical or direct.  0: "       \
        "never.  The default is the cost model's: the size that loses least over its layouts "     \
        "from reduce_scatter_halving_min_nodes nodes on")                                          \
    BAND(                                                                                          \
        bcast, binomial, BCAST_BINOMIAL, PROTOCOL, "message",                                      \
        "a binomial tree of the node leaders: ceil(log2(nodes)) gets deep, no barrier per chunk, " \
        "where pipelined's two-level leaders all get from the root and its chain is nodes - 1 "    \
        "deep",                                                                                    \
        "each of its ceil(log2(nodes)) levels costs a round trip, a copy and a synchronization: "  \
        "below, pipelined's fewer rounds are faster",                                              \
        "the root's node sends each chunk to each of its ceil(log2(nodes)) children: larger ones " \
        "run pipelined, whose chain sends it once")                                                \
    BAND(reduce, binomial, REDUCE_BINOMIAL, PROTOCOL, "message",                                   \
         "the node leaders reduce up a binomial tree to the root: ceil(log2(nodes)) gets deep, "   \
         "where hierarchical's root gets a partial from every node",                               \
         "each of its ceil(log2(nodes)) levels costs a round trip, a copy and a synchronization: " \
         "below, hierarchical or direct's fewer rounds are faster",                                \
         "the root's node receives it from each of its ceil(log2(nodes)) children: larger ones "   \
         "run hierarchical, segmented between the nodes")                                          \
    BAND(gather, binomial, GATHER_BINOMIAL, PROTOCOL, "gathered message (the block x ranks)",      \
         "the node leaders pass their subtrees' blocks up a binomial tree to the root: "           \
         "ceil(log2(nodes)) messages at the root per step, where hierarchical's root gets one "    \
         "from every node",                                                                        \
         "each of its ceil(log2(nodes)) levels costs a round trip and a synchronization: below, "  \
         "hierarchical or direct's single round is faster",                                        \
         "its inner leaders forward their subtrees' blocks once more: larger ones run "            \
         "hierarchical or direct, whose blocks cross the network once")                            \
    BAND(scatter, binomial, SCATTER_BINOMIAL, PROTOCOL, "scattered message (the block x ranks)",   \
         "the root's blocks go down a binomial tree of the node leaders, each getting its "        \
         "subtree's blocks from its parent: ceil(log2(nodes)) messages from the root per step, "   \
         "where hierarchical's every node leader gets from the root",                              \
         "each of its ceil(log2(nodes)) levels costs a round trip and a synchronization: below, "  \
         "hierarchical or direct's single round is faster",                                        \
         "its inner leaders forward their subtrees' blocks once more: larger ones run "            \
         "hierarchical or direct, whose blocks cross the network once")                            \
    BAND(                                                                                          \
        gather, hierarchical, GATHER_HIERARCHICAL, PROTOCOL,                                       \
        "gathered message (the block x ranks)",                                                    \
        "across nodes where a node has several ranks; elsewhere direct: each node's leader (or "   \
        "with rails its carrier) collects its node's blocks, the root gets one message per node, " \
        "where direct's root gets every remote rank's block",                                      \
        "its hop inside the node and its leaders' synchronization cost more than direct's extra "  \
        "messages on few nodes",                                                                   \
        "the larger ones run direct, whose blocks cross once, straight into the root's buffer")    \
    BAND(scatter, hierarchical, SCATTER_HIERARCHICAL, PROTOCOL,                                    \
         "scattered message (the block x ranks)",                                                  \
         "across nodes where a node has several ranks; elsewhere direct: one rank of each node "   \
         "gets its node's blocks from the root's node (with rails from its carrier), where "       \
         "direct's every remote rank gets its block from the root",                                \
         "its hop inside the node and its leaders' synchronization cost more than direct's extra " \
         "messages below",                                                                         \
         "the larger ones run direct")                                                             \
    PARAM(                                                                                         \
        tree_rails, INT, COLL_GPU_RAILS_AUTO, VALUES(coll_gpu_tree_rails_values), 5, READONLY,     \
        PROTOCOL,                                                                                  \
        "The trees of nodes of the rooted collectives (MPI_Bcast's binomial and its pipelined "    \
        "chain above 64 KiB on 3 nodes or more, MPI_Reduce's binomial): stripe a call's chunks "   \
        "over the ranks of each node, chunk k carried by the rank at the root's index + k of "     \
        "every node (modulo its size), so that with a network interface per GPU every interface "  \
        "of a node carries its share of the message (same-rail peers exchange; on the root's "     \
        "node "                                                                                    \
        "a chunk passes between the root and its carrier inside the node).  off: the rank at "     \
        "the root's index carries every chunk.  MPI_Gather's and MPI_Scatter's hierarchical "      \
        "too: the other nodes are shared out among the root's node's ranks in turn, each node's "  \
        "run crossing between its leader and its carrier on the same rail (off: the root "         \
        "carries every node).  auto: on when, on every node of several ranks, the ranks use "      \
        "more than one network interface (their UCX_NET_DEVICES: coll_gpu_net_devices, the "       \
        "environment's, or the interfaces hwloc finds nearest each GPU), else off (one "           \
        "interface: the carriers' extra hop inside the node buys nothing).  The same on every "    \
        "rank")                                                                                    \
    BAND(alltoall, hierarchical, ALLTOALL_HIERARCHICAL, PROTOCOL,                                  \
         "block (bytes per pair of ranks)",                                                        \
         "across nodes where a node has several ranks; elsewhere direct: node-aggregated, the "    \
         "blocks between two nodes travel in one message each way carried by ranks on one rail, "  \
         "where direct's every rank gets its block from every remote rank",                        \
         "none smaller by default: aggregation gains most on the smallest blocks, whose messages " \
         "cost more than their bytes",                                                             \
         "its carriers copy every block twice more inside the nodes: larger blocks run direct, "   \
         "whose messages then cost less than those copies")                                        \
    SYNONYM(alltoall_hierarchical_max_bytes, alltoall_aggregate_max_bytes)                         \
    /* local: bounds this rank's own gets in flight; the steps and signals are the same */         \
    PARAM(                                                                                         \
        alltoall_max_outstanding, UNSIGNED_INT, 8, NO_ENUM, 5, READONLY, LOCAL,                    \
        "The most gets from other nodes a rank of a native alltoall(v) keeps in flight: direct "   \
        "gets its blocks in pairwise order (step k from rank + k) and completes them in batches "  \
        "of this many; hierarchical bounds its gets between nodes the same way.  0: no bound")     \
    PARAM(                                                                                         \
        agreement_radix, INT, 8, NO_ENUM, 6, READONLY, PROTOCOL,                                   \
        "Across nodes, the agreement that ends every native call (its outcome, the barrier after " \
        "which no peer reads a rank's scratch) goes through each node's first rank, and those "    \
        "exchange it by dissemination: each round a leader tells this many - 1 others, so "        \
        "ceil(log_radix nodes) rounds and at most (radix - 1) per round messages between nodes "   \
        "per leader, none for the other ranks.  2 (rounds of one message) to 256; at least the "   \
        "number of nodes: one round, every leader telling every other.  The same on every rank")   \
    PARAM(native_chunk_size, SIZE_T, COLL_GPU_DEFAULT_NATIVE_CHUNK_SIZE, NO_ENUM, 5, READONLY,     \
          PROTOCOL,                                                                                \
          "Pipeline chunk of the native two-shot, ring and hierarchical algorithms (bytes; ring: " \
          "each step moves chunk / ranks).  Each communicator allocates scratch of 2 x "           \
          "max(allreduce_one_shot_max_bytes, 2 x this) bytes per rank and memory kind on its "     \
          "first native collective of that kind; a tuning rule's chunk is capped by it")           \
    PARAM(tuning_file, STRING, NULL, NO_ENUM, 5, READONLY, PROTOCOL_RULES,                         \
          "File of rules choosing the native algorithm and chunk by collective, communicator "     \
          "size, ranks per node and message size (format in the README); the first matching "      \
          "rule wins, a forced allreduce_algorithm overrides it.  A malformed line is reported "   \
          "with its number and the file ignored; a rule naming an unknown algorithm is skipped "   \
          "with a warning.  Every rank must read the same rules")                                  \
    PARAM(host_buffers, BOOL, false, NO_ENUM, 5, READONLY, PROTOCOL,                               \
          "Also run the blocking collectives that have native algorithms (those with a "           \
          "<coll>_algorithm parameter) on host buffers with the native algorithms (chosen as for " \
          "device buffers) when every rank passes host memory and the datatype (and op) are ones " \
          "the native algorithms take, inside a node or across nodes: host scratch in shared "     \
          "segments (other nodes read it with UCX gets) and the CPU reduction.  The component "    \
          "then stays active without an accelerator, for these calls only.  Other host-buffer "    \
          "calls go to Open MPI as before.  Every rank must set the same value")

/* The fields of mca_coll_gpu_component that hold the parameters (coll_gpu.h). */
#define COLL_GPU_PARAM_FIELD(name, type, ...) COLL_GPU_PARAM_CTYPE_##type name;
#define COLL_GPU_PARAM_BAND_FIELD(coll, alg, ...) coll_gpu_band_rule_t coll##_##alg;
#define COLL_GPU_PARAM_ALGORITHMS_FIELD(mark) int algorithm[COLL_GPU_MAX_NCOLLS];
#define COLL_GPU_PARAM_NOTHING(...)
#define COLL_GPU_PARAM_FIELDS                                                                      \
    COLL_GPU_FOREACH_PARAM(COLL_GPU_PARAM_FIELD, COLL_GPU_PARAM_BAND_FIELD,                        \
                           COLL_GPU_PARAM_ALGORITHMS_FIELD, COLL_GPU_PARAM_NOTHING)

/* Sets every parameter of the table to its default and registers it (the component's
 * register_component_params). */
void coll_gpu_params_register(const mca_base_component_t *c);
/* The hash of every parameter marked PROTOCOL (and of the tuning rules), what the ranks compare:
 * once the parameters are final (component open: checked, the tuning file read). */
uint64_t coll_gpu_params_hash(void);

#endif /* COLL_GPU_PARAMS_H */

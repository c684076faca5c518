/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the native algorithms share: the algorithm names of the selection parameters, the
 * fallback reasons, and the per-communicator native context (symmetric device scratch that
 * local peers map by IPC, the step counter that orders its reuse, the signal helpers).
 *
 * Synchronization of a step (one chunk of a collective): every rank has one signal slot per
 * peer, and tells each peer how far it has got by storing a monotone value (4 * step + phase)
 * there.  A rank writes its scratch half of step s (parity s & 1) only after every peer
 * announced step s - 1, which each does after it finished step s - 2, the last reader of that
 * half: double buffering plus the next step's announcement is the completion handshake.  The
 * communicator's last step is covered by a node barrier before the scratch is freed.
 */
#ifndef COLL_GPU_NATIVE_H
#define COLL_GPU_NATIVE_H

#include "coll_gpu.h"
#include "coll_gpu_agreement.h"
#include "coll_gpu_team.h"
#include "coll_gpu_tree.h"

#include "cgt.h"

BEGIN_C_DECLS

/* Values of every coll_gpu_<coll>_algorithm parameter and elements of every
 * coll_gpu_<coll>_algorithm_calls pvar: auto (never counted), staged, then the collective's
 * native algorithms in the order of its table (coll_gpu_alg_table_t). */
enum { COLL_GPU_ALG_AUTO = 0, COLL_GPU_ALG_STAGED = 1, COLL_GPU_ALG_FIRST_NATIVE = 2 };

/* Why a blocking device-buffer call was staged rather than run natively: the elements of
 * the coll_gpu_native_fallbacks pvar. */
#define COLL_GPU_FOREACH_FALLBACK(X)                                                               \
    X(DISABLED, "native_disabled")   /* coll_gpu_native=0 */                                       \
    X(ALGORITHM, "algorithm_staged") /* parameter or tuning rule says staged */                    \
    X(MEMORY, "memory")              /* a buffer not on the device, or kinds mixed across ranks */ \
    X(DATATYPE_OP, "datatype_op")    /* no kernel for the pair, or not a contiguous type */        \
    X(MULTI_NODE, "multi_node")      /* the communicator spans several nodes */                    \
    X(TEAM, "team")                  /* no transport team, no IPC path, too many ranks */          \
    X(MISMATCH, "config_mismatch")   /* ranks disagree on the parameters or tuning rules */        \
    X(NONBLOCKING, "nonblocking")    /* a nonblocking call the native path does not take */

typedef enum {
#define COLL_GPU_FALLBACK_ENUM(id, name) COLL_GPU_FALLBACK_##id,
    COLL_GPU_FOREACH_FALLBACK(COLL_GPU_FALLBACK_ENUM)
#undef COLL_GPU_FALLBACK_ENUM
        COLL_GPU_FALLBACK_NUM
} coll_gpu_fallback_t;

extern const char *const coll_gpu_fallback_names[COLL_GPU_FALLBACK_NUM];

/* Signal slots of the native algorithms: COLL_GPU_NATIVE_SLOT0 + peer's rank (the team has
 * one per rank after the transport check's). */
#define COLL_GPU_NATIVE_SLOT0 COLL_GPU_TEAM_SLOT_PEER0

/* Phases of a step, in the order a rank goes through them. */
typedef enum {
    COLL_GPU_PHASE_READY = 0, /* my input of this step is in my scratch */
    /* my shard of this step is reduced (two-shot, hierarchical); reduce_scatter hierarchical, to
     * a block's owner: my node's partial of its block is reduced */
    COLL_GPU_PHASE_REDUCED = 1,
    /* ring: I finished reading my left neighbour's scratch of this step (sent to it only) */
    COLL_GPU_PHASE_CONSUMED = 1,
    /* allgather hierarchical, to this node's ranks: the other nodes' chunks I fetched of this
     * step are in my scratch */
    COLL_GPU_PHASE_GATHERED = 1,
    /* scatter hierarchical, a leader to its node's ranks: its node's chunks of this step are in
     * my scratch */
    COLL_GPU_PHASE_SCATTERED = 1,
    /* my shard's result of the step before is ready (hierarchical); the leader's result is in
     * its half (hierarchical_doubling) */
    COLL_GPU_PHASE_FINAL = 2,
    /* hierarchical, to the other nodes' owners of my shard: my node's segment of the shard's
     * result of this step is reduced (sent in the next step) */
    COLL_GPU_PHASE_SEGMENT = 3
} coll_gpu_phase_t;

/* The signal value of phase of step: monotone in (step, phase). */
#define COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase) (4 * (uint64_t)(step) + (uint64_t)(phase))

/*
 * The memory a native call runs in: device buffers (device scratch mapped by IPC, the
 * accelerator's copies and kernels on the module's stream) or host buffers
 * (coll_gpu_host_buffers: host scratch in posix segments, memcpy and the CPU reduction, which
 * is the kernels' op code; no accelerator needed).  The algorithms are written once against
 * these operations.
 */
typedef enum {
    COLL_GPU_NATIVE_DEVICE = 0,
    COLL_GPU_NATIVE_HOST = 1,
    COLL_GPU_NATIVE_KINDS
} coll_gpu_native_kind_t;

typedef struct coll_gpu_native_mem {
    const char *name;      /* "device", "host" */
    accel_mem_type_t type; /* of the scratch */
    accel_status_t (*copy)(void *dst, const void *src, size_t len, accel_stream_h stream);
    /* rows rows of len bytes, row r from src + r * spitch to dst + r * dpitch (len <= both
     * pitches): one operation where the accelerator has one (accel memcpy2d_async), else a
     * copy per row; one copy where the rows are contiguous on both sides */
    accel_status_t (*copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t len,
                             size_t rows, accel_stream_h stream);
    /* dst = srcs[0] op ... op srcs[n-1], 2 <= n <= ACCEL_REDUCE_MAX_INPUTS */
    accel_status_t (*reduce)(void *dst, const void *const *srcs, int n, size_t count,
                             accel_dtype_t dtype, accel_op_t op, accel_stream_h stream);
    /* everything queued on stream has completed (a no-op on the host) */
    accel_status_t (*synchronize)(accel_stream_h stream);
} coll_gpu_native_mem_t;

extern const coll_gpu_native_mem_t coll_gpu_native_mems[COLL_GPU_NATIVE_KINDS];

/* A symmetric scratch of one memory kind, allocated by the first native call of that kind. */
typedef struct {
    cgt_mem_t *mem;
    char **peer;      /* team->size entries: every rank's scratch, mapped here */
    bool unavailable; /* its allocation failed on some rank: calls of this kind are not native */
} coll_gpu_native_scratch_t;

typedef struct coll_gpu_native {
    coll_gpu_team_t *team;
    coll_gpu_native_scratch_t scratch[COLL_GPU_NATIVE_KINDS];
    size_t half;   /* bytes of each parity half of a rank's scratch */
    uint64_t step; /* steps run on this communicator, of either kind (same on every rank) */
    /* agreements run on this communicator (coll_gpu_native_agree_word; same on every rank), and the
     * peer whose poisoned word failed the last one here (-1: none; its help message) */
    uint64_t agreements;
    int agree_told_by;
    bool broken; /* a transport error left the ranks out of step: stage from now on */
    /* gets coll_gpu_native_fetch issued to other nodes and not completed yet
     * (coll_gpu_native_fetch_complete completes them all), and the most at once in the current
     * call */
    unsigned gets_in_flight, net_gets_in_flight_max;
    /* other nodes cannot reach this rank's device scratch (UCX without device memory): what
     * they read of it goes through the host scratch at the same offsets (publish, fetch) */
    bool device_via_host;
    /* Work arrays of team->size entries for one call (calls do not nest): the inputs of a
     * reduction, and the blocks of a v-collective in elements (the receive side; the send
     * side for the alltoalls), filled by the dispatch or the algorithm. */
    const void **srcs;
    size_t *counts, *displs, *send_counts, *send_displs;
    /* retiring (coll_gpu_native_retire): the signal every peer must reach before the scratch
     * goes (0: none), and the first peer not seen there yet */
    uint64_t retire_value;
    int retire_peer;
    /* The critical path between nodes (coll_gpu_native_wait, _wait_all; docs/algorithms.md,
     * "Traffic between nodes"): signals of other nodes waited for, the inter-node rounds they
     * make (a wait after this rank signalled another node since its previous round), and the
     * count of this rank's inter-node signals at the start of the current round. */
    uint64_t net_waits, net_rounds, net_round_mark;
    /* nnodes entries: cgt_team_received_by_node when the current call started (NULL: not
     * allocated yet, or could not be: not counted by node) */
    uint64_t *net_by_node_mark;
} coll_gpu_native_t;

/*
 * Traffic between nodes, per rank, summed over native calls (the coll_gpu_net_* pvars): bytes
 * this rank sent (puts, signals) to and received (gets) from ranks on other nodes, the
 * operations that carried them (cgt_traffic_t), the signals of other nodes it waited for and
 * the inter-node rounds those make (the critical path's messages: coll_gpu_native_t above).
 */
typedef enum {
    COLL_GPU_NET_BYTES_SENT = 0,
    COLL_GPU_NET_BYTES_RECEIVED,
    COLL_GPU_NET_MESSAGES,
    COLL_GPU_NET_ROUNDS,
    COLL_GPU_NET_WAITS,
    COLL_GPU_NET_NUM
} coll_gpu_net_counter_t;

extern unsigned long long coll_gpu_net_counters[COLL_GPU_NET_NUM];
/* The most gets from other nodes any native call of this process had in flight at once (the
 * coll_gpu_net_gets_in_flight_max pvar, a high-water mark). */
extern unsigned long long coll_gpu_net_gets_in_flight_max;

/* The bytes received of coll_gpu_net_counters by the node that sent them: element j is node j of
 * the call's communicator (nodes numbered by their lowest rank), the last one every node from
 * it on (the coll_gpu_net_bytes_received_by_node pvar). */
#define COLL_GPU_NET_MAX_NODES 64
extern unsigned long long coll_gpu_net_received_by_node[COLL_GPU_NET_MAX_NODES];

/* A call's traffic between nodes: the counters when it started. */
typedef struct {
    cgt_traffic_t traffic;
    uint64_t waits, rounds;
} coll_gpu_native_net_mark_t;

/*
 * The communicator's native context with a scratch of kind, set up on the first call that can
 * use one (collective: every rank gets there at the same call, the decision before it being
 * the same on every rank).  On failure returns false with the reason; later calls fail the
 * same way without communicating.
 */
bool coll_gpu_native_get(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         coll_gpu_native_kind_t kind, coll_gpu_native_t **native_p,
                         coll_gpu_fallback_t *reason_p);
/* coll_gpu_native_setup=create: the communicator is being created (module enable, every rank
 * of it there): starts the setup of its native context and device scratch, which goes on in
 * the background (coll_gpu_setup.h) and is complete before the communicator's first native
 * decision, so that its nonblocking and persistent collectives run natively from the first.
 * Failure leaves it staged, as on a first call. */
void coll_gpu_native_setup_at_create(mca_coll_gpu_module_t *module,
                                     struct ompi_communicator_t *comm);
/* The communicator is freed: announces one step more (this rank is done with its peers'
 * memory: the last call's agreement step proved no peer reads this rank's) and retires team
 * (native's) with the context, which goes once every peer announced it too or is known dead
 * (coll_gpu_team_retire): MPI_Comm_free never waits for a peer inside a node; across nodes it waits
 * for the peers' announcements (UCX: see docs/failure-model.md).  native NULL: team is destroyed
 * now. */
void coll_gpu_native_retire(coll_gpu_native_t *native, coll_gpu_team_t *team);

/* Bytes at the start of this rank's half of step s (local) and of peer's. */
static inline char *coll_gpu_native_theirs(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                           int peer, uint64_t step) {
    return native->scratch[kind].peer[peer] + (step & 1) * native->half;
}
static inline char *coll_gpu_native_mine(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                         uint64_t step) {
    return coll_gpu_native_theirs(native, kind, native->team->rank, step);
}

/*
 * Reading a peer's scratch, local or not: len bytes at offset of peer's half of step into dst
 * (this rank's memory of the call's kind).  A peer on this node is loaded directly (a copy on
 * stream); another node's is fetched with a get over the network.  Both complete at
 * coll_gpu_native_fetch_complete(), which must run before dst is used or the next step is
 * announced (after which the peer may reuse that half).
 */
accel_status_t coll_gpu_native_fetch(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                     int peer, uint64_t step, size_t offset, void *dst, size_t len,
                                     accel_stream_h stream, cgt_status_t *status_p);
/*
 * Makes len bytes at offset of this rank's half of step readable by other nodes' fetches: a
 * copy from the device scratch to the host scratch when other nodes cannot reach device
 * memory (device_via_host), nothing otherwise.  Queued on stream: synchronize before the
 * signal that lets readers in.  Every area another node fetches must be published.
 */
accel_status_t coll_gpu_native_publish(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                       uint64_t step, size_t offset, size_t len,
                                       accel_stream_h stream);
/* Completes every fetch (gets, then the stream, whatever failed: nothing queued may run into
 * the caller's buffers or the scratch afterwards).  Returns the transport's status; an
 * accelerator error goes to *astatus_p unless it already holds one. */
cgt_status_t coll_gpu_native_fetch_complete(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                            accel_stream_h stream, accel_status_t *astatus_p);
/* Whether peer's scratch is loaded directly (on this node). */
static inline bool coll_gpu_native_is_local(const coll_gpu_native_t *native, int peer) {
    return native->team->node_of_rank[peer] == native->team->node;
}

/* One peer: signal phase of step to peer; wait for peer's signal of phase of step. */
cgt_status_t coll_gpu_native_signal(coll_gpu_native_t *native, int peer, uint64_t step,
                                    coll_gpu_phase_t phase);
cgt_status_t coll_gpu_native_wait(coll_gpu_native_t *native, int peer, uint64_t step,
                                  coll_gpu_phase_t phase);

/* Shard k of n elements cut into nshards: the first n % nshards shards one element longer. */
static inline void coll_gpu_native_shard(size_t n, int nshards, int k, size_t *first_p,
                                         size_t *len_p) {
    size_t base = n / (size_t)nshards, extra = n % (size_t)nshards, uk = (size_t)k;

    *first_p = uk * base + ((uk < extra) ? uk : extra);
    *len_p = base + ((uk < extra) ? 1 : 0);
}

/* Tell every peer this rank reached phase of step; wait until every peer did. */
cgt_status_t coll_gpu_native_signal_all(coll_gpu_native_t *native, uint64_t step,
                                        coll_gpu_phase_t phase);
cgt_status_t coll_gpu_native_wait_all(coll_gpu_native_t *native, uint64_t step,
                                      coll_gpu_phase_t phase);

/*
 * dst = srcs[0] op srcs[1] op ... op srcs[n-1], strictly left to right whatever n: calls of at
 * most ACCEL_REDUCE_MAX_INPUTS inputs chained through dst (dst = in0..in15, then dst = dst,
 * in16..in30 ...).  n == 1 is a copy.  Queued on stream.
 */
accel_status_t coll_gpu_native_reduce(const coll_gpu_native_mem_t *mem, void *dst,
                                      const void *const *srcs, int n, size_t count,
                                      accel_dtype_t dtype, accel_op_t op, accel_stream_h stream);

/* One native call (coll_gpu_native_call_t, below). */
struct coll_gpu_native_call;

/* A native algorithm: runs call on comm, every rank of it alike. */
typedef int (*coll_gpu_native_alg_fn_t)(struct ompi_communicator_t *comm,
                                        const struct coll_gpu_native_call *call);

/*
 * An agreement inside a call, on the native protocol (no collective of Open MPI: a nonblocking
 * call's thread may run it): the agreement that ends every call (coll_gpu_native_finish;
 * across nodes through node leaders and a dissemination between them,
 * coll_gpu_agreement_radix) carrying every rank's value; *max_p the largest, rounded up to the
 * 24-bit code the words carry (exact below 2^18, at most 2^-17 more above), the same on every
 * rank.  The ranks' alltoallv blocks set a nonblocking call's steps this way.
 */
cgt_status_t coll_gpu_native_agree_max(coll_gpu_native_t *native, uint64_t mine, uint64_t *max_p);

/*
 * The collectives' step handshake (struct coll_gpu_native_call is below): completes this rank's
 * copies into its half and its fetches of the previous step, then a barrier of every rank: on
 * one node READY of step to every peer and every peer's; across nodes the closing agreement's
 * (through node leaders, O(log nnodes) messages between nodes, none for the other ranks), so a
 * peer's READY slot does not show the step there.  An accelerator error in *astatus_p skips
 * nothing of the handshake: peers finish the call.
 */
cgt_status_t coll_gpu_native_announce(const struct coll_gpu_native_call *call, uint64_t step,
                                      accel_status_t *astatus_p);
/*
 * The end of every native algorithm, whatever failed: completes its fetches and copies (nothing
 * lands in the caller's buffers or the scratch after it returns), unpacks the receive buffer
 * (call->unpack, whose failure is the call's too), then agrees with every peer on the call's
 * outcome (coll_gpu_native.c, "The agreement": on one node every rank tells every rank; across
 * nodes through the node leaders, O(log nnodes) messages and rounds): a rank whose call failed
 * (astatus, including an error before it started, entry_status) puts its rank and error class in
 * its word, and the agreement's max leaves the lowest failing rank's.  So an error reaches every
 * rank of the call: the failing rank returns it with the help message naming the cause, its peers
 * the same error class with a message naming that rank, and no rank returns a result a peer's
 * failure made undefined as MPI_SUCCESS.  The step is also the barrier after which no peer reads
 * this rank's scratch of the call.  A transport error (status) goes to
 * coll_gpu_native_transport_failed instead.  Returns OMPI_SUCCESS or the MPI error.
 */
int coll_gpu_native_finish(const struct coll_gpu_native_call *call,
                           struct ompi_communicator_t *comm, cgt_status_t status,
                           accel_status_t astatus);

/*
 * A transport error of a native collective.  Evidence that a peer is gone (its process, its
 * endpoint): help message naming the call and cgt_last_error(), the context marked broken
 * (the job is failing; later calls stage and meet Open MPI's own error handling), returns
 * MPI_ERR_OTHER.  Any other transport error (a wait past a user-set coll_gpu_transport_timeout,
 * a put UCX refused) leaves this rank unable to tell its peers, which are in the call or past
 * it: the one outcome every rank shares is the job's end (help message, ompi_mpi_abort).
 */
int coll_gpu_native_transport_failed(coll_gpu_native_t *native, cgt_status_t status,
                                     const char *mpi_call, struct ompi_communicator_t *comm);

/* The collectives with native algorithms: blocking calls, every buffer of every rank of one
 * memory kind, a contiguous type (data movement: any type, as bytes of its signature). */
typedef enum {
    COLL_GPU_NCOLL_REDUCE_SCATTER_BLOCK = 0,
    COLL_GPU_NCOLL_ALLGATHER,
    COLL_GPU_NCOLL_BCAST,
    COLL_GPU_NCOLL_REDUCE,
    COLL_GPU_NCOLL_GATHER,
    COLL_GPU_NCOLL_SCATTER,
    COLL_GPU_NCOLL_ALLGATHERV,
    COLL_GPU_NCOLL_REDUCE_SCATTER,
    COLL_GPU_NCOLL_ALLTOALL,
    COLL_GPU_NCOLL_ALLTOALLV,
    COLL_GPU_NCOLL_ALLREDUCE,
    COLL_GPU_NCOLL_NUM
} coll_gpu_ncoll_t;

/* What an algorithm's predicates see of a call: the same on every rank. */
typedef struct {
    const coll_gpu_native_t *native; /* its team (size, nodes) and scratch */
    size_t bytes;                    /* per rank (the largest block of a v-collective) */
    size_t esize;                    /* bytes of an element */
} coll_gpu_alg_query_t;

/*
 * One native algorithm: a row of its collective's table.  Adding an algorithm is a file with
 * its function, a row, and a line in Makefile.am: its parameter value, pvar element, tuning
 * name and ompi_info text all come from the row.
 */
typedef struct {
    const char *name;       /* parameter value, pvar element, tuning-file name */
    const char *help;       /* what it does, for ompi_info */
    const char *cost_model; /* its entry in perf/cost_model (NULL: the model has none) */
    bool multi_node;        /* it runs on communicators spanning nodes */
    /* whether it can run a call it was chosen for (NULL: always); why: the reason when not */
    bool (*fits)(const coll_gpu_alg_query_t *query, char *why, size_t why_len);
    /* auto: rows are asked in table order, the first that prefers the call runs it (NULL:
     * never chosen by auto); why: the reason, for the verbose log */
    bool (*preferred)(const coll_gpu_alg_query_t *query, char *why, size_t why_len);
    coll_gpu_native_alg_fn_t run;
} coll_gpu_alg_desc_t;

/* A collective's algorithms (coll_gpu_<coll>.c).  Its parameter is coll_gpu_<name>_algorithm:
 * auto, staged, then the rows; its pvar coll_gpu_<name>_algorithm_calls counts calls per
 * value. */
typedef struct {
    const char *name;      /* "allreduce": parameter, pvar and tuning-file name */
    const char *mpi_call;  /* "MPI_Allreduce" */
    const char *auto_help; /* what auto takes without a tuning rule, for ompi_info */
    const char *note;      /* more ompi_info text, or NULL */
    bool per_rank_blocks;  /* a step holds up to an element per rank in a scratch half:
                            * reduce_scatter(_block) and the alltoalls (every rank's block),
                            * scatter (the root's chunk of every block), reduce (the root's
                            * copies of other nodes' inputs) */
    bool uniform_count;    /* every rank passes the same count (coll_gpu_check_counts) */
    int num_algs;
    const coll_gpu_alg_desc_t *algs;
} coll_gpu_alg_table_t;

/* The tables, by collective; the parameter value of row i is COLL_GPU_ALG_FIRST_NATIVE + i. */
extern const coll_gpu_alg_table_t *const coll_gpu_alg_tables[COLL_GPU_NCOLL_NUM];
extern const coll_gpu_alg_table_t coll_gpu_allreduce_algs, coll_gpu_reduce_scatter_block_algs,
    coll_gpu_allgather_algs, coll_gpu_bcast_algs, coll_gpu_reduce_algs, coll_gpu_gather_algs,
    coll_gpu_scatter_algs, coll_gpu_allgatherv_algs, coll_gpu_reduce_scatter_algs,
    coll_gpu_alltoall_algs, coll_gpu_alltoallv_algs;

/* The reason of a choice, for the verbose log: formatted only when why_len > 0, which the
 * dispatch gives only when the log is on (a formatted string per call costs as much as a
 * small collective). */
#define COLL_GPU_WHY(why, why_len, ...)                                                            \
    do {                                                                                           \
        if ((why_len) > 0) {                                                                       \
            snprintf((why), (why_len), __VA_ARGS__);                                               \
        }                                                                                          \
    } while (0)

/* A row's preferred that always says yes (a collective's only algorithm). */
bool coll_gpu_alg_always(const coll_gpu_alg_query_t *query, char *why, size_t why_len);

/* The table of a collective with one native algorithm, which auto takes, on any communicator:
 * defines table (and its row). */
#define COLL_GPU_ALG_TABLE_ONE(table, coll, mpi, alg, alg_help, fn, blocks, uniform)               \
    static const coll_gpu_alg_desc_t table##_rows[] = {{.name = alg,                               \
                                                        .help = alg_help,                          \
                                                        .multi_node = true,                        \
                                                        .preferred = coll_gpu_alg_always,          \
                                                        .run = fn}};                               \
    const coll_gpu_alg_table_t table = {.name = coll,                                              \
                                        .mpi_call = mpi,                                           \
                                        .auto_help = alg,                                          \
                                        .per_rank_blocks = blocks,                                 \
                                        .uniform_count = uniform,                                  \
                                        .num_algs = 1,                                             \
                                        .algs = table##_rows}

/* auto's size rule for an algorithm of a few rounds between node leaders (allreduce and
 * allgather(v) hierarchical_doubling, reduce_scatter(_block) hierarchical_halving, bcast and
 * reduce binomial): from coll_gpu_<param>_min_nodes nodes on, calls of at most
 * coll_gpu_<param>_max_bytes (per_rank: the largest block x ranks, where its step holds a chunk
 * of every rank), and of at least coll_gpu_<param>_min_bytes where the rule has one. */
typedef struct {
    const char *param;      /* "allgather_doubling": the parameters' names */
    const char *bytes_what; /* what the call's bytes are, for the log: " gathered" */
    bool per_rank;
    const int *min_nodes; /* the parameters */
    const size_t *max_bytes;
    const size_t *min_bytes; /* NULL: none */
    /* a band rule's (binomial's; gather's, scatter's and alltoall's hierarchical; else NULL): a
     * communicator without rails takes its band without them where no parameter was set */
    const coll_gpu_band_rule_t *band;
} coll_gpu_alg_size_rule_t;

/* Whether rule takes query's call; _why: and the reason, for the verbose log. */
bool coll_gpu_alg_size_rule(const coll_gpu_alg_size_rule_t *rule,
                            const coll_gpu_alg_query_t *query);
bool coll_gpu_alg_size_rule_why(const coll_gpu_alg_size_rule_t *rule,
                                const coll_gpu_alg_query_t *query, char *why, size_t why_len);

/* Collectives with a "direct" and a "hierarchical" row (allgather(v), reduce_scatter(_block),
 * reduce, gather, scatter): auto takes direct on one node, across nodes of one rank each (where
 * both move the same bytes; unless hierarchical segments its messages there: from seg_min_bytes on
 * 3 nodes or more, SIZE_MAX: never) and where hierarchical's layout does not fit (hier_fits: the
 * algorithm's _fits), and outside hier_band where the collective has one (gather, scatter,
 * alltoall: the cost model's band of hierarchical against direct; NULL: none); hierarchical
 * elsewhere. */
bool coll_gpu_alg_direct_over_hierarchical(const coll_gpu_alg_query_t *query,
                                           bool (*hier_fits)(const coll_gpu_native_t *, size_t),
                                           size_t seg_min_bytes,
                                           const coll_gpu_alg_size_rule_t *hier_band, char *why,
                                           size_t why_len);
bool coll_gpu_alg_hierarchical_fits(const coll_gpu_alg_query_t *query,
                                    bool (*hier_fits)(const coll_gpu_native_t *, size_t), char *why,
                                    size_t why_len);
bool coll_gpu_alg_across_nodes(const coll_gpu_alg_query_t *query, char *why, size_t why_len);

/* A band rule (coll_gpu_alg_size_rule_t) named var over rule_params, a coll_gpu_band_rule_t of
 * the component (coll_gpu_<param_name>_* parameters; per_rank: their bytes are the block x
 * ranks; what: the bytes' name in the log). */
#define COLL_GPU_ALG_BAND_RULE(var, param_name, what, is_per_rank, rule_params)                    \
    static const coll_gpu_alg_size_rule_t var = {.param = param_name,                              \
                                                 .bytes_what = what,                               \
                                                 .per_rank = is_per_rank,                          \
                                                 .min_nodes = &(rule_params).params.min_nodes,     \
                                                 .max_bytes = &(rule_params).params.max_bytes,     \
                                                 .min_bytes = &(rule_params).params.min_bytes,     \
                                                 .band = &(rule_params)}

/* A binomial row of a collective with direct and hierarchical rows (reduce, gather, scatter):
 * defines prefix##_binomial_small (auto's test, the leaders argument of
 * COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL) and the row's predicates, from its rule (rule_params: the
 * coll_gpu_<param>_{min_nodes,min_bytes,max_bytes} parameters; per_rank: their bytes are the
 * block x ranks) and its _fits (layout: what a scratch half must hold, for the log). */
#define COLL_GPU_ALG_BINOMIAL_RULE(prefix, param_name, what, is_per_rank, rule_params, fits_fn,    \
                                   layout)                                                         \
    COLL_GPU_ALG_BAND_RULE(prefix##_binomial_rule, param_name, what, is_per_rank, rule_params);    \
    static bool prefix##_binomial_small(const coll_gpu_alg_query_t *query) {                       \
        return (query->native->team->nnodes > 1) &&                                                \
               coll_gpu_alg_size_rule(&prefix##_binomial_rule, query) &&                           \
               fits_fn(query->native, query->esize);                                               \
    }                                                                                              \
    static bool prefix##_binomial_preferred(const coll_gpu_alg_query_t *query, char *why,          \
                                            size_t why_len) {                                      \
        return coll_gpu_alg_size_rule_why(&prefix##_binomial_rule, query, why, why_len) &&         \
               prefix##_binomial_small(query);                                                     \
    }                                                                                              \
    static bool prefix##_binomial_fits_query(const coll_gpu_alg_query_t *query, char *why,         \
                                             size_t why_len) {                                     \
        if (fits_fn(query->native, query->esize)) {                                                \
            return true;                                                                           \
        }                                                                                          \
        COLL_GPU_WHY(why, why_len, ": the scratch half (%zu bytes) cannot hold %s",                \
                     query->native->half, layout);                                                 \
        return false;                                                                              \
    }
/* The row those define. */
#define COLL_GPU_ALG_BINOMIAL_ROW(prefix, row_help, model, fn)                                     \
    {                                                                                              \
        .name = "binomial", .help = row_help, .cost_model = model, .multi_node = true,             \
        .fits = prefix##_binomial_fits_query, .preferred = prefix##_binomial_preferred, .run = fn  \
    }

/* auto's test for a collective's algorithm between node leaders (allgather(v)
 * hierarchical_doubling, reduce_scatter(_block) hierarchical_halving), asked before direct and
 * hierarchical; coll_gpu_alg_no_leaders where a collective has none. */
bool coll_gpu_alg_no_leaders(const coll_gpu_alg_query_t *query);

/* The rows of such a collective (prefix##_rows), and their predicates: direct and
 * hierarchical leave the calls leaders takes to a row that follows (the variable arguments:
 * more rows). */
#define COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(prefix, direct_help, direct_fn, hier_help, hier_fn,  \
                                              hier_fits, seg_min_bytes, hier_band, leaders, ...)   \
    static bool prefix##_direct_preferred(const coll_gpu_alg_query_t *query, char *why,            \
                                          size_t why_len) {                                        \
        return !leaders(query) && coll_gpu_alg_direct_over_hierarchical(                           \
                                      query, hier_fits, seg_min_bytes, hier_band, why, why_len);   \
    }                                                                                              \
    static bool prefix##_hierarchical_fits(const coll_gpu_alg_query_t *query, char *why,           \
                                           size_t why_len) {                                       \
        return coll_gpu_alg_hierarchical_fits(query, hier_fits, why, why_len);                     \
    }                                                                                              \
    static bool prefix##_hierarchical_preferred(const coll_gpu_alg_query_t *query, char *why,      \
                                                size_t why_len) {                                  \
        return !leaders(query) && coll_gpu_alg_across_nodes(query, why, why_len);                  \
    }                                                                                              \
    static const coll_gpu_alg_desc_t prefix##_rows[] = {                                           \
        {.name = "direct",                                                                         \
         .help = direct_help,                                                                      \
         .multi_node = true,                                                                       \
         .preferred = prefix##_direct_preferred,                                                   \
         .run = direct_fn},                                                                        \
        {.name = "hierarchical",                                                                   \
         .help = hier_help,                                                                        \
         .multi_node = true,                                                                       \
         .fits = prefix##_hierarchical_fits,                                                       \
         .preferred = prefix##_hierarchical_preferred,                                             \
         .run = hier_fn},                                                                          \
        ##__VA_ARGS__}

#define COLL_GPU_ALG_DIRECT_HIERARCHICAL_AUTO_HELP                                                 \
    "direct on one node and across nodes of one rank each, hierarchical across nodes where a "     \
    "node has several ranks"
/* The same where hierarchical runs on a band (gather, scatter, alltoall: coll a string
 * literal). */
#define COLL_GPU_ALG_DIRECT_HIERARCHICAL_BAND_AUTO_HELP(coll)                                      \
    "direct on one node and across nodes of one rank each; across nodes where a node has "         \
    "several ranks hierarchical on " coll "_hierarchical's band (from " coll                       \
    "_hierarchical_min_nodes nodes for calls from _min_bytes to _max_bytes), direct elsewhere"

/* A collective's table from its rows (prefix##_rows), auto's text for ompi_info. */
#define COLL_GPU_ALG_TABLE(table, prefix, coll, mpi, blocks, uniform, auto_text)                   \
    const coll_gpu_alg_table_t table = {                                                           \
        .name = coll,                                                                              \
        .mpi_call = mpi,                                                                           \
        .auto_help = auto_text,                                                                    \
        .per_rank_blocks = blocks,                                                                 \
        .uniform_count = uniform,                                                                  \
        .num_algs = (int)(sizeof(prefix##_rows) / sizeof(prefix##_rows[0])),                       \
        .algs = prefix##_rows}
/* The table of a collective with direct and hierarchical rows and auto's text for them. */
#define COLL_GPU_ALG_TABLE_DIRECT_HIERARCHICAL(table, prefix, coll, mpi, blocks, uniform)          \
    COLL_GPU_ALG_TABLE(table, prefix, coll, mpi, blocks, uniform,                                  \
                       COLL_GPU_ALG_DIRECT_HIERARCHICAL_AUTO_HELP)

/* The name of value alg of coll's parameter ("auto", "staged", a row's). */
const char *coll_gpu_alg_name(coll_gpu_ncoll_t coll, int alg);

/*
 * One native call, as its algorithm gets it: built once by the collective's dispatch
 * (coll_gpu_native_eligible, then the call's arguments), passed down unchanged.  Counts are in
 * elements of esize bytes (bytes of the type signature for data movement, esize 1); MPI_IN_PLACE
 * is resolved by the dispatch as each algorithm's comment says.
 */
#define COLL_GPU_NATIVE_LARGEST_AGREED SIZE_MAX

typedef struct coll_gpu_native_call {
    coll_gpu_native_t *native;
    coll_gpu_native_kind_t kind;
    const coll_gpu_native_mem_t *mem; /* coll_gpu_native_mems[kind] */
    accel_stream_h stream;            /* NULL on the host */
    size_t esize;                     /* bytes of an element */
    accel_dtype_t dtype;              /* the reductions' */
    accel_op_t op;
    const char *mpi_call;
    const coll_gpu_alg_desc_t *alg; /* the algorithm that runs it */
    /* An error before the algorithm started on this rank (no stream, no memory to pack a
     * buffer): the algorithm still runs every step's handshake with its peers, copies nothing,
     * and returns the error, so no peer waits for a step that never comes. */
    accel_status_t entry_status;
    /* A receive buffer packed for the algorithm (a layout that is not dense): unpacked by
     * coll_gpu_native_finish before the ranks agree on the outcome; NULL: none */
    struct coll_gpu_sig_buf *unpack;
    /* the arguments */
    const void *sbuf;
    void *rbuf;
    size_t count; /* per rank, or per block */
    int root;
    /* v-collectives and the alltoalls: receive blocks (counts, displs) and send blocks
     * (scounts, sdispls), one per rank of the team; largest: the longest block of any pair of
     * ranks, the same on every rank, or COLL_GPU_NATIVE_LARGEST_AGREED: the algorithm agrees on
     * it (a nonblocking alltoallv) */
    const size_t *counts, *displs, *scounts, *sdispls;
    size_t largest;
    size_t chunk_bytes; /* pipeline chunk (allreduce: two-shot, ring, hierarchical) */
    /* a nonblocking v-collective's blocks (counts, displs, then for the alltoalls scounts,
     * sdispls: posted_arrays x team size), its own while it is queued (the context's arrays
     * are the running call's work arrays); freed after the call (NULL: none) */
    size_t *posted_blocks;
    int posted_arrays;
} coll_gpu_native_call_t;

/* Whether the communicator's native nonblocking calls may run now (parameters, its device
 * scratch set up, not broken): the same on every rank.  A call still has to be eligible. */
bool coll_gpu_native_nonblocking_ready(mca_coll_gpu_module_t *module);

/* Where a v-collective writes its receive blocks (counts, displs; team size entries each) and,
 * unless scounts_p is NULL, its send blocks (the alltoalls): the context's arrays for a blocking
 * call, arrays of the call's own for a nonblocking one (freed with it: coll_gpu_native_launch
 * and the communicator's thread). */
void coll_gpu_native_block_arrays(coll_gpu_native_call_t *call, bool nonblocking, size_t **counts_p,
                                  size_t **displs_p, size_t **scounts_p, size_t **sdispls_p);

/* Around a native call on a communicator spanning nodes: marks the traffic counters, then adds
 * the call's traffic to coll_gpu_net_counters (and logs it at COLL_GPU_VERBOSE_CALLS). */
void coll_gpu_native_net_begin(const coll_gpu_native_call_t *call,
                               coll_gpu_native_net_mark_t *mark);
void coll_gpu_native_net_end(const coll_gpu_native_call_t *call, struct ompi_communicator_t *comm,
                             const coll_gpu_native_net_mark_t *mark);

/* Runs the call's algorithm (call->alg, chosen by coll_gpu_native_eligible), now, on this
 * thread. */
static inline int coll_gpu_native_run_now(struct ompi_communicator_t *comm,
                                          const coll_gpu_native_call_t *call) {
    coll_gpu_native_net_mark_t mark;
    int rc;

    if (OPAL_LIKELY(call->native->team->nnodes < 2)) {
        return call->alg->run(comm, call);
    }
    coll_gpu_native_net_begin(call, &mark);
    rc = call->alg->run(comm, call);
    coll_gpu_native_net_end(call, comm, &mark);
    return rc;
}

/* Native nonblocking calls (coll_gpu_native_async.c): a communicator's thread runs them in
 * the order they were posted. */
typedef struct coll_gpu_async coll_gpu_async_t;
typedef struct coll_gpu_async_job coll_gpu_async_job_t;
struct coll_gpu_sig_buf;
/* Queues call (with its packed send and receive buffers, NULL where none; the thread frees
 * their temporaries) on the module's thread, started with the first; NULL when no memory. */
coll_gpu_async_job_t *coll_gpu_native_async_submit(mca_coll_gpu_module_t *module,
                                                   struct ompi_communicator_t *comm,
                                                   const coll_gpu_native_call_t *call,
                                                   const struct coll_gpu_sig_buf *send,
                                                   const struct coll_gpu_sig_buf *recv);
/* Starts the module's thread now (a stream communicator's setup: its calls are posted where
 * no thread may be started); false when it cannot be started. */
bool coll_gpu_native_async_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm);
/* A stream-ordered call across nodes (coll_gpu_native_stream.c), made at the enqueue and
 * posted by coll_gpu_native_async_stream_post each time the application's stream reaches it:
 * the thread runs it, then stores 1 in *release (the flag that stream waits for, in memory the
 * host and the device reach), and first the number it was posted with in *failed when the call
 * failed (its outcome, the same on every rank).  The thread frees a job posted once; a
 * reusable one (captured into a graph: posted at every launch) is the caller's to free
 * (coll_gpu_native_async_free) once no launch can post it.  NULL when no memory. */
coll_gpu_async_job_t *coll_gpu_native_async_stream_job(mca_coll_gpu_module_t *module,
                                                       struct ompi_communicator_t *comm,
                                                       const coll_gpu_native_call_t *call,
                                                       volatile uint32_t *release, uint32_t *failed,
                                                       bool reusable);
/* Queues a stream job on its module's thread (started: coll_gpu_native_async_start).  Safe in
 * the accelerator's host functions: no allocation, no MPI, no accelerator call. */
void coll_gpu_native_async_stream_post(coll_gpu_async_job_t *job, uint32_t number);
/* Whether the thread finished the job (its result in *rc_p); frees a finished job. */
bool coll_gpu_native_async_done(coll_gpu_async_job_t *job, int *rc_p);
void coll_gpu_native_async_free(coll_gpu_async_job_t *job);
/* Waits until the module's thread has run every call queued so far. */
void coll_gpu_native_async_drain(mca_coll_gpu_module_t *module);
/* Runs what is queued, then ends the thread (the module's destruction). */
void coll_gpu_native_async_destroy(mca_coll_gpu_module_t *module);
/* Whether this is a communicator's thread (which must not call into Open MPI). */
bool coll_gpu_native_async_on_thread(void);

/*
 * Whether a blocking call runs natively; fills call when it does.  count elements of dtype per
 * rank (block; the v-variants: the largest block, the same on every rank); op: the reduction
 * (reduce_scatter_block) or NULL.  A data-movement call (op NULL) is decided on its type
 * signature alone, the same on every rank whatever datatype each passes: call->esize is then 1,
 * and the algorithm runs on bytes (coll_gpu_signature.h).  bufs: this rank's nbufs buffers
 * (MPI_IN_PLACE ones left out); kinds_mixed: the ranks agreed their memory kinds differ;
 * nonblocking: a nonblocking call (run by the communicator's thread when it is native: only on
 * one node, device memory, a collective of uniform counts, the scratch already set up, no
 * blocking agreement asked for); a blocking call first waits for the communicator's queued
 * nonblocking calls.  On false
 * the reason was counted and logged: the caller stages (device) or hands the call to Open MPI
 * (host).  *rc_p is set on true only when the call already failed.
 */
/* A blocking call's word on the call board (coll_gpu_board.h): this rank can run it in kind's
 * memory when all of bufs are of that kind.  Whether every rank can (then it runs natively
 * everywhere; else every rank meets the ranks that passed it to Open MPI). */
bool coll_gpu_native_arrive(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                            coll_gpu_native_kind_t kind, const void *const *bufs, int nbufs);

bool coll_gpu_native_eligible(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              coll_gpu_ncoll_t coll, coll_gpu_native_kind_t kind, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              const void *const *bufs, int nbufs, bool kinds_mixed,
                              bool nonblocking, coll_gpu_native_call_t *call, int *rc_p);

/* The algorithms (coll_gpu_*_native.c, coll_gpu_allreduce_*.c), with what they take of call.
 * allreduce: sbuf (rbuf when in place), rbuf, count, chunk_bytes */
int coll_gpu_allreduce_one_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call);
int coll_gpu_allreduce_two_shot(struct ompi_communicator_t *comm,
                                const coll_gpu_native_call_t *call);
/* Any communicator, spanning nodes or not: reads only the left neighbour's scratch, by
 * coll_gpu_native_fetch when it is on another node. */
int coll_gpu_allreduce_ring(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* Communicators spanning nodes (any on one node too): node reduce-scatter, the shards'
 * allreduce between nodes, node allgather (coll_gpu_allreduce_hierarchical.c). */
int coll_gpu_allreduce_hierarchical(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call);
/* Small messages on any communicator: log2(n) rounds with one partner each. */
int coll_gpu_allreduce_recursive_doubling(struct ompi_communicator_t *comm,
                                          const coll_gpu_native_call_t *call);
/* Small messages across nodes: the node's inputs reduced by its leader, recursive doubling
 * between the leaders, the result handed to the node (coll_gpu_allreduce_hierarchical_doubling.c).
 */
int coll_gpu_allreduce_hierarchical_doubling(struct ompi_communicator_t *comm,
                                             const coll_gpu_native_call_t *call);
/* Large messages across many nodes: node reduce-scatter, Rabenseifner's allreduce (recursive
 * halving and doubling) of each shard among its owners, node allgather
 * (coll_gpu_allreduce_hierarchical_rabenseifner.c); _fits as hierarchical's. */
int coll_gpu_allreduce_hierarchical_rabenseifner(struct ompi_communicator_t *comm,
                                                 const coll_gpu_native_call_t *call);
bool coll_gpu_allreduce_hierarchical_rabenseifner_fits(const coll_gpu_native_t *native,
                                                       size_t esize);
/* Whether a chunk of one element of esize bytes fits hierarchical's layout in a scratch half
 * (the same answer on every rank). */
bool coll_gpu_allreduce_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce_scatter_block: sbuf size * count elements (rbuf when in place), rbuf count elements (its
 * start) */
int coll_gpu_reduce_scatter_block_direct(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call);
/* reduce_scatter(_block) across nodes: each node sends one partial of each other node's block
 * (coll_gpu_reduce_scatter_hierarchical.c); the same arguments as direct's.  _fits: whether a
 * chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_reduce_scatter_block_hierarchical(struct ompi_communicator_t *comm,
                                               const coll_gpu_native_call_t *call);
int coll_gpu_reduce_scatter_hierarchical(struct ompi_communicator_t *comm,
                                         const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce_scatter(_block) across many nodes: each node's partial to its leader, recursive
 * halving between the leaders (coll_gpu_reduce_scatter_hierarchical_halving.c); the same
 * arguments as direct's.  _fits: whether two elements of every rank fit a scratch half. */
int coll_gpu_reduce_scatter_block_hierarchical_halving(struct ompi_communicator_t *comm,
                                                       const coll_gpu_native_call_t *call);
int coll_gpu_reduce_scatter_hierarchical_halving(struct ompi_communicator_t *comm,
                                                 const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_scatter_halving_fits(const coll_gpu_native_t *native, size_t esize);
/* allgather: sbuf count elements, NULL when in place (the block already at rbuf + rank * count) */
int coll_gpu_allgather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* allgather(v) across nodes: every block crosses to each other node once, fetched by one rank
 * of the node (coll_gpu_allgather_hierarchical.c); the same arguments as direct's.  _fits:
 * whether a chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_allgather_hierarchical(struct ompi_communicator_t *comm,
                                    const coll_gpu_native_call_t *call);
int coll_gpu_allgatherv_hierarchical(struct ompi_communicator_t *comm,
                                     const coll_gpu_native_call_t *call);
bool coll_gpu_allgather_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* allgather(v) across many nodes, small messages: each node's chunks to its leader, recursive
 * doubling between the leaders, the leader's result to its node
 * (coll_gpu_allgather_hierarchical_doubling.c); the same arguments.  _fits: an element of every
 * rank fits a scratch half. */
int coll_gpu_allgather_hierarchical_doubling(struct ompi_communicator_t *comm,
                                             const coll_gpu_native_call_t *call);
int coll_gpu_allgatherv_hierarchical_doubling(struct ompi_communicator_t *comm,
                                              const coll_gpu_native_call_t *call);
bool coll_gpu_allgather_doubling_fits(const coll_gpu_native_t *native, size_t esize);
/* bcast: rbuf count elements at every rank, root */
int coll_gpu_bcast_pipelined(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_bcast_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* A bcast down a tree of the node leaders (coll_gpu_bcast_tree.c, coll_gpu_tree.h):
 * binomial's, or pipelined's chain for large messages on 3 nodes or more.  Its chunks: a
 * scratch half at most, an eighth of the message at least COLL_GPU_BCAST_CHUNK_MIN bytes. */
#define COLL_GPU_BCAST_CHUNK_MIN 65536
int coll_gpu_bcast_tree(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                        coll_gpu_tree_t shape);
size_t coll_gpu_bcast_chunk_elems(const coll_gpu_native_t *native, size_t count, size_t esize);
/* allgatherv: block p is counts[p] elements at rbuf + displs[p]; sbuf counts[rank] elements,
 * NULL when in place (counts, displs may be native->counts, ->displs) */
int coll_gpu_allgatherv_direct(struct ompi_communicator_t *comm,
                               const coll_gpu_native_call_t *call);
/* reduce_scatter: sbuf the blocks (counts) one after the other (rbuf when in place); rbuf
 * counts[rank] elements (its start) */
int coll_gpu_reduce_scatter_direct(struct ompi_communicator_t *comm,
                                   const coll_gpu_native_call_t *call);
/* alltoallv: send block d (scounts, sdispls) goes to rank d, receive block p (counts, displs)
 * comes from rank p; sbuf NULL when in place (rbuf's blocks sent, scounts/sdispls ignored);
 * largest.  alltoall: count elements per block, sbuf NULL in place. */
int coll_gpu_alltoallv_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_alltoall_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_alltoall_hierarchical(struct ompi_communicator_t *comm,
                                   const coll_gpu_native_call_t *call);
bool coll_gpu_alltoall_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce: sbuf count elements (rbuf at the root when in place); rbuf count elements, the
 * root's only */
int coll_gpu_reduce_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* reduce across nodes: each node reduces its ranks' inputs into one partial, the root fetches
 * one per node (coll_gpu_reduce_hierarchical.c); the same arguments as direct's.  _fits:
 * whether a chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_reduce_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce binomial: the node leaders reduce up a binomial tree to the root
 * (coll_gpu_reduce_binomial.c); _fits: an input, a partial and ceil(log2 nnodes) landing slots
 * of one element in a scratch half. */
int coll_gpu_reduce_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
bool coll_gpu_reduce_binomial_fits(const coll_gpu_native_t *native, size_t esize);
/* reduce hierarchical segments its network step from this size on, on 3 nodes or more */
#define COLL_GPU_REDUCE_SEGMENTED_MIN_BYTES (64 * 1024)
/* gather: sbuf count elements, NULL at the root in place (its block already at
 * rbuf + root * count); rbuf size * count elements, the root's only */
int coll_gpu_gather_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* scatter: sbuf size * count elements, the root's only; rbuf count elements, NULL at the root
 * in place (its block stays at sbuf + root * count) */
int coll_gpu_scatter_direct(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* gather and scatter across nodes: the root exchanges one message per other node with the
 * node's leader (coll_gpu_gather_scatter_hierarchical.c); the same arguments as direct's.
 * _fits: whether a chunk of one element of esize bytes fits its layout in a scratch half. */
int coll_gpu_gather_hierarchical(struct ompi_communicator_t *comm,
                                 const coll_gpu_native_call_t *call);
int coll_gpu_scatter_hierarchical(struct ompi_communicator_t *comm,
                                  const coll_gpu_native_call_t *call);
bool coll_gpu_gather_scatter_hierarchical_fits(const coll_gpu_native_t *native, size_t esize);
/* gather and scatter across many nodes: the node leaders pass their subtrees' blocks along a
 * binomial tree rooted at the root (coll_gpu_gather_scatter_binomial.c); the same arguments as
 * direct's, hierarchical's _fits (a slot per rank in a scratch half). */
int coll_gpu_gather_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
int coll_gpu_scatter_binomial(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);

/*
 * coll_gpu_check_counts: the ranks compare count, element size and op (op NULL: none) of a
 * call (collective, over the saved host allgather).  OMPI_SUCCESS when every rank passed the
 * same; else rank 0 shows a help message naming the first rank that differs from it and
 * every rank returns MPI_ERR_COUNT.
 */
int coll_gpu_native_check_counts(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 const char *mpi_call, int count, struct ompi_datatype_t *dtype,
                                 struct ompi_op_t *op);

/*
 * coll_gpu_check_counts for the v-collectives, where the uniform count of
 * coll_gpu_native_check_counts does not apply: with peer_counts NULL every rank must pass the
 * same counts of dtype (size entries: allgatherv's and reduce_scatter's recvcounts); else counts
 * of dtype are this rank's sendcounts and peer_counts of peer_dtype its recvcounts, and what rank
 * p sends rank q must be what q receives from p (alltoallv).  Blocks compare in bytes of the type
 * signature when op is NULL (data movement: datatypes may differ, signatures may not), else in
 * elements.  Then element size and op must match.  Does nothing and returns false unless the
 * parameters ask for the check and allow coll natively (the same on every rank); else collective,
 * and true when the call must fail with *rc_p (MPI_ERR_COUNT after rank 0's help message naming
 * the first rank that differs).
 */
bool coll_gpu_native_check_blocks(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                  coll_gpu_ncoll_t coll, const int *counts,
                                  struct ompi_datatype_t *dtype, const int *peer_counts,
                                  struct ompi_datatype_t *peer_dtype, struct ompi_op_t *op,
                                  int *rc_p);

/* Reads coll_gpu_tuning_file (component open); the rules apply to every communicator. */
void coll_gpu_native_tuning_load(void);
/* The hash of the rules read (0: none), what the ranks compare of coll_gpu_tuning_file
 * (coll_gpu_params_hash). */
uint64_t coll_gpu_native_tuning_hash(void);
void coll_gpu_native_tuning_free(void);

END_C_DECLS

#endif /* COLL_GPU_NATIVE_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/* A communicator's native context and its scratch: set up once (at its creation or its first
 * native call), retired at MPI_Comm_free; why a call cannot have one (the fallback reasons). */
#ifndef COLL_GPU_NATIVE_CTX_H
#define COLL_GPU_NATIVE_CTX_H

#include "coll_gpu.h"
#include "coll_gpu_native_mem.h"
#include "coll_gpu_team.h"

#include "cgt.h"

BEGIN_C_DECLS

/* Why a blocking device-buffer call was staged rather than run natively: the elements of
 * the coll_gpu_native_fallbacks pvar. */
#define COLL_GPU_FOREACH_FALLBACK(X)                                                               \
    X(DISABLED, "native_disabled")   /* coll_gpu_native=0 */                                       \
    X(ALGORITHM, "algorithm_staged") /* parameter, tuning rule or auto says staged */              \
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

/* A symmetric scratch of one memory kind, allocated by the first native call of that kind. */
typedef struct {
    cgt_mem_t *mem;
    char **peer;      /* team->size entries: every rank's scratch, mapped here */
    bool unavailable; /* its allocation failed on some rank: calls of this kind are not native */
} coll_gpu_native_scratch_t;

/* Bytes of each parity half of the device-driven rows' area: a two-shot kernel's step; and
 * the largest call device_one_shot takes (every rank reads every input: larger calls are
 * two-shot's). */
#define COLL_GPU_KERNEL_HALF ((size_t)1024 * 1024)
#define COLL_GPU_DEVICE_ONE_SHOT_MAX ((size_t)256 * 1024)

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
    /* The device-driven rows' plan (coll_gpu_alg_desc_t.node_kind), made by the first blocking
     * call that runs one (coll_gpu_native_kernel_area): every rank's area (accel.h: flags and step
     * counters in device memory, two parity halves of COLL_GPU_KERNEL_HALF bytes) mapped here;
     * kernel_calls: the calls run on it (the same on every rank).  NULL kernel_mem: none
     * (a team coll_gpu_native_kernel_team rules out, or some rank could not).  Across nodes
     * the plan's ranks are this node's, its stage (pinned host memory, registered here) is
     * what the other nodes' proxies put into, kernel_stage_peers (nnodes entries, NULL at this
     * node's) their ranks' of this index as mapped here, and kernel_steps counts the steps of
     * the calls launched (every lane's, the same on every rank): the proxy's step numbers. */
    cgt_mem_t *kernel_mem;
    accel_node_plan_t kernel_plan;
    uint64_t kernel_calls, kernel_steps;
    cgt_reg_t *kernel_stage_reg;
    cgt_rmem_t **kernel_stage_peers;
    accel_event_h kernel_event; /* after a blocking call's kernel (NULL: its stream is waited) */
    bool kernel_unavailable;    /* its making failed on some rank: those rows do not fit */
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
/* Whether no call has set up or ruled out the communicator's native context with a device
 * scratch yet (the same on every rank: a setup's outcome is). */
bool coll_gpu_native_undecided(const mca_coll_gpu_module_t *module);
/* Starts that setup as the module's task (coll_gpu_setup.h), for a nonblocking call that must
 * not wait for it (coll_gpu_deferral.h); where no task can be made it runs here.  with_area:
 * the device-driven rows' area too (coll_gpu_native_kernel_area), which a nonblocking call
 * cannot make. */
void coll_gpu_native_setup_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                 bool with_area);
/* The communicator is freed: announces one step more (this rank is done with its peers'
 * memory: the last call's agreement step proved no peer reads this rank's) and retires team
 * (native's) with the context, which goes once every peer announced it too or is known dead
 * (coll_gpu_team_retire): MPI_Comm_free never waits for a peer inside a node; across nodes it waits
 * for the peers' announcements (UCX: see docs/failure-model.md).  native NULL: team is destroyed
 * now.  (coll_gpu_native_retire.c) */
void coll_gpu_native_retire(coll_gpu_native_t *native, coll_gpu_team_t *team);
/* Whether team can have the device-driven rows' area (the same on every rank): one node of 2
 * to ACCEL_NODE_MAX_RANKS ranks, or 2 to ACCEL_NODE_MAX_NODES nodes of as many ranks each, at
 * most ACCEL_NODE_MAX_RANKS (device_hierarchical). */
static inline bool coll_gpu_native_kernel_team(const coll_gpu_team_t *team) {
    if (1 == team->nnodes) {
        return (team->size >= 2) && (team->size <= ACCEL_NODE_MAX_RANKS);
    }
    return (team->nnodes <= ACCEL_NODE_MAX_NODES) && (team->local_size <= ACCEL_NODE_MAX_RANKS) &&
           (team->min_local_size * team->nnodes == team->size);
}

/* The device-driven rows' area of a communicator of one node: made by the first blocking call
 * that runs one of them (collective: the call is every rank's), true once it exists; false when
 * its making failed on some rank (then, and for a call that cannot make it, those rows are not
 * run). */
bool coll_gpu_native_kernel_area(struct ompi_communicator_t *comm, coll_gpu_native_t *native);
/* Releases the area's stage across nodes (its peers' mappings, its registration, its memory;
 * none: nothing), before the team goes. */
void coll_gpu_native_kernel_stage_free(coll_gpu_native_t *native);
/* Frees a context (NULL: nothing) and its arrays, not its scratch. */
void coll_gpu_native_free(coll_gpu_native_t *native);

/* Bytes at the start of this rank's half of step s (local) and of peer's. */
static inline char *coll_gpu_native_theirs(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                           int peer, uint64_t step) {
    return native->scratch[kind].peer[peer] + (step & 1) * native->half;
}
static inline char *coll_gpu_native_mine(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                         uint64_t step) {
    return coll_gpu_native_theirs(native, kind, native->team->rank, step);
}

/* Whether peer's scratch is loaded directly (on this node). */
static inline bool coll_gpu_native_is_local(const coll_gpu_native_t *native, int peer) {
    return native->team->node_of_rank[peer] == native->team->node;
}

END_C_DECLS

#endif /* COLL_GPU_NATIVE_CTX_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport team of a communicator: which rank is on which node, and the
 * shmem-transport team the native algorithms move data with.  Created on the
 * first native collective of the communicator (collective: every rank of the
 * communicator gets there at the same call), never for a communicator that
 * only carries host or staged collectives.
 */
#ifndef COLL_GPU_TEAM_H
#define COLL_GPU_TEAM_H

#include "coll_gpu.h"

#include "cgt.h"
#include "coll_gpu_setup.h"

BEGIN_C_DECLS

typedef struct coll_gpu_team {
    struct coll_gpu_team *next; /* the live teams, progressed from opal_progress */
    cgt_team_t *cgt;
    /* the communicator whose setup collectives (coll_gpu_setup.h) are the transport's
     * out-of-band allgather, at its creation and its later collective calls (cgt_alloc, made
     * while the communicator lives) */
    struct ompi_communicator_t *comm;
    int rank, size;
    int nnodes;
    int node;          /* this rank's node */
    int *node_of_rank; /* size entries */
    int local_rank;    /* among the ranks of this rank's node, in communicator order */
    int local_size;
    int *local_ranks;   /* communicator ranks of this node, local_size entries */
    int *node_sizes;    /* nnodes entries: the ranks of each node */
    int min_local_size; /* ranks of the node that has the fewest */
    /* nnodes entries: the rank of each node whose local_rank is this rank's (-1: that node
     * has fewer ranks) */
    int *node_peers;
    /* every node's ranks, node after node, each node's in rank order (size entries); node j's
     * start there (nnodes + 1 entries): node j's k-th rank is node_ranks[node_first[j] + k] */
    int *node_ranks;
    int *node_first;
    int *node_order; /* size entries: rank r's position in node_ranks */
    /* The rooted collectives between nodes stripe over each node's ranks (coll_gpu_tree_rails,
     * auto resolved from the ranks' network interfaces): the same on every rank. */
    bool rails;
    /* Retired (coll_gpu_team_retire): the communicator is gone, the team waits until
     * retire_test(retire_arg) says its peers are done with this rank's memory. */
    bool (*retire_test)(void *arg);
    void (*retire_release)(void *arg);
    void *retire_arg;
} coll_gpu_team_t;

/* Node j's k-th rank (k < node_sizes[j]), in rank order. */
static inline int coll_gpu_team_node_rank(const coll_gpu_team_t *team, int j, int k) {
    return team->node_ranks[team->node_first[j] + k];
}

/* Rank r's index among its node's ranks. */
static inline int coll_gpu_team_index_in_node(const coll_gpu_team_t *team, int r) {
    return team->node_order[r] - team->node_first[team->node_of_rank[r]];
}

/* Node j's rank on a root's rail: its (index mod its size)-th rank, index the root's within its
 * node (the root's network interface on machines with one per GPU: the rooted hierarchical
 * collectives' leaders). */
static inline int coll_gpu_team_rail_rank(const coll_gpu_team_t *team, int j, int index) {
    return coll_gpu_team_node_rank(team, j, index % team->node_sizes[j]);
}

/* The rooted collectives between node leaders (bcast, reduce): node j's leader, the root on its
 * own node, elsewhere the node's rank on the root's rail; node j's position counted from the
 * root's node (0), and the node at position v. */
static inline int coll_gpu_team_root_leader(const coll_gpu_team_t *team, int root, int j) {
    return (j == team->node_of_rank[root])
               ? root
               : coll_gpu_team_rail_rank(team, j, coll_gpu_team_index_in_node(team, root));
}
static inline int coll_gpu_team_root_position(const coll_gpu_team_t *team, int root, int j) {
    return (j - team->node_of_rank[root] + team->nnodes) % team->nnodes;
}
static inline int coll_gpu_team_position_node(const coll_gpu_team_t *team, int root, int v) {
    return (team->node_of_rank[root] + v) % team->nnodes;
}
/* The leader of the node at position v. */
static inline int coll_gpu_team_position_leader(const coll_gpu_team_t *team, int root, int v) {
    return coll_gpu_team_root_leader(team, root, coll_gpu_team_position_node(team, root, v));
}

/* The rooted trees between nodes (bcast binomial and chain, reduce binomial): chunk k's leader
 * of the node at tree position v, the node's rank at the root's index + k (with rails) or at the
 * root's index (without: coll_gpu_team_position_leader's), modulo the node's size.  With rails a
 * node's ranks take turns, chunk by chunk, so each network interface of a node with one per GPU
 * carries its share, and where nodes have the same size a chunk's leaders share a rail (the same
 * local index).  Chunk 0 is the root's rail either way. */
static inline int coll_gpu_team_chunk_leader(const coll_gpu_team_t *team, int root, int v, size_t k,
                                             bool rails) {
    int j = coll_gpu_team_position_node(team, root, v);
    /* the root's index is below its node's size: turn 0 is the root on its own node */
    size_t turn = (size_t)coll_gpu_team_index_in_node(team, root) + (rails ? k : 0);

    return coll_gpu_team_node_rank(team, j, (int)(turn % (size_t)team->node_sizes[j]));
}

/* Rank r's position in node order (node_ranks): the node's ranks in consecutive positions. */
static inline int coll_gpu_team_node_order(const coll_gpu_team_t *team, int r) {
    return team->node_order[r];
}

/* The most ranks of other nodes one rank takes when every node shares the other nodes' ranks
 * out among its own, the i-th to its local rank i mod its size (the hierarchical allgather and
 * reduce_scatter): the same on every rank. */
static inline size_t coll_gpu_team_remote_share(const coll_gpu_team_t *team) {
    size_t most = 0;

    for (int j = 0; j < team->nnodes; ++j) {
        size_t remote = (size_t)(team->size - team->node_sizes[j]);
        size_t share = (remote + (size_t)team->node_sizes[j] - 1) / (size_t)team->node_sizes[j];

        most = (share > most) ? share : most;
    }
    return most;
}

/* Signal slots of the team's transport: the transport check's, then one per rank for the
 * native algorithms' steps (COLL_GPU_NATIVE_SLOT0 + rank), then one per rank where that rank
 * reports the number of a stream-ordered call that failed there
 * (COLL_GPU_TEAM_SLOT_STREAM_FAILED0(team size) + rank; coll_gpu_native_stream.c), then two per
 * rank (one per parity of the agreement's number) where that rank puts its word of an agreement
 * (COLL_GPU_TEAM_SLOT_AGREE0(team size) + parity x team size + rank; coll_gpu_native_agree_word),
 * then two per rank (one per parity of the call's number) where that rank reports a
 * device-driven call it could not launch: the call's number and its error class
 * (COLL_GPU_TEAM_SLOT_KERNEL_FAILED0(team size) + parity x team size + rank; coll_gpu_kernel.c),
 * then across up to ACCEL_NODE_MAX_NODES nodes (device_hierarchical's reach) one per node and
 * kernel lane where that node's rank of this rank's index says how far its proxy put its shares
 * here (COLL_GPU_TEAM_SLOT_PROXY0(team size) + node x ACCEL_NODE_LANES + lane; coll_gpu_kernel.c).
 */
#define COLL_GPU_TEAM_SLOT_CHECK 0
#define COLL_GPU_TEAM_SLOT_PEER0 1
#define COLL_GPU_TEAM_SLOT_STREAM_FAILED0(size) (COLL_GPU_TEAM_SLOT_PEER0 + (unsigned)(size))
#define COLL_GPU_TEAM_SLOT_AGREE0(size) (COLL_GPU_TEAM_SLOT_STREAM_FAILED0(size) + (unsigned)(size))
#define COLL_GPU_TEAM_SLOT_KERNEL_FAILED0(size)                                                    \
    (COLL_GPU_TEAM_SLOT_AGREE0(size) + 2 * (unsigned)(size))
#define COLL_GPU_TEAM_SLOT_PROXY0(size)                                                            \
    (COLL_GPU_TEAM_SLOT_KERNEL_FAILED0(size) + 2 * (unsigned)(size))
#define COLL_GPU_TEAM_NUM_SLOTS(size, nnodes)                                                      \
    (COLL_GPU_TEAM_SLOT_PROXY0(size) + ((((nnodes) > 1) && ((nnodes) <= ACCEL_NODE_MAX_NODES))     \
                                            ? (unsigned)(nnodes)*ACCEL_NODE_LANES                  \
                                            : 0))

/*
 * The communicator's team, created now if it does not exist.  Collective on
 * first use.  On failure returns an error (help message shown once) and the
 * caller falls back to the staged path; creation is not retried on that
 * communicator.
 */
int coll_gpu_team_get(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                      coll_gpu_team_t **team_p);
void coll_gpu_team_destroy(coll_gpu_team_t *team);

/*
 * A freed communicator's team, and what lives in its memory, go once test(arg) holds: peers may
 * still read this rank's memory or signal it, and MPI_Comm_free must not wait for them (Open MPI's
 * own does not).  Tried a few times at once (every rank freeing together ends there), then
 * from opal_progress; release(arg) runs just before the team is destroyed.  test must be true
 * once a peer is known dead.
 */
void coll_gpu_team_retire(coll_gpu_team_t *team, bool (*test)(void *arg),
                          void (*release)(void *arg), void *arg);
/* Component close (MPI_Finalize, which every rank reaches): waits for the retired teams. */
void coll_gpu_teams_drain(void);
/* Whether a team's transport may be called from more than one thread, so that it locks: under
 * MPI_THREAD_MULTIPLE, and with native nonblocking calls (a communicator's thread runs them,
 * and device-driven calls' proxies, while opal_progress progresses every team from the
 * application's). */
static inline bool coll_gpu_team_threads(void) {
    return mca_coll_gpu_component.thread_multiple || mca_coll_gpu_component.native_nonblocking;
}
/* Marks the calling thread as a communicator's thread (coll_gpu_native_async.c), which never
 * calls into Open MPI: the transport's waits on it call nothing while they wait. */
void coll_gpu_team_thread_skips_progress(void);
/* What a wait calls between its looks (the transport's, and a device-driven call's for its
 * kernel or its proxy's peers): Open MPI's progress, which moves every team of the process on
 * (a peer this rank waits for may wait, in another team, for this rank's progress: over tcp a
 * put completes only while its target progresses, also after the target's call returned); in
 * a setup task the thread back; nothing on a communicator's thread. */
void coll_gpu_team_wait_progress(void);

/*
 * coll_gpu_transport_check: create the communicator's team now and check that
 * every rank reaches every other through it (puts into host and, where a
 * device path exists, device scratch; signals; the local barrier).  Reports
 * at verbose 1; a failure shows a help message.  Collective.
 */
int coll_gpu_team_check(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* COLL_GPU_TEAM_H */

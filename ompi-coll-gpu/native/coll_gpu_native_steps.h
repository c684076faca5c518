/* SPDX-License-Identifier: BSD-3-Clause */
/* The steps of a native call: signals and waits between ranks, reading a peer's scratch
 * (fetch, publish), and the count of the traffic between nodes. */
#ifndef COLL_GPU_NATIVE_STEPS_H
#define COLL_GPU_NATIVE_STEPS_H

#include "coll_gpu.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_team.h"

#include "cgt.h"

BEGIN_C_DECLS

/*
 * Synchronization of a step (one chunk of a collective): every rank has one signal slot per
 * peer, and tells each peer how far it has got by storing a monotone value (4 * step + phase)
 * there.  A rank writes its scratch half of step s (parity s & 1) only after every peer
 * announced step s - 1, which each does after it finished step s - 2, the last reader of that
 * half: double buffering plus the next step's announcement is the completion handshake.  The
 * communicator's last step is covered by a node barrier before the scratch is freed.
 */

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

/* A wait for peer's signal: counted on the critical path between nodes when peer is on another
 * node.  A new round when this rank signalled another node since the current round began (what it
 * waits for may answer that signal); waits with no such signal between them wait for messages in
 * flight at the same time: one round. */
static inline void coll_gpu_native_net_wait(coll_gpu_native_t *native, int peer) {
    cgt_traffic_t traffic;

    if (coll_gpu_native_is_local(native, peer)) {
        return;
    }
    native->net_waits += 1;
    cgt_team_traffic(native->team->cgt, &traffic);
    if (traffic.signals != native->net_round_mark) {
        native->net_rounds += 1;
        native->net_round_mark = traffic.signals;
    }
}

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

END_C_DECLS

#endif /* COLL_GPU_NATIVE_STEPS_H */

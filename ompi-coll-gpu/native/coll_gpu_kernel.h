/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device-driven rows (coll_gpu_alg_desc_t.node_kind): a call is one kernel on the call's
 * stream and one host wait; the peers meet through flags and call counters in device memory
 * (the communicator's kernel_plan), not through host signals.
 *
 * A rank that cannot launch its kernel (its entry failed, or the launch did) first stores the
 * call's number and its error class in its failure slot at every peer (a host signal, on that
 * path only), then queues the kernel without data, which lets the peers' kernels finish.  The
 * peers' kernels wait for that kernel's flags, which it writes after the store: once a rank's
 * stream is done, every failure of the call is in its slots, and every rank returns the error
 * (the failed rank its own, the others the peer's class with the "peer error" message).  A rank
 * can be one call ahead of a peer reading its slot (its next kernel waits for the peer's), so
 * each rank has two slots, by the parity of the call's number.  Not agreed: a kernel that
 * faults after it ran (the device's sticky error: only that rank's wait fails), and a
 * receive buffer unpacked after the call (the peers' results are right).  A dead peer: every
 * survivor's kernel waits for its flags (each lane needs every rank's), so every survivor's
 * wait finds it dead, stands in for its flags in its own area and fails the call.
 */
#ifndef COLL_GPU_KERNEL_H
#define COLL_GPU_KERNEL_H

#include "coll_gpu.h"
#include "coll_gpu_native_call.h"

BEGIN_C_DECLS

/* A device-driven call launched: its number (the same on every rank), how its launch went on
 * this rank, the event after it (NULL: none could be recorded, the stream is synchronized), a
 * dead peer found while waiting (-1: none) and when to look again. */
typedef struct {
    uint64_t number;
    accel_status_t status;
    accel_event_h event;
    int dead;
    uint64_t next_check_ns;
    /* across nodes: the call's steps (first_step, the area's kernel_steps before, + 1), how its
     * proxy went (written by the proxy), and whether the stream got past the kernel (set by
     * the poll: a proxy still waiting for a lane then waits for a kernel that will not come) */
    uint64_t first_step;
    size_t steps;
    cgt_status_t net;
    bool over;
} coll_gpu_kernel_started_t;

/* Whether the call's row spans nodes (device_hierarchical): its kernel needs the proxy. */
static inline bool coll_gpu_kernel_proxied(const coll_gpu_native_call_t *call) {
    return ACCEL_NODE_ALLREDUCE_HIERARCHICAL == call->alg->node_kind;
}
/* The proxy of a started call spanning nodes (accel.h, accel_node_plan_t): as each lane of this
 * rank's kernel hands it a step, puts the lane's share to the other nodes' ranks of this
 * rank's index and signals them; once theirs came, lets the lane go on.  Returns when every
 * lane had every step of the call (started->net: how the transfers went; after a failure the
 * lanes are let go without data, and the peers are signalled all the same).  Runs on the
 * communicator's thread, or on the caller's where there is none (coll_gpu_kernel_run). */
void coll_gpu_kernel_proxy(const coll_gpu_native_call_t *call, coll_gpu_kernel_started_t *started);

/* Launches the call on call->stream: its kernel, or (after telling the peers) the kernel
 * without data; then records event after it. */
void coll_gpu_kernel_start(const coll_gpu_native_call_t *call, accel_event_h event,
                           coll_gpu_kernel_started_t *started);
/* One look at a started call: true once its stream got past it (*status_p: how), with a wait
 * that also watches the node's processes (a dead peer's flags never come: this rank's kernel is
 * released, its flags stood in for, and the call fails as for a dead peer of the host-driven
 * rows).  Polled by MPI_Test/MPI_Wait for a nonblocking call. */
bool coll_gpu_kernel_poll(const coll_gpu_native_call_t *call, coll_gpu_kernel_started_t *started,
                          accel_status_t *status_p);
/* The call's outcome once its stream got there (waited: how the wait went): MPI_SUCCESS, this
 * rank's error, or a peer's (its help message). */
int coll_gpu_kernel_finish(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                           const coll_gpu_kernel_started_t *started, accel_status_t waited);
/* The run of every device-driven blocking call: start, one host wait, finish.  A nonblocking or
 * persistent one is started by the caller, and finished when an event after it is reached
 * (coll_gpu_native_async.c): no thread. */
int coll_gpu_kernel_run(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call);
/* Whether alg is a device-driven row (its run is the kernel's). */
static inline bool coll_gpu_kernel_row(const coll_gpu_alg_desc_t *alg) {
    return coll_gpu_kernel_run == alg->run;
}

/* Whether every peer's kernel is done with this rank's one-shot area (plan: accel.h): their
 * done flags in it have reached its call counters (every rank ran the same calls).  Before the
 * area is freed: a rank's blocking call returns once its own kernel is done, which needs only
 * its peers' ready flags, not the end of their reads of its half. */
bool coll_gpu_kernel_peers_done(const accel_node_plan_t *plan);
/* Waits until coll_gpu_kernel_peers_done: bounded, since every peer launched its kernel of the
 * last call (this rank's kernel saw their ready flags) and nothing else holds it. */
void coll_gpu_kernel_quiesce(const accel_node_plan_t *plan);

END_C_DECLS

#endif /* COLL_GPU_KERNEL_H */

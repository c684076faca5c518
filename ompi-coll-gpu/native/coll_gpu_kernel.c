/* SPDX-License-Identifier: BSD-3-Clause */
/* The device-driven rows' run (coll_gpu_kernel.h). */
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_agree.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_team.h"

#include "opal/util/show_help.h"

#include <sched.h>
#include <time.h>

/* How often a wait on a kernel looks for a dead peer of the node. */
#define COLL_GPU_KERNEL_ALIVE_CHECK_NS 10000000u

/* A failure slot's word: the call's number and the error class. */
#define COLL_GPU_KERNEL_FAILED_WORD(c, cls) (((uint64_t)(c) << 8) | (uint64_t)(cls))

static unsigned coll_gpu_kernel_slot(const coll_gpu_team_t *team, int rank, uint64_t c) {
    return COLL_GPU_TEAM_SLOT_KERNEL_FAILED0(team->size) + (unsigned)((c & 1) * team->size) +
           (unsigned)rank;
}

/* Stores call c's failure in this rank's slot at every peer. */
static void coll_gpu_kernel_tell(const coll_gpu_team_t *team, uint64_t c, int cls) {
    unsigned slot = coll_gpu_kernel_slot(team, team->rank, c);

    for (int p = 0; p < team->size; ++p) {
        if (p != team->rank) {
            (void)cgt_signal(team->cgt, p, slot, COLL_GPU_KERNEL_FAILED_WORD(c, cls));
        }
    }
}

/* The lowest rank whose slot here says call c failed there (and its class), -1: none. */
static int coll_gpu_kernel_peer_failed(const coll_gpu_team_t *team, uint64_t c, int *cls_p) {
    for (int p = 0; p < team->size; ++p) {
        uint64_t word;

        if (p == team->rank) {
            continue;
        }
        word = __atomic_load_n(cgt_signal_addr(team->cgt, coll_gpu_kernel_slot(team, p, c)),
                               __ATOMIC_ACQUIRE);
        if ((word >> 8) == c) {
            *cls_p = (int)(word & 0xff);
            return p;
        }
    }
    return -1;
}

/* The row's node collective for call (with_data false: the same kernel without data, which a
 * rank that cannot run the call queues so that its peers' kernels finish).  The kinds that
 * only move data take the call's elements as bytes. */
static accel_node_call_t coll_gpu_kernel_node_call(const coll_gpu_native_call_t *call,
                                                   bool with_data) {
    accel_node_kind_t kind = call->alg->node_kind;
    accel_node_call_t node = {
        kind, with_data ? call->sbuf : NULL, NULL, call->count, call->dtype, call->op, call->root};

    node.dst = with_data ? call->rbuf : NULL;
    if (with_data && (ACCEL_NODE_BCAST == kind)) {
        node.src = call->rbuf; /* the one buffer: read at the root, written at the others */
    } else if (with_data && (ACCEL_NODE_ALLGATHER == kind) && (NULL == node.src)) {
        /* in place: this rank's block of the result */
        node.src =
            (const char *)call->rbuf + (size_t)call->native->team->rank * call->count * call->esize;
    }
    if (!accel_node_reduces(kind)) {
        node.dtype = ACCEL_DT_UINT8;
        node.count = call->count * call->esize;
    }
    return node;
}

/* The call's kernel on call->stream. */
static accel_status_t coll_gpu_kernel_launch(const coll_gpu_native_call_t *call, bool with_data) {
    accel_node_call_t node = coll_gpu_kernel_node_call(call, with_data);

    return mca_coll_gpu_component.accel->node_collective(&call->native->kernel_plan, &node,
                                                         call->stream);
}

/* The steps of call's kernel, with data or without: every lane's counter advances by them. */
static size_t coll_gpu_kernel_steps(const coll_gpu_native_call_t *call) {
    const accel_node_plan_t *plan = &call->native->kernel_plan;
    accel_node_call_t node = coll_gpu_kernel_node_call(call, false);

    return accel_node_steps(node.kind, node.count, accel_dtype_size(node.dtype), plan->half,
                            plan->nranks, accel_node_nnodes(plan, node.kind));
}

/* The proxy's signal slot at a peer for lane l of node j (the sender's). */
static unsigned coll_gpu_kernel_proxy_slot(const coll_gpu_team_t *team, int j, int l) {
    return COLL_GPU_TEAM_SLOT_PROXY0(team->size) + (unsigned)j * ACCEL_NODE_LANES + (unsigned)l;
}

/* Lane l's share of step s (the call's k-th), from this node's slot of the stage to the same
 * slot at every other node's rank of this index, then the signal that it is there. */
static cgt_status_t coll_gpu_kernel_proxy_put(const coll_gpu_native_call_t *call, size_t k,
                                              uint64_t s, int l) {
    const coll_gpu_native_t *native = call->native;
    const coll_gpu_team_t *team = native->team;
    const accel_node_plan_t *plan = &native->kernel_plan;
    const accel_node_kind_t kind = ACCEL_NODE_ALLREDUCE_HIERARCHICAL;
    const size_t size = call->esize;
    const size_t window = accel_node_window(plan->half, plan->nranks, plan->nnodes);
    const size_t per = accel_node_per_step(kind, size, plan->half, plan->nranks, plan->nnodes);
    const size_t n = accel_node_step_elems(call->count, per, k);
    const size_t off = accel_node_stage_off(window, plan->nnodes, (uint32_t)s, team->node, l);
    size_t at, len;
    cgt_status_t status = CGT_OK;

    accel_node_share(n, window / size, plan->rank, l, &at, &len);
    for (int j = 0; (CGT_OK == status) && (j < team->nnodes); ++j) {
        int peer = team->node_peers[j];

        if (j == team->node) {
            continue;
        }
        if (len > 0) {
            status = cgt_put(team->cgt, native->kernel_stage_peers[j], off, plan->stage + off,
                             len * size);
        }
        if (CGT_OK == status) {
            status =
                cgt_signal(team->cgt, peer, coll_gpu_kernel_proxy_slot(team, team->node, l), s);
        }
    }
    return status;
}

/* Whether every other node's share of lane l of step s is here (*came: the nodes' bits, of
 * those seen so far, so that each is waited for once). */
static cgt_status_t coll_gpu_kernel_proxy_came(const coll_gpu_team_t *team, uint64_t s, int l,
                                               uint64_t *came, bool *all_p) {
    cgt_status_t status = CGT_OK;
    bool reached = true;

    for (int j = 0; reached && (CGT_OK == status) && (j < team->nnodes); ++j) {
        if ((j != team->node) && !(*came & (UINT64_C(1) << j))) {
            status = cgt_test(team->cgt, coll_gpu_kernel_proxy_slot(team, j, l), s, &reached);
            *came |= reached ? (UINT64_C(1) << j) : 0;
        }
    }
    *all_p = reached;
    return status;
}

/* coll_gpu_proxy_test_delay_us, before the call's last quiet: this rank progresses (a peer's
 * quiet completes) but puts off its own, so that a peer which got this rank's share returns
 * first; this quiet then needs that peer's progress in whatever it runs next. */
static void coll_gpu_kernel_proxy_test_delay(const coll_gpu_team_t *team) {
    int us = mca_coll_gpu_component.proxy_test_delay_us;
    uint64_t until;

    if (OPAL_LIKELY(us <= 0)) {
        return;
    }
    until = coll_gpu_now_ns() + (uint64_t)us * 1000u;
    while (coll_gpu_now_ns() < until) {
        cgt_team_progress(team->cgt);
        sched_yield();
    }
}

void coll_gpu_kernel_proxy(const coll_gpu_native_call_t *call, coll_gpu_kernel_started_t *started) {
    const coll_gpu_team_t *team = call->native->team;
    uint32_t *words = accel_node_proxy(call->native->kernel_plan.stage);
    size_t next[ACCEL_NODE_LANES] = {0};
    bool sent[ACCEL_NODE_LANES] = {false};
    uint64_t came_from[ACCEL_NODE_LANES] = {0};
    int left = ACCEL_NODE_LANES;
    cgt_status_t status = CGT_OK;

    for (unsigned idle = 0; left > 0;) {
        bool moved = false;

        for (int l = 0; l < ACCEL_NODE_LANES; ++l) {
            uint64_t s = started->first_step + next[l];
            bool came = true;

            if (next[l] == started->steps) {
                continue;
            }
            if (!sent[l]) {
                if ((int32_t)(__atomic_load_n(&words[l], __ATOMIC_ACQUIRE) - (uint32_t)s) < 0) {
                    continue; /* the lane has not got there */
                }
                /* (after a failure the lanes are let go at once, without data) */
                if (CGT_OK == status) {
                    status = coll_gpu_kernel_proxy_put(call, next[l], s, l);
                }
                sent[l] = moved = true;
            }
            if (CGT_OK == status) {
                status = coll_gpu_kernel_proxy_came(team, s, l, &came_from[l], &came);
            }
            if (!came && (CGT_OK == status)) {
                continue;
            }
            /* its puts complete (the kernel reuses their source), the others' here */
            if (CGT_OK == status) {
                if ((1 == left) && (next[l] + 1 == started->steps)) {
                    coll_gpu_kernel_proxy_test_delay(team);
                }
                status = cgt_quiet(team->cgt, -1);
            }
            __atomic_store_n(&words[ACCEL_NODE_LANES + l], (uint32_t)s, __ATOMIC_RELEASE);
            sent[l] = false;
            came_from[l] = 0;
            moved = true;
            if (++next[l] == started->steps) {
                --left;
            }
        }
        if (moved) {
            idle = 0;
        } else if (__atomic_load_n(&started->over, __ATOMIC_ACQUIRE)) {
            /* the kernel ended without handing every step (the device failed): the peers'
             * lanes are let go, without data */
            for (int l = 0; l < ACCEL_NODE_LANES; ++l) {
                for (int j = 0; (next[l] < started->steps) && (j < team->nnodes); ++j) {
                    if (j != team->node) {
                        (void)cgt_signal(team->cgt, team->node_peers[j],
                                         coll_gpu_kernel_proxy_slot(team, team->node, l),
                                         started->first_step + started->steps - 1);
                    }
                }
            }
            break; /* (the device's error is the call's) */
        } else {
            /* the peers' puts to this rank, and the completion of its own, may need its
             * progress (UCX over tcp or shared memory), and a peer's in other teams (on the
             * calling thread; on the communicator's, the caller's kernel wait does that) */
            cgt_team_progress(team->cgt);
            if (++idle > 16) {
                coll_gpu_team_wait_progress();
                sched_yield(); /* the core to the emulated device, or a peer sharing it */
            }
        }
    }
    started->net = status;
}

void coll_gpu_kernel_start(const coll_gpu_native_call_t *call, accel_event_h event,
                           coll_gpu_kernel_started_t *started) {
    coll_gpu_native_t *native = call->native;

    started->number = ++native->kernel_calls;
    started->status = call->entry_status;
    started->dead = -1;
    started->first_step = native->kernel_steps + 1;
    started->steps = coll_gpu_kernel_steps(call);
    started->net = CGT_OK;
    started->over = false;
    native->kernel_steps += started->steps;
    started->next_check_ns = coll_gpu_now_ns() + COLL_GPU_KERNEL_ALIVE_CHECK_NS;
    if (OPAL_LIKELY(ACCEL_OK == started->status)) {
        started->status = coll_gpu_kernel_launch(call, true);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != started->status)) {
        coll_gpu_kernel_tell(native->team, started->number,
                             (ACCEL_ERR_NO_MEMORY == started->status) ? MPI_ERR_NO_MEM
                                                                      : MPI_ERR_OTHER);
        (void)coll_gpu_kernel_launch(call, false);
    }
    started->event = event;
    if ((NULL != event) &&
        (ACCEL_OK != mca_coll_gpu_component.accel->event_record(event, call->stream))) {
        started->event = NULL;
    }
}

/* A copy of this rank's flags and call counters (head: the most ranks' worth, nothing to
 * allocate); false when the copy failed. */
static bool coll_gpu_kernel_read_flags(const accel_node_plan_t *plan, uint32_t *head) {
    return ACCEL_OK == mca_coll_gpu_component.accel->memcpy(head, plan->areas[plan->rank],
                                                            ACCEL_NODE_FLAG_WORDS(plan->nranks) *
                                                                sizeof(uint32_t));
}

/* Stands in for dead in this rank's area: its flags of every lane far ahead of the lane's step
 * counter, so that this rank's kernel of the call finishes, whatever steps it has left (its
 * result undefined), and the area's free does not wait for it; the communicator's later calls
 * are staged (native->broken).  Again at every look while the kernel waits: one queued behind
 * another has not counted its steps yet. */
static void coll_gpu_kernel_release(const coll_gpu_native_t *native, int dead_rank) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    const accel_node_plan_t *plan = &native->kernel_plan;
    uint32_t head[ACCEL_NODE_FLAG_WORDS(ACCEL_NODE_MAX_RANKS)];
    int n = plan->nranks, dead = -1;
    char *mine = plan->areas[plan->rank];

    /* its index in the plan (the node's ranks); another node's is the proxy's to find */
    for (int k = 0; k < native->team->local_size; ++k) {
        dead = (native->team->local_ranks[k] == dead_rank) ? k : dead;
    }
    if ((dead < 0) || !coll_gpu_kernel_read_flags(plan, head)) {
        return;
    }
    for (int l = 0; l < ACCEL_NODE_LANES; ++l) {
        uint32_t ahead = *accel_node_counter((char *)head, n, l) + (UINT32_C(1) << 30);

        for (int which = ACCEL_NODE_READY; which <= ACCEL_NODE_DONE; ++which) {
            (void)accel->memcpy(accel_node_flag(mine, n, l, (accel_node_flag_t)which, dead), &ahead,
                                sizeof(ahead));
        }
    }
}

bool coll_gpu_kernel_poll(const coll_gpu_native_call_t *call, coll_gpu_kernel_started_t *started,
                          accel_status_t *status_p) {
    bool reached = false;
    accel_status_t status;
    uint64_t now;

    if (NULL == started->event) {
        *status_p = mca_coll_gpu_component.accel->stream_synchronize(call->stream);
        __atomic_store_n(&started->over, true, __ATOMIC_RELEASE);
        return true;
    }
    status = mca_coll_gpu_component.accel->event_query(started->event, &reached);
    if ((ACCEL_OK != status) || reached) {
        *status_p = status;
        __atomic_store_n(&started->over, true, __ATOMIC_RELEASE);
        return true;
    }
    if (OPAL_UNLIKELY(call->native->team->nnodes > 1)) {
        /* the other nodes' proxies' puts to this rank complete only while it progresses (UCX
         * over tcp or shared memory), also once its own proxy is done */
        cgt_team_progress(call->native->team->cgt);
    }
    now = coll_gpu_now_ns();
    if (now >= started->next_check_ns) {
        int dead = cgt_team_dead_peer(call->native->team->cgt);

        started->next_check_ns = now + COLL_GPU_KERNEL_ALIVE_CHECK_NS;
        if (dead >= 0) {
            started->dead = dead;
            coll_gpu_kernel_release(call->native, dead);
        }
    }
    return false;
}

int coll_gpu_kernel_finish(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call,
                           const coll_gpu_kernel_started_t *started, accel_status_t waited) {
    accel_status_t status = (ACCEL_OK != started->status) ? started->status : waited;
    int peer, peer_class = MPI_SUCCESS;

    if (OPAL_UNLIKELY((started->dead >= 0) || (CGT_OK != started->net))) {
        /* every survivor's kernel waited for its flags, or its proxy for the other nodes':
         * every survivor of the node, or of this rank's index, gets here */
        return coll_gpu_native_transport_failed(
            call->native, (CGT_OK != started->net) ? started->net : CGT_ERR_PEER_FAILED,
            call->mpi_call, comm);
    }

    if ((ACCEL_OK == status) && (NULL != call->unpack)) {
        status = coll_gpu_sig_buf_unpack(call, call->unpack);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != status)) {
        return coll_gpu_accel_failed(status, call->mpi_call, comm);
    }
    peer = coll_gpu_kernel_peer_failed(call->native->team, started->number, &peer_class);
    if (OPAL_UNLIKELY(peer >= 0)) {
        coll_gpu_count_add(&mca_coll_gpu_component.peer_errors, 1);
        opal_show_help("help-mpi-coll-gpu.txt", "peer error", true, COLL_GPU_HOSTNAME,
                       call->mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), peer,
                       peer_class);
        return peer_class;
    }
    return OMPI_SUCCESS;
}

int coll_gpu_kernel_run(struct ompi_communicator_t *comm, const coll_gpu_native_call_t *call) {
    coll_gpu_kernel_started_t started;
    accel_status_t waited;

    coll_gpu_kernel_start(call, call->native->kernel_event, &started);
    if (coll_gpu_kernel_proxied(call)) {
        /* no communicator's thread took it (coll_gpu_native_async_run): the proxy here */
        coll_gpu_kernel_proxy(call, &started);
    }
    /* the call's one host wait: polling the event, watching the node's processes (without an
     * event, the stream's synchronization, which counts itself) */
    if (NULL != started.event) {
        accel_count_host_wait();
    }
    for (unsigned spins = 0; !coll_gpu_kernel_poll(call, &started, &waited); ++spins) {
        if (spins > 16) {
            /* after a short spin, the core to whoever else wants it: a peer sharing it, and the
             * emulated device's thread, which runs this very kernel (1000 spins first made
             * an 8-byte call 150 us instead of 10 on 2 ranks of this 2-core VM); and the
             * process's progress (coll_gpu_team_wait_progress: from the first look on, it
             * made an 8-byte device_one_shot 2 us slower, 34 instead of 32) */
            coll_gpu_team_wait_progress();
            sched_yield();
        }
    }
    return coll_gpu_kernel_finish(comm, call, &started, waited);
}

bool coll_gpu_kernel_peers_done(const accel_node_plan_t *plan) {
    int n = plan->nranks, me = plan->rank;
    uint32_t head[ACCEL_NODE_FLAG_WORDS(ACCEL_NODE_MAX_RANKS)];
    char *mine = (char *)head;

    if (!coll_gpu_kernel_read_flags(plan, head)) {
        return true; /* nothing better to do than to go on */
    }
    for (int l = 0; l < ACCEL_NODE_LANES; ++l) {
        uint32_t calls = *accel_node_counter(mine, n, l);

        for (int p = 0; p < n; ++p) {
            if ((p != me) && ((int32_t)(*accel_node_done(mine, n, l, p) - calls) < 0)) {
                return false;
            }
        }
    }
    return true;
}

void coll_gpu_kernel_quiesce(const accel_node_plan_t *plan) {
    struct timespec pause = {0, 10000};

    while (!coll_gpu_kernel_peers_done(plan)) {
        nanosleep(&pause, NULL);
    }
}

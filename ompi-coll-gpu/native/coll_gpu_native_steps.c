/* SPDX-License-Identifier: BSD-3-Clause */
/* The steps of a native call: reading peers' scratch (fetch, publish), signals and waits, and
 * the traffic between nodes each call adds to the coll_gpu_net_* counters. */
#include "coll_gpu_native_steps.h"

#include <stdlib.h>
#include <string.h>

/* A transport status of a get, split: an accelerator error of the transport's own staging (a
 * get into device memory through its host bounce buffers, whose requests it completed before
 * returning) is this rank's accelerator failure, not a broken link: the protocol goes on, and the
 * closing agreement gives every rank the error, as for any other accelerator error (an abort
 * would be what a transport failure needs, peers that cannot be told). */
static accel_status_t coll_gpu_native_get_status(cgt_status_t *status_p) {
    if (CGT_ERR_ACCEL != *status_p) {
        return ACCEL_OK;
    }
    *status_p = CGT_OK;
    return ACCEL_ERR_DEVICE;
}

accel_status_t coll_gpu_native_fetch(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                     int peer, uint64_t step, size_t offset, void *dst, size_t len,
                                     accel_stream_h stream, cgt_status_t *status_p) {
    coll_gpu_native_scratch_t *scratch = &native->scratch[kind];

    if (coll_gpu_native_is_local(native, peer)) {
        return coll_gpu_native_mems[kind].copy(
            dst, coll_gpu_native_theirs(native, kind, peer, step) + offset, len, stream);
    }
    if ((COLL_GPU_NATIVE_DEVICE == kind) && native->device_via_host) {
        scratch = &native->scratch[COLL_GPU_NATIVE_HOST];
    }
    if (++native->gets_in_flight > native->net_gets_in_flight_max) {
        native->net_gets_in_flight_max = native->gets_in_flight;
    }
    *status_p = cgt_get(native->team->cgt, dst, cgt_mem_peer(scratch->mem, peer),
                        (step & 1) * native->half + offset, len);
    return coll_gpu_native_get_status(status_p);
}

accel_status_t coll_gpu_native_publish(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                       uint64_t step, size_t offset, size_t len,
                                       accel_stream_h stream) {
    if ((COLL_GPU_NATIVE_DEVICE != kind) || !native->device_via_host || (0 == len)) {
        return ACCEL_OK;
    }
    return coll_gpu_native_mems[COLL_GPU_NATIVE_DEVICE].copy(
        coll_gpu_native_mine(native, COLL_GPU_NATIVE_HOST, step) + offset,
        coll_gpu_native_mine(native, COLL_GPU_NATIVE_DEVICE, step) + offset, len, stream);
}

cgt_status_t coll_gpu_native_fetch_complete(coll_gpu_native_t *native, coll_gpu_native_kind_t kind,
                                            accel_stream_h stream, accel_status_t *astatus_p) {
    cgt_status_t status = CGT_OK;
    accel_status_t synced, staged = ACCEL_OK;

    if (native->gets_in_flight > 0) {
        native->gets_in_flight = 0;
        status = cgt_quiet(native->team->cgt, -1);
        staged = coll_gpu_native_get_status(&status);
    }
    synced = coll_gpu_native_mems[kind].synchronize(stream);
    *astatus_p = (ACCEL_OK != *astatus_p) ? *astatus_p : (ACCEL_OK != staged) ? staged : synced;
    return status;
}

cgt_status_t coll_gpu_native_signal(coll_gpu_native_t *native, int peer, uint64_t step,
                                    coll_gpu_phase_t phase) {
    return cgt_signal(native->team->cgt, peer, COLL_GPU_NATIVE_SLOT0 + (unsigned)native->team->rank,
                      COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase));
}

cgt_status_t coll_gpu_native_wait(coll_gpu_native_t *native, int peer, uint64_t step,
                                  coll_gpu_phase_t phase) {
    coll_gpu_native_net_wait(native, peer);
    return cgt_wait(native->team->cgt, COLL_GPU_NATIVE_SLOT0 + (unsigned)peer,
                    COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase));
}

cgt_status_t coll_gpu_native_signal_all(coll_gpu_native_t *native, uint64_t step,
                                        coll_gpu_phase_t phase) {
    coll_gpu_team_t *team = native->team;
    uint64_t value = COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase);
    cgt_status_t status;

    for (int p = 0; p < team->size; ++p) {
        if (p == team->rank) {
            continue;
        }
        status = cgt_signal(team->cgt, p, COLL_GPU_NATIVE_SLOT0 + (unsigned)team->rank, value);
        if (CGT_OK != status) {
            return status;
        }
    }
    return CGT_OK;
}

cgt_status_t coll_gpu_native_wait_all(coll_gpu_native_t *native, uint64_t step,
                                      coll_gpu_phase_t phase) {
    coll_gpu_team_t *team = native->team;
    uint64_t value = COLL_GPU_NATIVE_SIGNAL_VALUE(step, phase);
    cgt_status_t status;

    for (int p = 0; p < team->size; ++p) {
        if (p == team->rank) {
            continue;
        }
        coll_gpu_native_net_wait(native, p);
        status = cgt_wait(team->cgt, COLL_GPU_NATIVE_SLOT0 + (unsigned)p, value);
        if (CGT_OK != status) {
            return status;
        }
    }
    return CGT_OK;
}

unsigned long long coll_gpu_net_counters[COLL_GPU_NET_NUM];
unsigned long long coll_gpu_net_received_by_node[COLL_GPU_NET_MAX_NODES];
unsigned long long coll_gpu_net_gets_in_flight_max;

void coll_gpu_native_net_begin(const coll_gpu_native_call_t *call,
                               coll_gpu_native_net_mark_t *mark) {
    coll_gpu_native_t *native = call->native;

    cgt_team_traffic(native->team->cgt, &mark->traffic);
    if (NULL == native->net_by_node_mark) {
        native->net_by_node_mark = calloc((size_t)native->team->nnodes, sizeof(uint64_t));
    }
    if (NULL != native->net_by_node_mark) {
        memcpy(native->net_by_node_mark, cgt_team_received_by_node(native->team->cgt),
               (size_t)native->team->nnodes * sizeof(uint64_t));
    }
    mark->waits = native->net_waits;
    mark->rounds = native->net_rounds;
    native->net_gets_in_flight_max = 0;
    /* a call's first wait for another node starts a round of its own */
    native->net_round_mark = UINT64_MAX;
}

void coll_gpu_native_net_end(const coll_gpu_native_call_t *call, struct ompi_communicator_t *comm,
                             const coll_gpu_native_net_mark_t *mark) {
    coll_gpu_native_t *native = call->native;
    unsigned long long delta[COLL_GPU_NET_NUM];
    cgt_traffic_t now;

    cgt_team_traffic(native->team->cgt, &now);
    delta[COLL_GPU_NET_BYTES_SENT] = now.bytes_sent - mark->traffic.bytes_sent;
    delta[COLL_GPU_NET_BYTES_RECEIVED] = now.bytes_received - mark->traffic.bytes_received;
    delta[COLL_GPU_NET_MESSAGES] = now.messages - mark->traffic.messages;
    delta[COLL_GPU_NET_ROUNDS] = native->net_rounds - mark->rounds;
    delta[COLL_GPU_NET_WAITS] = native->net_waits - mark->waits;
    for (int i = 0; i < COLL_GPU_NET_NUM; ++i) {
        coll_gpu_count_add(&coll_gpu_net_counters[i], delta[i]);
    }
    coll_gpu_count_max(&coll_gpu_net_gets_in_flight_max, native->net_gets_in_flight_max);
    if (NULL != native->net_by_node_mark) {
        const uint64_t *by_node = cgt_team_received_by_node(native->team->cgt);

        /* (most calls get from a few nodes: no atomic add for the others) */
        for (int j = 0; j < native->team->nnodes; ++j) {
            int k = (j < COLL_GPU_NET_MAX_NODES) ? j : COLL_GPU_NET_MAX_NODES - 1;
            if (by_node[j] != native->net_by_node_mark[j]) {
                coll_gpu_count_add(&coll_gpu_net_received_by_node[k],
                                   by_node[j] - native->net_by_node_mark[j]);
            }
        }
    }
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                     "%s on %s: between nodes rank %d sent %llu bytes and received %llu bytes "
                     "in %llu messages, at most %u gets in flight; %llu rounds on its critical "
                     "path (%llu signals of other nodes waited for), %s",
                     call->mpi_call, comm->c_name, native->team->rank,
                     delta[COLL_GPU_NET_BYTES_SENT], delta[COLL_GPU_NET_BYTES_RECEIVED],
                     delta[COLL_GPU_NET_MESSAGES], native->net_gets_in_flight_max,
                     delta[COLL_GPU_NET_ROUNDS], delta[COLL_GPU_NET_WAITS], call->alg->name);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The agreement that ends every native call: every rank's outcome to every rank, through the
 * node leaders across nodes; the step handshake built on it; a transport's failure. */
#include "coll_gpu_native_agree.h"
#include "coll_gpu_agreement.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_signature.h"

#include "ompi/runtime/mpiruntime.h"
#include "opal/util/show_help.h"

#include <stdio.h>

/*
 * The agreement that ends every native call (and coll_gpu_native_agree_max): every rank's
 * 24-bit payload, combined by max, reaches every rank, and no rank leaves before every rank
 * entered (a barrier: no peer reads this rank's scratch of the call any more).
 *
 * One node: every rank sends its word to every other, then waits for theirs.  Several nodes:
 * each node's first rank (its leader) gathers its node's words, the leaders exchange theirs by
 * dissemination of radix k (coll_gpu_agreement_radix): in round i a leader sends what it has
 * to the leaders of the nodes m k^i after its own (m = 1 .. k-1, m k^i < nnodes), then waits
 * for those m k^i before it; after ceil(log_k nnodes) rounds each has every node's (every
 * distance below nnodes is a sum of such terms, each used once), then it tells its node.  A
 * leader sends at most (k - 1) ceil(log_k nnodes) messages between nodes, every other rank
 * none: O(log nnodes) rounds and messages, where one step to every rank cost O(size) messages
 * per rank.  Every pair of ranks exchanges at most one word a way per agreement (distinct
 * distances, distinct directions), into the receiver's slot of the sender.
 *
 * A word is the agreement's number (from 1, the same on every rank) above a dead flag and the
 * payload: monotone per slot, as waits need.  Each slot has two parities: a peer may be one
 * agreement ahead (it finished this one, which needs only that this rank entered it) and write
 * its next word before this rank read this one, never two ahead.
 *
 * Failure: a wait that finds a peer dead (or any transport error) poisons this rank's word
 * (the dead flag), and the rank sends everything it still owes without waiting for anything
 * more; a rank that receives a poisoned word does the same.  Every rank either waits on the
 * dead one itself or hears from a rank that did (the dissemination reaches every rank from
 * every rank), so every rank returns CGT_ERR_PEER_FAILED, none waits for ever.
 */
typedef struct {
    coll_gpu_native_t *native;
    unsigned slot0; /* the senders' slots of this agreement's parity */
    uint64_t base;  /* the agreement's number, shifted: every word of it is at least this */
    uint64_t acc;   /* dead flag and payload: the largest seen so far */
    cgt_status_t status;
    int told_by; /* the peer whose poisoned word made this rank fail (-1: none) */
} coll_gpu_agree_t;

static void coll_gpu_agree_send(coll_gpu_agree_t *a, int peer) {
    coll_gpu_team_t *team = a->native->team;
    cgt_status_t status =
        cgt_signal(team->cgt, peer, a->slot0 + (unsigned)team->rank, a->base | a->acc);

    if ((CGT_OK != status) && (CGT_OK == a->status)) {
        a->status = status;
        a->acc |= COLL_GPU_AGREE_DEAD;
    }
}

static void coll_gpu_agree_recv(coll_gpu_agree_t *a, int peer) {
    coll_gpu_team_t *team = a->native->team;
    unsigned slot = a->slot0 + (unsigned)peer;
    uint64_t word;

    if (CGT_OK != a->status) {
        return; /* failed: owes its words, waits for nothing */
    }
    coll_gpu_native_net_wait(a->native, peer);
    a->status = cgt_wait(team->cgt, slot, a->base);
    if (CGT_OK != a->status) {
        a->acc |= COLL_GPU_AGREE_DEAD;
        return;
    }
    word = __atomic_load_n(cgt_signal_addr(team->cgt, slot), __ATOMIC_ACQUIRE) &
           (COLL_GPU_AGREE_DEAD | COLL_GPU_AGREE_PAYLOAD_MASK);
    a->acc = (word > a->acc) ? word : a->acc;
    if (0 != (a->acc & COLL_GPU_AGREE_DEAD)) {
        a->status = CGT_ERR_PEER_FAILED;
        a->told_by = peer;
    }
}

/* The leaders' dissemination (above, coll_gpu_agree_round), on node indices; nnodes > 1. */
static void coll_gpu_agree_leaders(coll_gpu_agree_t *a, int radix) {
    coll_gpu_team_t *team = a->native->team;
    int n = team->nnodes, j = team->node, count;
    long dists[COLL_GPU_AGREE_MAX_RADIX];

    for (int round = 0; 0 < (count = coll_gpu_agree_round(n, radix, round, dists)); ++round) {
        for (int i = 0; i < count; ++i) {
            coll_gpu_agree_send(a, coll_gpu_team_node_rank(team, (int)((j + dists[i]) % n), 0));
        }
        for (int i = 0; i < count; ++i) {
            coll_gpu_agree_recv(a, coll_gpu_team_node_rank(team, (int)((j - dists[i] + n) % n), 0));
        }
    }
}

/* Every rank's payload combined by max into *all_p (the same on every rank when CGT_OK).
 * status: this rank's call so far; an error poisons the agreement (and is returned). */
static cgt_status_t coll_gpu_native_agree_word(coll_gpu_native_t *native, uint32_t payload,
                                               cgt_status_t status, uint32_t *all_p) {
    coll_gpu_team_t *team = native->team;
    uint64_t number = ++native->agreements;
    coll_gpu_agree_t a = {
        .native = native,
        .slot0 =
            COLL_GPU_TEAM_SLOT_AGREE0(team->size) + (unsigned)(number & 1) * (unsigned)team->size,
        .base = coll_gpu_agree_base(number),
        .acc = (payload & COLL_GPU_AGREE_PAYLOAD_MASK) |
               ((CGT_OK != status) ? COLL_GPU_AGREE_DEAD : 0),
        .status = status,
        .told_by = -1,
    };
    int leader = coll_gpu_team_node_rank(team, team->node, 0);

    if (1 == team->nnodes) {
        for (int p = 0; p < team->size; ++p) {
            if (p != team->rank) {
                coll_gpu_agree_send(&a, p);
            }
        }
        for (int p = 0; p < team->size; ++p) {
            if (p != team->rank) {
                coll_gpu_agree_recv(&a, p);
            }
        }
    } else if (team->rank != leader) {
        coll_gpu_agree_send(&a, leader);
        coll_gpu_agree_recv(&a, leader);
    } else {
        for (int k = 1; k < team->local_size; ++k) {
            coll_gpu_agree_recv(&a, coll_gpu_team_node_rank(team, team->node, k));
        }
        coll_gpu_agree_leaders(&a, mca_coll_gpu_component.agreement_radix);
        for (int k = 1; k < team->local_size; ++k) {
            coll_gpu_agree_send(&a, coll_gpu_team_node_rank(team, team->node, k));
        }
    }
    native->agree_told_by = a.told_by;
    *all_p = (uint32_t)(a.acc & COLL_GPU_AGREE_PAYLOAD_MASK);
    return a.status;
}

/* coll_gpu_native_finish's agreement: my_class MPI_SUCCESS when the call succeeded here, status
 * its transport's outcome.  On return *peer_p is the lowest rank whose call failed (-1: none, or
 * this rank), *class_p its error class. */
static cgt_status_t coll_gpu_native_agree_outcome(coll_gpu_native_t *native, cgt_status_t status,
                                                  int my_class, int *peer_p, int *class_p) {
    coll_gpu_team_t *team = native->team;
    uint32_t all = 0;
    int failed, failed_class;

    *peer_p = -1;
    *class_p = MPI_SUCCESS;
    /* (a step of the communicator's count too, as every agreement was: steps stay in line) */
    ++native->step;
    status = coll_gpu_native_agree_word(
        native, coll_gpu_agree_failure_payload(team->rank, my_class), status, &all);
    if ((CGT_OK == status) && (0 != all)) {
        coll_gpu_agree_failure_decode(all, &failed, &failed_class);
        if (failed != team->rank) {
            *peer_p = failed;
            *class_p = failed_class;
        }
    }
    return status;
}

cgt_status_t coll_gpu_native_agree_max(coll_gpu_native_t *native, uint64_t mine, uint64_t *max_p) {
    uint32_t code = 0;
    cgt_status_t status;

    /* the codes are monotone in the values: the largest code is the largest value's */
    ++native->step;
    status = coll_gpu_native_agree_word(native, coll_gpu_value_encode(mine), CGT_OK, &code);
    *max_p = coll_gpu_value_decode(code);
    return status;
}

int coll_gpu_native_finish(const coll_gpu_native_call_t *call, struct ompi_communicator_t *comm,
                           cgt_status_t status, accel_status_t astatus) {
    coll_gpu_native_t *native = call->native;
    const char *mpi_call = call->mpi_call;
    accel_status_t ignored = ACCEL_OK;
    int rc = OMPI_SUCCESS, peer = -1, peer_class = MPI_SUCCESS;

    if (CGT_OK == status) {
        status = coll_gpu_native_fetch_complete(native, call->kind, call->stream, &astatus);
    } else {
        (void)coll_gpu_native_fetch_complete(native, call->kind, call->stream, &ignored);
    }
    if ((CGT_OK == status) && (ACCEL_OK == astatus) && (NULL != call->unpack)) {
        /* the algorithm's copies and gets into the packed buffer are done: unpack it */
        astatus = coll_gpu_sig_buf_unpack(call, call->unpack);
    }
    if (OPAL_UNLIKELY(ACCEL_OK != astatus)) {
        rc = coll_gpu_accel_failed(astatus, mpi_call, comm);
    }
    if (OPAL_UNLIKELY(CGT_OK != status)) {
        /* This rank stopped short of the algorithm's signals.  Peers of the targeted-signal
         * algorithms may wait on it alone (not on the dead peer): the largest value in its step
         * slot at each ends every such wait, and the agreement, poisoned, then fails them all. */
        for (int p = 0; p < native->team->size; ++p) {
            if (p != native->team->rank) {
                (void)cgt_signal(native->team->cgt, p,
                                 COLL_GPU_NATIVE_SLOT0 + (unsigned)native->team->rank, UINT64_MAX);
            }
        }
    }
    status = coll_gpu_native_agree_outcome(native, status, rc, &peer, &peer_class);
    if (OPAL_UNLIKELY(CGT_OK != status)) {
        return coll_gpu_native_transport_failed(native, status, mpi_call, comm);
    }
    if (OPAL_UNLIKELY((OMPI_SUCCESS == rc) && (peer >= 0))) {
        coll_gpu_count_add(&mca_coll_gpu_component.peer_errors, 1);
        opal_show_help("help-mpi-coll-gpu.txt", "peer error", true, COLL_GPU_HOSTNAME, mpi_call,
                       ompi_comm_rank(comm), ompi_comm_size(comm), peer, peer_class);
        rc = peer_class;
    }
    return rc;
}

int coll_gpu_native_transport_failed(coll_gpu_native_t *native, cgt_status_t status,
                                     const char *mpi_call, struct ompi_communicator_t *comm) {
    if (CGT_ERR_TIMEOUT == status) {
        /* Only a user-set coll_gpu_transport_timeout ends a wait on a live peer. */
        opal_show_help("help-mpi-coll-gpu.txt", "transport timeout", true, COLL_GPU_HOSTNAME,
                       mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), cgt_last_error());
        ompi_mpi_abort(comm, MPI_ERR_OTHER);
    }
    char told[160];

    if (native->agree_told_by >= 0) {
        /* this rank saw no error itself: a peer of the agreement passed one on */
        snprintf(told, sizeof(told),
                 "rank %d passed on, in the agreement that ends the call, that a rank of the "
                 "communicator could not be reached (its own message names which)",
                 native->agree_told_by);
    }
    opal_show_help("help-mpi-coll-gpu.txt", "native transport error", true, COLL_GPU_HOSTNAME,
                   mpi_call, ompi_comm_rank(comm), ompi_comm_size(comm), cgt_status_string(status),
                   (native->agree_told_by >= 0) ? told : cgt_last_error(),
                   (CGT_ERR_PEER_FAILED == status)
                       ? "The call returns MPI_ERR_OTHER; its receive buffer is undefined.  Later\n"
                         "device-buffer collectives of this communicator are staged."
                       : "Its peers cannot be told: the job is aborted, on every rank alike.");
    if (CGT_ERR_PEER_FAILED != status) {
        ompi_mpi_abort(comm, MPI_ERR_OTHER);
    }
    native->broken = true;
    return MPI_ERR_OTHER;
}

cgt_status_t coll_gpu_native_announce(const coll_gpu_native_call_t *call, uint64_t step,
                                      accel_status_t *astatus_p) {
    coll_gpu_native_t *native = call->native;
    cgt_status_t status;
    uint32_t unused;

    status = coll_gpu_native_fetch_complete(native, call->kind, call->stream, astatus_p);
    if ((CGT_OK == status) && (native->team->nnodes > 1)) {
        /* Across nodes the step's barrier is the closing agreement's (through node leaders,
         * O(log nnodes) messages), not a signal from every rank to every rank: what follows
         * needs only that every rank got to this step, never a peer's READY slot. */
        return coll_gpu_native_agree_word(native, 0, CGT_OK, &unused);
    }
    if (CGT_OK == status) {
        status = coll_gpu_native_signal_all(native, step, COLL_GPU_PHASE_READY);
    }
    if (CGT_OK == status) {
        status = coll_gpu_native_wait_all(native, step, COLL_GPU_PHASE_READY);
    }
    return status;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The modex record of coll/gpu's presence (coll_gpu_presence.h).
 *
 * Published at component open: Open MPI opens the coll framework before MPI_Init's modex fence
 * (4.1 and 5.0), whose collection of every process's records makes them readable on every
 * process once MPI_COMM_WORLD's module is enabled.  The record is one 64-bit word: a tag (the
 * record's version: any change of the protocol between processes bumps it), the process's role
 * (off, host buffers only, device buffers) and the hash of its protocol parameters.  Under
 * Open MPI's asynchronous modex (pmix_base_async_modex) no fence collects the records: a record
 * might be read on one rank and not yet on another, so none is read and every communicator's
 * members are trusted to run the component alike (the behaviour without records).
 */
#include "coll_gpu_presence.h"

#include <stdlib.h>

#define COLL_GPU_PRESENCE_KEY "coll.gpu.presence"
#define COLL_GPU_PRESENCE_TAG 0xc601ULL /* bumped with the protocol between processes */
#define COLL_GPU_PRESENCE_HASH_BITS 40

/* What a member's record says, cached per process of this job (0: not read yet). */
typedef enum {
    COLL_GPU_PEER_UNREAD = 0,
    COLL_GPU_PEER_ALIKE,
    COLL_GPU_PEER_ABSENT,
    COLL_GPU_PEER_OFF,
    COLL_GPU_PEER_VERSION,
    COLL_GPU_PEER_ROLE,
    COLL_GPU_PEER_PARAMS,
    COLL_GPU_PEER_FOREIGN,
    COLL_GPU_PEER_UNPUBLISHED,
} coll_gpu_peer_state_t;

static const char *const coll_gpu_peer_why[] = {
    [COLL_GPU_PEER_ABSENT] = "coll/gpu is not loaded there",
    [COLL_GPU_PEER_OFF] = "coll/gpu is off there (coll_gpu_enable, coll_gpu_priority, or no "
                          "accelerator)",
    [COLL_GPU_PEER_VERSION] = "it runs another version of coll/gpu",
    [COLL_GPU_PEER_ROLE] = "one of the two processes has no accelerator (host-buffer mode)",
    [COLL_GPU_PEER_PARAMS] = "it was given other coll_gpu parameters or tuning rules that "
                             "change the protocol",
    [COLL_GPU_PEER_FOREIGN] = "it belongs to another job (MPI_Comm_spawn, MPI_Comm_connect)",
    [COLL_GPU_PEER_UNPUBLISHED] = "this process could not publish its coll/gpu record",
};

static struct {
    bool trusted;   /* records are read: a fence collects them */
    bool published; /* this process's record is out */
    uint64_t mine;
    size_t num_procs;
    uint8_t *peers; /* coll_gpu_peer_state_t per process of this job, by vpid (NULL: no cache) */
} coll_gpu_presence;

bool coll_gpu_presence_publish(coll_gpu_role_t role, uint64_t hash) {
    uint64_t word;
    int rc;

    hash ^= hash >> COLL_GPU_PRESENCE_HASH_BITS;
    hash &= (1ULL << COLL_GPU_PRESENCE_HASH_BITS) - 1;
    word = (COLL_GPU_PRESENCE_TAG << 48) | ((uint64_t)role << COLL_GPU_PRESENCE_HASH_BITS) | hash;
    coll_gpu_presence.mine = word;
    OPAL_MODEX_SEND_VALUE(rc, COLL_GPU_MODEX_GLOBAL, COLL_GPU_PRESENCE_KEY, &word,
                          COLL_GPU_MODEX_UINT64);
    coll_gpu_presence.trusted = true;
    coll_gpu_presence.published = (COLL_GPU_MODEX_OK == rc);
    coll_gpu_presence.num_procs = (size_t)ompi_process_info.num_procs;
    coll_gpu_presence.peers = calloc(coll_gpu_presence.num_procs, sizeof(uint8_t));
    return coll_gpu_presence.published;
}

bool coll_gpu_presence_possible(void) { return COLL_GPU_MODEX_UP() && !opal_pmix_base_async_modex; }

static coll_gpu_peer_state_t coll_gpu_presence_read(opal_process_name_t *name) {
    uint64_t word = 0, *word_p = &word, mine = coll_gpu_presence.mine;
    int rc;

    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, COLL_GPU_PRESENCE_KEY, name, &word_p, COLL_GPU_MODEX_UINT64);
    if (COLL_GPU_MODEX_OK != rc) {
        return COLL_GPU_PEER_ABSENT;
    }
    if ((word >> 48) != (mine >> 48)) {
        return COLL_GPU_PEER_VERSION;
    }
    if (COLL_GPU_ROLE_OFF == ((word >> COLL_GPU_PRESENCE_HASH_BITS) & 0xff)) {
        return COLL_GPU_PEER_OFF;
    }
    if (((word ^ mine) >> COLL_GPU_PRESENCE_HASH_BITS) != 0) {
        return COLL_GPU_PEER_ROLE;
    }
    return (word == mine) ? COLL_GPU_PEER_ALIKE : COLL_GPU_PEER_PARAMS;
}

/* A member's state: read once per process of this job (communicators share their members). */
static coll_gpu_peer_state_t coll_gpu_presence_peer(opal_process_name_t name) {
    uint8_t *slot = NULL;
    coll_gpu_peer_state_t state = COLL_GPU_PEER_UNREAD;

    if (!coll_gpu_presence.published) {
        return COLL_GPU_PEER_UNPUBLISHED; /* the peers read no record of this process */
    }
    if (name.jobid != OPAL_PROC_MY_NAME.jobid) {
        return COLL_GPU_PEER_FOREIGN; /* its record is not among this job's */
    }
    if ((NULL != coll_gpu_presence.peers) && (name.vpid < coll_gpu_presence.num_procs)) {
        slot = &coll_gpu_presence.peers[name.vpid];
        state = (coll_gpu_peer_state_t)__atomic_load_n(slot, __ATOMIC_RELAXED);
    }
    if (COLL_GPU_PEER_UNREAD == state) {
        /* (two threads may both read it: the same answer) */
        state = coll_gpu_presence_read(&name);
        if (NULL != slot) {
            __atomic_store_n(slot, (uint8_t)state, __ATOMIC_RELAXED);
        }
    }
    return state;
}

bool coll_gpu_presence_alike(struct ompi_communicator_t *comm, int *rank_p, const char **why_p,
                             bool *params_p) {
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);

    if (!coll_gpu_presence.trusted) {
        return true;
    }
    for (int r = 0; r < size; ++r) {
        coll_gpu_peer_state_t state;

        if (r == me) {
            continue;
        }
        state = coll_gpu_presence_peer(ompi_group_get_proc_name(comm->c_local_group, r));
        if (COLL_GPU_PEER_ALIKE != state) {
            *rank_p = r;
            *why_p = coll_gpu_peer_why[state];
            *params_p = (COLL_GPU_PEER_PARAMS == state);
            return false;
        }
    }
    return true;
}

void coll_gpu_presence_fini(void) {
    free(coll_gpu_presence.peers);
    coll_gpu_presence.peers = NULL;
    coll_gpu_presence.trusted = false;
    coll_gpu_presence.published = false;
}

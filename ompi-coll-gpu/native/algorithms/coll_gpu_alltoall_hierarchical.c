/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall, hierarchical (node-aggregated: nodes of several ranks, small blocks): the blocks
 * between two nodes travel in one message each way, carried by one rank of each node (the same
 * local index, so the same rail, where nodes are alike).  The scratch layout, the four phases of
 * a step and the reuse of halves: docs/collectives.md, "Alltoall across nodes".  Only copies:
 * the bits are direct's.
 */
#include "coll_gpu_algorithms.h"
#include "coll_gpu_prims.h"

/* The most ranks any node of the team has. */
static size_t coll_gpu_alltoall_hier_lmax(const coll_gpu_team_t *team) {
    int lmax = 1;

    for (int j = 0; j < team->nnodes; ++j) {
        lmax = (team->node_sizes[j] > lmax) ? team->node_sizes[j] : lmax;
    }
    return (size_t)lmax;
}

/* A scratch half holds 1 + 2 Lmax slots per rank of one element each, at least. */
bool coll_gpu_alltoall_hierarchical_fits(const coll_gpu_native_t *native, size_t esize) {
    const coll_gpu_team_t *team = native->team;

    return (size_t)team->size * (1 + 2 * coll_gpu_alltoall_hier_lmax(team)) * esize <= native->half;
}

/* The rank of node j that carries the blocks between nodes i and j, both ways. */
static int coll_gpu_alltoall_carrier(const coll_gpu_team_t *team, int j, int i) {
    return coll_gpu_team_rail_rank(team, j, i + j);
}

typedef struct {
    coll_gpu_prims_t pr;
    const coll_gpu_team_t *team;
    size_t lmax, len;  /* len: bytes of a block's chunk this step */
    size_t held, recv; /* where the held and received regions begin */
} coll_gpu_alltoall_hier_t;

/* held(j): this node's blocks for node j; received(i): node i's blocks for this node. */
static size_t coll_gpu_alltoall_held(const coll_gpu_alltoall_hier_t *h, int j) {
    return h->held + (size_t)h->team->node_first[j] * h->lmax * h->len;
}
static size_t coll_gpu_alltoall_received(const coll_gpu_alltoall_hier_t *h, int i) {
    return h->recv + (size_t)h->team->node_first[i] * h->lmax * h->len;
}

/* Rank q's half of step (this rank's own or a node peer's, mapped here). */
static const char *coll_gpu_alltoall_half(coll_gpu_alltoall_hier_t *h, int q, uint64_t step) {
    return (q == h->team->rank) ? coll_gpu_prims_mine(&h->pr, step)
                                : coll_gpu_prims_theirs(&h->pr, q, step);
}

/* Step 2: the runs this rank carries to other nodes, loaded, published, announced. */
static void coll_gpu_alltoall_gather_runs(coll_gpu_alltoall_hier_t *h, uint64_t step) {
    const coll_gpu_team_t *team = h->team;
    char *mine = coll_gpu_prims_mine(&h->pr, step);
    bool carries = false;

    for (int j = 0; j < team->nnodes; ++j) {
        size_t run = (size_t)team->node_sizes[j] * h->len;
        size_t held = coll_gpu_alltoall_held(h, j);

        if ((j == team->node) || (coll_gpu_alltoall_carrier(team, team->node, j) != team->rank)) {
            continue;
        }
        for (int a = 0; a < team->local_size; ++a) {
            int q = coll_gpu_team_node_rank(team, team->node, a);

            coll_gpu_prims_copy(
                &h->pr, mine + held + (size_t)a * run,
                coll_gpu_alltoall_half(h, q, step) + (size_t)team->node_first[j] * h->len, run);
        }
        coll_gpu_prims_publish(&h->pr, step, held, (size_t)team->local_size * run);
        carries = true;
    }
    if (!carries) {
        return;
    }
    /* loaded and published before node j's carrier is told */
    coll_gpu_prims_sync(&h->pr);
    for (int j = 0; j < team->nnodes; ++j) {
        if ((j != team->node) && (coll_gpu_alltoall_carrier(team, team->node, j) == team->rank)) {
            coll_gpu_prims_signal(&h->pr, coll_gpu_alltoall_carrier(team, j, team->node), step,
                                  COLL_GPU_PHASE_GATHERED);
        }
    }
}

/* Step 3: the runs this rank carries from other nodes, got, and its node told. */
static void coll_gpu_alltoall_get_runs(coll_gpu_alltoall_hier_t *h, uint64_t step) {
    const coll_gpu_team_t *team = h->team;
    unsigned max_outstanding = mca_coll_gpu_component.alltoall_max_outstanding;
    char *mine = coll_gpu_prims_mine(&h->pr, step);
    bool carries = false;

    for (int i = 0; i < team->nnodes; ++i) {
        int theirs = coll_gpu_alltoall_carrier(team, i, team->node);

        if ((i == team->node) || (coll_gpu_alltoall_carrier(team, team->node, i) != team->rank)) {
            continue;
        }
        coll_gpu_prims_wait(&h->pr, theirs, step, COLL_GPU_PHASE_GATHERED);
        coll_gpu_prims_fetch_bounded(
            &h->pr, max_outstanding, theirs, step, coll_gpu_alltoall_held(h, team->node),
            mine + coll_gpu_alltoall_received(h, i),
            (size_t)team->node_sizes[i] * (size_t)team->local_size * h->len);
        carries = true;
    }
    if (!carries) {
        return;
    }
    coll_gpu_prims_fetch_complete(&h->pr);
    coll_gpu_prims_signal_node(&h->pr, step, COLL_GPU_PHASE_SCATTERED);
}

int coll_gpu_alltoall_hierarchical(struct ompi_communicator_t *comm,
                                   const coll_gpu_native_call_t *call) {
    coll_gpu_alltoall_hier_t h;
    const coll_gpu_team_t *team = call->native->team;
    int rank = team->rank, size = team->size;
    int index = coll_gpu_team_index_in_node(team, rank);
    size_t esize = call->esize, count = call->count;
    const char *in = (NULL != call->sbuf) ? (const char *)call->sbuf : (const char *)call->rbuf;
    char *out = call->rbuf;
    size_t per_step;

    h.team = team;
    h.lmax = coll_gpu_alltoall_hier_lmax(team);
    per_step = call->native->half / ((size_t)size * (1 + 2 * h.lmax) * esize);
    coll_gpu_prims_init(&h.pr, call);
    for (coll_gpu_prims_chunk_t c = {0}; coll_gpu_prims_next(&h.pr, &c, count, per_step);) {
        char *mine = coll_gpu_prims_mine(&h.pr, c.step);
        coll_gpu_prims_run_t run = {NULL, NULL, 0, 0, 0, 0};

        h.len = c.n * esize;
        h.held = (size_t)size * h.len;
        h.recv = h.held + (size_t)size * h.lmax * h.len;
        /* 1. (in place: every block's chunk is in the scratch before any is replaced).  Its own
         * block goes into its own send slot too, which nobody reads: where nodes are ranges of
         * ranks the send slots are then the send buffer's chunks at one stride, one copy (the
         * run: coll_gpu_run.h) */
        for (int d = 0; d < size; ++d) {
            coll_gpu_prims_run_add(&h.pr, &run,
                                   mine + (size_t)coll_gpu_team_node_order(team, d) * h.len,
                                   in + ((size_t)d * count + c.first) * esize, h.len);
        }
        coll_gpu_prims_run_flush(&h.pr, &run);
        if (NULL != call->sbuf) {
            coll_gpu_prims_copy(&h.pr, out + ((size_t)rank * count + c.first) * esize,
                                in + ((size_t)rank * count + c.first) * esize, h.len);
        }
        /* every rank's copies into its half landed, and each is done with step - 1 */
        coll_gpu_prims_sync(&h.pr);
        coll_gpu_prims_signal_node(&h.pr, c.step, COLL_GPU_PHASE_READY);
        coll_gpu_prims_wait_node(&h.pr, c.step, COLL_GPU_PHASE_READY);
        coll_gpu_alltoall_gather_runs(&h, c.step);
        coll_gpu_alltoall_get_runs(&h, c.step);
        /* 4. */
        for (int i = 0; i < team->nnodes; ++i) {
            int carrier = coll_gpu_alltoall_carrier(team, team->node, i);
            const char *from;

            if (i == team->node) {
                for (int a = 0; a < team->local_size; ++a) {
                    int q = coll_gpu_team_node_rank(team, i, a);

                    if (q != rank) {
                        coll_gpu_prims_copy(&h.pr, out + ((size_t)q * count + c.first) * esize,
                                            coll_gpu_alltoall_half(&h, q, c.step) +
                                                (size_t)coll_gpu_team_node_order(team, rank) *
                                                    h.len,
                                            h.len);
                    }
                }
                continue;
            }
            if (carrier != rank) {
                coll_gpu_prims_wait(&h.pr, carrier, c.step, COLL_GPU_PHASE_SCATTERED);
            }
            from = coll_gpu_alltoall_half(&h, carrier, c.step) + coll_gpu_alltoall_received(&h, i);
            /* node i's blocks for this rank, every local_size-th slot, into its ranks' blocks:
             * one strided copy where nodes are ranges of ranks (the run) */
            for (int a = 0; a < team->node_sizes[i]; ++a) {
                coll_gpu_prims_run_add(
                    &h.pr, &run,
                    out + ((size_t)coll_gpu_team_node_rank(team, i, a) * count + c.first) * esize,
                    from + ((size_t)a * (size_t)team->local_size + (size_t)index) * h.len, h.len);
            }
            coll_gpu_prims_run_flush(&h.pr, &run);
        }
    }
    return coll_gpu_prims_finish(&h.pr, comm);
}

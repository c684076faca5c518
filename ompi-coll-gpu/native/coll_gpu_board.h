/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A communicator's call board: which path each rank took for each call ("host", or "arrived
 * with status s"), so that ranks passing different memory kinds to one call still meet in one
 * protocol; across nodes the node leaders exchange their nodes' verdicts.  Made at the
 * communicator's creation (coll_gpu_board_create, collective).  docs/failure-model.md, "Memory
 * kinds: the call board".
 */
#ifndef COLL_GPU_BOARD_H
#define COLL_GPU_BOARD_H

#include "coll_gpu.h"

BEGIN_C_DECLS

/* A call's statuses and the board's type, coll_gpu_board_status_t and coll_gpu_board_t, are
 * the module's (base/coll_gpu.h): the leaders' messages below this file use them too. */

/* Collective over comm (the setup's point-to-point collectives): compares every rank's
 * native_config_hash (module->params_differ) and makes the node's board.  Decided alike on
 * every rank: a rank that could not make or map its board leaves every rank without one (then
 * no call is ever uniform: every device call is one staged host collective). */
void coll_gpu_board_create(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm);

/* At the communicator's creation (before its setup task): an attribute whose deletion, the
 * first step of MPI_Comm_free, quiesces a leader across nodes (its posted receive holds a
 * reference on the communicator, which Open MPI would otherwise never destroy). */
void coll_gpu_board_watch(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm);

/* Local: unmaps the board (a leader first answers what its peers may still ask). */
void coll_gpu_board_destroy(mca_coll_gpu_module_t *module);

/* This rank's word for the current call (module->call_seq): arrived with status; returns the
 * call's outcome, the same on every rank that arrives.  Blocking until every peer's word for the
 * call is known (or one that makes the outcome ABSENT).  Called again for the same call it
 * returns the first outcome (ABSENT when the call published host). */
coll_gpu_board_status_t coll_gpu_board_arrive(mca_coll_gpu_module_t *module,
                                              struct ompi_communicator_t *comm,
                                              coll_gpu_board_status_t status);

/* The rank (and pid) whose death made a call's outcome COLL_GPU_BOARD_DEAD, if this rank
 * found it (a peer may have told this rank instead). */
bool coll_gpu_board_dead_peer(const mca_coll_gpu_module_t *module, int *rank_p, int *pid_p);

/* Whether every rank arrived with status (native calls). */
static inline bool coll_gpu_board_uniform(mca_coll_gpu_module_t *module,
                                          struct ompi_communicator_t *comm,
                                          coll_gpu_board_status_t status) {
    return coll_gpu_board_arrive(module, comm, status) == status;
}

/* Whether every rank pipelines the call (several host collectives): its word STAGED, or one
 * more where the call's word is already out (a native-capable call), since a rank of another
 * datatype of the same signature may stage it as one host collective (its word SINGLE). */
bool coll_gpu_board_all_stage(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm);

/* Whether the current call is known to be run by every rank in this component (its outcome:
 * no rank passed it to Open MPI), without a word of its own: where a collective of the
 * component's own may run (a debug check). */
static inline bool coll_gpu_board_known_all_stage(const mca_coll_gpu_module_t *module) {
    return (module->board_done == module->call_seq) &&
           (COLL_GPU_BOARD_ABSENT != module->board_outcome) &&
           (COLL_GPU_BOARD_DEAD != module->board_outcome) &&
           (COLL_GPU_BOARD_HOST != module->board_outcome) && !module->params_differ;
}

/* After a pipelined staged call (every rank staged it: coll_gpu_board_all_stage): every rank
 * arrives at one call number more, which no rank leaves before every rank got there, so no rank
 * leaves the pipeline (a root whose chunks went out eagerly) before every rank read its word
 * for it; a later word of a rank then means the call it passed was one host collective.  The
 * word says whether this rank's pipeline failed (rc): where one did, every rank returns an
 * error (its own, else MPI_ERR_OTHER with the "staged peer error" message).  Returns the call's
 * error code. */
int coll_gpu_board_close(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                         const char *mpi_call, int rc);

/* A blocking staged call of one host collective, its buffers copied into host memory (*rc_p:
 * how that went on this rank): whether to run the host collective.  Every rank that stages the
 * call gives one word (the call's own, or one more where the call's word is already out and
 * every rank arrived); where a rank's copies failed every rank learns it, skips the host
 * collective (no rank reduces an undefined contribution) and fails the call: *rc_p its own
 * error, else MPI_ERR_OTHER and the "staged peer error" message.  Where a rank passed the call
 * to Open MPI (host memory) the host collective runs and only the failed rank returns its
 * error: a pass-through rank reads no word.  A dead peer fails the call. */
bool coll_gpu_board_stage_agree(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                                const char *mpi_call, int *rc_p);

/* The "native transport error" message of a call whose outcome was COLL_GPU_BOARD_DEAD (naming
 * the dead rank where this rank found it); returns MPI_ERR_OTHER. */
int coll_gpu_board_dead_error(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              const char *mpi_call);

/* Publishes host for the current call unless it published already: before any host collective
 * of the call, and at its end. */
static inline void coll_gpu_board_settle(mca_coll_gpu_module_t *module) {
    if (module->board_done != module->call_seq) {
        module->board_done = module->call_seq;
        module->board_outcome = COLL_GPU_BOARD_ABSENT;
        /* (after this rank's arrivals at earlier calls: coll_gpu_board.c reads them in order) */
        __atomic_store_n(module->board_host, module->call_seq, __ATOMIC_RELEASE);
    }
}

END_C_DECLS

#endif /* COLL_GPU_BOARD_H */

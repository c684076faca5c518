/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A communicator's setup (its transport team, its native context): the host collectives it
 * runs, and the task that runs it in the background (coll_gpu_native_setup=create).
 *
 * The collectives are point-to-point messages on a tag of coll/gpu's own, the way coll/ucc
 * bootstraps its teams; not the previous module's collectives, whose nonblocking forms number
 * their messages from a counter of the communicator that the application's nonblocking calls
 * share: a setup running beside those calls would take their numbers.
 *
 * The task: the setup started inside the communicator's creation runs on a stack of its own and
 * gives the thread back wherever it would wait for a peer (a message of its collectives, a
 * transport wait), to be resumed from opal_progress, that is from any MPI call of the process,
 * until it is done.  Open MPI activates a process's new communicators one at a time: a setup
 * that waited there for its peers held off the process's other activations, and two ranks that
 * activated two communicators in different orders (two threads creating them at once) waited
 * for each other.  The communicator's first call that needs the setup's outcome completes the task
 * (coll_gpu_setup_task_finish), so every rank decides on the same outcome.  A task runs only on
 * the thread that created it (its frames hold that thread's locks and thread-local state): the
 * process's one MPI thread under MPI_THREAD_SINGLE and MPI_THREAD_FUNNELED; under
 * MPI_THREAD_MULTIPLE the task is a thread of its own instead, which calls opal_progress while
 * it waits; under MPI_THREAD_SERIALIZED neither is possible (coll_gpu_setup_task_possible), and
 * the setup runs inside the creation (coll_gpu_native_setup_at_create).
 */
#ifndef COLL_GPU_SETUP_H
#define COLL_GPU_SETUP_H

#include "coll_gpu.h"

BEGIN_C_DECLS

typedef struct coll_gpu_setup_task coll_gpu_setup_task_t;

/* Allreduce of count elements of a predefined type in place, and allgather of bytes per rank,
 * over comm; collective.  Inside a task they yield while waiting, elsewhere they poll
 * opal_progress (never a blocking wait: the first call's setup may run inside Open MPI's
 * progress too). */
int coll_gpu_setup_allreduce(struct ompi_communicator_t *comm, void *buf, int count,
                             struct ompi_datatype_t *type, struct ompi_op_t *op);
int coll_gpu_setup_allgather(struct ompi_communicator_t *comm, const void *sbuf, void *rbuf,
                             size_t bytes);

/* What a setup calls while it waits for a peer: a task on its own stack gives the thread back;
 * elsewhere opal_progress (a setup thread then yields the core too). */
void coll_gpu_setup_pause(void);

/* Whether a setup can run as a task here: where one thread makes the process's MPI calls
 * (MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED: a stack of its own, resumed by that thread) or where
 * any thread may (MPI_THREAD_MULTIPLE: a thread of its own). */
bool coll_gpu_setup_task_possible(void);

/* Starts run(module, comm) as the module's setup task (module->setup_task): it runs now until
 * its first wait; the communicator is retained until it is done.  False when the task could
 * not be created (no memory for its stack): nothing ran, and the caller runs the setup itself
 * (the same collectives, so the peers' tasks meet them). */
bool coll_gpu_setup_task_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                               void (*run)(mca_coll_gpu_module_t *, struct ompi_communicator_t *));
/* Completes the module's task, if it has one still running: progresses Open MPI, which runs
 * the task, until it is done.  A no-op inside the task itself. */
void coll_gpu_setup_task_finish(mca_coll_gpu_module_t *module);
/* Completes every task (MPI_Finalize's first step, through an attribute of MPI_COMM_SELF). */
void coll_gpu_setup_tasks_drain(void);
/* Component close: stops progressing tasks. */
void coll_gpu_setup_fini(void);

END_C_DECLS

#endif /* COLL_GPU_SETUP_H */

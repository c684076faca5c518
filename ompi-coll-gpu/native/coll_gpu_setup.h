/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A communicator's setup (its transport team, its native context): the host collectives it runs,
 * on point-to-point messages of a tag of coll/gpu's own (not the previous module's nonblocking
 * collectives, whose numbering the application's calls share), and the task that runs it in the
 * background (coll_gpu_native_setup=create): a stack of its own resumed from opal_progress, or a
 * thread under MPI_THREAD_MULTIPLE, or inside the creation under MPI_THREAD_SERIALIZED.  Why:
 * docs/nonblocking.md.
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

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A communicator's setup collectives, and the setup task (coll_gpu_setup.h).
 */
#include "coll_gpu_setup.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* Open MPI reserves no tag for a component built outside its tree: the last one of the range
 * it gives hcoll, whose top Open MPI's own allgather (sparbit) borrows; hcoll numbers up from
 * its base too.  coll/ucc's bootstrap has MCA_COLL_BASE_TAG_UCC. */
#define COLL_GPU_SETUP_TAG (MCA_COLL_BASE_TAG_HCOLL_END + 1)

/* The setup allreduce's largest message: the setup agrees on flags and two hashes. */
#define COLL_GPU_SETUP_ALLREDUCE_MAX 64

/* A task's stack: the transport's setup goes deep (UCX's and the driver's initialization),
 * and only the pages it touches cost memory.  One guard page below it. */
#define COLL_GPU_SETUP_STACK_SIZE ((size_t)4 << 20)

struct coll_gpu_setup_task {
    ucontext_t context; /* the task's: where it yielded */
    ucontext_t caller;  /* the resume that runs it now, which it returns to */
    void *stack;        /* mapped, guard page included */
    size_t stack_len;
    mca_coll_gpu_module_t *module;
    struct ompi_communicator_t *comm; /* retained while the task lives */
    void (*run)(mca_coll_gpu_module_t *, struct ompi_communicator_t *);
    bool done; /* run returned: the stack is free */
    struct coll_gpu_setup_task *next;
};

/* The live tasks, touched only by the process's one MPI thread (coll_gpu_setup_task_possible),
 * and the task that thread runs now. */
static coll_gpu_setup_task_t *coll_gpu_setup_tasks;
static bool coll_gpu_setup_progress_registered;
static __thread coll_gpu_setup_task_t *coll_gpu_setup_current;

bool coll_gpu_setup_in_task(void) {
    return NULL != coll_gpu_setup_current;
}

void coll_gpu_setup_pause(void) {
    coll_gpu_setup_task_t *task = coll_gpu_setup_current;

    if (NULL != task) {
        (void)swapcontext(&task->context, &task->caller);
    } else {
        (void)opal_progress();
    }
}

/* Completes n requests of a setup collective (the first error wins) and frees them. */
static int coll_gpu_setup_requests_complete(ompi_request_t **requests, int n) {
    int rc = OMPI_SUCCESS;

    for (int i = 0; i < n; ++i) {
        while (!REQUEST_COMPLETE(requests[i])) {
            coll_gpu_setup_pause();
        }
        if (OMPI_SUCCESS == rc) {
            rc = requests[i]->req_status.MPI_ERROR;
        }
        (void)ompi_request_free(&requests[i]);
    }
    return rc;
}

/* One step around the ring: sbuf to the right neighbour, rbuf from the left one. */
static int coll_gpu_setup_ring_step(struct ompi_communicator_t *comm, const void *sbuf,
                                    void *rbuf, size_t bytes) {
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), rc;
    ompi_request_t *requests[2];

    rc = MCA_PML_CALL(irecv(rbuf, bytes, MPI_BYTE, (rank + size - 1) % size, COLL_GPU_SETUP_TAG,
                            comm, &requests[0]));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(isend(sbuf, bytes, MPI_BYTE, (rank + 1) % size, COLL_GPU_SETUP_TAG,
                            MCA_PML_BASE_SEND_STANDARD, comm, &requests[1]));
    if (OMPI_SUCCESS != rc) {
        /* the left neighbour's message still comes: take it, then fail */
        (void)coll_gpu_setup_requests_complete(requests, 1);
        return rc;
    }
    return coll_gpu_setup_requests_complete(requests, 2);
}

/* A ring, as coll/ucc's bootstrap: size - 1 steps of one message each way. */
int coll_gpu_setup_allgather(struct ompi_communicator_t *comm, const void *sbuf, void *rbuf,
                             size_t bytes) {
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    char *all = rbuf;

    if ((char *)sbuf != all + (size_t)rank * bytes) {
        memmove(all + (size_t)rank * bytes, sbuf, bytes);
    }
    for (int step = 0; (step < size - 1) && (OMPI_SUCCESS == rc); ++step) {
        /* block (rank - step) goes right, block (rank - step - 1) comes from the left */
        size_t send_block = (size_t)((rank - step + size) % size);
        size_t recv_block = (size_t)((rank - step - 1 + size) % size);

        rc = coll_gpu_setup_ring_step(comm, all + send_block * bytes, all + recv_block * bytes,
                                      bytes);
    }
    return rc;
}

/* Every rank's value passes round the ring and is combined as it arrives: each rank combines
 * in its own order, so only ops whose result does not depend on the order qualify (the setup's:
 * MIN and MAX of integers). */
int coll_gpu_setup_allreduce(struct ompi_communicator_t *comm, void *buf, int count,
                             struct ompi_datatype_t *type, struct ompi_op_t *op) {
    char passing[2][COLL_GPU_SETUP_ALLREDUCE_MAX];
    int size = ompi_comm_size(comm), rc = OMPI_SUCCESS, cur = 0;
    size_t type_size = 0, bytes;

    (void)ompi_datatype_type_size(type, &type_size);
    bytes = (size_t)count * type_size;
    if ((count < 0) || (bytes > sizeof(passing[0]))) {
        return OMPI_ERR_BAD_PARAM;
    }
    memcpy(passing[cur], buf, bytes);
    for (int step = 0; (step < size - 1) && (OMPI_SUCCESS == rc); ++step) {
        rc = coll_gpu_setup_ring_step(comm, passing[cur], passing[1 - cur], bytes);
        if (OMPI_SUCCESS == rc) {
            cur = 1 - cur;
            ompi_op_reduce(op, passing[cur], buf, count, type);
        }
    }
    return rc;
}

bool coll_gpu_setup_task_possible(void) {
    return mca_coll_gpu_component.thread_level <= MPI_THREAD_FUNNELED;
}

static void coll_gpu_setup_task_main(void) {
    coll_gpu_setup_task_t *task = coll_gpu_setup_current;

    task->run(task->module, task->comm);
    task->done = true;
    /* returns to task->caller (uc_link) */
}

/* Runs the task until it yields or returns; a task done is unlinked and freed, and its
 * communicator released (which may be the last reference: the module goes with it). */
static void coll_gpu_setup_task_resume(coll_gpu_setup_task_t *task) {
    coll_gpu_setup_task_t **link;

    coll_gpu_setup_current = task;
    (void)swapcontext(&task->caller, &task->context);
    coll_gpu_setup_current = NULL;
    if (!task->done) {
        return;
    }
    for (link = &coll_gpu_setup_tasks; NULL != *link; link = &(*link)->next) {
        if (*link == task) {
            *link = task->next;
            break;
        }
    }
    task->module->setup_task = NULL;
    (void)munmap(task->stack, task->stack_len);
    OBJ_RELEASE(task->comm);
    free(task);
}

/* From opal_progress: every task a step further.  Not from inside a task (a wait there yields
 * instead of progressing, but a callee may still call opal_progress). */
static int coll_gpu_setup_progress(void) {
    coll_gpu_setup_task_t *task, *next;
    int events = 0;

    if (NULL != coll_gpu_setup_current) {
        return 0;
    }
    for (task = coll_gpu_setup_tasks; NULL != task; task = next) {
        next = task->next;
        coll_gpu_setup_task_resume(task);
        ++events;
    }
    return events;
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first, while every peer still progresses:
 * where a communicator nobody used still has its setup running. */
static int coll_gpu_setup_finalize_hook(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    coll_gpu_setup_tasks_drain();
    return MPI_SUCCESS;
}

/* MPI_Comm_free deletes the communicator's attributes first: a setup still running completes
 * there (the peers free it too, so they progress theirs), and what it set up goes with the
 * communicator as it would had the setup run inside its creation. */
static int coll_gpu_setup_comm_freed(MPI_Comm comm, int keyval, void *module, void *extra) {
    (void)comm;
    (void)keyval;
    (void)extra;
    coll_gpu_setup_task_finish(module);
    return MPI_SUCCESS;
}

static int coll_gpu_setup_freed_keyval = MPI_KEYVAL_INVALID;

static void coll_gpu_setup_progress_register(void) {
    int keyval;

    if (coll_gpu_setup_progress_registered) {
        return;
    }
    coll_gpu_setup_progress_registered = true;
    opal_progress_register(coll_gpu_setup_progress);
    /* through the MPI interface: Open MPI's attribute internals are not exported */
    if ((MPI_SUCCESS == PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN,
                                                coll_gpu_setup_finalize_hook, &keyval, NULL)) &&
        (MPI_SUCCESS != PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL))) {
        (void)PMPI_Comm_free_keyval(&keyval);
    }
    if (MPI_KEYVAL_INVALID == coll_gpu_setup_freed_keyval) {
        (void)PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, coll_gpu_setup_comm_freed,
                                      &coll_gpu_setup_freed_keyval, NULL);
    }
}

bool coll_gpu_setup_task_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                               void (*run)(mca_coll_gpu_module_t *,
                                           struct ompi_communicator_t *)) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    coll_gpu_setup_task_t *task = calloc(1, sizeof(*task));

    if (NULL == task) {
        return false;
    }
    task->stack_len = COLL_GPU_SETUP_STACK_SIZE + page;
    task->stack = mmap(NULL, task->stack_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if ((MAP_FAILED == task->stack) || (0 != mprotect(task->stack, page, PROT_NONE)) ||
        (0 != getcontext(&task->context))) {
        if (MAP_FAILED != task->stack) {
            (void)munmap(task->stack, task->stack_len);
        }
        free(task);
        return false;
    }
    task->context.uc_stack.ss_sp = (char *)task->stack + page;
    task->context.uc_stack.ss_size = COLL_GPU_SETUP_STACK_SIZE;
    task->context.uc_link = &task->caller;
    makecontext(&task->context, coll_gpu_setup_task_main, 0);
    task->module = module;
    task->comm = comm;
    task->run = run;
    OBJ_RETAIN(comm);
    module->setup_task = task;
    task->next = coll_gpu_setup_tasks;
    coll_gpu_setup_tasks = task;
    coll_gpu_setup_progress_register();
    /* no attribute: the task still completes at the first native decision, at MPI_Finalize,
     * or from opal_progress */
    if (MPI_KEYVAL_INVALID != coll_gpu_setup_freed_keyval) {
        (void)PMPI_Comm_set_attr(comm, coll_gpu_setup_freed_keyval, module);
    }
    coll_gpu_setup_task_resume(task);
    return true;
}

void coll_gpu_setup_task_finish(mca_coll_gpu_module_t *module) {
    coll_gpu_setup_task_t *task = module->setup_task;

    if ((NULL == task) || (task == coll_gpu_setup_current)) {
        return;
    }
    /* the caller holds the communicator: the task's release is not its last reference */
    while (NULL != module->setup_task) {
        coll_gpu_setup_task_resume(task);
        if (NULL != module->setup_task) {
            (void)opal_progress();
        }
    }
}

void coll_gpu_setup_tasks_drain(void) {
    while ((NULL != coll_gpu_setup_tasks) && (NULL == coll_gpu_setup_current)) {
        (void)coll_gpu_setup_progress();
        if (NULL != coll_gpu_setup_tasks) {
            (void)opal_progress();
        }
    }
}

void coll_gpu_setup_fini(void) {
    /* MPI_Finalize's hook drained the tasks; one left (ompi_info, an aborting job) is left
     * alone: waiting for its peers now could hang */
    if (coll_gpu_setup_progress_registered) {
        opal_progress_unregister(coll_gpu_setup_progress);
        coll_gpu_setup_progress_registered = false;
    }
}

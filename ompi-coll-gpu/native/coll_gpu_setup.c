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

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* AddressSanitizer keeps shadow state per stack: every switch between the caller's stack and a
 * task's is announced to it (a --enable-asan build), or it reports false stack errors. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLL_GPU_SETUP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define COLL_GPU_SETUP_ASAN 1
#endif
#ifdef COLL_GPU_SETUP_ASAN
#include <sanitizer/common_interface_defs.h>
#define COLL_GPU_SETUP_SWITCH_START(_save, _bottom, _size)                                         \
    __sanitizer_start_switch_fiber((_save), (_bottom), (_size))
#define COLL_GPU_SETUP_SWITCH_FINISH(_save, _bottom_p, _size_p)                                    \
    __sanitizer_finish_switch_fiber((_save), (_bottom_p), (_size_p))
#else
#define COLL_GPU_SETUP_SWITCH_START(_save, _bottom, _size) ((void)0)
#define COLL_GPU_SETUP_SWITCH_FINISH(_save, _bottom_p, _size_p) ((void)0)
#endif

/* Open MPI reserves no tag for a component built outside its tree: the last one of the range
 * it gives hcoll, whose top Open MPI's own allgather (sparbit) borrows; hcoll numbers up from
 * its base too.  coll/ucc's bootstrap has MCA_COLL_BASE_TAG_UCC. */
#define COLL_GPU_SETUP_TAG (MCA_COLL_BASE_TAG_HCOLL_END + 1)

/* A task's stack: the transport's setup goes deep (UCX's and the driver's initialization),
 * and only the pages it touches cost memory.  One guard page below it. */
#define COLL_GPU_SETUP_STACK_SIZE ((size_t)4 << 20)

struct coll_gpu_setup_task {
    ucontext_t context; /* the task's: where it yielded */
    ucontext_t caller;  /* the resume that runs it now, which it returns to */
    void *stack;        /* mapped, guard page included */
    size_t stack_len;
    /* MPI_THREAD_MULTIPLE: the task is a thread of its own, which calls opal_progress itself
     * while it waits (no stack above) */
    bool threaded;
    pthread_t thread;
    mca_coll_gpu_module_t *module;
    struct ompi_communicator_t *comm; /* retained while the task lives */
    void (*run)(mca_coll_gpu_module_t *, struct ompi_communicator_t *);
    bool done; /* run returned: the stack is free (threaded: atomic, the thread about to end) */
    struct coll_gpu_setup_task *next;
    /* AddressSanitizer's view of the switches: the caller's stack (learnt at each resume) and
     * each side's fake stack while it is switched out */
    const void *caller_bottom;
    size_t caller_size;
    void *caller_fake_stack, *task_fake_stack;
};

/* The live tasks: on a stack of their own, touched only by the process's one MPI thread
 * (coll_gpu_setup_task_possible); threads of their own (MPI_THREAD_MULTIPLE), under the lock.
 * And the task this thread runs now. */
static coll_gpu_setup_task_t *coll_gpu_setup_tasks;
static bool coll_gpu_setup_progress_registered;
static pthread_mutex_t coll_gpu_setup_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread coll_gpu_setup_task_t *coll_gpu_setup_current;

static bool coll_gpu_setup_threaded(void) {
    return MPI_THREAD_MULTIPLE == mca_coll_gpu_component.thread_level;
}

void coll_gpu_setup_pause(void) {
    coll_gpu_setup_task_t *task = coll_gpu_setup_current;

    if ((NULL != task) && !task->threaded) {
        COLL_GPU_SETUP_SWITCH_START(&task->task_fake_stack, task->caller_bottom, task->caller_size);
        (void)swapcontext(&task->context, &task->caller);
        COLL_GPU_SETUP_SWITCH_FINISH(task->task_fake_stack, &task->caller_bottom,
                                     &task->caller_size);
    } else {
        (void)opal_progress();
        if (NULL != task) {
            /* a setup thread may share its core with the thread waiting for it (a rank bound
             * to one core): let that thread run */
            sched_yield();
        }
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

/* One exchange: sbuf to rank to, rbuf from rank from (the same distance the other way). */
static int coll_gpu_setup_exchange(struct ompi_communicator_t *comm, const void *sbuf,
                                   size_t sbytes, int to, void *rbuf, size_t rbytes, int from) {
    ompi_request_t *requests[2];
    int rc;

    rc = MCA_PML_CALL(irecv(rbuf, rbytes, MPI_BYTE, from, COLL_GPU_SETUP_TAG, comm, &requests[0]));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(isend(sbuf, sbytes, MPI_BYTE, to, COLL_GPU_SETUP_TAG,
                            MCA_PML_BASE_SEND_STANDARD, comm, &requests[1]));
    if (OMPI_SUCCESS != rc) {
        /* the peer's message still comes: take it, then fail */
        (void)coll_gpu_setup_requests_complete(requests, 1);
        return rc;
    }
    return coll_gpu_setup_requests_complete(requests, 2);
}

/* Bruck's allgather: ceil(log2(size)) exchanges.  Step k (distance d = 2^k) sends the blocks
 * gathered so far, this rank's and the d - 1 after it in rank order, to rank - d and receives
 * the next ones from rank + d; the blocks then sit rotated by this rank. */
int coll_gpu_setup_allgather(struct ompi_communicator_t *comm, const void *sbuf, void *rbuf,
                             size_t bytes) {
    int size = ompi_comm_size(comm), rank = ompi_comm_rank(comm), rc = OMPI_SUCCESS;
    char *all = rbuf, *rotated;

    if (1 == size) {
        memmove(all, sbuf, bytes);
        return OMPI_SUCCESS;
    }
    rotated = malloc((size_t)size * bytes + 1);
    if (NULL == rotated) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(rotated, sbuf, bytes);
    for (int d = 1; (d < size) && (OMPI_SUCCESS == rc); d *= 2) {
        size_t blocks = (size_t)((d < size - d) ? d : size - d);

        rc =
            coll_gpu_setup_exchange(comm, rotated, blocks * bytes, (rank - d + size) % size,
                                    rotated + (size_t)d * bytes, blocks * bytes, (rank + d) % size);
    }
    for (int i = 0; (i < size) && (OMPI_SUCCESS == rc); ++i) {
        memcpy(all + (size_t)((rank + i) % size) * bytes, rotated + (size_t)i * bytes, bytes);
    }
    free(rotated);
    return rc;
}

/* The values allgathered, then combined in the same order on every rank: the same bits
 * everywhere, whatever the op. */
int coll_gpu_setup_allreduce(struct ompi_communicator_t *comm, void *buf, int count,
                             struct ompi_datatype_t *type, struct ompi_op_t *op) {
    int size = ompi_comm_size(comm), rc;
    size_t type_size = 0, bytes;
    char *all;

    (void)ompi_datatype_type_size(type, &type_size);
    bytes = (size_t)count * type_size;
    all = malloc((size_t)size * bytes + 1);
    if (NULL == all) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = coll_gpu_setup_allgather(comm, buf, all, bytes);
    if (OMPI_SUCCESS == rc) {
        /* buf = all[0] op (all[1] op (... op all[size - 1])): ompi_op_reduce computes
         * target = source op target */
        memcpy(buf, all + (size_t)(size - 1) * bytes, bytes);
        for (int r = size - 2; r >= 0; --r) {
            ompi_op_reduce(op, all + (size_t)r * bytes, buf, count, type);
        }
    }
    free(all);
    return rc;
}

bool coll_gpu_setup_task_possible(void) {
    return (mca_coll_gpu_component.thread_level <= MPI_THREAD_FUNNELED) ||
           coll_gpu_setup_threaded();
}

/* A task that is done: unlinked (a thread's under the lock), the module told. */
static void coll_gpu_setup_unlink(coll_gpu_setup_task_t *task) {
    for (coll_gpu_setup_task_t **link = &coll_gpu_setup_tasks; NULL != *link;
         link = &(*link)->next) {
        if (*link == task) {
            *link = task->next;
            break;
        }
    }
    __atomic_store_n(&task->module->setup_task, NULL, __ATOMIC_RELEASE);
}

/* An unlinked task's end: its thread joined or its stack unmapped, its communicator released
 * (which may be the last reference: the module goes with it). */
static void coll_gpu_setup_free(coll_gpu_setup_task_t *task) {
    if (task->threaded) {
        (void)pthread_join(task->thread, NULL);
    } else {
        (void)munmap(task->stack, task->stack_len);
    }
    OBJ_RELEASE(task->comm);
    free(task);
}

static void *coll_gpu_setup_thread_main(void *arg) {
    coll_gpu_setup_task_t *task = arg;

    coll_gpu_setup_current = task; /* this thread's: coll_gpu_setup_task_finish skips it */
    task->run(task->module, task->comm);
    __atomic_store_n(&task->done, true, __ATOMIC_RELEASE);
    return NULL;
}

/* Ends the threaded tasks that are done; the number ended. */
static int coll_gpu_setup_reap(void) {
    coll_gpu_setup_task_t *task, *next, *done = NULL;
    int events = 0;

    if (0 != pthread_mutex_trylock(&coll_gpu_setup_lock)) {
        return 0; /* another thread is at it */
    }
    for (task = coll_gpu_setup_tasks; NULL != task; task = next) {
        next = task->next;
        if (__atomic_load_n(&task->done, __ATOMIC_ACQUIRE)) {
            coll_gpu_setup_unlink(task);
            task->next = done;
            done = task;
        }
    }
    pthread_mutex_unlock(&coll_gpu_setup_lock);
    for (task = done; NULL != task; task = next) {
        next = task->next;
        coll_gpu_setup_free(task);
        ++events;
    }
    return events;
}

static void coll_gpu_setup_task_main(void) {
    coll_gpu_setup_task_t *task = coll_gpu_setup_current;

    COLL_GPU_SETUP_SWITCH_FINISH(NULL, &task->caller_bottom, &task->caller_size);
    task->run(task->module, task->comm);
    task->done = true;
    /* returns to task->caller (uc_link); this stack is not coming back */
    COLL_GPU_SETUP_SWITCH_START(NULL, task->caller_bottom, task->caller_size);
}

/* Runs the task until it yields or returns; a task done is unlinked and freed, and its
 * communicator released (which may be the last reference: the module goes with it).  Whether
 * it is done. */
static bool coll_gpu_setup_task_resume(coll_gpu_setup_task_t *task) {
    coll_gpu_setup_current = task;
    COLL_GPU_SETUP_SWITCH_START(&task->caller_fake_stack, task->context.uc_stack.ss_sp,
                                task->context.uc_stack.ss_size);
    (void)swapcontext(&task->caller, &task->context);
    COLL_GPU_SETUP_SWITCH_FINISH(task->caller_fake_stack, NULL, NULL);
    coll_gpu_setup_current = NULL;
    if (!task->done) {
        return false;
    }
    coll_gpu_setup_unlink(task);
    coll_gpu_setup_free(task);
    return true;
}

/* From opal_progress: every task a step further; the tasks that completed count as events (a
 * task that only looked at its requests is none: Open MPI then lets an oversubscribed
 * process yield the CPU to the peers it waits for).  Not from inside a task (a wait there
 * yields instead of progressing, but a callee may still call opal_progress). */
static int coll_gpu_setup_progress(void) {
    coll_gpu_setup_task_t *task, *next;
    int events = 0;

    if (NULL != coll_gpu_setup_current) {
        return 0;
    }
    if (coll_gpu_setup_threaded()) {
        return (NULL != __atomic_load_n(&coll_gpu_setup_tasks, __ATOMIC_RELAXED))
                   ? coll_gpu_setup_reap()
                   : 0;
    }
    for (task = coll_gpu_setup_tasks; NULL != task; task = next) {
        next = task->next;
        events += coll_gpu_setup_task_resume(task) ? 1 : 0;
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

static bool coll_gpu_setup_hooks_set;

/* Once (under the lock); the attribute hooks once MPI is initialized (MPI_COMM_WORLD's task
 * starts inside MPI_Init, where the attribute functions are not usable yet: its module's
 * destruction completes it, as any module's does). */
static void coll_gpu_setup_progress_register(void) {
    int initialized = 0;

    if (!coll_gpu_setup_progress_registered) {
        coll_gpu_setup_progress_registered = true;
        opal_progress_register(coll_gpu_setup_progress);
    }
    if (coll_gpu_setup_hooks_set || (MPI_SUCCESS != PMPI_Initialized(&initialized)) ||
        !initialized) {
        return;
    }
    coll_gpu_setup_hooks_set = true;
    coll_gpu_at_finalize(coll_gpu_setup_finalize_hook);
    if (MPI_KEYVAL_INVALID == coll_gpu_setup_freed_keyval) {
        (void)PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, coll_gpu_setup_comm_freed,
                                      &coll_gpu_setup_freed_keyval, NULL);
    }
}

/* MPI_THREAD_MULTIPLE: the task as a thread, which may call into Open MPI there. */
static bool coll_gpu_setup_thread_start(coll_gpu_setup_task_t *task) {
    task->threaded = true;
    pthread_mutex_lock(&coll_gpu_setup_lock);
    task->next = coll_gpu_setup_tasks;
    __atomic_store_n(&coll_gpu_setup_tasks, task, __ATOMIC_RELEASE);
    task->module->setup_task = task;
    if (0 != pthread_create(&task->thread, NULL, coll_gpu_setup_thread_main, task)) {
        coll_gpu_setup_unlink(task);
        pthread_mutex_unlock(&coll_gpu_setup_lock);
        return false;
    }
    pthread_mutex_unlock(&coll_gpu_setup_lock);
    return true;
}

/* Otherwise: the task on a stack of its own, run now until its first wait. */
static bool coll_gpu_setup_stack_start(coll_gpu_setup_task_t *task) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);

    task->stack_len = COLL_GPU_SETUP_STACK_SIZE + page;
    task->stack = mmap(NULL, task->stack_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if ((MAP_FAILED == task->stack) || (0 != mprotect(task->stack, page, PROT_NONE)) ||
        (0 != getcontext(&task->context))) {
        if (MAP_FAILED != task->stack) {
            (void)munmap(task->stack, task->stack_len);
        }
        return false;
    }
    task->context.uc_stack.ss_sp = (char *)task->stack + page;
    task->context.uc_stack.ss_size = COLL_GPU_SETUP_STACK_SIZE;
    task->context.uc_link = &task->caller;
    makecontext(&task->context, coll_gpu_setup_task_main, 0);
    task->module->setup_task = task;
    task->next = coll_gpu_setup_tasks;
    coll_gpu_setup_tasks = task;
    (void)coll_gpu_setup_task_resume(task);
    return true;
}

bool coll_gpu_setup_task_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                               void (*run)(mca_coll_gpu_module_t *, struct ompi_communicator_t *)) {
    coll_gpu_setup_task_t *task = calloc(1, sizeof(*task));

    if (NULL == task) {
        return false;
    }
    task->module = module;
    task->comm = comm;
    task->run = run;
    OBJ_RETAIN(comm);
    pthread_mutex_lock(&coll_gpu_setup_lock);
    coll_gpu_setup_progress_register();
    pthread_mutex_unlock(&coll_gpu_setup_lock);
    /* the attribute first: a stack task may be done at its first resume, and with it the
     * module's setup_task (the callback then finds nothing to complete).  Without the
     * attribute the task still completes at the first native decision, at MPI_Finalize, or
     * from opal_progress */
    if (MPI_KEYVAL_INVALID != coll_gpu_setup_freed_keyval) {
        (void)PMPI_Comm_set_attr(comm, coll_gpu_setup_freed_keyval, module);
    }
    if (!(coll_gpu_setup_threaded() ? coll_gpu_setup_thread_start(task)
                                    : coll_gpu_setup_stack_start(task))) {
        OBJ_RELEASE(comm);
        free(task);
        return false;
    }
    return true;
}

void coll_gpu_setup_task_finish(mca_coll_gpu_module_t *module) {
    coll_gpu_setup_task_t *task = __atomic_load_n(&module->setup_task, __ATOMIC_ACQUIRE);

    if ((NULL == task) || (task == coll_gpu_setup_current)) {
        return;
    }
    /* opal_progress runs the task on (coll_gpu_setup_progress: registered before any task
     * exists) and ends it, which clears setup_task; a thread is ended by whichever thread's
     * progress finds it done.  The caller holds the communicator: the task's release is not
     * its last reference */
    while (NULL != __atomic_load_n(&module->setup_task, __ATOMIC_ACQUIRE)) {
        (void)opal_progress();
        if (coll_gpu_setup_threaded()) {
            /* the setup thread may share this thread's core (a rank bound to one core):
             * without the yield it ran only when the scheduler took the core from this loop
             * (231 ms per setup on 2 ranks, against 0.2 ms) */
            sched_yield();
        }
    }
}

void coll_gpu_setup_tasks_drain(void) {
    while ((NULL != __atomic_load_n(&coll_gpu_setup_tasks, __ATOMIC_ACQUIRE)) &&
           (NULL == coll_gpu_setup_current)) {
        (void)opal_progress();
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

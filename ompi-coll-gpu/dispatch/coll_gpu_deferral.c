/* SPDX-License-Identifier: BSD-3-Clause */
/* Calls that wait for their communicator's native setup (coll_gpu_deferral.h). */
#include "coll_gpu_deferral.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_ctx.h"
#include "coll_gpu_native_eligible.h"
#include "coll_gpu_nonblocking.h"
#include "coll_gpu_setup.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "opal/runtime/opal_progress.h"

typedef struct coll_gpu_deferred_call {
    coll_gpu_deferral_post_fn_t post;
    ompi_request_t *request; /* the application's (coll_gpu_nonblocking_later); NULL: a start */
    struct coll_gpu_deferred_call *next;
    _Alignas(16) char call[]; /* post's */
} coll_gpu_deferred_call_t;

/* A communicator's queue, retained while it holds calls. */
struct coll_gpu_deferral {
    mca_coll_gpu_module_t *module;
    struct ompi_communicator_t *comm;
    coll_gpu_deferred_call_t *head, **tail;
    bool setup_started;
    struct coll_gpu_deferral *next;
};

/* Every queue, and the posting of their calls: a post on one thread and progress on another
 * must not pass each other (the queue keeps the communicator's order). */
static pthread_mutex_t coll_gpu_deferral_lock = PTHREAD_MUTEX_INITIALIZER;
static coll_gpu_deferral_t *coll_gpu_deferrals;
static bool coll_gpu_deferral_registered;
/* This thread posts a queue: a call its posts make (a persistent request's start posting its
 * nonblocking form) follows them directly, in order. */
static __thread bool coll_gpu_deferral_posting;

bool coll_gpu_deferral_may_start(const mca_coll_gpu_module_t *module,
                                 struct ompi_communicator_t *comm) {
    return (ompi_comm_size(comm) > 1) && coll_gpu_native_nonblocking_allowed(module) &&
           coll_gpu_native_undecided(module) && coll_gpu_setup_task_possible() &&
           ((NULL != module->setup_task) || module->setup_tasks_everywhere);
}

/* Whether a parameter names a device-driven row (their area is then made by the setup: a
 * nonblocking call cannot make it). */
static bool coll_gpu_deferral_rows_forced(void) {
    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        int alg = mca_coll_gpu_component.algorithm[k] - COLL_GPU_ALG_FIRST_NATIVE;

        if ((alg >= 0) && (alg < coll_gpu_alg_tables[k]->num_algs) &&
            coll_gpu_kernel_row(&coll_gpu_alg_tables[k]->algs[alg])) {
            return true;
        }
    }
    return false;
}

/* A queued call posted as the application posted it; its request takes the outcome. */
static void coll_gpu_deferral_post(coll_gpu_deferred_call_t *call) {
    ompi_request_t *inner = NULL;
    int rc = call->post(call->call, &inner);

    if (NULL != call->request) {
        coll_gpu_nonblocking_posted(call->request, inner, rc);
    }
    free(call);
}

/* A queue a step further, under the lock: its setup started, or over and every call posted
 * (true: the queue is empty). */
static bool coll_gpu_deferral_step(coll_gpu_deferral_t *d) {
    mca_coll_gpu_module_t *module = d->module;
    coll_gpu_deferred_call_t *call;

    if (NULL != __atomic_load_n(&module->setup_task, __ATOMIC_ACQUIRE)) {
        return false;
    }
    if (!d->setup_started && module->setup_tasks_everywhere && coll_gpu_native_undecided(module)) {
        d->setup_started = true;
        COLL_GPU_VERBOSE(1, "%s: native setup started by its first nonblocking call",
                         d->comm->c_name);
        coll_gpu_native_setup_start(module, d->comm, coll_gpu_deferral_rows_forced());
        if (NULL != __atomic_load_n(&module->setup_task, __ATOMIC_ACQUIRE)) {
            return false;
        }
    }
    coll_gpu_deferral_posting = true;
    while (NULL != (call = d->head)) {
        d->head = call->next;
        coll_gpu_deferral_post(call);
    }
    coll_gpu_deferral_posting = false;
    d->tail = &d->head;
    return true;
}

static int coll_gpu_deferral_progress(void) {
    coll_gpu_deferral_t *d, **link, *done = NULL;
    int events = 0;

    if ((NULL == __atomic_load_n(&coll_gpu_deferrals, __ATOMIC_RELAXED)) ||
        (0 != pthread_mutex_trylock(&coll_gpu_deferral_lock))) {
        return 0; /* none, or another thread (or this one, further up) is at it */
    }
    for (link = &coll_gpu_deferrals; NULL != (d = *link);) {
        if (coll_gpu_deferral_step(d)) {
            *link = d->next;
            __atomic_store_n(&d->module->deferral, NULL, __ATOMIC_RELEASE);
            d->next = done;
            done = d;
            ++events;
        } else {
            link = &d->next;
        }
    }
    pthread_mutex_unlock(&coll_gpu_deferral_lock);
    while (NULL != (d = done)) {
        done = d->next;
        OBJ_RELEASE(d->comm); /* maybe the last reference: the module goes with it */
        free(d);
    }
    return events;
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first, while the peers still progress: the
 * queued calls are posted (a request freed by the application still completes), then run. */
static int coll_gpu_deferral_finalize_hook(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    while (NULL != __atomic_load_n(&coll_gpu_deferrals, __ATOMIC_ACQUIRE)) {
        (void)opal_progress();
    }
    coll_gpu_nonblocking_drain();
    return MPI_SUCCESS;
}

/* Once, under the lock. */
static void coll_gpu_deferral_register(void) {
    coll_gpu_deferral_registered = true;
    opal_progress_register(coll_gpu_deferral_progress);
    coll_gpu_at_finalize(coll_gpu_deferral_finalize_hook);
}

static int coll_gpu_deferral_start(void *call, ompi_request_t **inner) {
    (void)inner;
    return coll_gpu_nonblocking_start_later(*(ompi_request_t **)call);
}

/* MPI_Start of a persistent request whose init was queued: behind the calls queued before it
 * (its init among them, or posted already), where some are. */
static bool coll_gpu_deferral_queue_start(void *module, ompi_request_t *later) {
    OBJ_RETAIN(later);
    if (coll_gpu_deferral_take(module, later->req_mpi_object.comm, false, coll_gpu_deferral_start,
                               &later, sizeof(later), "MPI_Start", false, NULL)) {
        return true;
    }
    OBJ_RELEASE(later);
    return false;
}

bool coll_gpu_deferral_take(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                            bool starts, coll_gpu_deferral_post_fn_t post, const void *call_args,
                            size_t len, const char *name, bool persistent,
                            ompi_request_t **request) {
    coll_gpu_deferred_call_t *call;
    coll_gpu_deferral_t *d;

    if (coll_gpu_deferral_posting ||
        (!starts && (NULL == __atomic_load_n(&module->deferral, __ATOMIC_ACQUIRE)))) {
        return false;
    }
    call = malloc(sizeof(*call) + len);
    if (NULL == call) {
        coll_gpu_out_of_host_memory(sizeof(*call) + len); /* the peers queue theirs */
    }
    pthread_mutex_lock(&coll_gpu_deferral_lock);
    d = module->deferral;
    if ((NULL == d) && !(starts && coll_gpu_deferral_may_start(module, comm))) {
        /* its queue was posted meanwhile (another thread's progress) */
        pthread_mutex_unlock(&coll_gpu_deferral_lock);
        free(call);
        return false;
    }
    if (NULL == d) {
        d = calloc(1, sizeof(*d));
        if (NULL == d) {
            coll_gpu_out_of_host_memory(sizeof(*d));
        }
        d->module = module;
        d->comm = comm;
        d->tail = &d->head;
        OBJ_RETAIN(comm);
        d->next = coll_gpu_deferrals;
        __atomic_store_n(&coll_gpu_deferrals, d, __ATOMIC_RELEASE);
        __atomic_store_n(&module->deferral, d, __ATOMIC_RELEASE);
        if (!coll_gpu_deferral_registered) {
            coll_gpu_deferral_register();
        }
    }
    memcpy(call->call, call_args, len);
    call->post = post;
    call->next = NULL;
    call->request = (NULL != request)
                        ? coll_gpu_nonblocking_later(
                              comm, name, persistent ? coll_gpu_deferral_queue_start : NULL, module)
                        : NULL;
    *d->tail = call;
    d->tail = &call->next;
    if (NULL != request) {
        *request = call->request;
    }
    pthread_mutex_unlock(&coll_gpu_deferral_lock);
    COLL_GPU_VERBOSE(COLL_GPU_VERBOSE_CALLS,
                     "%s on %s: queued until the communicator's native setup is done", name,
                     comm->c_name);
    coll_gpu_count_add(&mca_coll_gpu_component.calls_deferred, 1);
    (void)coll_gpu_deferral_progress(); /* the setup's first step: its first messages */
    return true;
}

void coll_gpu_deferral_flush(mca_coll_gpu_module_t *module) {
    while (NULL != __atomic_load_n(&module->deferral, __ATOMIC_ACQUIRE)) {
        (void)opal_progress(); /* runs the setup, then posts the queue */
        if (MPI_THREAD_MULTIPLE == mca_coll_gpu_component.thread_level) {
            sched_yield(); /* the setup's thread may share this thread's core */
        }
    }
}

/* MPI_Ibarrier's and MPI_Barrier_init's arguments, queued. */
typedef struct {
    mca_coll_gpu_module_t *module;
    struct ompi_communicator_t *comm;
    struct ompi_info_t *info;
} coll_gpu_deferral_barrier_t;

static int coll_gpu_deferral_ibarrier(void *call, ompi_request_t **inner) {
    coll_gpu_deferral_barrier_t *b = call;

    return b->module->prev.coll_ibarrier(b->comm, inner, b->module->prev.coll_ibarrier_module);
}

static int coll_gpu_deferral_barrier_init(void *call, ompi_request_t **inner) {
    coll_gpu_deferral_barrier_t *b = call;

    return b->module->prev.coll_barrier_init(b->comm, b->info, inner,
                                             b->module->prev.coll_barrier_init_module);
}

int mca_coll_gpu_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *base) {
    coll_gpu_deferral_barrier_t b = {(mca_coll_gpu_module_t *)base, comm, NULL};

    if (OPAL_UNLIKELY(NULL != b.module->deferral) &&
        coll_gpu_deferral_take(b.module, comm, false, coll_gpu_deferral_ibarrier, &b, sizeof(b),
                               "MPI_Ibarrier", false, request)) {
        return OMPI_SUCCESS;
    }
    return coll_gpu_deferral_ibarrier(&b, request);
}

int mca_coll_gpu_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *base) {
    coll_gpu_deferral_barrier_t b = {(mca_coll_gpu_module_t *)base, comm, info};

    if (OPAL_UNLIKELY(NULL != b.module->deferral) &&
        coll_gpu_deferral_take(b.module, comm, false, coll_gpu_deferral_barrier_init, &b, sizeof(b),
                               "MPI_Barrier_init", true, request)) {
        return OMPI_SUCCESS;
    }
    return coll_gpu_deferral_barrier_init(&b, request);
}

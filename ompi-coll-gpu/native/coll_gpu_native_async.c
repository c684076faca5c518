/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Native nonblocking collectives: the blocking form's algorithm, run by a thread of the
 * communicator's own (in post order; transport and accelerator only, never Open MPI) while the
 * application goes on; the request completes on the application's thread (coll_gpu_nonblocking.c).
 * A blocking native call, and the communicator's free, first drain the queue
 * (coll_gpu_native_async_drain).  A device-driven row's call needs no thread: an event after its
 * kernel, which MPI_Test and MPI_Wait query.  Why a thread: docs/nonblocking.md.
 */
#include "coll_gpu_native_async.h"
#include "coll_gpu_kernel.h"
#include "coll_gpu_native_steps.h"
#include "coll_gpu_signature.h"
#include "coll_gpu_team.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A call handed to the thread. */
struct coll_gpu_async_job {
    coll_gpu_native_call_t call;
    coll_gpu_sig_buf_t send, recv; /* packed temporaries, freed by the thread after the call */
    bool has_send, has_recv;
    struct ompi_communicator_t *comm;
    int rc;
    int done; /* set by the thread, with release order, once rc and the buffers are final */
    /* a stream-ordered call (stream_job): the flag its stream waits for, where its number goes
     * when it failed (on every rank alike), the call as made (each post runs a copy) */
    volatile uint32_t *release;
    uint32_t *failed;
    uint32_t number;
    bool reusable;
    coll_gpu_native_call_t made;
    mca_coll_gpu_module_t *module;
    struct coll_gpu_async_job *next;
    /* a device-driven call (coll_gpu_kernel.h): launched by the caller, not the thread, and
     * finished once the event after it is reached (NULL event: waited for at the launch);
     * reached: the stream got past it (waited: how); across nodes (proxied) the thread runs
     * its proxy, and proxy_done says it returned */
    bool kernel, own_event, reached, proxied;
    coll_gpu_kernel_started_t started;
    accel_event_h event;
    accel_status_t waited;
    int proxy_done;
};

/* A communicator's thread and queue. */
struct coll_gpu_async {
    mca_coll_gpu_module_t *module; /* its team, progressed while idle (coll_gpu_async_idle) */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    coll_gpu_async_job_t *head, *tail;   /* head also read by the polling thread, unlocked */
    unsigned long long posted, finished; /* finished: written by the thread only */
    bool stop;
    uint64_t spin_ns; /* coll_gpu_native_thread_spin */
};

/* coll_gpu_native_thread_spin in ns; auto: 50 us where the thread has a core of its own to
 * poll on: the node has two CPUs per process of the job on it (the application's thread and
 * this one; Open MPI's count of local peers) and this process may run on more than one (an MPI
 * rank bound to a core, Open MPI's default for 2 ranks or fewer, shares it with this thread,
 * which inherits the binding: a rank waiting for its call would wait out the poll). */
static uint64_t coll_gpu_async_spin_ns(void) {
    long procs = (long)opal_process_info.num_local_peers + 1, cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int spin = mca_coll_gpu_component.native_thread_spin;
    cpu_set_t mine;

    if (spin < 0) {
        spin = (!opal_progress_yield_when_idle && (cpus >= 2 * procs) &&
                (0 == sched_getaffinity(0, sizeof(mine), &mine)) && (CPU_COUNT(&mine) > 1))
                   ? 50
                   : 0;
    }
    return (uint64_t)spin * 1000u;
}

/* Polls for a queued call for up to spin_ns: one posted meanwhile is taken without the poster
 * waking the thread from its condition variable (the post's system call, and the thread's
 * context switch before it starts). */
static void coll_gpu_async_poll(const coll_gpu_async_t *async) {
    uint64_t deadline;

    if (0 == async->spin_ns) {
        return;
    }
    deadline = coll_gpu_now_ns() + async->spin_ns;
    for (unsigned i = 1; (NULL == __atomic_load_n(&async->head, __ATOMIC_ACQUIRE)) &&
                         !__atomic_load_n(&async->stop, __ATOMIC_ACQUIRE);
         ++i) {
        if ((0 == (i & 63)) && (coll_gpu_now_ns() > deadline)) {
            return;
        }
        cgt_cpu_relax();
    }
}

/* After a job's call: its packed temporaries (unpacked by the call) and its blocks. */
static void coll_gpu_async_job_buffers_free(coll_gpu_async_job_t *job) {
    if (job->has_recv) {
        coll_gpu_sig_buf_fini(&job->call, &job->recv);
    }
    if (job->has_send) {
        coll_gpu_sig_buf_fini(&job->call, &job->send);
    }
    free(job->call.posted_blocks);
    job->call.posted_blocks = NULL;
}

/* The thread's naps while idle, where its team spans nodes: from the first to the longest. */
#define COLL_GPU_ASYNC_NAP_FIRST_NS 100000ull
#define COLL_GPU_ASYNC_NAP_MAX_NS 10000000ull

/* Idle (lock held): sleeps until a call is posted; where the team spans nodes it wakes now and
 * then to progress the team, its naps doubling up to 10 ms.  Over tcp a peer's put to this rank,
 * and its flush of one, complete only while this rank progresses, and a peer may still complete
 * a call this rank has returned from while the application makes no MPI call
 * (docs/failure-model.md).  Only a team that locks (coll_gpu_team_threads): an unlocked one is
 * progressed by the application's thread too (opal_progress), and a UCX worker of
 * UCS_THREAD_MODE_SINGLE aborts when two threads progress it (check_stream's run without
 * native nonblocking calls, whose stream communicator has this thread but no locking). */
static void coll_gpu_async_idle(coll_gpu_async_t *async, uint64_t *nap_ns) {
    coll_gpu_team_t *team = __atomic_load_n(&async->module->team, __ATOMIC_ACQUIRE);
    struct timespec until;
    uint64_t ns;

    if ((NULL == team) || (team->nnodes < 2) || !coll_gpu_team_threads()) {
        pthread_cond_wait(&async->cond, &async->lock);
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &until);
    ns = (uint64_t)until.tv_nsec + *nap_ns;
    until.tv_sec += (time_t)(ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    if (ETIMEDOUT == pthread_cond_timedwait(&async->cond, &async->lock, &until)) {
        pthread_mutex_unlock(&async->lock);
        cgt_team_progress(team->cgt);
        pthread_mutex_lock(&async->lock);
        *nap_ns =
            (2 * *nap_ns < COLL_GPU_ASYNC_NAP_MAX_NS) ? 2 * *nap_ns : COLL_GPU_ASYNC_NAP_MAX_NS;
    }
}

static void *coll_gpu_async_main(void *arg) {
    coll_gpu_async_t *async = arg;

    coll_gpu_team_thread_skips_progress(); /* it never calls into Open MPI */
    for (;;) {
        coll_gpu_async_job_t *job;
        uint64_t nap_ns = COLL_GPU_ASYNC_NAP_FIRST_NS;

        coll_gpu_async_poll(async);
        pthread_mutex_lock(&async->lock);
        while ((NULL == async->head) && !async->stop) {
            coll_gpu_async_idle(async, &nap_ns);
        }
        job = async->head;
        if (NULL == job) { /* stopped, nothing left */
            pthread_mutex_unlock(&async->lock);
            return NULL;
        }
        __atomic_store_n(&async->head, job->next, __ATOMIC_RELAXED);
        if (NULL == async->head) {
            async->tail = NULL;
        }
        pthread_mutex_unlock(&async->lock);

        if (job->kernel) {
            /* a device-driven call's proxy: its caller waits for it, the job is not ours */
            coll_gpu_kernel_proxy(&job->call, &job->started);
            __atomic_store_n(&job->proxy_done, 1, __ATOMIC_RELEASE);
            __atomic_store_n(&async->finished, async->finished + 1, __ATOMIC_RELEASE);
            continue;
        }
        job->rc = coll_gpu_native_run_now(job->comm, &job->call);
        coll_gpu_async_job_buffers_free(job);
        if (NULL != job->release) {
            /* nobody waits for the job but the stream: an error was shown where it happened,
             * and the application's next stream call reports it.  The release is the last
             * touch of a reusable job: the stream may post it again at once. */
            volatile uint32_t *release = job->release;

            if (OMPI_SUCCESS != job->rc) {
                __atomic_store_n(job->failed, job->number, __ATOMIC_RELEASE);
            }
            if (!job->reusable) {
                free(job);
            }
            __atomic_store_n(release, 1, __ATOMIC_RELEASE);
            __atomic_store_n(&async->finished, async->finished + 1, __ATOMIC_RELEASE);
            continue;
        }
        __atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&async->finished, async->finished + 1, __ATOMIC_RELEASE);
    }
}

/* A device-driven job's end: its outcome, its temporaries unpacked and freed. */
static void coll_gpu_async_kernel_end(coll_gpu_async_job_t *job, accel_status_t waited) {
    job->rc = coll_gpu_kernel_finish(job->comm, &job->call, &job->started, waited);
    coll_gpu_async_job_buffers_free(job);
    __atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
}

/* Queues job (set up but for the thread's fields) on the module's thread, started with the
 * first; false when no thread could be started. */
static bool coll_gpu_async_enqueue(mca_coll_gpu_module_t *module, coll_gpu_async_job_t *job);
static void coll_gpu_async_push(coll_gpu_async_t *async, coll_gpu_async_job_t *job);

/* A device-driven job: launched here, on the calling thread (MPI orders a communicator's
 * collectives: every rank launches its calls in the same order), then an event on its stream
 * (event NULL: one of the job's own), which MPI_Test and MPI_Wait query
 * (coll_gpu_native_async_done).  Across nodes its proxy goes to the communicator's thread
 * where the team's transport locks for it (coll_gpu_team_threads), or runs here. */
static void coll_gpu_async_kernel(mca_coll_gpu_module_t *module, coll_gpu_async_job_t *job,
                                  accel_event_h event) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;

    job->kernel = true;
    job->event = event;
    job->own_event = (NULL == event);
    if (job->own_event && (ACCEL_OK != accel->event_create(&job->event))) {
        job->event = NULL; /* the stream is waited for at the first query */
    }
    coll_gpu_kernel_start(&job->call, job->event, &job->started);
    job->proxied = coll_gpu_kernel_proxied(&job->call);
    if (job->proxied && !(coll_gpu_team_threads() && coll_gpu_async_enqueue(module, job))) {
        coll_gpu_kernel_proxy(&job->call, &job->started);
        job->proxy_done = 1;
    }
}

/* Whether a device-driven job is over (its stream past the kernel, its proxy returned): then
 * ended (rc), once. */
static bool coll_gpu_async_kernel_over(coll_gpu_async_job_t *job) {
    if (__atomic_load_n(&job->done, __ATOMIC_RELAXED)) {
        return true;
    }
    if (!job->reached) {
        job->reached = coll_gpu_kernel_poll(&job->call, &job->started, &job->waited);
    }
    if (!job->reached || (job->proxied && !__atomic_load_n(&job->proxy_done, __ATOMIC_ACQUIRE))) {
        return false;
    }
    coll_gpu_async_kernel_end(job, job->waited);
    return true;
}

coll_gpu_async_job_t *coll_gpu_native_async_submit(mca_coll_gpu_module_t *module,
                                                   struct ompi_communicator_t *comm,
                                                   const coll_gpu_native_call_t *call,
                                                   const coll_gpu_sig_buf_t *send,
                                                   const coll_gpu_sig_buf_t *recv) {
    coll_gpu_async_job_t *job = calloc(1, sizeof(*job));

    if (NULL == job) {
        return NULL;
    }
    job->call = *call;
    job->comm = comm;
    if (NULL != send) {
        job->send = *send;
        job->has_send = true;
    }
    if (NULL != recv) {
        job->recv = *recv;
        job->has_recv = true;
    }
    /* the job's own copy is the one unpacked at the end of the algorithm */
    job->call.unpack = (NULL != call->unpack && NULL != recv) ? &job->recv : NULL;
    if (coll_gpu_kernel_row(call->alg)) {
        coll_gpu_async_kernel(module, job, NULL);
        return job;
    }
    if (!coll_gpu_async_enqueue(module, job)) {
        free(job);
        return NULL;
    }
    return job;
}

coll_gpu_async_job_t *coll_gpu_native_async_stream_job(mca_coll_gpu_module_t *module,
                                                       struct ompi_communicator_t *comm,
                                                       const coll_gpu_native_call_t *call,
                                                       volatile uint32_t *release, uint32_t *failed,
                                                       bool reusable) {
    coll_gpu_async_job_t *job = calloc(1, sizeof(*job));

    if (NULL == job) {
        return NULL;
    }
    job->made = *call;
    job->made.unpack = NULL;
    job->comm = comm;
    job->module = module;
    job->release = release;
    job->failed = failed;
    job->reusable = reusable;
    return job;
}

void coll_gpu_native_async_stream_post(coll_gpu_async_job_t *job, uint32_t number) {
    job->call = job->made;
    job->number = number;
    job->next = NULL;
    *job->release = 0; /* the stream waits for this post's release */
    coll_gpu_async_push(job->module->async, job);
}

/* A condition variable on the monotonic clock (coll_gpu_async_idle's deadlines). */
static void coll_gpu_async_cond_init(pthread_cond_t *cond) {
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

bool coll_gpu_native_async_start(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm) {
    coll_gpu_async_t *async = module->async;

    if (NULL != async) {
        return true;
    }
    async = calloc(1, sizeof(*async));
    if (NULL == async) {
        return false;
    }
    pthread_mutex_init(&async->lock, NULL);
    coll_gpu_async_cond_init(&async->cond);
    async->module = module;
    async->spin_ns = coll_gpu_async_spin_ns();
    COLL_GPU_VERBOSE(1,
                     "%s: the communicator's thread for native nonblocking calls, polling "
                     "%llu us for the next call before it sleeps",
                     comm->c_name, (unsigned long long)(async->spin_ns / 1000u));
    if (0 != pthread_create(&async->thread, NULL, coll_gpu_async_main, async)) {
        pthread_mutex_destroy(&async->lock);
        pthread_cond_destroy(&async->cond);
        free(async);
        return false;
    }
    module->async = async;
    return true;
}

static void coll_gpu_async_push(coll_gpu_async_t *async, coll_gpu_async_job_t *job) {
    pthread_mutex_lock(&async->lock);
    if (NULL == async->tail) {
        __atomic_store_n(&async->head, job, __ATOMIC_RELEASE); /* the job, to a polling thread */
    } else {
        async->tail->next = job;
    }
    async->tail = job;
    ++async->posted;
    pthread_cond_signal(&async->cond);
    pthread_mutex_unlock(&async->lock);
}

static bool coll_gpu_async_enqueue(mca_coll_gpu_module_t *module, coll_gpu_async_job_t *job) {
    if (!coll_gpu_native_async_start(module, job->comm)) {
        return false;
    }
    coll_gpu_async_push(module->async, job);
    return true;
}

bool coll_gpu_native_async_done(coll_gpu_async_job_t *job, int *rc_p) {
    /* (the caller serializes the queries of one request) */
    if (job->kernel && !coll_gpu_async_kernel_over(job)) {
        return false;
    }
    if (!__atomic_load_n(&job->done, __ATOMIC_ACQUIRE)) {
        return false;
    }
    *rc_p = job->rc;
    return true;
}

void coll_gpu_native_async_free(coll_gpu_async_job_t *job) {
    if (job->kernel) {
        /* not finished yet: its temporaries wait for its kernel */
        while (!coll_gpu_async_kernel_over(job)) {
            sched_yield();
        }
        if (job->own_event && (NULL != job->event)) {
            (void)mca_coll_gpu_component.accel->event_destroy(job->event);
        }
    }
    free(job);
}

int coll_gpu_native_async_run(mca_coll_gpu_module_t *module, struct ompi_communicator_t *comm,
                              const coll_gpu_native_call_t *call) {
    coll_gpu_async_job_t job;

    memset(&job, 0, sizeof(job));
    job.call = *call;
    job.call.posted_blocks = NULL; /* the caller's */
    job.comm = comm;
    coll_gpu_async_kernel(module, &job, call->native->kernel_event);
    /* the call's one host wait (coll_gpu_kernel_run's) */
    if (NULL != job.event) {
        accel_count_host_wait();
    }
    for (unsigned spins = 0; !coll_gpu_async_kernel_over(&job); ++spins) {
        if (spins > 16) {
            coll_gpu_team_wait_progress(); /* (coll_gpu_kernel_run's) */
            sched_yield();
        }
    }
    return job.rc;
}

void coll_gpu_native_async_drain(mca_coll_gpu_module_t *module) {
    coll_gpu_async_t *async = module->async;
    unsigned long long posted;

    if (OPAL_LIKELY(NULL == async)) {
        return;
    }
    pthread_mutex_lock(&async->lock);
    posted = async->posted;
    pthread_mutex_unlock(&async->lock);
    /* the queued calls need nothing of this thread: their peers posted them too */
    while (__atomic_load_n(&async->finished, __ATOMIC_ACQUIRE) < posted) {
        sched_yield();
    }
}

void coll_gpu_native_async_destroy(mca_coll_gpu_module_t *module) {
    coll_gpu_async_t *async = module->async;

    if (NULL == async) {
        return;
    }
    pthread_mutex_lock(&async->lock);
    __atomic_store_n(&async->stop, true, __ATOMIC_RELEASE);
    pthread_cond_signal(&async->cond);
    pthread_mutex_unlock(&async->lock);
    /* it runs what is queued first */
    pthread_join(async->thread, NULL);
    pthread_mutex_destroy(&async->lock);
    pthread_cond_destroy(&async->cond);
    free(async);
    module->async = NULL;
}

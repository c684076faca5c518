/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * opal-accelerator front end: backend choice and reference counting, the
 * log sink, the thread's last error and status / memory type names.
 */
#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

/* Serializes init/finalize; the ops themselves are thread-safe per backend. */
static pthread_mutex_t accel_init_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned accel_refcount;
static accel_backend_kind_t accel_active_kind;
static const accel_ops_t *accel_active_ops;

/* Read on every log call without the lock: keep them atomic. */
static _Atomic(accel_log_func_t) accel_log_sink;
static atomic_int accel_log_verbosity;

/* Strings are never NULL so that callers can print them unconditionally. */
static _Thread_local accel_error_t accel_thread_error = {
    .call = "",
    .error = "",
    .code = 0,
};

/* The backend's ops, and the table accel_init() hands out: the same, but for the operations
 * that submit work or wait for it, which count first (accel_counts_t). */
static const accel_ops_t *accel_backend_ops;
static accel_ops_t accel_counted_ops;
static accel_counts_t accel_process_counts;

#define ACCEL_COUNT(field) __atomic_add_fetch(&accel_process_counts.field, 1, __ATOMIC_RELAXED)

const accel_counts_t *accel_counts(void) { return &accel_process_counts; }

void accel_count_host_wait(void) { ACCEL_COUNT(host_waits); }

static accel_status_t accel_counted_memcpy(void *dst, const void *src, size_t len) {
    ACCEL_COUNT(submissions);
    ACCEL_COUNT(host_waits);
    return accel_backend_ops->memcpy(dst, src, len);
}

static accel_status_t accel_counted_memcpy_async(void *dst, const void *src, size_t len,
                                                 accel_stream_h stream) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->memcpy_async(dst, src, len, stream);
}

static accel_status_t accel_counted_memcpy2d_async(void *dst, size_t dpitch, const void *src,
                                                   size_t spitch, size_t width, size_t height,
                                                   accel_stream_h stream) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->memcpy2d_async(dst, dpitch, src, spitch, width, height, stream);
}

static accel_status_t accel_counted_stream_synchronize(accel_stream_h stream) {
    ACCEL_COUNT(host_waits);
    return accel_backend_ops->stream_synchronize(stream);
}

static accel_status_t accel_counted_event_synchronize(accel_event_h event) {
    ACCEL_COUNT(host_waits);
    return accel_backend_ops->event_synchronize(event);
}

static accel_status_t accel_counted_stream_wait_value32(accel_stream_h stream, uint32_t *addr,
                                                        uint32_t value, accel_wait_value_t flags) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->stream_wait_value32(stream, addr, value, flags);
}

static accel_status_t accel_counted_stream_write_value32(accel_stream_h stream, uint32_t *addr,
                                                         uint32_t value) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->stream_write_value32(stream, addr, value);
}

static accel_status_t accel_counted_stream_host_func(accel_stream_h stream, void (*fn)(void *arg),
                                                     void *arg) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->stream_host_func(stream, fn, arg);
}

static accel_status_t accel_counted_graph_launch(accel_graph_h graph, accel_stream_h stream) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->graph_launch(graph, stream);
}

static accel_status_t accel_counted_reduce(void *dst, const void *const *srcs, int nsrcs,
                                           size_t count, accel_dtype_t dtype, accel_op_t op,
                                           accel_stream_h stream) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->reduce(dst, srcs, nsrcs, count, dtype, op, stream);
}

static accel_status_t accel_counted_node_collective(const accel_node_plan_t *plan,
                                                    const accel_node_call_t *call,
                                                    accel_stream_h stream) {
    ACCEL_COUNT(submissions);
    return accel_backend_ops->node_collective(plan, call, stream);
}

/* The counted table of ops (under accel_init_lock); an op the backend lacks stays NULL. */
static const accel_ops_t *accel_counted(const accel_ops_t *ops) {
    accel_backend_ops = ops;
    accel_counted_ops = *ops;
#define ACCEL_COUNTED(name)                                                                        \
    accel_counted_ops.name = (NULL != ops->name) ? accel_counted_##name : NULL
    ACCEL_COUNTED(memcpy);
    ACCEL_COUNTED(memcpy_async);
    ACCEL_COUNTED(memcpy2d_async);
    ACCEL_COUNTED(stream_synchronize);
    ACCEL_COUNTED(event_synchronize);
    ACCEL_COUNTED(stream_wait_value32);
    ACCEL_COUNTED(stream_write_value32);
    ACCEL_COUNTED(stream_host_func);
    ACCEL_COUNTED(graph_launch);
    ACCEL_COUNTED(reduce);
    ACCEL_COUNTED(node_collective);
#undef ACCEL_COUNTED
    return &accel_counted_ops;
}

static const char *accel_backend_kind_string(accel_backend_kind_t kind) {
    switch (kind) {
    case ACCEL_BACKEND_AUTO:
        return "auto";
    case ACCEL_BACKEND_CUDA:
        return "cuda";
    case ACCEL_BACKEND_EMULATED:
        return "emulated";
    }
    return "unknown";
}

static accel_status_t accel_cuda_try_open(const accel_ops_t **ops_p, const char **reason_p) {
#ifdef HAVE_CUDA
    return accel_cuda_open(ops_p, reason_p);
#else
    (void)ops_p;
    *reason_p = "built without CUDA support";
    return ACCEL_ERR_NO_DRIVER;
#endif
}

static void accel_backend_close(accel_backend_kind_t kind) {
    switch (kind) {
    case ACCEL_BACKEND_CUDA:
#ifdef HAVE_CUDA
        accel_cuda_close();
#endif
        break;
    case ACCEL_BACKEND_EMULATED:
        accel_emulated_close();
        break;
    case ACCEL_BACKEND_AUTO:
        break;
    }
}

accel_status_t accel_init(accel_backend_kind_t kind, const accel_ops_t **ops_p,
                          const char **reason_p) {
    /* AUTO resolves to cuda or nothing: emulated memory must be asked for. */
    accel_backend_kind_t want = (kind == ACCEL_BACKEND_AUTO) ? ACCEL_BACKEND_CUDA : kind;
    const char *reason = "";
    const accel_ops_t *ops = NULL;
    accel_status_t status;

    pthread_mutex_lock(&accel_init_lock);

    if (accel_refcount > 0) {
        if (want != accel_active_kind) {
            reason = "another accelerator backend is already initialized";
            accel_log(ACCEL_LOG_INFO, "cannot initialize backend %s: %s (%s)",
                      accel_backend_kind_string(kind), reason,
                      accel_backend_kind_string(accel_active_kind));
            status = ACCEL_ERR_INVALID;
            goto out_unlock;
        }
        ++accel_refcount;
        ops = accel_active_ops;
        status = ACCEL_OK;
        goto out_unlock;
    }

    switch (want) {
    case ACCEL_BACKEND_CUDA:
        status = accel_cuda_try_open(&ops, &reason);
        break;
    case ACCEL_BACKEND_EMULATED:
        status = accel_emulated_open(&ops, &reason);
        break;
    default:
        reason = "unknown backend kind";
        status = ACCEL_ERR_INVALID;
        break;
    }

    if (status != ACCEL_OK) {
        accel_log(ACCEL_LOG_INFO, "%s backend unavailable: %s", accel_backend_kind_string(want),
                  reason);
        goto out_unlock;
    }

    accel_log(ACCEL_LOG_INFO, "using the %s backend (asked for %s)", ops->name,
              accel_backend_kind_string(kind));
    accel_active_kind = want;
    ops = accel_counted(ops);
    accel_active_ops = ops;
    accel_refcount = 1;

out_unlock:
    pthread_mutex_unlock(&accel_init_lock);
    if (status == ACCEL_OK) {
        *ops_p = ops;
    }
    if (reason_p != NULL) {
        *reason_p = reason;
    }
    return status;
}

void accel_finalize(void) {
    pthread_mutex_lock(&accel_init_lock);
    if (accel_refcount == 0) {
        accel_log(ACCEL_LOG_INFO, "accel_finalize() without a matching accel_init()");
    } else if (--accel_refcount == 0) {
        accel_backend_close(accel_active_kind);
        accel_log(ACCEL_LOG_DEBUG, "%s backend closed", accel_active_ops->name);
        accel_active_ops = NULL;
        accel_active_kind = ACCEL_BACKEND_AUTO;
    }
    pthread_mutex_unlock(&accel_init_lock);
}

void accel_set_log(accel_log_func_t log, int verbosity) {
    atomic_store(&accel_log_sink, log);
    atomic_store(&accel_log_verbosity, verbosity);
}

bool accel_log_enabled(int level) {
    return level <= atomic_load_explicit(&accel_log_verbosity, memory_order_relaxed);
}

void accel_log(int level, const char *fmt, ...) {
    accel_log_func_t sink;
    char msg[512];
    va_list ap;

    if (!accel_log_enabled(level)) {
        return;
    }

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    sink = atomic_load(&accel_log_sink);
    if (sink != NULL) {
        sink(level, msg);
    } else {
        fprintf(stderr, "accel: %s\n", msg);
    }
}

accel_status_t accel_set_error(const char *call, const char *error_name, int code) {
    accel_thread_error.call = (call != NULL) ? call : "";
    accel_thread_error.error = (error_name != NULL) ? error_name : "";
    accel_thread_error.code = code;
    accel_log(ACCEL_LOG_ERROR_DETAIL, "%s failed: %s (%d)", accel_thread_error.call,
              accel_thread_error.error, code);
    return ACCEL_ERR_DEVICE;
}

bool accel_node_call_check(const accel_node_plan_t *plan, const accel_node_call_t *call) {
    bool across;
    size_t size, per;

    if ((plan == NULL) || (call == NULL)) {
        return false;
    }
    across = (call->kind == ACCEL_NODE_ALLREDUCE_HIERARCHICAL);
    if ((plan->nranks < (across ? 1 : 2)) || (plan->nranks > ACCEL_NODE_MAX_RANKS) ||
        (plan->rank < 0) || (plan->rank >= plan->nranks) ||
        ((unsigned)call->kind >= ACCEL_NODE_KIND_COUNT) ||
        ((unsigned)call->dtype >= ACCEL_DT_COUNT) || (call->root < 0) ||
        (call->root >= plan->nranks) ||
        (across && ((plan->nnodes < 2) || (plan->nnodes > ACCEL_NODE_MAX_NODES) ||
                    (plan->node < 0) || (plan->node >= plan->nnodes) || (plan->stage == NULL)))) {
        return false;
    }
    size = accel_dtype_size(call->dtype);
    per = accel_node_per_step(call->kind, size, plan->half, plan->nranks,
                              accel_node_nnodes(plan, call->kind));
    return (per > 0) && (call->count <= SIZE_MAX / size / ACCEL_NODE_MAX_RANKS) &&
           !((call->src != NULL) && (call->kind == ACCEL_NODE_ALLREDUCE_ONE_SHOT) &&
             (call->count > per)) &&
           !((call->src != NULL) && (call->count > 0) && (call->dst == NULL) &&
             accel_node_writes_dst(call->kind, plan->rank, call->root));
}

const accel_error_t *accel_last_error(void) { return &accel_thread_error; }

const char *accel_status_string(accel_status_t status) {
    switch (status) {
    case ACCEL_OK:
        return "success";
    case ACCEL_ERR_NO_DRIVER:
        return "driver not found";
    case ACCEL_ERR_NO_DEVICE:
        return "no device";
    case ACCEL_ERR_NO_MEMORY:
        return "out of memory";
    case ACCEL_ERR_INVALID:
        return "invalid argument";
    case ACCEL_ERR_UNSUPPORTED:
        return "unsupported";
    case ACCEL_ERR_DEVICE:
        return "device error";
    }
    return "unknown status";
}

const char *accel_mem_type_string(accel_mem_type_t type) {
    switch (type) {
    case ACCEL_MEM_HOST:
        return "host";
    case ACCEL_MEM_HOST_PINNED:
        return "host-pinned";
    case ACCEL_MEM_MANAGED:
        return "managed";
    case ACCEL_MEM_DEVICE:
        return "device";
    }
    return "unknown";
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * opal-accelerator internals shared by the front end (accel.c) and the
 * backends: logging, the thread's last error, backend entry points.
 * Nothing here is part of the component's view of the layer.
 */
#ifndef ACCEL_INTERNAL_H
#define ACCEL_INTERNAL_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_LIKELY(_x) __builtin_expect(!!(_x), 1)
#define ACCEL_UNLIKELY(_x) __builtin_expect(!!(_x), 0)

#define ACCEL_STRINGIFY_(_x) #_x
/* Stringify after macro expansion (cuda.h maps names to versioned symbols). */
#define ACCEL_STRINGIFY(_x) ACCEL_STRINGIFY_(_x)

#define ACCEL_ARRAY_SIZE(_a) (sizeof(_a) / sizeof((_a)[0]))

/* Log levels: 1 what was chosen and why, 2 errors seen on the way, 3+ details. */
enum {
    ACCEL_LOG_INFO = 1,
    ACCEL_LOG_ERROR_DETAIL = 2,
    ACCEL_LOG_DEBUG = 3,
};

/* True when a message of this level would reach the sink (to skip building it). */
ACCEL_API bool accel_log_enabled(int level);

/* Send a printf-style message to the sink set by accel_set_log() when level is
 * at most the verbosity.  Without a sink the message goes to stderr. */
ACCEL_API void accel_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record the failure of a driver call as this thread's last error (call and
 * error_name must be static strings) and log it at ACCEL_LOG_ERROR_DETAIL.
 * Returns ACCEL_ERR_DEVICE so that a driver failure reads
 * `return accel_set_error(...)`; callers that mean another status return it
 * themselves after recording. */
ACCEL_API accel_status_t accel_set_error(const char *call, const char *error_name, int code);

/*
 * Backends.  open() is called once per accel_init() of the first reference
 * and close() after the last accel_finalize(); the front end serializes them.
 * On failure *reason_p is a static string saying why.
 */
ACCEL_API accel_status_t accel_emulated_open(const accel_ops_t **ops_p, const char **reason_p);
ACCEL_API void accel_emulated_close(void);

#ifdef HAVE_CUDA
ACCEL_API accel_status_t accel_cuda_open(const accel_ops_t **ops_p, const char **reason_p);
ACCEL_API void accel_cuda_close(void);
#endif

/*
 * For tests: run the emulated backend's process-wide state attach as a
 * second copy of this code would (the header is already mapped: EEXIST path),
 * or as a forked child does (the header belongs to the parent: start over).
 * Returns the header's address in *header_p.
 */
ACCEL_API accel_status_t accel_emulated_state_attach(void **header_p, const char **reason_p);

/* A launch's parameter (passed by value on the GPU). */
typedef struct {
    char *areas[ACCEL_NODE_MAX_RANKS]; /* the plan's */
    const char *src;                   /* NULL: a call without data */
    char *dst;
    size_t count; /* elements */
    size_t size;  /* bytes of one */
    size_t half;  /* the plan's */
    int nranks, rank;
    int kind; /* accel_node_kind_t */
    int root;
    int nnodes, node; /* the plan's */
    char *stage;      /* the plan's (NULL on one node) */
} accel_node_args_t;

/* Whether a node_collective call (accel.h) is one a backend can queue: plan and call given, 2 to
 * ACCEL_NODE_MAX_RANKS ranks, rank, kind, dtype and root in range, a step that holds an element
 * (of every rank for the reduce-scatter), every rank's count elements addressable, a one-shot
 * call with data within a half, a dst where a call with data writes one.  The op, and whether
 * the backend can fold it, are the backend's to check (the reducing kinds with data). */
ACCEL_API bool accel_node_call_check(const accel_node_plan_t *plan, const accel_node_call_t *call);

/* A node collective's launch run on the host (accel_node_host.c): the kernels of
 * accel_node_kernels.h, block after block; apart: each block on a thread of its own, the lower
 * half of them slow (a pause before each read of what a peer wrote), as a GPU may schedule them
 * (ACCEL_EMULATED_LANES=apart); false when a fold failed. */
ACCEL_API bool accel_node_run_host(const accel_node_args_t *args, accel_dtype_t dtype,
                                   accel_op_t op, bool apart);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_INTERNAL_H */

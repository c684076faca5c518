/* SPDX-License-Identifier: BSD-3-Clause */
/* The node's collective kernels (accel_node_kernels.h) compiled for the host: the emulated
 * device runs a launch here, its blocks one after another, each as one thread; or apart, each on
 * a thread of its own. */
#include "accel_internal.h"
#include "accel_kernel_port.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* A kernel's (op, type) on the host, and whether every fold went well. */
typedef struct {
    accel_dtype_t dtype;
    accel_op_t op;
    bool ok;
} accel_node_host_fold_t;

#define AK_TEMPLATE
#define AK_FOLD_PARAM accel_node_host_fold_t *
#define AK_FOLD(fold, dst, bases, n, off, count)                                                   \
    accel_node_host_fold((fold), (dst), (bases), (n), (off), (count))

/* Blocks run apart: whether this thread's block is a slow one, and its pause before it reads what
 * a peer wrote (long enough for the fast blocks to run steps ahead). */
static __thread bool accel_node_host_slow;
#define ACCEL_NODE_HOST_SLOW_US 200

static void accel_node_host_pause(void) {
    if (accel_node_host_slow) {
        usleep(ACCEL_NODE_HOST_SLOW_US);
    }
}

AK_FN void ak_copy(char *dst, const char *src, size_t bytes, bool from_peer) {
    if (from_peer && (bytes > 0)) {
        accel_node_host_pause();
    }
    if (bytes > 0) {
        memmove(dst, src, bytes);
    }
}

/* The fold in rank order.  Up to ACCEL_REDUCE_MAX_INPUTS inputs in one pass, which may write
 * over one of them (each element is read before it is written); more in passes over a bounce
 * buffer, since a first pass writing dst would overwrite a later pass's input. */
static void accel_node_host_fold(accel_node_host_fold_t *fold, char *dst, char *const *bases, int n,
                                 size_t off, size_t count) {
    const size_t size = accel_dtype_size(fold->dtype);
    const void *srcs[ACCEL_REDUCE_MAX_INPUTS];
    size_t chunk = 4096 / size;
    char bounce[4096];

    accel_node_host_pause();
    if (n <= ACCEL_REDUCE_MAX_INPUTS) {
        for (int k = 0; k < n; ++k) {
            srcs[k] = bases[k] + off;
        }
        fold->ok =
            (accel_reduce_cpu(dst, srcs, n, count, fold->dtype, fold->op) == ACCEL_OK) && fold->ok;
        return;
    }
    for (size_t i = 0; i < count; i += chunk) {
        size_t m = (count - i < chunk) ? count - i : chunk;

        for (int next = 0; next < n;) {
            int k = 0;

            if (next > 0) {
                srcs[k++] = bounce;
            }
            while ((next < n) && (k < ACCEL_REDUCE_MAX_INPUTS)) {
                srcs[k++] = bases[next++] + off + i * size;
            }
            fold->ok = (accel_reduce_cpu(bounce, srcs, k, m, fold->dtype, fold->op) == ACCEL_OK) &&
                       fold->ok;
        }
        memcpy(dst + i * size, bounce, m * size);
    }
}

#include "accel_node_kernels.h"

/* One block of a launch run apart. */
typedef struct {
    const accel_node_args_t *args;
    int l, lanes;
    accel_node_host_fold_t fold;
} accel_node_host_block_t;

static void *accel_node_host_block(void *arg) {
    accel_node_host_block_t *b = arg;

    accel_node_host_slow = (b->l < b->lanes / 2);
    ak_node_collective(b->args, b->l, b->lanes, &b->fold);
    return NULL;
}

bool accel_node_run_host(const accel_node_args_t *args, accel_dtype_t dtype, accel_op_t op,
                         bool apart) {
    accel_node_host_fold_t fold = {dtype, op, true};
    const int lanes =
        accel_node_lanes((accel_node_kind_t)args->kind, args->count, args->size, args->half);
    accel_node_host_block_t blocks[ACCEL_NODE_LANES];
    pthread_t threads[ACCEL_NODE_LANES];
    int started = 0;

    /* a block that gets no thread runs here, after the others started: they do not wait for it
     * (each block waits only for its peers' blocks of the same index) */
    for (int l = 0; apart && (l < lanes); ++l) {
        blocks[l] = (accel_node_host_block_t){args, l, lanes, fold};
        if (pthread_create(&threads[l], NULL, accel_node_host_block, &blocks[l]) != 0) {
            break;
        }
        ++started;
    }
    for (int l = started; l < lanes; ++l) {
        ak_node_collective(args, l, lanes, &fold);
    }
    for (int l = 0; l < started; ++l) {
        (void)pthread_join(threads[l], NULL);
        fold.ok = fold.ok && blocks[l].fold.ok;
    }
    return fold.ok;
}

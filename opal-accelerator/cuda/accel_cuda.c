/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA backend: the driver API through dlopen (see accel_cuda.h).
 *
 * Context: driver calls other than pointer queries need a current context.
 * The backend retains the primary context of the device that is current at
 * init (device 0 when none is) and makes it current on a thread that has
 * none; a context the application made current is used as it is.
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h" /* HAVE_CUDA */
#endif

#include "accel_cuda.h"
#include "accel_cuda_cache.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ACCEL_CUDA_LIBRARY "libcuda.so.1"

typedef struct {
    void *dl_handle; /* never closed: libcuda does not support being unloaded */
    int device_count;
    CUdevice device;       /* device whose primary context is retained */
    CUcontext primary_ctx; /* retained at open, released at close */
    bool set_current;      /* open made primary_ctx current on its thread */
    accel_cuda_cache_t *cache;
    size_t max_pitch; /* CU_DEVICE_ATTRIBUTE_MAX_PITCH: the widest stride of a 2D copy */
} accel_cuda_state_t;

accel_cuda_driver_t accel_cuda_driver;
bool accel_cuda_kernels_usable;

static accel_cuda_state_t accel_cuda;

/* ACCEL_CUDA_PROFILE: per entry point (the call's name, a string literal: compared by
 * address first), calls and times; a fixed table, entries past it are not counted. */
#define ACCEL_CUDA_PROFILE_MAX 96

bool accel_cuda_profile_on;

static struct {
    const char *call;
    unsigned long long calls;
    double total_s, max_s;
} accel_cuda_profile[ACCEL_CUDA_PROFILE_MAX];
static int accel_cuda_profile_used;
static pthread_mutex_t accel_cuda_profile_lock = PTHREAD_MUTEX_INITIALIZER;

double accel_cuda_profile_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void accel_cuda_profile_add(const char *call, double t0) {
    double dt = accel_cuda_profile_now() - t0;
    int i;

    pthread_mutex_lock(&accel_cuda_profile_lock);
    for (i = 0; i < accel_cuda_profile_used; ++i) {
        if ((accel_cuda_profile[i].call == call) ||
            (strcmp(accel_cuda_profile[i].call, call) == 0)) {
            break;
        }
    }
    if ((i == accel_cuda_profile_used) && (i < ACCEL_CUDA_PROFILE_MAX)) {
        accel_cuda_profile[i].call = call;
        ++accel_cuda_profile_used;
    }
    if (i < ACCEL_CUDA_PROFILE_MAX) {
        ++accel_cuda_profile[i].calls;
        accel_cuda_profile[i].total_s += dt;
        if (dt > accel_cuda_profile[i].max_s) {
            accel_cuda_profile[i].max_s = dt;
        }
    }
    pthread_mutex_unlock(&accel_cuda_profile_lock);
}

static void accel_cuda_profile_print(void) {
    pthread_mutex_lock(&accel_cuda_profile_lock);
    fprintf(stderr, "# accel cuda profile, pid %d: %-28s %10s %12s %10s %10s\n", (int)getpid(),
            "call", "calls", "total_ms", "mean_us", "max_us");
    for (int i = 0; i < accel_cuda_profile_used; ++i) {
        fprintf(stderr, "# accel cuda profile, pid %d: %-28s %10llu %12.3f %10.2f %10.1f\n",
                (int)getpid(), accel_cuda_profile[i].call, accel_cuda_profile[i].calls,
                accel_cuda_profile[i].total_s * 1e3,
                accel_cuda_profile[i].total_s * 1e6 / (double)accel_cuda_profile[i].calls,
                accel_cuda_profile[i].max_s * 1e6);
    }
    pthread_mutex_unlock(&accel_cuda_profile_lock);
}

accel_status_t accel_cuda_result(CUresult result, const char *call) {
    const char *name = NULL;

    if (ACCEL_LIKELY(result == CUDA_SUCCESS)) {
        return ACCEL_OK;
    }
    if ((accel_cuda_driver.cuGetErrorName == NULL) ||
        (accel_cuda_driver.cuGetErrorName(result, &name) != CUDA_SUCCESS) || (name == NULL)) {
        name = "CUDA_ERROR_UNRECOGNIZED";
    }
    accel_set_error(call, name, (int)result);

    switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
        return ACCEL_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return ACCEL_ERR_INVALID;
    case CUDA_ERROR_NO_DEVICE:
        return ACCEL_ERR_NO_DEVICE;
    default:
        return ACCEL_ERR_DEVICE;
    }
}

/* Where each entry point goes: dlsym's answer written through a void ** (POSIX). */
typedef struct {
    const char *name;
    void **slot;
} accel_cuda_symbol_t;

static const accel_cuda_symbol_t accel_cuda_symbols[] = {
#define ACCEL_CUDA_DRIVER_SYMBOL(_name) {ACCEL_STRINGIFY(_name), (void **)&accel_cuda_driver._name},
    ACCEL_CUDA_FOREACH_DRIVER_FUNC(ACCEL_CUDA_DRIVER_SYMBOL)
#undef ACCEL_CUDA_DRIVER_SYMBOL
};

/* dlopen libcuda and resolve the table (once per process). */
static accel_status_t accel_cuda_driver_load(const char **reason_p) {
    void *handle = accel_cuda.dl_handle;

    if (handle != NULL) {
        return ACCEL_OK;
    }

    handle = dlopen(ACCEL_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        accel_log(ACCEL_LOG_INFO, "cuda: dlopen(%s): %s", ACCEL_CUDA_LIBRARY, dlerror());
        *reason_p = "libcuda.so.1 not found (no NVIDIA driver)";
        return ACCEL_ERR_NO_DRIVER;
    }

    for (size_t i = 0; i < ACCEL_ARRAY_SIZE(accel_cuda_symbols); ++i) {
        *accel_cuda_symbols[i].slot = dlsym(handle, accel_cuda_symbols[i].name);
        if (*accel_cuda_symbols[i].slot == NULL) {
            accel_log(ACCEL_LOG_INFO, "cuda: %s lacks %s", ACCEL_CUDA_LIBRARY,
                      accel_cuda_symbols[i].name);
            goto err_clear;
        }
    }

    /* Optional: without them stream_wait_value32 / write_value32 are unsupported. */
    *(void **)&accel_cuda_driver.stream_wait_value32 = dlsym(handle, "cuStreamWaitValue32_v2");
    if (accel_cuda_driver.stream_wait_value32 == NULL) {
        *(void **)&accel_cuda_driver.stream_wait_value32 = dlsym(handle, "cuStreamWaitValue32");
    }
    *(void **)&accel_cuda_driver.stream_write_value32 = dlsym(handle, "cuStreamWriteValue32_v2");
    if (accel_cuda_driver.stream_write_value32 == NULL) {
        *(void **)&accel_cuda_driver.stream_write_value32 = dlsym(handle, "cuStreamWriteValue32");
    }

    accel_cuda.dl_handle = handle;
    return ACCEL_OK;

err_clear:
    memset(&accel_cuda_driver, 0, sizeof(accel_cuda_driver));
    dlclose(handle);
    *reason_p = "libcuda.so.1 lacks a required entry point (NVIDIA driver too old)";
    return ACCEL_ERR_NO_DRIVER;
}

accel_status_t accel_cuda_ctx_ensure(void) {
    CUcontext ctx = NULL;

    if ((ACCEL_CUDADRV_CALL(cuCtxGetCurrent, &ctx) == CUDA_SUCCESS) && (ctx != NULL)) {
        return ACCEL_OK;
    }
    return ACCEL_CUDADRV_FUNC(cuCtxSetCurrent, accel_cuda.primary_ctx);
}

void accel_cuda_forget_range(uintptr_t base, size_t size) {
    if (accel_cuda.cache != NULL) {
        accel_cuda_cache_remove(accel_cuda.cache, base, size);
    }
}

static void accel_cuda_attr_host(accel_mem_attr_t *attr_p) {
    attr_p->type = ACCEL_MEM_HOST;
    attr_p->device = -1;
    attr_p->base = 0;
    attr_p->size = 0;
    attr_p->buffer_id = 0;
}

/* The full classification: one cuPointerGetAttributes. */
static accel_status_t accel_cuda_query_full(const void *ptr, void *ctx, accel_mem_attr_t *attr_p) {
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_IS_MANAGED,  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE,  CU_POINTER_ATTRIBUTE_BUFFER_ID,
    };
    unsigned int mem_type = 0;
    int ordinal = -1;
    uint64_t is_managed = 0; /* the driver writes a boolean: keep the storage wide and zeroed */
    CUdeviceptr start = 0;
    size_t range = 0;
    unsigned long long buffer_id = 0;
    void *data[] = {&mem_type, &ordinal, &is_managed, &start, &range, &buffer_id};
    CUresult result;

    (void)ctx;
    result = ACCEL_CUDADRV_CALL(cuPointerGetAttributes, ACCEL_ARRAY_SIZE(attrs), attrs, data,
                                (CUdeviceptr)(uintptr_t)ptr);
    if ((result == CUDA_ERROR_INVALID_VALUE) || ((result == CUDA_SUCCESS) && (mem_type == 0))) {
        /* Memory CUDA does not know: plain host memory. */
        accel_cuda_attr_host(attr_p);
        return ACCEL_OK;
    }
    if (result != CUDA_SUCCESS) {
        return accel_cuda_result(result, "cuPointerGetAttributes");
    }

    if (is_managed != 0) {
        attr_p->type = ACCEL_MEM_MANAGED;
        attr_p->device = ordinal;
    } else if (mem_type == CU_MEMORYTYPE_HOST) {
        attr_p->type = ACCEL_MEM_HOST_PINNED;
        attr_p->device = -1;
    } else {
        attr_p->type = ACCEL_MEM_DEVICE;
        attr_p->device = ordinal;
    }
    attr_p->base = (uintptr_t)start;
    attr_p->size = range;
    attr_p->buffer_id = buffer_id;
    return ACCEL_OK;
}

/* The check of a cache hit: one cuPointerGetAttribute.  A failure is an
 * answer here (nothing allocated there any more), not an error to record. */
static accel_status_t accel_cuda_query_buffer_id(const void *ptr, void *ctx,
                                                 uint64_t *buffer_id_p) {
    unsigned long long buffer_id = 0;

    (void)ctx;
    if (accel_cuda_driver.cuPointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                                (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS) {
        return ACCEL_ERR_INVALID;
    }
    *buffer_id_p = buffer_id;
    return ACCEL_OK;
}

static accel_status_t accel_cuda_mem_query(const void *ptr, accel_mem_attr_t *attr_p) {
    return accel_cuda_cache_classify(accel_cuda.cache, ptr, accel_cuda_query_full,
                                     accel_cuda_query_buffer_id, NULL, attr_p);
}

static accel_status_t accel_cuda_mem_alloc(accel_mem_type_t type, size_t len, void **ptr_p) {
    CUdeviceptr dptr = 0;
    void *hptr = NULL;
    accel_status_t status;

    if (len == 0) {
        /* As cuMemAlloc(0); checked here so that every type behaves alike. */
        accel_set_error("cuMemAlloc", "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
        return ACCEL_ERR_INVALID;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }

    switch (type) {
    case ACCEL_MEM_DEVICE:
        status = ACCEL_CUDADRV_FUNC(cuMemAlloc, &dptr, len);
        hptr = (void *)(uintptr_t)dptr;
        break;
    case ACCEL_MEM_MANAGED:
        status = ACCEL_CUDADRV_FUNC(cuMemAllocManaged, &dptr, len, CU_MEM_ATTACH_GLOBAL);
        hptr = (void *)(uintptr_t)dptr;
        break;
    case ACCEL_MEM_HOST_PINNED:
        status = ACCEL_CUDADRV_FUNC(cuMemHostAlloc, &hptr, len, CU_MEMHOSTALLOC_PORTABLE);
        break;
    default:
        accel_set_error("cuMemAlloc", "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
        return ACCEL_ERR_INVALID;
    }
    if (status == ACCEL_OK) {
        *ptr_p = hptr;
    }
    return status;
}

static accel_status_t accel_cuda_mem_free(void *ptr) {
    accel_mem_attr_t attr;
    accel_status_t status;

    if (ptr == NULL) {
        return ACCEL_OK;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    status = accel_cuda_mem_query(ptr, &attr);
    if (status != ACCEL_OK) {
        return status;
    }
    if ((attr.type == ACCEL_MEM_HOST) || (attr.base != (uintptr_t)ptr)) {
        accel_set_error((attr.type == ACCEL_MEM_HOST_PINNED) ? "cuMemFreeHost" : "cuMemFree",
                        "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
        return ACCEL_ERR_INVALID;
    }

    /* Forget it first: the address may be handed out again at once. */
    accel_cuda_cache_remove(accel_cuda.cache, attr.base, attr.size);
    if (attr.type == ACCEL_MEM_HOST_PINNED) {
        return ACCEL_CUDADRV_FUNC(cuMemFreeHost, ptr);
    }
    return ACCEL_CUDADRV_FUNC(cuMemFree, (CUdeviceptr)(uintptr_t)ptr);
}

static accel_status_t accel_cuda_memcpy(void *dst, const void *src, size_t len) {
    accel_status_t status;

    if (len == 0) {
        return ACCEL_OK;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    status =
        ACCEL_CUDADRV_FUNC(cuMemcpy, (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, len);
    if (status != ACCEL_OK) {
        return status;
    }
    /* cuMemcpy returns before a device-to-device copy is done: wait for it
     * (the legacy default stream, where cuMemcpy ran). */
    return ACCEL_CUDADRV_FUNC(cuStreamSynchronize, NULL);
}

static accel_status_t accel_cuda_memcpy_async(void *dst, const void *src, size_t len,
                                              accel_stream_h stream) {
    accel_status_t status;

    if (len == 0) {
        return ACCEL_OK;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuMemcpyAsync, (CUdeviceptr)(uintptr_t)dst,
                              (CUdeviceptr)(uintptr_t)src, len, (CUstream)stream);
}

/* Any two of host, pinned, managed and device memory: unified addressing tells the driver
 * which each side is (CU_MEMORYTYPE_UNIFIED).  Pitches above the device's limit for 2D copies
 * (CU_DEVICE_ATTRIBUTE_MAX_PITCH) go row by row. */
static accel_status_t accel_cuda_memcpy2d_async(void *dst, size_t dpitch, const void *src,
                                                size_t spitch, size_t width, size_t height,
                                                accel_stream_h stream) {
    CUDA_MEMCPY2D copy;
    accel_status_t status;

    if ((width == 0) || (height == 0)) {
        return ACCEL_OK;
    }
    if ((height > 1) && ((dpitch < width) || (spitch < width))) {
        accel_cuda_result(CUDA_ERROR_INVALID_VALUE, "cuMemcpy2DAsync");
        return ACCEL_ERR_INVALID;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    if ((height == 1) || (dpitch > accel_cuda.max_pitch) || (spitch > accel_cuda.max_pitch)) {
        for (size_t r = 0; (r < height) && (status == ACCEL_OK); ++r) {
            status = ACCEL_CUDADRV_FUNC(cuMemcpyAsync, (CUdeviceptr)(uintptr_t)dst + r * dpitch,
                                        (CUdeviceptr)(uintptr_t)src + r * spitch, width,
                                        (CUstream)stream);
        }
        return status;
    }
    memset(&copy, 0, sizeof(copy));
    copy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
    copy.srcDevice = (CUdeviceptr)(uintptr_t)src;
    copy.srcPitch = spitch;
    copy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    copy.dstDevice = (CUdeviceptr)(uintptr_t)dst;
    copy.dstPitch = dpitch;
    copy.WidthInBytes = width;
    copy.Height = height;
    return ACCEL_CUDADRV_FUNC(cuMemcpy2DAsync, &copy, (CUstream)stream);
}

/* Streams and events are the driver's handles themselves (NULL: the default stream). */
static accel_status_t accel_cuda_stream_create(accel_stream_h *stream_p) {
    CUstream stream = NULL;
    accel_status_t status;

    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    status = ACCEL_CUDADRV_FUNC(cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
    if (status == ACCEL_OK) {
        *stream_p = (accel_stream_h)stream;
    }
    return status;
}

static accel_status_t accel_cuda_stream_destroy(accel_stream_h stream) {
    if (stream == NULL) {
        accel_set_error("cuStreamDestroy", "CUDA_ERROR_INVALID_HANDLE", CUDA_ERROR_INVALID_HANDLE);
        return ACCEL_ERR_INVALID;
    }
    return ACCEL_CUDADRV_FUNC(cuStreamDestroy, (CUstream)stream);
}

static accel_status_t accel_cuda_stream_synchronize(accel_stream_h stream) {
    accel_status_t status = accel_cuda_ctx_ensure();

    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuStreamSynchronize, (CUstream)stream);
}

static accel_status_t accel_cuda_event_create(accel_event_h *event_p) {
    CUevent event = NULL;
    accel_status_t status;

    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    status = ACCEL_CUDADRV_FUNC(cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
    if (status == ACCEL_OK) {
        *event_p = (accel_event_h)event;
    }
    return status;
}

static accel_status_t accel_cuda_event_destroy(accel_event_h event) {
    return ACCEL_CUDADRV_FUNC(cuEventDestroy, (CUevent)event);
}

static accel_status_t accel_cuda_event_record(accel_event_h event, accel_stream_h stream) {
    accel_status_t status = accel_cuda_ctx_ensure();

    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuEventRecord, (CUevent)event, (CUstream)stream);
}

static accel_status_t accel_cuda_event_synchronize(accel_event_h event) {
    return ACCEL_CUDADRV_FUNC(cuEventSynchronize, (CUevent)event);
}

static accel_status_t accel_cuda_event_query(accel_event_h event, bool *done_p) {
    CUresult result = ACCEL_CUDADRV_CALL(cuEventQuery, (CUevent)event);

    if (result == CUDA_ERROR_NOT_READY) {
        *done_p = false;
        return ACCEL_OK;
    }
    *done_p = (result == CUDA_SUCCESS);
    return accel_cuda_result(result, "cuEventQuery");
}

static accel_status_t accel_cuda_stream_wait_event(accel_stream_h stream, accel_event_h event) {
    accel_status_t status = accel_cuda_ctx_ensure();

    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuStreamWaitEvent, (CUstream)stream, (CUevent)event, 0);
}

/* A stream memory operation's result: CUDA_ERROR_NOT_SUPPORTED (device or
 * driver without stream memory operations) is ACCEL_ERR_UNSUPPORTED. */
static accel_status_t accel_cuda_memop_result(CUresult result, const char *call) {
    accel_status_t status = accel_cuda_result(result, call);

    return (result == CUDA_ERROR_NOT_SUPPORTED) ? ACCEL_ERR_UNSUPPORTED : status;
}

static accel_status_t accel_cuda_stream_wait_value32(accel_stream_h stream, uint32_t *addr,
                                                     uint32_t value, accel_wait_value_t flags) {
    static const unsigned int cu_flags[] = {
        [ACCEL_WAIT_VALUE_GEQ] = CU_STREAM_WAIT_VALUE_GEQ,
        [ACCEL_WAIT_VALUE_EQ] = CU_STREAM_WAIT_VALUE_EQ,
        [ACCEL_WAIT_VALUE_AND] = CU_STREAM_WAIT_VALUE_AND,
        [ACCEL_WAIT_VALUE_NOR] = CU_STREAM_WAIT_VALUE_NOR,
    };
    accel_status_t status;

    if (accel_cuda_driver.stream_wait_value32 == NULL) {
        accel_set_error("cuStreamWaitValue32", "CUDA_ERROR_NOT_SUPPORTED",
                        CUDA_ERROR_NOT_SUPPORTED);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if ((unsigned)flags >= ACCEL_ARRAY_SIZE(cu_flags)) {
        accel_set_error("cuStreamWaitValue32", "CUDA_ERROR_INVALID_VALUE",
                        CUDA_ERROR_INVALID_VALUE);
        return ACCEL_ERR_INVALID;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    return accel_cuda_memop_result(
        accel_cuda_driver.stream_wait_value32((CUstream)stream, (CUdeviceptr)(uintptr_t)addr, value,
                                              cu_flags[flags]),
        "cuStreamWaitValue32");
}

static accel_status_t accel_cuda_stream_write_value32(accel_stream_h stream, uint32_t *addr,
                                                      uint32_t value) {
    accel_status_t status;

    if (accel_cuda_driver.stream_write_value32 == NULL) {
        accel_set_error("cuStreamWriteValue32", "CUDA_ERROR_NOT_SUPPORTED",
                        CUDA_ERROR_NOT_SUPPORTED);
        return ACCEL_ERR_UNSUPPORTED;
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    /* The default flags: ordered after the work before it, with a fence. */
    return accel_cuda_memop_result(
        accel_cuda_driver.stream_write_value32((CUstream)stream, (CUdeviceptr)(uintptr_t)addr,
                                               value, CU_STREAM_WRITE_VALUE_DEFAULT),
        "cuStreamWriteValue32");
}

static accel_status_t accel_cuda_stream_host_func(accel_stream_h stream, void (*fn)(void *arg),
                                                  void *arg) {
    accel_status_t status = accel_cuda_ctx_ensure();

    if (fn == NULL) {
        accel_set_error("cuLaunchHostFunc", "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
        return ACCEL_ERR_INVALID;
    }
    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuLaunchHostFunc, (CUstream)stream, fn, arg);
}

/* Active and invalidated captures both count: what is queued would not run now. */
static accel_status_t accel_cuda_stream_is_capturing(accel_stream_h stream, bool *capturing_p) {
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    accel_status_t status = accel_cuda_ctx_ensure();

    if (status == ACCEL_OK) {
        status = ACCEL_CUDADRV_FUNC(cuStreamIsCapturing, (CUstream)stream, &capture);
    }
    *capturing_p = (capture != CU_STREAM_CAPTURE_STATUS_NONE);
    return status;
}

/* A captured graph and its instance (what a launch runs). */
struct accel_graph {
    CUgraph graph;
    CUgraphExec exec;
};

static accel_status_t accel_cuda_stream_begin_capture(accel_stream_h stream) {
    accel_status_t status = accel_cuda_ctx_ensure();

    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuStreamBeginCapture, (CUstream)stream,
                              CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static accel_status_t accel_cuda_graph_destroy(accel_graph_h graph) {
    accel_status_t status = ACCEL_OK;

    if (graph == NULL) {
        return ACCEL_OK;
    }
    if (graph->exec != NULL) {
        status = ACCEL_CUDADRV_FUNC(cuGraphExecDestroy, graph->exec);
    }
    if (graph->graph != NULL) {
        accel_status_t st = ACCEL_CUDADRV_FUNC(cuGraphDestroy, graph->graph);

        status = (status == ACCEL_OK) ? st : status;
    }
    free(graph);
    return status;
}

/* Ends the capture whatever else fails (the stream must not stay capturing). */
static accel_status_t accel_cuda_stream_end_capture(accel_stream_h stream, accel_graph_h *graph_p) {
    accel_graph_h graph = calloc(1, sizeof(*graph));
    CUgraph captured = NULL;
    accel_status_t status = accel_cuda_ctx_ensure();

    if (status == ACCEL_OK) {
        status = ACCEL_CUDADRV_FUNC(cuStreamEndCapture, (CUstream)stream, &captured);
    }
    if ((status == ACCEL_OK) && (graph == NULL)) {
        (void)ACCEL_CUDADRV_CALL(cuGraphDestroy, captured);
        accel_set_error("accel_cuda_stream_end_capture", "CUDA_ERROR_OUT_OF_MEMORY",
                        CUDA_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    if (status == ACCEL_OK) {
        graph->graph = captured;
        status = ACCEL_CUDADRV_FUNC(cuGraphInstantiateWithFlags, &graph->exec, captured, 0);
    }
    if (status != ACCEL_OK) {
        (void)accel_cuda_graph_destroy(graph);
        return status;
    }
    *graph_p = graph;
    return ACCEL_OK;
}

static accel_status_t accel_cuda_graph_launch(accel_graph_h graph, accel_stream_h stream) {
    accel_status_t status = accel_cuda_ctx_ensure();

    if (graph == NULL) {
        return ACCEL_ERR_INVALID;
    }
    if (status != ACCEL_OK) {
        return status;
    }
    return ACCEL_CUDADRV_FUNC(cuGraphLaunch, graph->exec, (CUstream)stream);
}

static int accel_cuda_device_count(void) { return accel_cuda.device_count; }

static const accel_ops_t accel_cuda_ops = {
    .name = "cuda",
    /* UVA gives no bound on where allocations land */
    .device_va_lo = 0,
    .device_va_span = UINTPTR_MAX,
    .mem_query = accel_cuda_mem_query,
    .mem_alloc = accel_cuda_mem_alloc,
    .mem_free = accel_cuda_mem_free,
    .memcpy = accel_cuda_memcpy,
    .memcpy_async = accel_cuda_memcpy_async,
    .memcpy2d_async = accel_cuda_memcpy2d_async,
    .stream_create = accel_cuda_stream_create,
    .stream_destroy = accel_cuda_stream_destroy,
    .stream_synchronize = accel_cuda_stream_synchronize,
    .event_create = accel_cuda_event_create,
    .event_destroy = accel_cuda_event_destroy,
    .event_record = accel_cuda_event_record,
    .event_synchronize = accel_cuda_event_synchronize,
    .event_query = accel_cuda_event_query,
    .stream_wait_event = accel_cuda_stream_wait_event,
    .stream_wait_value32 = accel_cuda_stream_wait_value32,
    .stream_write_value32 = accel_cuda_stream_write_value32,
    .stream_host_func = accel_cuda_stream_host_func,
    .stream_is_capturing = accel_cuda_stream_is_capturing,
    .stream_begin_capture = accel_cuda_stream_begin_capture,
    .stream_end_capture = accel_cuda_stream_end_capture,
    .graph_launch = accel_cuda_graph_launch,
    .graph_destroy = accel_cuda_graph_destroy,
    .device_count = accel_cuda_device_count,
    .reduce = accel_cuda_reduce,
    .node_collective = accel_cuda_node_collective,
    .ipc_export = accel_cuda_ipc_export,
    .ipc_import = accel_cuda_ipc_import,
    .ipc_close = accel_cuda_ipc_close,
    .device_pci_bus_id = accel_cuda_device_pci_bus_id,
};

/* The device to work on: that of the current context, else device 0. */
static CUdevice accel_cuda_pick_device(bool *has_ctx_p) {
    CUcontext ctx = NULL;
    CUdevice device = 0;

    *has_ctx_p = false;
    if ((accel_cuda_driver.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS) && (ctx != NULL) &&
        (accel_cuda_driver.cuCtxGetDevice(&device) == CUDA_SUCCESS)) {
        *has_ctx_p = true;
        return device;
    }
    return 0;
}

accel_status_t accel_cuda_open(const accel_ops_t **ops_p, const char **reason_p) {
    const char *kernels_reason = "";
    char name[128] = "";
    int driver_version = 0;
    accel_status_t status;
    CUresult result;
    bool has_ctx;

    status = accel_cuda_driver_load(reason_p);
    if (status != ACCEL_OK) {
        return status;
    }
    if (!accel_cuda_profile_on && (getenv("ACCEL_CUDA_PROFILE") != NULL) &&
        (atoi(getenv("ACCEL_CUDA_PROFILE")) > 0)) {
        accel_cuda_profile_on = true;
        atexit(accel_cuda_profile_print);
    }

    result = accel_cuda_driver.cuInit(0);
    if (result != CUDA_SUCCESS) {
        accel_cuda_result(result, "cuInit");
        accel_log(ACCEL_LOG_INFO, "cuda: cuInit failed: %s (%d)", accel_last_error()->error,
                  (int)result);
        if (result == CUDA_ERROR_STUB_LIBRARY) {
            /* The toolkit's stubs/libcuda.so found through the library path. */
            *reason_p = "libcuda.so.1 is the CUDA toolkit's stub (no NVIDIA driver)";
            return ACCEL_ERR_NO_DRIVER;
        }
        *reason_p = (result == CUDA_ERROR_NO_DEVICE) ? "no CUDA device"
                                                     : "cuInit failed (no usable CUDA device)";
        return ACCEL_ERR_NO_DEVICE;
    }
    status = ACCEL_CUDADRV_FUNC(cuDeviceGetCount, &accel_cuda.device_count);
    if ((status != ACCEL_OK) || (accel_cuda.device_count <= 0)) {
        *reason_p = "no CUDA device";
        return ACCEL_ERR_NO_DEVICE;
    }

    accel_cuda.device = accel_cuda_pick_device(&has_ctx);
    status =
        ACCEL_CUDADRV_FUNC(cuDevicePrimaryCtxRetain, &accel_cuda.primary_ctx, accel_cuda.device);
    if (status != ACCEL_OK) {
        *reason_p = "cannot retain the device's primary context";
        goto err;
    }
    accel_cuda.set_current = false;
    if (!has_ctx) {
        status = ACCEL_CUDADRV_FUNC(cuCtxSetCurrent, accel_cuda.primary_ctx);
        if (status != ACCEL_OK) {
            *reason_p = "cannot make the primary context current";
            goto err_release_ctx;
        }
        accel_cuda.set_current = true;
    }

    {
        int max_pitch = 0;

        /* not fatal: without it 2D copies go row by row */
        accel_cuda.max_pitch =
            (accel_cuda_driver.cuDeviceGetAttribute(&max_pitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH,
                                                    accel_cuda.device) == CUDA_SUCCESS &&
             max_pitch > 0)
                ? (size_t)max_pitch
                : 0;
    }
    status = accel_cuda_cache_create(ACCEL_CUDA_CACHE_DEFAULT_CAPACITY, &accel_cuda.cache);
    if (status != ACCEL_OK) {
        *reason_p = "out of memory";
        goto err_unset_ctx;
    }

    /* Not fatal: copies and classification work without the kernels. */
    accel_cuda_kernels_usable =
        (accel_cuda_kernels_check((int)accel_cuda.device, &kernels_reason) == ACCEL_OK);
    if (accel_cuda_kernels_usable) {
        double t0 = accel_cuda_profile_now();
        int loaded = accel_cuda_reduce_preload();

        accel_log(ACCEL_LOG_INFO, "cuda: kernels usable on device %d (%d loaded in %.1f ms)",
                  (int)accel_cuda.device, loaded, (accel_cuda_profile_now() - t0) * 1e3);
    } else {
        accel_log(ACCEL_LOG_INFO, "cuda: kernels not usable on device %d: %s",
                  (int)accel_cuda.device, kernels_reason);
    }

    accel_cuda_driver.cuDriverGetVersion(&driver_version);
    accel_cuda_driver.cuDeviceGetName(name, sizeof(name), accel_cuda.device);
    accel_log(ACCEL_LOG_INFO, "cuda: driver %d.%d, %d device(s), using device %d (%s)",
              driver_version / 1000, (driver_version % 1000) / 10, accel_cuda.device_count,
              (int)accel_cuda.device, name);
    *ops_p = &accel_cuda_ops;
    return ACCEL_OK;

err_unset_ctx:
    if (accel_cuda.set_current) {
        accel_cuda_driver.cuCtxSetCurrent(NULL);
        accel_cuda.set_current = false;
    }
err_release_ctx:
    accel_cuda_driver.cuDevicePrimaryCtxRelease(accel_cuda.device);
err:
    return status;
}

void accel_cuda_close(void) {
    CUcontext current = NULL;

    /* IPC mappings left open are unmapped while the context still lives. */
    accel_cuda_ipc_cleanup();
    accel_cuda_cache_destroy(accel_cuda.cache);
    accel_cuda.cache = NULL;
    /* Unbind what open bound (a context left current would dangle once
     * released); contexts the application made current are its own. */
    if (accel_cuda.set_current && (accel_cuda_driver.cuCtxGetCurrent(&current) == CUDA_SUCCESS) &&
        (current == accel_cuda.primary_ctx)) {
        accel_cuda_driver.cuCtxSetCurrent(NULL);
    }
    accel_cuda.set_current = false;
    accel_cuda_driver.cuDevicePrimaryCtxRelease(accel_cuda.device);
    accel_cuda.primary_ctx = NULL;
    accel_cuda_kernels_usable = false;
}

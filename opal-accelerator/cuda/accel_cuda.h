/*
 * CUDA backend of opal-accelerator: the driver API reached through dlopen
 * ("libcuda.so.1"), so that nothing links libcuda and the DSO loads on nodes
 * without a GPU.  cuda.h is included for its types only; every entry point
 * is looked up into accel_cuda_driver and called through ACCEL_CUDADRV_FUNC,
 * which turns a CUresult into an accel_status_t and records the error.
 */
#ifndef ACCEL_CUDA_H
#define ACCEL_CUDA_H

#include "accel_internal.h"

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
/* The table holds the legacy-stream entry points (their _ptsz/_ptds twins differ). */
#error "the CUDA backend expects the legacy default stream API"
#endif

/*
 * The driver entry points the backend uses.  cuda.h maps several names to
 * versioned symbols (cuMemAlloc -> cuMemAlloc_v2): the table member and the
 * symbol looked up take the mapped name, the error log the plain one.
 */
#define ACCEL_CUDA_FOREACH_DRIVER_FUNC(_F)                                                         \
    _F(cuInit)                                                                                     \
    _F(cuGetErrorName)                                                                             \
    _F(cuDriverGetVersion)                                                                         \
    _F(cuDeviceGet)                                                                                \
    _F(cuDeviceGetCount)                                                                           \
    _F(cuDeviceGetName)                                                                            \
    _F(cuDevicePrimaryCtxRetain)                                                                   \
    _F(cuDevicePrimaryCtxRelease)                                                                  \
    _F(cuCtxGetCurrent)                                                                            \
    _F(cuCtxSetCurrent)                                                                            \
    _F(cuCtxGetDevice)                                                                             \
    _F(cuPointerGetAttribute)                                                                      \
    _F(cuPointerGetAttributes)                                                                     \
    _F(cuMemAlloc)                                                                                 \
    _F(cuMemAllocManaged)                                                                          \
    _F(cuMemHostAlloc)                                                                             \
    _F(cuMemFree)                                                                                  \
    _F(cuMemFreeHost)                                                                              \
    _F(cuMemcpy)                                                                                   \
    _F(cuMemcpyAsync)                                                                              \
    _F(cuStreamCreate)                                                                             \
    _F(cuStreamDestroy)                                                                            \
    _F(cuStreamSynchronize)                                                                        \
    _F(cuEventCreate)                                                                              \
    _F(cuEventDestroy)                                                                             \
    _F(cuEventRecord)                                                                              \
    _F(cuEventSynchronize)

typedef struct {
#define ACCEL_CUDA_DRIVER_MEMBER(_name) __typeof__(_name) *_name;
    ACCEL_CUDA_FOREACH_DRIVER_FUNC(ACCEL_CUDA_DRIVER_MEMBER)
#undef ACCEL_CUDA_DRIVER_MEMBER
} accel_cuda_driver_t;

/* Filled by accel_cuda_open(); stays valid after close (libcuda is never unloaded). */
ACCEL_API extern accel_cuda_driver_t accel_cuda_driver;

/* Whether this library's kernels can run on the device chosen at init (set by
 * accel_cuda_open() from accel_cuda_kernels_check()); code that launches
 * kernels checks it first. */
ACCEL_API extern bool accel_cuda_kernels_usable;

/* Map a CUresult to a status; on failure record (call, error name, code) as
 * the thread's last error. */
ACCEL_API accel_status_t accel_cuda_result(CUresult result, const char *call);

/* Call a driver entry point: ACCEL_CUDADRV_FUNC(cuMemAlloc, &ptr, len) is an
 * accel_status_t expression (no hidden control flow). */
#define ACCEL_CUDADRV_FUNC(_func, ...)                                                             \
    accel_cuda_result(accel_cuda_driver._func(__VA_ARGS__), #_func)

/*
 * Check that the kernels of this library have code the device can run
 * (accel_cuda_kernels.cu, through the statically linked CUDA runtime).
 * ACCEL_OK when they do; otherwise *reason_p (static) says why, e.g. "no
 * kernel image for this GPU's architecture".
 */
ACCEL_API accel_status_t accel_cuda_kernels_check(int device, const char **reason_p);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_CUDA_H */

/* SPDX-License-Identifier: BSD-3-Clause */
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
    _F(cuDeviceGetAttribute)                                                                       \
    _F(cuDeviceGetPCIBusId)                                                                        \
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
    _F(cuMemcpy2DAsync)                                                                            \
    _F(cuStreamCreate)                                                                             \
    _F(cuStreamDestroy)                                                                            \
    _F(cuStreamSynchronize)                                                                        \
    _F(cuEventCreate)                                                                              \
    _F(cuEventDestroy)                                                                             \
    _F(cuEventRecord)                                                                              \
    _F(cuEventSynchronize)                                                                         \
    _F(cuEventQuery)                                                                               \
    _F(cuStreamWaitEvent)                                                                          \
    _F(cuLaunchHostFunc)                                                                           \
    _F(cuStreamIsCapturing)                                                                        \
    _F(cuStreamBeginCapture)                                                                       \
    _F(cuStreamEndCapture)                                                                         \
    _F(cuGraphInstantiateWithFlags)                                                                \
    _F(cuGraphLaunch)                                                                              \
    _F(cuGraphExecDestroy)                                                                         \
    _F(cuGraphDestroy)                                                                             \
    _F(cuIpcGetMemHandle)                                                                          \
    _F(cuIpcOpenMemHandle)                                                                         \
    _F(cuIpcCloseMemHandle)                                                                        \
    _F(cuMemCreate)                                                                                \
    _F(cuMemRelease)                                                                               \
    _F(cuMemRetainAllocationHandle)                                                                \
    _F(cuMemGetAllocationPropertiesFromHandle)                                                     \
    _F(cuMemGetAllocationGranularity)                                                              \
    _F(cuMemExportToShareableHandle)                                                               \
    _F(cuMemImportFromShareableHandle)                                                             \
    _F(cuMemAddressReserve)                                                                        \
    _F(cuMemAddressFree)                                                                           \
    _F(cuMemMap)                                                                                   \
    _F(cuMemUnmap)                                                                                 \
    _F(cuMemSetAccess)

typedef struct {
#define ACCEL_CUDA_DRIVER_MEMBER(_name) __typeof__(_name) *_name;
    ACCEL_CUDA_FOREACH_DRIVER_FUNC(ACCEL_CUDA_DRIVER_MEMBER)
#undef ACCEL_CUDA_DRIVER_MEMBER
    /* Optional (NULL when the driver lacks them): the stream memory
     * operations, looked up as cuStreamWaitValue32_v2 (CUDA 11.7+) or else
     * the first version, same signature. */
    CUresult (*stream_wait_value32)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                    unsigned int flags);
    CUresult (*stream_write_value32)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                     unsigned int flags);
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

/* ACCEL_CUDA_PROFILE=1 in the environment (read at open): every driver call made through
 * ACCEL_CUDADRV_CALL / ACCEL_CUDADRV_FUNC and every kernel launch is timed, and a table of
 * calls, total, mean and longest time per entry point goes to stderr at exit.  For finding
 * where a call's time goes on a GPU machine without a profiler; off, it costs one branch. */
ACCEL_API extern bool accel_cuda_profile_on;
ACCEL_API double accel_cuda_profile_now(void);
ACCEL_API void accel_cuda_profile_add(const char *call, double t0);

/* Call a driver entry point, timed when profiling: a CUresult expression. */
#define ACCEL_CUDADRV_CALL(_func, ...)                                                             \
    __extension__({                                                                                \
        double _accel_t0 = ACCEL_UNLIKELY(accel_cuda_profile_on) ? accel_cuda_profile_now() : 0.0; \
        CUresult _accel_result = accel_cuda_driver._func(__VA_ARGS__);                             \
        if (ACCEL_UNLIKELY(accel_cuda_profile_on)) {                                               \
            accel_cuda_profile_add(#_func, _accel_t0);                                             \
        }                                                                                          \
        _accel_result;                                                                             \
    })

/* Call a driver entry point: ACCEL_CUDADRV_FUNC(cuMemAlloc, &ptr, len) is an
 * accel_status_t expression (no hidden control flow). */
#define ACCEL_CUDADRV_FUNC(_func, ...)                                                             \
    accel_cuda_result(ACCEL_CUDADRV_CALL(_func, __VA_ARGS__), #_func)

/* Make sure the calling thread has a current context (the primary context
 * retained at open when it has none). */
ACCEL_API accel_status_t accel_cuda_ctx_ensure(void);

/* Drop what the classification cache remembers of [base, base + size): memory
 * unmapped behind the backend's allocator (IPC mappings). */
ACCEL_API void accel_cuda_forget_range(uintptr_t base, size_t size);

/*
 * IPC (accel_cuda_ipc.c): ipc_export / ipc_import / ipc_close and
 * device_pci_bus_id of accel_ops_t.  Memory from cuMemAlloc goes through
 * legacy CUDA IPC; memory from cuMemCreate (requested with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) through a file descriptor the
 * importer takes from the exporter with pidfd_getfd.  Imports are cached per
 * process and reference counted; accel_cuda_ipc_cleanup() (at close) unmaps
 * what is left and closes exported descriptors.
 */
ACCEL_API accel_status_t accel_cuda_ipc_export(const void *ptr, accel_ipc_handle_t *handle);
ACCEL_API accel_status_t accel_cuda_ipc_import(const accel_ipc_handle_t *handle, void **base_p);
ACCEL_API accel_status_t accel_cuda_ipc_close(void *base);
ACCEL_API accel_status_t accel_cuda_device_pci_bus_id(int dev, char *buf, size_t len);
ACCEL_API void accel_cuda_ipc_cleanup(void);

/* Handle kinds (accel_ipc_handle_t.kind) of the CUDA backend. */
#define ACCEL_CUDA_IPC_KIND_LEGACY 0x43495031u /* "CIP1": cuIpcGetMemHandle */
#define ACCEL_CUDA_IPC_KIND_VMM_FD 0x43564d31u /* "CVM1": cuMemCreate, POSIX fd */

/*
 * Check that the kernels of this library have code the device can run
 * (accel_cuda_kernels.cu, through the statically linked CUDA runtime).
 * ACCEL_OK when they do; otherwise *reason_p (static) says why, e.g. "no
 * kernel image for this GPU's architecture".
 */
ACCEL_API accel_status_t accel_cuda_kernels_check(int device, const char **reason_p);

/* reduce of accel_ops_t: the kernels of cuda/accel_cuda_reduce*.cu, queued on
 * stream; ACCEL_ERR_UNSUPPORTED when they cannot run on this device. */
ACCEL_API accel_status_t accel_cuda_reduce(void *dst, const void *const *srcs, int nsrcs,
                                           size_t count, accel_dtype_t dtype, accel_op_t op,
                                           accel_stream_h stream);

/* node_collective of accel_ops_t: accel_cuda_node_kernel of cuda/accel_cuda_reduce*.cu (or
 * its copy-only instance), one launch on stream; ACCEL_ERR_UNSUPPORTED when the kernels cannot
 * run on this device. */
ACCEL_API accel_status_t accel_cuda_node_collective(const accel_node_plan_t *plan,
                                                    const accel_node_call_t *call,
                                                    accel_stream_h stream);

/* Load every reduction and node collective kernel now (under CUDA's lazy loading, the
 * default since 12.2, a kernel is loaded at its first launch, and loading waits for the
 * context's other work: a first launch on a stream that waits for the host would never
 * return).  Returns how many were loaded. */
ACCEL_API int accel_cuda_reduce_preload(void);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_CUDA_H */

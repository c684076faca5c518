/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kernel availability check of the CUDA backend.
 *
 * The library's kernels are built for a list of architectures (plus PTX);
 * on a GPU outside that list, or under a driver too old for the PTX, no
 * kernel can launch.  Asking the runtime (linked statically) for the
 * attributes of a trivial kernel of this same fat binary tells, without
 * launching anything, whether the device can run this library's code.
 */
#include "accel_cuda.h"

#include <cuda_runtime.h>

/* Never launched: only its attributes are asked for. */
__global__ void accel_cuda_probe_kernel(int *flag) {
    if (flag != nullptr) {
        *flag = 1;
    }
}

static const char *accel_cuda_kernels_reason(cudaError_t err) {
    switch (err) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
        return "no kernel image for this GPU's architecture";
    case cudaErrorUnsupportedPtxVersion:
        return "the driver is too old for this library's PTX";
    case cudaErrorInsufficientDriver:
        return "the driver is older than the CUDA runtime this library was built with";
    default:
        return "cannot query the kernels' attributes (see the last error)";
    }
}

extern "C" accel_status_t accel_cuda_kernels_check(int device, const char **reason_p) {
    cudaFuncAttributes attr;
    const char *call = "cudaGetDevice";
    int current = -1;
    cudaError_t err;

    err = cudaGetDevice(&current);
    if ((err == cudaSuccess) && (current != device)) {
        call = "cudaSetDevice";
        err = cudaSetDevice(device);
    }
    if (err == cudaSuccess) {
        call = "cudaFuncGetAttributes";
        err = cudaFuncGetAttributes(&attr, accel_cuda_probe_kernel);
    }
    if ((current >= 0) && (current != device)) {
        cudaSetDevice(current); /* the application's choice of device stays */
    }

    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: leave no error for the application */
        accel_set_error(call, cudaGetErrorName(err), (int)err);
        *reason_p = accel_cuda_kernels_reason(err);
        return (err == cudaErrorNoKernelImageForDevice) || (err == cudaErrorInvalidDeviceFunction)
                   ? ACCEL_ERR_UNSUPPORTED
                   : ACCEL_ERR_DEVICE;
    }

    accel_log(ACCEL_LOG_DEBUG, "cuda: probe kernel on device %d: binary sm_%d, ptx %d", device,
              attr.binaryVersion, attr.ptxVersion);
    *reason_p = "";
    return ACCEL_OK;
}

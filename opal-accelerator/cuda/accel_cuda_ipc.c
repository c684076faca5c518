/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CUDA backend: IPC export/import of device allocations between processes of
 * one node, and the PCI address of a device.
 *
 * Two kinds of handle, chosen by how the allocation was made:
 *  - legacy CUDA IPC (cuMemAlloc: CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE):
 *    cuIpcGetMemHandle / cuIpcOpenMemHandle;
 *  - VMM (cuMemCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
 *    requested): the exporter exports the allocation once as a file
 *    descriptor and keeps it open; the importer duplicates it from the
 *    exporter with pidfd_getfd (Linux 5.6, ptrace access to the exporter),
 *    imports it and maps it into a range of its own.
 * Memory of a stream-ordered pool (cuMemAllocAsync) is neither:
 * ACCEL_ERR_UNSUPPORTED.
 *
 * Either way the handle names the whole allocation (base from
 * CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) and the exported pointer's offset in
 * it.  Imports are cached per process by (pid, kind, exporter's buffer id and
 * base) with a reference count: the driver refuses to open one legacy handle
 * twice in a context, and a second mapping would waste address space.  A
 * handle of the importer's own process gives the allocation itself (legacy
 * IPC cannot open a handle in the process that made it).
 *
 * Stale handles: an exporter that died is refused (kill(pid, 0)); a legacy
 * handle of a freed allocation is left to the driver to refuse; an own handle
 * is checked against the allocation's buffer id.  A VMM handle of an
 * allocation freed since still maps the memory the exporter's descriptor
 * keeps alive until the exporter prunes it (at its next export, or close):
 * as with every CUDA IPC handle, the exporter must keep an allocation alive
 * while peers may import it.
 */
#define _GNU_SOURCE

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "accel_cuda.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The same numbers on every architecture (they postdate the unified table). */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* What a legacy handle carries in accel_ipc_handle_t.data. */
typedef struct {
    CUipcMemHandle ipc;
    uint64_t base; /* the exporter's address of the allocation */
} accel_cuda_ipc_legacy_t;

/* What a VMM handle carries. */
typedef struct {
    uint64_t base; /* the exporter's address of the allocation */
    int32_t fd;    /* the exporter's descriptor of the shareable handle */
} accel_cuda_ipc_vmm_t;

_Static_assert(sizeof(accel_cuda_ipc_legacy_t) <= ACCEL_IPC_DATA_SIZE,
               "legacy CUDA IPC handle does not fit accel_ipc_handle_t");
_Static_assert(sizeof(accel_cuda_ipc_vmm_t) <= ACCEL_IPC_DATA_SIZE,
               "VMM CUDA IPC handle does not fit accel_ipc_handle_t");

/* An allocation of another process (or our own) mapped here. */
typedef struct accel_cuda_ipc_import {
    struct accel_cuda_ipc_import *next;
    int32_t pid;
    uint32_t kind;
    uint64_t peer_buffer_id;
    uint64_t peer_base;
    CUdeviceptr base; /* where it is mapped here */
    size_t size;
    CUmemGenericAllocationHandle vmm; /* VMM: the imported handle, released at close */
    bool own;                         /* our own allocation: nothing mapped */
    unsigned refs;
} accel_cuda_ipc_import_t;

/* A VMM allocation exported: its descriptor stays open for importers. */
typedef struct accel_cuda_ipc_export {
    struct accel_cuda_ipc_export *next;
    CUdeviceptr base;
    uint64_t buffer_id;
    int fd;
} accel_cuda_ipc_export_t;

static struct {
    pthread_mutex_t lock; /* protects both lists */
    accel_cuda_ipc_import_t *imports;
    accel_cuda_ipc_export_t *exports;
} accel_cuda_ipc = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};

static accel_status_t accel_cuda_ipc_invalid(const char *call) {
    accel_set_error(call, "CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE);
    return ACCEL_ERR_INVALID;
}

/* A static name for an errno value, for accel_set_error(). */
static const char *accel_cuda_errno_name(int err) {
    switch (err) {
    case EPERM:
        return "EPERM";
    case ESRCH:
        return "ESRCH";
    case EBADF:
        return "EBADF";
    case ENOSYS:
        return "ENOSYS";
    case EMFILE:
        return "EMFILE";
    default:
        return "ERRNO";
    }
}

/* Whether the exporting process still exists (its memory is gone with it). */
static bool accel_cuda_ipc_pid_alive(pid_t pid) {
    /* EPERM: it exists, as another user's process. */
    return (kill(pid, 0) == 0) || (errno != ESRCH);
}

/* The exporter's current buffer id at base, 0 when nothing is allocated there. */
static uint64_t accel_cuda_ipc_buffer_id(CUdeviceptr base) {
    unsigned long long buffer_id = 0;

    if (accel_cuda_driver.cuPointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base) !=
        CUDA_SUCCESS) {
        return 0;
    }
    return buffer_id;
}

/* Close the descriptors of exported VMM allocations that are gone (their
 * buffer id at their base changed), or all of them.  Lock held. */
static void accel_cuda_ipc_exports_prune(bool all) {
    accel_cuda_ipc_export_t **link = &accel_cuda_ipc.exports;
    accel_cuda_ipc_export_t *exp;

    while ((exp = *link) != NULL) {
        if (all || (accel_cuda_ipc_buffer_id(exp->base) != exp->buffer_id)) {
            *link = exp->next;
            close(exp->fd);
            free(exp);
        } else {
            link = &exp->next;
        }
    }
}

/* The descriptor of a VMM allocation, exported once and kept.  Lock held. */
static accel_status_t accel_cuda_ipc_export_fd(CUmemGenericAllocationHandle vmm, CUdeviceptr base,
                                               uint64_t buffer_id, int *fd_p) {
    accel_cuda_ipc_export_t *exp;
    accel_status_t status;
    int fd = -1;

    accel_cuda_ipc_exports_prune(false);
    for (exp = accel_cuda_ipc.exports; exp != NULL; exp = exp->next) {
        if ((exp->base == base) && (exp->buffer_id == buffer_id)) {
            *fd_p = exp->fd;
            return ACCEL_OK;
        }
    }

    exp = malloc(sizeof(*exp));
    if (exp == NULL) {
        accel_set_error("cuMemExportToShareableHandle", "CUDA_ERROR_OUT_OF_MEMORY",
                        CUDA_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    /* Fails when the allocation was made without the POSIX fd handle type. */
    status = ACCEL_CUDADRV_FUNC(cuMemExportToShareableHandle, &fd, vmm,
                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (status != ACCEL_OK) {
        free(exp);
        return status;
    }
    exp->base = base;
    exp->buffer_id = buffer_id;
    exp->fd = fd;
    exp->next = accel_cuda_ipc.exports;
    accel_cuda_ipc.exports = exp;
    *fd_p = fd;
    return ACCEL_OK;
}

accel_status_t accel_cuda_ipc_export(const void *ptr, accel_ipc_handle_t *handle) {
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        CU_POINTER_ATTRIBUTE_BUFFER_ID,        CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    };
    CUdeviceptr dptr = (CUdeviceptr)(uintptr_t)ptr;
    unsigned int mem_type = 0;
    uint64_t is_managed = 0; /* the driver writes a boolean: keep the storage wide and zeroed */
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned long long buffer_id = 0;
    uint64_t legacy_capable = 0; /* a boolean too */
    void *data[] = {&mem_type, &is_managed, &base, &size, &buffer_id, &legacy_capable};
    CUmemGenericAllocationHandle vmm;
    accel_cuda_ipc_legacy_t legacy;
    accel_cuda_ipc_vmm_t vmm_data;
    accel_status_t status;
    CUresult result;
    int fd = -1;

    if ((handle == NULL) || (ptr == NULL)) {
        return accel_cuda_ipc_invalid("cuIpcGetMemHandle");
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }

    result = accel_cuda_driver.cuPointerGetAttributes(ACCEL_ARRAY_SIZE(attrs), attrs, data, dptr);
    if (result == CUDA_ERROR_INVALID_VALUE) {
        return accel_cuda_ipc_invalid("cuIpcGetMemHandle");
    }
    if (result != CUDA_SUCCESS) {
        return accel_cuda_result(result, "cuPointerGetAttributes");
    }
    if (is_managed != 0) {
        /* CUDA IPC does not share managed memory. */
        accel_set_error("cuIpcGetMemHandle", "CUDA_ERROR_NOT_SUPPORTED", CUDA_ERROR_NOT_SUPPORTED);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (mem_type != CU_MEMORYTYPE_DEVICE) {
        /* Host memory, pinned or not: nothing the device can share. */
        return accel_cuda_ipc_invalid("cuIpcGetMemHandle");
    }

    memset(handle, 0, sizeof(*handle));
    handle->buffer_id = buffer_id;
    handle->alloc_size = size;
    handle->offset = dptr - base;
    handle->pid = (int32_t)getpid();

    if (legacy_capable != 0) {
        memset(&legacy, 0, sizeof(legacy));
        status = ACCEL_CUDADRV_FUNC(cuIpcGetMemHandle, &legacy.ipc, base);
        if (status != ACCEL_OK) {
            return status;
        }
        legacy.base = base;
        handle->kind = ACCEL_CUDA_IPC_KIND_LEGACY;
        memcpy(handle->data, &legacy, sizeof(legacy));
        return ACCEL_OK;
    }

    /* Not for legacy IPC: made by cuMemCreate?  (Or by a memory pool, which
     * is not supported: the pool would have to be exported.) */
    if (accel_cuda_driver.cuMemRetainAllocationHandle(&vmm, (void *)(uintptr_t)base) ==
        CUDA_SUCCESS) {
        pthread_mutex_lock(&accel_cuda_ipc.lock);
        status = accel_cuda_ipc_export_fd(vmm, base, buffer_id, &fd);
        pthread_mutex_unlock(&accel_cuda_ipc.lock);
        /* The exported descriptor holds the allocation, not this reference. */
        accel_cuda_driver.cuMemRelease(vmm);
        if (status != ACCEL_OK) {
            return status;
        }
        memset(&vmm_data, 0, sizeof(vmm_data));
        vmm_data.base = base;
        vmm_data.fd = fd;
        handle->kind = ACCEL_CUDA_IPC_KIND_VMM_FD;
        memcpy(handle->data, &vmm_data, sizeof(vmm_data));
        return ACCEL_OK;
    }
    accel_log(ACCEL_LOG_ERROR_DETAIL,
              "cuda: 0x%" PRIxPTR " is neither legacy-IPC capable nor a cuMemCreate allocation",
              (uintptr_t)base);
    accel_set_error("cuIpcGetMemHandle", "CUDA_ERROR_NOT_SUPPORTED", CUDA_ERROR_NOT_SUPPORTED);
    return ACCEL_ERR_UNSUPPORTED;
}

/* Duplicate descriptor remote_fd of process pid into this process. */
static accel_status_t accel_cuda_ipc_getfd(pid_t pid, int remote_fd, int *fd_p) {
    int pidfd, fd, err;

    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        err = errno;
        accel_log(ACCEL_LOG_ERROR_DETAIL, "cuda: pidfd_open(%d): %s", (int)pid, strerror(err));
        accel_set_error("pidfd_open", accel_cuda_errno_name(err), err);
        return (err == ESRCH) ? ACCEL_ERR_INVALID : ACCEL_ERR_UNSUPPORTED;
    }
    fd = (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
    err = errno;
    close(pidfd);
    if (fd < 0) {
        if ((err == EPERM) || (err == ENOSYS)) {
            /* Needs ptrace access to the exporter: the same user and, under
             * Yama ptrace_scope >= 1, CAP_SYS_PTRACE or the exporter's consent
             * (prctl PR_SET_PTRACER); ENOSYS: kernel older than 5.6. */
            accel_log(ACCEL_LOG_INFO,
                      "cuda: cannot take descriptor %d of process %d (pidfd_getfd: %s): VMM IPC "
                      "needs ptrace access to the exporter (see "
                      "/proc/sys/kernel/yama/ptrace_scope) and Linux >= 5.6",
                      remote_fd, (int)pid, strerror(err));
        } else {
            accel_log(ACCEL_LOG_ERROR_DETAIL, "cuda: pidfd_getfd(%d, %d): %s", (int)pid, remote_fd,
                      strerror(err));
        }
        accel_set_error("pidfd_getfd", accel_cuda_errno_name(err), err);
        return ((err == EPERM) || (err == ENOSYS)) ? ACCEL_ERR_UNSUPPORTED : ACCEL_ERR_INVALID;
    }
    *fd_p = fd;
    return ACCEL_OK;
}

/* Import a VMM allocation of another process and map it here, read-write
 * for the current device. */
static accel_status_t accel_cuda_ipc_vmm_map(const accel_ipc_handle_t *handle,
                                             const accel_cuda_ipc_vmm_t *data,
                                             CUmemGenericAllocationHandle *vmm_p,
                                             CUdeviceptr *base_p) {
    CUmemGenericAllocationHandle vmm;
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    CUdeviceptr base = 0;
    size_t granularity = 0;
    accel_status_t status;
    CUdevice device;
    int fd = -1;

    status = ACCEL_CUDADRV_FUNC(cuCtxGetDevice, &device);
    if (status != ACCEL_OK) {
        return status;
    }
    status = accel_cuda_ipc_getfd((pid_t)handle->pid, data->fd, &fd);
    if (status != ACCEL_OK) {
        return status;
    }
    status = ACCEL_CUDADRV_FUNC(cuMemImportFromShareableHandle, &vmm, (void *)(uintptr_t)fd,
                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd); /* the imported handle holds the allocation now */
    if (status != ACCEL_OK) {
        return status;
    }

    memset(&prop, 0, sizeof(prop));
    status = ACCEL_CUDADRV_FUNC(cuMemGetAllocationPropertiesFromHandle, &prop, vmm);
    if (status != ACCEL_OK) {
        goto err_release;
    }
    status = ACCEL_CUDADRV_FUNC(cuMemGetAllocationGranularity, &granularity, &prop,
                                CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (status != ACCEL_OK) {
        goto err_release;
    }
    if ((granularity == 0) || (handle->alloc_size % granularity != 0)) {
        /* Not a whole allocation: cuMemMap would refuse it. */
        accel_log(ACCEL_LOG_ERROR_DETAIL,
                  "cuda: VMM handle of %" PRIu64 " bytes, not a multiple of the granularity %zu",
                  handle->alloc_size, granularity);
        status = accel_cuda_ipc_invalid("cuMemMap");
        goto err_release;
    }

    status = ACCEL_CUDADRV_FUNC(cuMemAddressReserve, &base, handle->alloc_size, granularity, 0, 0);
    if (status != ACCEL_OK) {
        goto err_release;
    }
    status = ACCEL_CUDADRV_FUNC(cuMemMap, base, handle->alloc_size, 0, vmm, 0);
    if (status != ACCEL_OK) {
        goto err_free_va;
    }
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = (int)device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    status = ACCEL_CUDADRV_FUNC(cuMemSetAccess, base, handle->alloc_size, &access, 1);
    if (status != ACCEL_OK) {
        goto err_unmap;
    }
    *vmm_p = vmm;
    *base_p = base;
    return ACCEL_OK;

err_unmap:
    accel_cuda_driver.cuMemUnmap(base, handle->alloc_size);
err_free_va:
    accel_cuda_driver.cuMemAddressFree(base, handle->alloc_size);
err_release:
    accel_cuda_driver.cuMemRelease(vmm);
    return status;
}

/* Map what the handle names (not cached yet).  Lock held. */
static accel_status_t accel_cuda_ipc_map(const accel_ipc_handle_t *handle,
                                         accel_cuda_ipc_import_t *imp) {
    accel_cuda_ipc_legacy_t legacy;
    accel_cuda_ipc_vmm_t vmm_data;

    if (imp->own) {
        /* Legacy IPC cannot open a handle in its own process: the allocation
         * itself, if it still is the one exported. */
        if (accel_cuda_ipc_buffer_id((CUdeviceptr)imp->peer_base) != handle->buffer_id) {
            accel_log(ACCEL_LOG_ERROR_DETAIL,
                      "cuda: own IPC handle of id %" PRIu64 " names no live allocation",
                      handle->buffer_id);
            return accel_cuda_ipc_invalid("cuIpcOpenMemHandle");
        }
        imp->base = (CUdeviceptr)imp->peer_base;
        return ACCEL_OK;
    }
    if (handle->kind == ACCEL_CUDA_IPC_KIND_VMM_FD) {
        memcpy(&vmm_data, handle->data, sizeof(vmm_data));
        return accel_cuda_ipc_vmm_map(handle, &vmm_data, &imp->vmm, &imp->base);
    }
    memcpy(&legacy, handle->data, sizeof(legacy));
    return ACCEL_CUDADRV_FUNC(cuIpcOpenMemHandle, &imp->base, legacy.ipc,
                              CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
}

accel_status_t accel_cuda_ipc_import(const accel_ipc_handle_t *handle, void **base_p) {
    const char *call = "cuIpcOpenMemHandle";
    accel_cuda_ipc_import_t *imp;
    accel_status_t status;
    uint64_t peer_base;

    if ((handle == NULL) || (base_p == NULL)) {
        return accel_cuda_ipc_invalid(call);
    }
    if (handle->kind == ACCEL_CUDA_IPC_KIND_VMM_FD) {
        call = "cuMemImportFromShareableHandle";
    } else if (handle->kind != ACCEL_CUDA_IPC_KIND_LEGACY) {
        return accel_cuda_ipc_invalid(call); /* another backend's handle, or garbage */
    }
    memcpy(&peer_base,
           handle->data + ((handle->kind == ACCEL_CUDA_IPC_KIND_LEGACY)
                               ? offsetof(accel_cuda_ipc_legacy_t, base)
                               : offsetof(accel_cuda_ipc_vmm_t, base)),
           sizeof(peer_base));
    if ((handle->pid <= 0) || (handle->buffer_id == 0) || (handle->alloc_size == 0) ||
        (handle->offset >= handle->alloc_size) || (peer_base == 0)) {
        return accel_cuda_ipc_invalid(call);
    }
    if (!accel_cuda_ipc_pid_alive((pid_t)handle->pid)) {
        accel_log(ACCEL_LOG_ERROR_DETAIL, "cuda: IPC handle of process %d, which is gone",
                  (int)handle->pid);
        return accel_cuda_ipc_invalid(call);
    }
    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }

    pthread_mutex_lock(&accel_cuda_ipc.lock);
    for (imp = accel_cuda_ipc.imports; imp != NULL; imp = imp->next) {
        if ((imp->pid == handle->pid) && (imp->kind == handle->kind) &&
            (imp->peer_buffer_id == handle->buffer_id) && (imp->peer_base == peer_base)) {
            ++imp->refs;
            *base_p = (void *)(uintptr_t)imp->base;
            pthread_mutex_unlock(&accel_cuda_ipc.lock);
            return ACCEL_OK;
        }
    }

    imp = calloc(1, sizeof(*imp));
    if (imp == NULL) {
        pthread_mutex_unlock(&accel_cuda_ipc.lock);
        accel_set_error(call, "CUDA_ERROR_OUT_OF_MEMORY", CUDA_ERROR_OUT_OF_MEMORY);
        return ACCEL_ERR_NO_MEMORY;
    }
    imp->pid = handle->pid;
    imp->kind = handle->kind;
    imp->peer_buffer_id = handle->buffer_id;
    imp->peer_base = peer_base;
    imp->size = handle->alloc_size;
    imp->own = (handle->pid == (int32_t)getpid());
    imp->refs = 1;
    /* Mapped under the lock: two threads importing one handle map it once. */
    status = accel_cuda_ipc_map(handle, imp);
    if (status != ACCEL_OK) {
        pthread_mutex_unlock(&accel_cuda_ipc.lock);
        free(imp);
        return status;
    }
    imp->next = accel_cuda_ipc.imports;
    accel_cuda_ipc.imports = imp;
    pthread_mutex_unlock(&accel_cuda_ipc.lock);

    accel_log(ACCEL_LOG_DEBUG,
              "cuda: imported %" PRIu64 " bytes of process %d (id %" PRIu64 ") at 0x%" PRIxPTR,
              handle->alloc_size, (int)handle->pid, handle->buffer_id, (uintptr_t)imp->base);
    *base_p = (void *)(uintptr_t)imp->base;
    return ACCEL_OK;
}

/* Unmap an import whose last reference went.  Lock not needed: it is unlinked. */
static accel_status_t accel_cuda_ipc_unmap(accel_cuda_ipc_import_t *imp) {
    accel_status_t status;

    if (imp->own) {
        return ACCEL_OK;
    }
    /* The range may come back as another allocation: forget it first. */
    accel_cuda_forget_range((uintptr_t)imp->base, imp->size);
    if (imp->kind == ACCEL_CUDA_IPC_KIND_LEGACY) {
        return ACCEL_CUDADRV_FUNC(cuIpcCloseMemHandle, imp->base);
    }
    status = ACCEL_CUDADRV_FUNC(cuMemUnmap, imp->base, imp->size);
    if (status == ACCEL_OK) {
        status = ACCEL_CUDADRV_FUNC(cuMemAddressFree, imp->base, imp->size);
    }
    /* Released whatever happened above: the handle is ours alone. */
    accel_cuda_driver.cuMemRelease(imp->vmm);
    return status;
}

accel_status_t accel_cuda_ipc_close(void *base) {
    accel_cuda_ipc_import_t **link, *imp;
    accel_status_t status;

    status = accel_cuda_ctx_ensure();
    if (status != ACCEL_OK) {
        return status;
    }
    pthread_mutex_lock(&accel_cuda_ipc.lock);
    for (link = &accel_cuda_ipc.imports; (imp = *link) != NULL; link = &imp->next) {
        if (imp->base == (CUdeviceptr)(uintptr_t)base) {
            break;
        }
    }
    if (imp == NULL) {
        pthread_mutex_unlock(&accel_cuda_ipc.lock);
        return accel_cuda_ipc_invalid("cuIpcCloseMemHandle");
    }
    if (--imp->refs > 0) {
        pthread_mutex_unlock(&accel_cuda_ipc.lock);
        return ACCEL_OK;
    }
    *link = imp->next;
    pthread_mutex_unlock(&accel_cuda_ipc.lock);

    status = accel_cuda_ipc_unmap(imp);
    free(imp);
    return status;
}

void accel_cuda_ipc_cleanup(void) {
    accel_cuda_ipc_import_t *imp, *next;
    bool can_unmap;
    size_t left = 0;

    pthread_mutex_lock(&accel_cuda_ipc.lock);
    imp = accel_cuda_ipc.imports;
    accel_cuda_ipc.imports = NULL;
    accel_cuda_ipc_exports_prune(true);
    pthread_mutex_unlock(&accel_cuda_ipc.lock);

    /* Without a context to unmap in, the mappings go at process exit. */
    can_unmap = (imp == NULL) || (accel_cuda_ctx_ensure() == ACCEL_OK);
    for (; imp != NULL; imp = next) {
        next = imp->next;
        if (can_unmap) {
            accel_cuda_ipc_unmap(imp);
        }
        free(imp);
        ++left;
    }
    if (left > 0) {
        accel_log(ACCEL_LOG_INFO, "cuda: %zu IPC mapping(s) still open at finalize, unmapped",
                  left);
    }
}

accel_status_t accel_cuda_device_pci_bus_id(int dev, char *buf, size_t len) {
    accel_status_t status;
    CUdevice device;

    /* "0000:3b:00.0" and its terminator. */
    if ((buf == NULL) || (len < 13) || (len > INT_MAX)) {
        return accel_cuda_ipc_invalid("cuDeviceGetPCIBusId");
    }
    status = ACCEL_CUDADRV_FUNC(cuDeviceGet, &device, dev);
    if (status != ACCEL_OK) {
        return status;
    }
    status = ACCEL_CUDADRV_FUNC(cuDeviceGetPCIBusId, buf, (int)len, device);
    if (status != ACCEL_OK) {
        return status;
    }
    /* Lower case, as sysfs and hwloc spell it (the driver writes upper case). */
    for (char *p = buf; *p != '\0'; ++p) {
        *p = (char)tolower((unsigned char)*p);
    }
    return ACCEL_OK;
}

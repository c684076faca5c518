/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test-only controls of the emulated backend.
 *
 * The emulated backend hands out "device" memory from a window of the address
 * space that the host cannot touch (PROT_NONE: a stray host access faults as
 * it would on real device memory); its own copies go through a second,
 * readable mapping of the same pages.  Its state lives in a header page at a
 * fixed address, so every copy of this code in a process (the component's
 * and a test program's) shares one allocator, one set of counters and one
 * fault plan.
 *
 * IPC (ops->ipc_export / ipc_import / ipc_close): DEVICE and MANAGED
 * allocations can be mapped by other processes of the node (the importer
 * opens the exporter's memory file through /proc/<pid>/fd, which needs the
 * same user).  Imported memory lands in the device window, so it is
 * classified as it is in the exporter (DEVICE stays PROT_NONE to the host).
 * A handle of an allocation freed since (or of a process gone) fails to
 * import with ACCEL_ERR_INVALID.  device_pci_bus_id gives "0000:00:00.0" for
 * the one emulated device, or ACCEL_EMULATED_PCI_BUS_ID of the environment at
 * open (a real device's address puts the emulated GPU in hwloc's topology).
 *
 * Streams are asynchronous (a worker thread per stream runs its queue in
 * order; see accel_emulated.c): what a stream writes is there only after a
 * stream_synchronize or a completed event, as on a GPU.  ACCEL_EMULATED_SYNC=1
 * in the environment, read when the backend opens, runs every operation in
 * the caller before it returns instead (debugging).  ACCEL_EMULATED_LANES=apart
 * runs a node collective's blocks on threads of their own, the lower half of
 * them pausing before each read of a peer's data, so that blocks run steps
 * apart as a GPU may schedule them (by default they run one after another).
 */
#ifndef ACCEL_EMULATED_H
#define ACCEL_EMULATED_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ACCEL_EMULATED_FAULT_MEMCPY = 0,    /* memcpy and memcpy_async */
    ACCEL_EMULATED_FAULT_PINNED_ALLOC,  /* mem_alloc(ACCEL_MEM_HOST_PINNED) */
    ACCEL_EMULATED_FAULT_DEVICE_ALLOC,  /* mem_alloc(ACCEL_MEM_DEVICE / MANAGED) */
    ACCEL_EMULATED_FAULT_IPC_EXPORT,    /* ipc_export */
    ACCEL_EMULATED_FAULT_IPC_IMPORT,    /* ipc_import (a second import of a mapping too) */
    ACCEL_EMULATED_FAULT_REDUCE,        /* reduce (a failed kernel launch) */
    ACCEL_EMULATED_FAULT_STREAM_CREATE, /* stream_create */
    ACCEL_EMULATED_FAULT_EXEC,          /* a queued copy or reduce, while it runs: reported by
                                         * the stream's next synchronize, or the synchronize /
                                         * query of an event recorded after it */
    ACCEL_EMULATED_FAULT_HOST_FUNC,     /* stream_host_func (the call queuing it) */
    ACCEL_EMULATED_FAULT_KINDS
} accel_emulated_fault_t;

/* Make the n-th next operation of that kind fail (n = 1: the very next one),
 * as a driver error "EMULATED_ERROR_INJECTED"; n = 0 clears the plan.  With
 * repeat, every operation of that kind from the n-th on fails until cleared. */
ACCEL_API void accel_emulated_inject_fault(accel_emulated_fault_t what, int n, bool repeat);

/* Allocations of each type currently live (for leak checks). */
ACCEL_API size_t accel_emulated_live_allocations(accel_mem_type_t type);

/* Imports not closed yet, process wide: one per (exporting process,
 * allocation) imported, however often, own allocations included (for leak
 * checks). */
ACCEL_API size_t accel_emulated_live_ipc_mappings(void);

/* Streams and events currently live, process wide (for leak checks). */
ACCEL_API size_t accel_emulated_live_streams(void);
ACCEL_API size_t accel_emulated_live_events(void);

/* Number of memcpy / memcpy_async calls and bytes so far, process wide. */
ACCEL_API uint64_t accel_emulated_copy_count(void);
ACCEL_API uint64_t accel_emulated_copy_bytes(void);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_EMULATED_H */

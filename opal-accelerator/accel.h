/*
 * opal-accelerator: the device abstraction used by coll/gpu.
 *
 * Classify a pointer, allocate device / managed / pinned host memory, copy,
 * order work on streams and wait on events.  The component and the
 * algorithms see only this header; which backend (cuda, emulated) serves
 * them is decided once by accel_init().
 *
 * Every symbol here is internal to the DSO (hidden visibility).  Status codes
 * are accel_status_t; the function that first sees an error records it in the
 * calling thread's accel_last_error() (driver call and error name), callers
 * only pass the status up.
 */
#ifndef ACCEL_H
#define ACCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_API __attribute__((visibility("hidden")))

typedef enum {
    ACCEL_OK = 0,
    ACCEL_ERR_NO_DRIVER,   /* the driver library could not be loaded */
    ACCEL_ERR_NO_DEVICE,   /* driver loaded, but no usable device */
    ACCEL_ERR_NO_MEMORY,   /* an allocation failed */
    ACCEL_ERR_INVALID,     /* bad argument (unknown pointer, zero length ...) */
    ACCEL_ERR_UNSUPPORTED, /* the backend cannot do this */
    ACCEL_ERR_DEVICE,      /* the driver returned an error: see accel_last_error() */
} accel_status_t;

typedef enum {
    ACCEL_MEM_HOST = 0,    /* pageable host memory, or memory the accelerator does not know */
    ACCEL_MEM_HOST_PINNED, /* host memory page-locked through the accelerator */
    ACCEL_MEM_MANAGED,     /* unified (managed) memory: accessible from host and device */
    ACCEL_MEM_DEVICE,      /* device memory: the host must not touch it */
} accel_mem_type_t;

/* What the backend knows of the allocation a pointer falls in. */
typedef struct {
    accel_mem_type_t type;
    int device;         /* device ordinal for DEVICE and MANAGED, -1 otherwise */
    uintptr_t base;     /* start of the allocation, 0 for plain host memory */
    size_t size;        /* size of the allocation, 0 for plain host memory */
    uint64_t buffer_id; /* unique per allocation for the life of the process, 0 if none */
} accel_mem_attr_t;

typedef enum {
    ACCEL_BACKEND_AUTO = 0, /* cuda when a driver and a device are present, else none */
    ACCEL_BACKEND_CUDA,
    ACCEL_BACKEND_EMULATED, /* CPU memory that behaves as device memory: for tests */
} accel_backend_kind_t;

typedef struct accel_stream *accel_stream_h;
typedef struct accel_event *accel_event_h;

/* The error that made the last call of this thread fail. */
typedef struct {
    const char *call;  /* the driver call, e.g. "cuMemcpyDtoHAsync" */
    const char *error; /* its error name, e.g. "CUDA_ERROR_ILLEGAL_ADDRESS" */
    int code;          /* the driver's error code */
} accel_error_t;

/* Operations of one backend. */
typedef struct accel_ops {
    const char *name; /* "cuda", "emulated" */

    /* Every DEVICE or MANAGED allocation of this backend lies in
     * [device_va_lo, device_va_lo + device_va_span): a pointer outside is host
     * memory without asking mem_query.  {0, UINTPTR_MAX} when the backend
     * cannot bound its allocations (CUDA). */
    uintptr_t device_va_lo;
    uintptr_t device_va_span;

    /* Classify ptr.  Host memory the backend does not know is ACCEL_MEM_HOST and
     * ACCEL_OK: classification never fails for a host pointer. */
    accel_status_t (*mem_query)(const void *ptr, accel_mem_attr_t *attr_p);

    /* Allocate len bytes of the given type (DEVICE, MANAGED or HOST_PINNED) on the
     * current device; free what mem_alloc returned. */
    accel_status_t (*mem_alloc)(accel_mem_type_t type, size_t len, void **ptr_p);
    accel_status_t (*mem_free)(void *ptr);

    /* Copies between any two of host, pinned, managed and device memory. */
    accel_status_t (*memcpy)(void *dst, const void *src, size_t len);
    accel_status_t (*memcpy_async)(void *dst, const void *src, size_t len, accel_stream_h stream);

    accel_status_t (*stream_create)(accel_stream_h *stream_p);
    accel_status_t (*stream_destroy)(accel_stream_h stream);
    accel_status_t (*stream_synchronize)(accel_stream_h stream);

    accel_status_t (*event_create)(accel_event_h *event_p);
    accel_status_t (*event_destroy)(accel_event_h event);
    accel_status_t (*event_record)(accel_event_h event, accel_stream_h stream);
    accel_status_t (*event_synchronize)(accel_event_h event);

    /* Number of devices the backend sees. */
    int (*device_count)(void);
} accel_ops_t;

/* Log sink: level 1 says what was chosen and why, higher levels more. */
typedef void (*accel_log_func_t)(int level, const char *msg);

/*
 * Choose and initialize a backend.  On failure *reason_p (static string) says
 * why, e.g. "libcuda.so.1 not found" or "no CUDA device"; ACCEL_BACKEND_AUTO
 * never selects the emulated backend.  Reference counted: every successful
 * accel_init() is paired with an accel_finalize().
 */
ACCEL_API accel_status_t accel_init(accel_backend_kind_t kind, const accel_ops_t **ops_p,
                                    const char **reason_p);
ACCEL_API void accel_finalize(void);

ACCEL_API void accel_set_log(accel_log_func_t log, int verbosity);
ACCEL_API const accel_error_t *accel_last_error(void);
ACCEL_API const char *accel_status_string(accel_status_t status);
ACCEL_API const char *accel_mem_type_string(accel_mem_type_t type);

/* False when ptr is certainly host memory: outside every range the backend
 * allocates device memory from.  Two instructions on the hot path. */
static inline bool accel_may_be_device(const accel_ops_t *ops, const void *ptr) {
    return (uintptr_t)ptr - ops->device_va_lo < ops->device_va_span;
}

/* True when the host can read and write the memory directly. */
static inline bool accel_mem_type_is_host_accessible(accel_mem_type_t type) {
    return type != ACCEL_MEM_DEVICE;
}

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_H */

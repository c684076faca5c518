/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory of every kind a coll/gpu MPI test passes to MPI (host, pinned, managed, device)
 * through the project's accelerator layer, with write/read helpers that work on device memory;
 * checked buffers (memory of one kind plus a host image of what it must hold, compared byte for
 * byte); and simple int buffers.
 */
#ifndef TEST_BUFFERS_H
#define TEST_BUFFERS_H

#include <stdbool.h>
#include <stddef.h>

#include "accel.h"
#include "accel_emulated.h"
#include "test_types.h"

/* ------------------------------------------------------------------------------------------ */
/* The accelerator behind pinned, managed and device memory                                   */
/* ------------------------------------------------------------------------------------------ */

/* Accelerator init usable before MPI_Init (test_faults injects faults before MPI_Init). */
int tu_accel_init(accel_backend_kind_t backend, const char **reason_p);
extern const accel_ops_t *tu_accel;           /* NULL until initialized */
extern accel_backend_kind_t tu_accel_backend; /* the backend tu_accel belongs to */

/* ------------------------------------------------------------------------------------------ */
/* Memory kinds                                                                               */
/* ------------------------------------------------------------------------------------------ */

#define TU_MAX_KINDS 16

typedef enum {
    TU_MEM_HOST = 0, /* malloc: what every host path must take straight through */
    TU_MEM_PINNED,   /* page-locked host memory from the accelerator: still host memory */
    TU_MEM_MANAGED,  /* unified memory: the component may stage it or pass it through */
    TU_MEM_DEVICE,   /* device memory: PROT_NONE to the host, must be staged */
    TU_MEM_NUM
} tu_mem_t;

/* A buffer kind of the command line: the memory of send-side and of receive-side buffers.
 * "mixed" expands into host>device and device>host. */
typedef struct {
    char name[32];
    tu_mem_t send;
    tu_mem_t recv;
} tu_kind_t;

const char *tu_mem_name(tu_mem_t mem);
/* Case-insensitive "host", "pinned", "managed" or "device"; -1 if unknown. */
int tu_mem_from_name(const char *name);
/* Sets *kind to send > recv, named "send" when both are the same, else "send>recv". */
void tu_kind_set(tu_kind_t *kind, tu_mem_t send, tu_mem_t recv);

/* Raw allocations of any kind (size may be 0: a small allocation is made so the pointer is a
 * real pointer of that kind). */
int tu_mem_alloc(tu_mem_t mem, size_t size, void **ptr_p);
void tu_mem_free(tu_mem_t mem, void *ptr);
/* Host <-> memory of any kind; device memory goes through the accelerator's memcpy. */
int tu_mem_write(tu_mem_t mem, void *dst, const void *host_src, size_t len);
int tu_mem_read(tu_mem_t mem, void *host_dst, const void *src, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Checked buffers: memory of one kind plus a host image of what it must hold                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    tu_mem_t mem;
    const tu_type_t *type;
    size_t nelems;
    size_t size;          /* bytes allocated: span of nelems + guard */
    char *alloc;          /* what tu_mem_alloc returned; the MPI buffer address is alloc */
    unsigned char *image; /* expected content, byte for byte */
    unsigned char *care;  /* 1 where the content is defined */
} tu_buf_t;

/* Allocates and sets the image to a position-dependent sentinel (holes, gaps and the guard
 * after the span keep it). */
int tu_buf_init(tu_buf_t *buf, tu_mem_t mem, const tu_type_t *type, size_t nelems);
void tu_buf_free(tu_buf_t *buf);
void tu_buf_put(tu_buf_t *buf, size_t first, size_t count, const void *packed);
void tu_buf_dont_care(tu_buf_t *buf, size_t first, size_t count);
int tu_buf_upload(const tu_buf_t *buf);
/* Reads the memory back and compares it with the image; reports the first mismatches
 * (rank, element, value index, got, expected; or the byte of a hole).  Returns the number of
 * mismatching bytes (0: good), or -1 if it could not be read. */
long tu_buf_verify(const tu_buf_t *buf, const char *what);

/* ------------------------------------------------------------------------------------------ */
/* Simple int buffers                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Helpers for simple tests: allocate `count` MPI_INT in `mem` filled with `value + index`. */
int tu_int_buffer_create(tu_mem_t mem, size_t count, int value, void **ptr_p);
/* Checks `count` ints equal expected + index; returns mismatches (reports the first). */
long tu_int_buffer_check(tu_mem_t mem, const void *ptr, size_t count, int expected,
                         const char *what);

#endif /* TEST_BUFFERS_H */

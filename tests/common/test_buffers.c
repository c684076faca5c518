/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory of every kind, checked buffers and int buffers of the coll/gpu MPI tests: see
 * test_buffers.h.
 */
/* strcasecmp: POSIX.1-2008, also under -std=c11 */
#define _POSIX_C_SOURCE 200809L

#include "test_buffers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "test_report.h"

const accel_ops_t *tu_accel;
accel_backend_kind_t tu_accel_backend = ACCEL_BACKEND_EMULATED;

/* Bytes after the span of every checked buffer: an overrun shows up there. */
#define TU_GUARD_BYTES 64
/* Report limit: enough to diagnose, not enough to drown a CI log. */
#define TU_MAX_MISMATCHES_PER_BUFFER 4

/* ------------------------------------------------------------------------------------------ */
/* Accelerator                                                                                */
/* ------------------------------------------------------------------------------------------ */

int tu_accel_init(accel_backend_kind_t backend, const char **reason_p) {
    const char *reason = NULL;
    if (NULL != tu_accel) {
        return 0;
    }
    if (ACCEL_OK != accel_init(backend, &tu_accel, &reason)) {
        tu_accel = NULL;
        *reason_p = NULL != reason ? reason : "accelerator initialization failed";
        return -1;
    }
    tu_accel_backend = backend;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static const char *const tu_mem_names[TU_MEM_NUM] = {"host", "pinned", "managed", "device"};

const char *tu_mem_name(tu_mem_t mem) { return mem < TU_MEM_NUM ? tu_mem_names[mem] : "?"; }

int tu_mem_from_name(const char *name) {
    for (int mem = 0; mem < TU_MEM_NUM; mem++) {
        if (0 == strcasecmp(name, tu_mem_names[mem])) {
            return mem;
        }
    }
    return -1;
}

void tu_kind_set(tu_kind_t *kind, tu_mem_t send, tu_mem_t recv) {
    kind->send = send;
    kind->recv = recv;
    if (send == recv) {
        snprintf(kind->name, sizeof(kind->name), "%s", tu_mem_name(send));
    } else {
        snprintf(kind->name, sizeof(kind->name), "%s>%s", tu_mem_name(send), tu_mem_name(recv));
    }
}

static accel_mem_type_t tu_mem_accel_type(tu_mem_t mem) {
    switch (mem) {
    case TU_MEM_PINNED:
        return ACCEL_MEM_HOST_PINNED;
    case TU_MEM_MANAGED:
        return ACCEL_MEM_MANAGED;
    case TU_MEM_DEVICE:
        return ACCEL_MEM_DEVICE;
    default:
        return ACCEL_MEM_HOST;
    }
}

int tu_mem_alloc(tu_mem_t mem, size_t size, void **ptr_p) {
    accel_status_t status;

    /* Zero-sized buffers still get real memory of their kind: a count-0 call on device
     * memory must see a device pointer. */
    if (size < 64) {
        size = 64;
    }
    if (TU_MEM_HOST == mem) {
        *ptr_p = malloc(size);
        return NULL == *ptr_p ? -1 : 0;
    }
    if (NULL == tu_accel) {
        fprintf(stderr, "[rank %d] %s memory needs the accelerator\n", tu_world_rank,
                tu_mem_name(mem));
        return -1;
    }
    status = tu_accel->mem_alloc(tu_mem_accel_type(mem), size, ptr_p);
    if (ACCEL_OK != status) {
        fprintf(stderr, "[rank %d] mem_alloc(%s, %zu): %s\n", tu_world_rank, tu_mem_name(mem), size,
                accel_status_string(status));
        return -1;
    }
    return 0;
}

void tu_mem_free(tu_mem_t mem, void *ptr) {
    if (NULL == ptr) {
        return;
    }
    if (TU_MEM_HOST == mem) {
        free(ptr);
    } else if (NULL != tu_accel) {
        tu_accel->mem_free(ptr);
    }
}

/* Host <-> memory of kind mem (either side): device memory through the accelerator. */
static int tu_mem_copy(tu_mem_t mem, void *dst, const void *src, size_t len) {
    if (0 == len) {
        return 0;
    }
    if (TU_MEM_DEVICE != mem) {
        memcpy(dst, src, len);
        return 0;
    }
    return ACCEL_OK == tu_accel->memcpy(dst, src, len) ? 0 : -1;
}

int tu_mem_write(tu_mem_t mem, void *dst, const void *host_src, size_t len) {
    return tu_mem_copy(mem, dst, host_src, len);
}

int tu_mem_read(tu_mem_t mem, void *host_dst, const void *src, size_t len) {
    return tu_mem_copy(mem, host_dst, src, len);
}

/* ------------------------------------------------------------------------------------------ */
/* Checked buffers                                                                            */
/* ------------------------------------------------------------------------------------------ */

static unsigned char tu_sentinel(size_t offset) {
    /* position dependent: a hole copied to the wrong place does not look right */
    return (unsigned char)(0xA5 ^ (offset * 7));
}

int tu_buf_init(tu_buf_t *buf, tu_mem_t mem, const tu_type_t *type, size_t nelems) {
    memset(buf, 0, sizeof(*buf));
    buf->mem = mem;
    buf->type = type;
    buf->nelems = nelems;
    buf->size = tu_type_span(type, nelems) + TU_GUARD_BYTES;
    buf->image = malloc(buf->size);
    buf->care = malloc(buf->size);
    if (NULL == buf->image || NULL == buf->care ||
        0 != tu_mem_alloc(mem, buf->size, (void **)&buf->alloc)) {
        free(buf->image);
        free(buf->care);
        return -1;
    }
    for (size_t i = 0; i < buf->size; i++) {
        buf->image[i] = tu_sentinel(i);
    }
    memset(buf->care, 1, buf->size);
    return 0;
}

void tu_buf_free(tu_buf_t *buf) {
    if (NULL != buf->alloc) {
        tu_mem_free(buf->mem, buf->alloc);
    }
    free(buf->image);
    free(buf->care);
    memset(buf, 0, sizeof(*buf));
}

void tu_buf_put(tu_buf_t *buf, size_t first, size_t count, const void *packed) {
    const tu_type_t *t = buf->type;
    const unsigned char *src = packed;
    for (size_t e = 0; e < count; e++) {
        for (int v = 0; v < t->nvals; v++) {
            memcpy(buf->image + (first + e) * t->extent + t->val_offset[v],
                   src + (e * t->nvals + v) * t->base_size, t->base_size);
        }
    }
}

void tu_buf_dont_care(tu_buf_t *buf, size_t first, size_t count) {
    const tu_type_t *t = buf->type;
    for (size_t e = first; e < first + count; e++) {
        for (int v = 0; v < t->nvals; v++) {
            memset(buf->care + e * t->extent + t->val_offset[v], 0, t->base_size);
        }
    }
}

int tu_buf_upload(const tu_buf_t *buf) {
    return tu_mem_write(buf->mem, buf->alloc, buf->image, buf->size);
}

static void tu_format_value(tu_base_t base, const unsigned char *p, char *out, size_t len) {
    switch (base) {
    case TU_BASE_INT8:
        snprintf(out, len, "%d", (int)*(const int8_t *)p);
        break;
    case TU_BASE_UINT8:
        snprintf(out, len, "%u", (unsigned)*p);
        break;
    case TU_BASE_INT32: {
        int32_t x;
        memcpy(&x, p, 4);
        snprintf(out, len, "%d", (int)x);
        break;
    }
    case TU_BASE_INT64: {
        int64_t x;
        memcpy(&x, p, 8);
        snprintf(out, len, "%lld", (long long)x);
        break;
    }
    case TU_BASE_FLOAT: {
        float x;
        memcpy(&x, p, 4);
        snprintf(out, len, "%.9g", x);
        break;
    }
    case TU_BASE_DOUBLE: {
        double x;
        memcpy(&x, p, 8);
        snprintf(out, len, "%.17g", x);
        break;
    }
    }
}

/* Which value of which element the byte at `offset` belongs to; false for holes, gaps and
 * the guard. */
static bool tu_buf_locate(const tu_buf_t *buf, size_t offset, size_t *elem_p, int *val_p) {
    const tu_type_t *t = buf->type;
    size_t elem = offset / (size_t)t->extent, within = offset % (size_t)t->extent;
    if (offset >= tu_type_span(t, buf->nelems) || elem >= buf->nelems) {
        return false;
    }
    for (int v = 0; v < t->nvals; v++) {
        if (within >= t->val_offset[v] && within < t->val_offset[v] + t->base_size) {
            *elem_p = elem;
            *val_p = v;
            return true;
        }
    }
    return false;
}

long tu_buf_verify(const tu_buf_t *buf, const char *what) {
    unsigned char *got = malloc(buf->size);
    long bad = 0;
    int reported = 0;
    size_t span = tu_type_span(buf->type, buf->nelems);

    if (NULL == got || 0 != tu_mem_read(buf->mem, got, buf->alloc, buf->size)) {
        tu_fail("%s: cannot read the %s buffer back", what, tu_mem_name(buf->mem));
        free(got);
        return -1;
    }
    for (size_t i = 0; i < buf->size; i++) {
        size_t elem;
        int val;
        if (!buf->care[i] || got[i] == buf->image[i]) {
            continue;
        }
        if (tu_buf_locate(buf, i, &elem, &val)) {
            /* a whole value: compare floats by value (so -0 == 0), report once */
            size_t start = elem * buf->type->extent + buf->type->val_offset[val];
            size_t end = start + buf->type->base_size;
            bool equal = false;
            if (TU_BASE_FLOAT == buf->type->base) {
                float x, y;
                memcpy(&x, got + start, 4);
                memcpy(&y, buf->image + start, 4);
                equal = x == y;
            } else if (TU_BASE_DOUBLE == buf->type->base) {
                double x, y;
                memcpy(&x, got + start, 8);
                memcpy(&y, buf->image + start, 8);
                equal = x == y;
            }
            if (!equal) {
                bad++;
                if (reported++ < TU_MAX_MISMATCHES_PER_BUFFER) {
                    char g[64], e[64];
                    tu_format_value(buf->type->base, got + start, g, sizeof(g));
                    tu_format_value(buf->type->base, buf->image + start, e, sizeof(e));
                    if (buf->type->nvals > 1) {
                        tu_fail("%s[%zu].%d: got %s, expected %s", what, elem, val, g, e);
                    } else {
                        tu_fail("%s[%zu]: got %s, expected %s", what, elem, g, e);
                    }
                }
            }
            i = end - 1;
        } else {
            bad++;
            if (reported++ < TU_MAX_MISMATCHES_PER_BUFFER) {
                tu_fail("%s: %s byte %zu (of %zu-byte span) changed: got 0x%02x, expected 0x%02x",
                        what, i >= span ? "guard" : "hole/gap", i, span, got[i], buf->image[i]);
            }
        }
    }
    if (reported > TU_MAX_MISMATCHES_PER_BUFFER) {
        tu_fail("%s: %ld mismatches in all", what, bad);
    }
    free(got);
    return bad;
}

/* ------------------------------------------------------------------------------------------ */
/* Simple int buffers                                                                         */
/* ------------------------------------------------------------------------------------------ */

int tu_int_buffer_create(tu_mem_t mem, size_t count, int value, void **ptr_p) {
    int *host = malloc(sizeof(int) * (count > 0 ? count : 1));
    int rc;
    for (size_t i = 0; i < count; i++) {
        host[i] = value + (int)i;
    }
    rc = tu_mem_alloc(mem, sizeof(int) * count, ptr_p);
    if (0 == rc) {
        rc = tu_mem_write(mem, *ptr_p, host, sizeof(int) * count);
    }
    free(host);
    return rc;
}

long tu_int_buffer_check(tu_mem_t mem, const void *ptr, size_t count, int expected,
                         const char *what) {
    int *host = malloc(sizeof(int) * (count > 0 ? count : 1));
    long bad = 0;
    if (0 != tu_mem_read(mem, host, ptr, sizeof(int) * count)) {
        tu_fail("%s: cannot read the %s buffer back", what, tu_mem_name(mem));
        free(host);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        if (host[i] != expected + (int)i) {
            if (bad++ < TU_MAX_MISMATCHES_PER_BUFFER) {
                tu_fail("%s[%zu]: got %d, expected %d", what, i, host[i], expected + (int)i);
            }
        }
    }
    free(host);
    return bad;
}

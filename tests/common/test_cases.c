/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The case engine of the coll/gpu MPI tests: one checked call of any collective of the
 * collective table (test_case_table.c).  See test_cases.h.
 */
#include "test_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_reference.h"
#include "test_report.h"

/* One side of a call, its send or its receive arguments: the checked buffer behind it (if
 * any) and what is passed to MPI. */
typedef struct {
    bool has_buf;
    tu_buf_t buf;
    void *ptr;
    int count;
    MPI_Datatype type;
    int *counts; /* per-rank blocks: elements, and displacements in elements */
    int *displs;
    const int *counts_arg; /* what is passed for them: NULL where MPI ignores them */
    const int *displs_arg;
} tu_case_side_t;

struct tu_coll_case {
    tu_coll_params_t p;
    coll_gpu_coll_t base; /* blocking equivalent */
    const tu_coll_info_t *info;
    const tu_type_t *type;
    MPI_Comm comm;
    int rank;
    int size;
    bool is_root;
    tu_case_side_t send;
    tu_case_side_t recv; /* MPI_Bcast's buffer, at the root too */
    size_t device_payload;
    char desc[256];
};

/* ------------------------------------------------------------------------------------------ */
/* Arguments MPI says are ignored                                                             */
/* ------------------------------------------------------------------------------------------ */

/* Pointers for arguments MPI says are ignored; kept as integers, never dereferenced. */
static uintptr_t tu_freed_host_ptr;
static uintptr_t tu_freed_device_ptr;

void tu_garbage_init(void) {
    void *p = malloc(64);
    tu_freed_host_ptr = (uintptr_t)p;
    free(p);
    tu_freed_device_ptr = tu_freed_host_ptr;
    if (NULL != tu_accel && 0 == tu_mem_alloc(TU_MEM_DEVICE, 4096, &p)) {
        tu_freed_device_ptr = (uintptr_t)p;
        tu_mem_free(TU_MEM_DEVICE, p);
    }
}

static void *tu_garbage_ptr(tu_garbage_t garbage) {
    switch (garbage) {
    case TU_GARBAGE_NULL:
        return NULL;
    case TU_GARBAGE_ONE:
        return (void *)(uintptr_t)1;
    case TU_GARBAGE_FREED_HOST:
        return (void *)tu_freed_host_ptr;
    default:
        return (void *)tu_freed_device_ptr;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Layout of the per-rank blocks                                                              */
/* ------------------------------------------------------------------------------------------ */

/* Per-rank counts of the v-variants: vary with the rank, with a zero block every third rank
 * (from rank 1 on) so empty contributions are exercised. */
static int tu_vcount(int rank, size_t count) {
    return (0 == count || 1 == rank % 3) ? 0 : (int)count + rank % 4;
}

/* alltoallv: elements rank i sends to rank j; symmetric for MPI_IN_PLACE (which needs the
 * same type map in both directions). */
static int tu_a2a_count(int i, int j, size_t count, bool symmetric) {
    int key = symmetric ? i + j : i + 2 * j;
    return (0 == count || 1 == key % 3) ? 0 : (int)count + (symmetric ? key : 3 * i + j) % 4;
}

/* Blocks in reverse rank order, one unused element between blocks: the displacements are not
 * monotonic and the gaps must stay untouched.  Returns the elements spanned. */
static size_t tu_layout_blocks(const int *counts, int n, int *displs) {
    size_t pos = 0;
    for (int j = n - 1; j >= 0; j--) {
        displs[j] = (int)pos;
        pos += (size_t)counts[j] + 1;
    }
    return pos;
}

static int *tu_int_array(int n) { return calloc(n > 0 ? n : 1, sizeof(int)); }

/* The elements of each rank's block on a side: to rank j (outgoing) or from rank j; count
 * each, or for the v-variants a count that varies with the rank. */
static void tu_side_counts(tu_coll_case_t *c, tu_case_side_t *side, bool outgoing) {
    size_t count = c->p.count;

    side->counts = tu_int_array(c->size);
    for (int j = 0; j < c->size; j++) {
        if (!c->info->vector) {
            side->counts[j] = (int)count;
        } else if (TU_SHAPE_ALLTOALL == c->info->shape) {
            side->counts[j] = outgoing ? tu_a2a_count(c->rank, j, count, c->p.in_place)
                                       : tu_a2a_count(j, c->rank, count, c->p.in_place);
        } else {
            side->counts[j] = tu_vcount(j, count);
        }
    }
}

/* tu_side_counts and where the blocks are: one after the other, or for the v-variants as
 * tu_layout_blocks lays them out.  Returns the elements the blocks span. */
static size_t tu_side_blocks(tu_coll_case_t *c, tu_case_side_t *side, bool outgoing) {
    int n = c->size;

    tu_side_counts(c, side, outgoing);
    side->displs = tu_int_array(n);
    for (int j = 0; j < n; j++) {
        side->displs[j] = j * (int)c->p.count;
    }
    return c->info->vector ? tu_layout_blocks(side->counts, n, side->displs)
                           : (size_t)n * c->p.count;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers, inputs and expected results                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Stream of the data rank `src` sends to rank `dst` (alltoall, scatter blocks). */
static uint32_t tu_stream(uint32_t salt, int dst) {
    return salt * 2654435761u + 0x10000u * (uint32_t)(dst + 1);
}

/* Generates count elements of (stream, src) and puts them at element `at` of buf. */
static void tu_put_gen(tu_buf_t *buf, tu_op_id_t op, uint32_t stream, int src, int nsrc,
                       size_t first, size_t count, size_t at) {
    const tu_type_t *t = buf->type;
    void *tmp;
    if (0 == count) {
        return;
    }
    tmp = malloc(tu_type_packed_size(t, count));
    tu_gen(t, op, stream, src, nsrc, first, count, tmp);
    tu_buf_put(buf, at, count, tmp);
    free(tmp);
}

static void tu_put_reduce(tu_buf_t *buf, tu_op_id_t op, uint32_t stream, int nsrc_used, int nsrc,
                          size_t first, size_t count, size_t at) {
    const tu_type_t *t = buf->type;
    void *tmp;
    if (0 == count) {
        return;
    }
    tmp = malloc(tu_type_packed_size(t, count));
    tu_ref_reduce(t, op, stream, nsrc_used, nsrc, first, count, tmp);
    tu_buf_put(buf, at, count, tmp);
    free(tmp);
}

static int tu_case_buf(tu_coll_case_t *c, tu_case_side_t *side, tu_mem_t mem, size_t nelems) {
    if (0 != tu_buf_init(&side->buf, mem, c->type, nelems)) {
        fprintf(stderr, "[rank %d] cannot allocate %zu elements of %s memory for %s\n",
                tu_world_rank, nelems, tu_mem_name(mem), c->desc);
        return -1;
    }
    side->has_buf = true;
    return 0;
}

/* Writes the inputs: the images of the buffers as they are before the call. */
static int tu_case_upload(tu_coll_case_t *c) {
    return ((c->send.has_buf && tu_buf_upload(&c->send.buf)) ||
            (c->recv.has_buf && tu_buf_upload(&c->recv.buf)))
               ? -1
               : 0;
}

/* Payload accounting: device bytes this rank's call must read or write. */
static void tu_payload(tu_coll_case_t *c, tu_mem_t mem, size_t nelems) {
    if (TU_MEM_DEVICE == mem) {
        c->device_payload += tu_type_packed_size(c->type, nelems);
    }
}

/* What block j of a side holds. */
typedef enum {
    TU_BLOCKS_GATHERED, /* rank j's input (allgather(v), gather(v)) */
    TU_BLOCKS_OUTGOING, /* what this rank sends to rank j (scatter(v)'s root, alltoall(v)) */
    TU_BLOCKS_INCOMING, /* what rank j sends to this rank (alltoall(v)) */
} tu_blocks_t;

/* Puts every block of a side into its image, and counts the payload. */
static void tu_case_put_blocks(tu_coll_case_t *c, tu_case_side_t *side, tu_blocks_t blocks) {
    const tu_coll_params_t *p = &c->p;

    for (int j = 0; j < c->size; j++) {
        uint32_t stream = TU_BLOCKS_GATHERED == blocks   ? p->salt
                          : TU_BLOCKS_OUTGOING == blocks ? tu_stream(p->salt, j)
                                                         : tu_stream(p->salt, c->rank);
        int src = TU_BLOCKS_OUTGOING == blocks ? c->rank : j;

        tu_put_gen(&side->buf, p->op, stream, src, c->size, 0, side->counts[j], side->displs[j]);
        tu_payload(c, side->buf.mem, side->counts[j]);
    }
}

/* A side passed with its buffer: count elements (or its blocks) of the case's type. */
static void tu_side_pass_buf(tu_coll_case_t *c, tu_case_side_t *side, int count) {
    side->ptr = side->buf.alloc;
    side->count = count;
    side->type = c->type->datatype;
    side->counts_arg = side->counts;
    side->displs_arg = side->displs;
}

/* A side MPI_IN_PLACE stands for: its count and type are ignored. */
static void tu_side_in_place(tu_case_side_t *side) {
    side->ptr = MPI_IN_PLACE;
    side->count = 0;
    side->type = MPI_DATATYPE_NULL;
}

/* A side MPI ignores on this rank (a non-root's): garbage, or the root's count and type. */
static void tu_side_ignored(tu_coll_case_t *c, tu_case_side_t *side) {
    side->ptr = tu_garbage_ptr(c->p.garbage);
    if (TU_GARBAGE_NULL == c->p.garbage) {
        side->count = 0;
        side->type = MPI_DATATYPE_NULL;
    } else {
        side->count = (int)c->p.count;
        side->type = c->type->datatype;
        side->counts_arg = side->counts;
        side->displs_arg = side->displs;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Set-up by shape                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* MPI_Reduce_local: inoutbuf = inbuf op inoutbuf, with two "sources" 0 (inbuf) and 1
 * (inoutbuf). */
static int tu_case_setup_reduce_local(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    size_t count = p->count;

    if (tu_case_buf(c, &c->send, p->kind.send, count) ||
        tu_case_buf(c, &c->recv, p->kind.recv, count)) {
        return -1;
    }
    tu_put_gen(&c->send.buf, p->op, p->salt, 0, 2, 0, count, 0);
    tu_put_gen(&c->recv.buf, p->op, p->salt, 1, 2, 0, count, 0);
    /* inbuf is read; inoutbuf is read and written */
    tu_payload(c, p->kind.send, count);
    tu_payload(c, p->kind.recv, 2 * count);
    if (tu_case_upload(c)) {
        return -1;
    }
    tu_put_reduce(&c->recv.buf, p->op, p->salt, 2, 2, 0, count, 0);
    c->send.ptr = c->send.buf.alloc;
    c->recv.ptr = c->recv.buf.alloc;
    return 0;
}

/* reduce_scatter(_block): rank r receives its block of the reduction of every rank's input */
static int tu_case_setup_reduce_scatter(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank, n = c->size;
    tu_mem_t in_mem = p->in_place ? p->kind.recv : p->kind.send;
    size_t total = 0, offset = 0, mine;

    tu_side_counts(c, &c->recv, false);
    for (int j = 0; j < n; j++) {
        if (j < r) {
            offset += c->recv.counts[j];
        }
        total += c->recv.counts[j];
    }
    mine = c->recv.counts[r];
    c->recv.counts_arg = c->recv.counts;
    if (p->in_place) {
        /* input from the receive buffer, result in its first rcounts[r] elements */
        if (tu_case_buf(c, &c->recv, p->kind.recv, total)) {
            return -1;
        }
        tu_put_gen(&c->recv.buf, p->op, p->salt, r, n, 0, total, 0);
        c->send.ptr = MPI_IN_PLACE;
    } else {
        if (tu_case_buf(c, &c->send, p->kind.send, total) ||
            tu_case_buf(c, &c->recv, p->kind.recv, mine)) {
            return -1;
        }
        tu_put_gen(&c->send.buf, p->op, p->salt, r, n, 0, total, 0);
        c->send.ptr = c->send.buf.alloc;
    }
    tu_payload(c, in_mem, total);
    tu_payload(c, p->kind.recv, mine);
    if (tu_case_upload(c)) {
        return -1;
    }
    tu_put_reduce(&c->recv.buf, p->op, p->salt, n, n, offset, mine, 0);
    if (p->in_place && total > mine) {
        tu_buf_dont_care(&c->recv.buf, mine, total - mine);
    }
    c->recv.ptr = c->recv.buf.alloc;
    return 0;
}

/* allreduce, reduce, scan, exscan */
static int tu_case_setup_reduce(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank, n = c->size;
    size_t count = p->count;
    bool root_in_place = p->in_place && (COLL_GPU_REDUCE != c->base || c->is_root);
    bool has_result = COLL_GPU_REDUCE != c->base || c->is_root;

    if (root_in_place) {
        if (tu_case_buf(c, &c->recv, p->kind.recv, count)) {
            return -1;
        }
        tu_put_gen(&c->recv.buf, p->op, p->salt, r, n, 0, count, 0);
        c->send.ptr = MPI_IN_PLACE;
    } else {
        if (tu_case_buf(c, &c->send, p->kind.send, count)) {
            return -1;
        }
        tu_put_gen(&c->send.buf, p->op, p->salt, r, n, 0, count, 0);
        c->send.ptr = c->send.buf.alloc;
        if (has_result && tu_case_buf(c, &c->recv, p->kind.recv, count)) {
            return -1;
        }
    }
    tu_payload(c, root_in_place ? p->kind.recv : p->kind.send, count);
    if (tu_case_upload(c)) {
        return -1;
    }
    if (!has_result) {
        c->recv.ptr = tu_garbage_ptr(p->garbage);
        return 0;
    }
    c->recv.ptr = c->recv.buf.alloc;
    switch (c->base) {
    case COLL_GPU_SCAN:
        tu_put_reduce(&c->recv.buf, p->op, p->salt, r + 1, n, 0, count, 0);
        tu_payload(c, p->kind.recv, count);
        break;
    case COLL_GPU_EXSCAN:
        if (0 == r) {
            /* MPI leaves rank 0's receive buffer undefined (the guard must still hold) */
            tu_buf_dont_care(&c->recv.buf, 0, count);
        } else {
            tu_put_reduce(&c->recv.buf, p->op, p->salt, r, n, 0, count, 0);
            tu_payload(c, p->kind.recv, count);
        }
        break;
    default:
        tu_put_reduce(&c->recv.buf, p->op, p->salt, n, n, 0, count, 0);
        tu_payload(c, p->kind.recv, count);
        break;
    }
    return 0;
}

static int tu_case_setup_bcast(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    /* the root's buffer is the "send" side, the others' the "receive" side */
    tu_mem_t mem = c->is_root ? p->kind.send : p->kind.recv;

    if (tu_case_buf(c, &c->recv, mem, p->count)) {
        return -1;
    }
    if (c->is_root) {
        tu_put_gen(&c->recv.buf, p->op, p->salt, p->root, c->size, 0, p->count, 0);
    }
    if (tu_case_upload(c)) {
        return -1;
    }
    tu_put_gen(&c->recv.buf, p->op, p->salt, p->root, c->size, 0, p->count, 0);
    tu_payload(c, mem, p->count);
    tu_side_pass_buf(c, &c->recv, (int)p->count);
    return 0;
}

/* allgather(v), gather(v): block j of the result is rank j's input */
static int tu_case_setup_gather(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank;
    bool has_result = !c->info->rooted || c->is_root;
    bool in_place = p->in_place && has_result;
    size_t span = tu_side_blocks(c, &c->recv, false);
    int mine = c->recv.counts[r];

    if (has_result) {
        if (tu_case_buf(c, &c->recv, p->kind.recv, span)) {
            return -1;
        }
        tu_side_pass_buf(c, &c->recv, (int)p->count);
    } else {
        /* significant only at the root */
        tu_side_ignored(c, &c->recv);
    }
    if (in_place) {
        tu_put_gen(&c->recv.buf, p->op, p->salt, r, c->size, 0, mine, c->recv.displs[r]);
        /* sendcount and sendtype are ignored */
        tu_side_in_place(&c->send);
        tu_payload(c, p->kind.recv, mine);
    } else {
        if (tu_case_buf(c, &c->send, p->kind.send, mine)) {
            return -1;
        }
        tu_put_gen(&c->send.buf, p->op, p->salt, r, c->size, 0, mine, 0);
        tu_side_pass_buf(c, &c->send, mine);
        tu_payload(c, p->kind.send, mine);
    }
    if (tu_case_upload(c)) {
        return -1;
    }
    if (has_result) {
        tu_case_put_blocks(c, &c->recv, TU_BLOCKS_GATHERED);
    }
    return 0;
}

/* scatter(v): the root's block j goes to rank j */
static int tu_case_setup_scatter(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    int r = c->rank;
    bool in_place = p->in_place && c->is_root;
    size_t span = tu_side_blocks(c, &c->send, true);
    int mine = c->send.counts[r];

    if (c->is_root) {
        if (tu_case_buf(c, &c->send, p->kind.send, span)) {
            return -1;
        }
        tu_case_put_blocks(c, &c->send, TU_BLOCKS_OUTGOING);
        tu_side_pass_buf(c, &c->send, (int)p->count);
    } else {
        tu_side_ignored(c, &c->send);
    }
    if (in_place) {
        /* the root's own block stays in the send buffer; recvcount/recvtype are ignored */
        tu_side_in_place(&c->recv);
    } else {
        if (tu_case_buf(c, &c->recv, p->kind.recv, mine)) {
            return -1;
        }
        tu_side_pass_buf(c, &c->recv, mine);
    }
    if (tu_case_upload(c)) {
        return -1;
    }
    if (c->recv.has_buf) {
        tu_put_gen(&c->recv.buf, p->op, tu_stream(p->salt, r), p->root, c->size, 0, mine, 0);
        tu_payload(c, p->kind.recv, mine);
    }
    return 0;
}

/* alltoall(v): block j of rank i goes to block i of rank j */
static int tu_case_setup_alltoall(tu_coll_case_t *c) {
    const tu_coll_params_t *p = &c->p;
    size_t sspan = tu_side_blocks(c, &c->send, true);
    size_t rspan = tu_side_blocks(c, &c->recv, false);

    if (tu_case_buf(c, &c->recv, p->kind.recv, rspan)) {
        return -1;
    }
    if (p->in_place) {
        /* what goes to j is taken from where j's data arrives; counts are symmetric */
        tu_case_put_blocks(c, &c->recv, TU_BLOCKS_OUTGOING);
        /* sendcounts/sdispls are ignored: pass NULL */
        tu_side_in_place(&c->send);
    } else {
        if (tu_case_buf(c, &c->send, p->kind.send, sspan)) {
            return -1;
        }
        tu_case_put_blocks(c, &c->send, TU_BLOCKS_OUTGOING);
        tu_side_pass_buf(c, &c->send, (int)p->count);
    }
    tu_side_pass_buf(c, &c->recv, (int)p->count);
    if (tu_case_upload(c)) {
        return -1;
    }
    tu_case_put_blocks(c, &c->recv, TU_BLOCKS_INCOMING);
    return 0;
}

static int (*const tu_case_setups[TU_NUM_SHAPES])(tu_coll_case_t *c) = {
    [TU_SHAPE_REDUCE] = tu_case_setup_reduce,
    [TU_SHAPE_REDUCE_SCATTER] = tu_case_setup_reduce_scatter,
    [TU_SHAPE_REDUCE_LOCAL] = tu_case_setup_reduce_local,
    [TU_SHAPE_BCAST] = tu_case_setup_bcast,
    [TU_SHAPE_GATHER] = tu_case_setup_gather,
    [TU_SHAPE_SCATTER] = tu_case_setup_scatter,
    [TU_SHAPE_ALLTOALL] = tu_case_setup_alltoall,
};

/* ------------------------------------------------------------------------------------------ */
/* Cases                                                                                      */
/* ------------------------------------------------------------------------------------------ */

const char *tu_coll_case_desc(const tu_coll_case_t *c) { return c->desc; }

size_t tu_coll_case_data_bytes(const tu_coll_case_t *c) {
    return tu_type_packed_size(c->type, c->p.count);
}

/* The bytes the component's rules see of the call: a rank's message or block, the largest block
 * of allgatherv and reduce_scatter (every rank knows every block) and of alltoallv's pairs (the
 * ranks agree on it first). */
static size_t tu_coll_case_rule_bytes(const tu_coll_case_t *c) {
    size_t largest = c->p.count;

    if ((COLL_GPU_ALLGATHERV == c->base) || (COLL_GPU_REDUCE_SCATTER == c->base) ||
        (COLL_GPU_ALLTOALLV == c->base)) {
        largest = 0;
        /* (every sender's row for alltoallv; one row for the others, whose blocks are j's) */
        for (int i = 0; i < ((COLL_GPU_ALLTOALLV == c->base) ? c->size : 1); i++) {
            for (int j = 0; j < c->size; j++) {
                size_t count = (COLL_GPU_ALLTOALLV == c->base)
                                   ? (size_t)tu_a2a_count(i, j, c->p.count, c->p.in_place)
                                   : (size_t)tu_vcount(j, c->p.count);

                largest = (count > largest) ? count : largest;
            }
        }
    }
    return tu_type_packed_size(c->type, largest);
}

int tu_coll_case_create(const tu_coll_params_t *params, tu_coll_case_t **case_p) {
    tu_coll_case_t *c;
    int len;

    if (!tu_coll_case_supported(params->coll)) {
        return -1;
    }
    c = calloc(1, sizeof(*c));

    c->p = *params;
    c->base = tu_coll_blocking(params->coll);
    c->info = tu_coll_info(params->coll);
    c->type = tu_type(params->type);
    c->send.type = c->recv.type = MPI_DATATYPE_NULL;
    if (COLL_GPU_REDUCE_LOCAL == c->base) {
        c->comm = MPI_COMM_NULL;
        c->rank = 0;
        c->size = 1;
    } else {
        c->comm = params->comm->comm;
        c->rank = params->comm->rank;
        c->size = params->comm->size;
    }
    c->is_root = c->info->rooted && c->rank == params->root;

    len = snprintf(c->desc, sizeof(c->desc), "%s %s", tu_coll_name(params->coll), c->type->name);
    if (c->info->reduction) {
        len += snprintf(c->desc + len, sizeof(c->desc) - len, " %s", tu_op_name(params->op));
    }
    len += snprintf(c->desc + len, sizeof(c->desc) - len, " count=%zu%s", params->count,
                    params->in_place ? " in-place" : "");
    if (COLL_GPU_REDUCE_LOCAL != c->base) {
        len += snprintf(c->desc + len, sizeof(c->desc) - len, " comm=%s(%d/%d)", params->comm->name,
                        c->rank, c->size);
    }
    if (c->info->rooted) {
        len += snprintf(c->desc + len, sizeof(c->desc) - len, " root=%d", params->root);
    }
    snprintf(c->desc + len, sizeof(c->desc) - len, " kind=%s", params->kind.name);

    if (0 != tu_case_setups[c->info->shape](c)) {
        tu_coll_case_destroy(c);
        return -1;
    }
    *case_p = c;
    return 0;
}

int tu_coll_case_start(tu_coll_case_t *c, MPI_Request *request) {
    const tu_coll_params_t *p = &c->p;
    MPI_Op op = tu_op_handle(p->op);
    MPI_Datatype dt = c->type->datatype;
    int count = (int)p->count;
    MPI_Request dummy;

    if (NULL == request) {
        request = &dummy;
    }
    *request = MPI_REQUEST_NULL;
    switch (p->coll) {
    case COLL_GPU_ALLGATHER:
        return MPI_Allgather(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                             c->recv.type, c->comm);
    case COLL_GPU_ALLGATHERV:
        return MPI_Allgatherv(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                              c->recv.counts_arg, c->recv.displs_arg, c->recv.type, c->comm);
    case COLL_GPU_ALLREDUCE:
        return MPI_Allreduce(c->send.ptr, c->recv.ptr, count, dt, op, c->comm);
    case COLL_GPU_ALLTOALL:
        return MPI_Alltoall(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                            c->recv.type, c->comm);
    case COLL_GPU_ALLTOALLV:
        return MPI_Alltoallv(c->send.ptr, c->send.counts_arg, c->send.displs_arg, c->send.type,
                             c->recv.ptr, c->recv.counts_arg, c->recv.displs_arg, c->recv.type,
                             c->comm);
    case COLL_GPU_BCAST:
        return MPI_Bcast(c->recv.ptr, count, dt, p->root, c->comm);
    case COLL_GPU_EXSCAN:
        return MPI_Exscan(c->send.ptr, c->recv.ptr, count, dt, op, c->comm);
    case COLL_GPU_GATHER:
        return MPI_Gather(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                          c->recv.type, p->root, c->comm);
    case COLL_GPU_GATHERV:
        return MPI_Gatherv(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                           c->recv.counts_arg, c->recv.displs_arg, c->recv.type, p->root, c->comm);
    case COLL_GPU_REDUCE:
        return MPI_Reduce(c->send.ptr, c->recv.ptr, count, dt, op, p->root, c->comm);
    case COLL_GPU_REDUCE_SCATTER:
        return MPI_Reduce_scatter(c->send.ptr, c->recv.ptr, c->recv.counts_arg, dt, op, c->comm);
    case COLL_GPU_REDUCE_SCATTER_BLOCK:
        return MPI_Reduce_scatter_block(c->send.ptr, c->recv.ptr, count, dt, op, c->comm);
    case COLL_GPU_SCAN:
        return MPI_Scan(c->send.ptr, c->recv.ptr, count, dt, op, c->comm);
    case COLL_GPU_SCATTER:
        return MPI_Scatter(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                           c->recv.type, p->root, c->comm);
    case COLL_GPU_SCATTERV:
        return MPI_Scatterv(c->send.ptr, c->send.counts_arg, c->send.displs_arg, c->send.type,
                            c->recv.ptr, c->recv.count, c->recv.type, p->root, c->comm);
    case COLL_GPU_REDUCE_LOCAL:
        return MPI_Reduce_local(c->send.ptr, c->recv.ptr, count, dt, op);
    case COLL_GPU_IALLGATHER:
        return MPI_Iallgather(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                              c->recv.type, c->comm, request);
    case COLL_GPU_IALLGATHERV:
        return MPI_Iallgatherv(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                               c->recv.counts_arg, c->recv.displs_arg, c->recv.type, c->comm,
                               request);
    case COLL_GPU_IALLREDUCE:
        return MPI_Iallreduce(c->send.ptr, c->recv.ptr, count, dt, op, c->comm, request);
    case COLL_GPU_IALLTOALL:
        return MPI_Ialltoall(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                             c->recv.type, c->comm, request);
    case COLL_GPU_IALLTOALLV:
        return MPI_Ialltoallv(c->send.ptr, c->send.counts_arg, c->send.displs_arg, c->send.type,
                              c->recv.ptr, c->recv.counts_arg, c->recv.displs_arg, c->recv.type,
                              c->comm, request);
    case COLL_GPU_IBCAST:
        return MPI_Ibcast(c->recv.ptr, count, dt, p->root, c->comm, request);
    case COLL_GPU_IEXSCAN:
        return MPI_Iexscan(c->send.ptr, c->recv.ptr, count, dt, op, c->comm, request);
    case COLL_GPU_IGATHER:
        return MPI_Igather(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                           c->recv.type, p->root, c->comm, request);
    case COLL_GPU_IGATHERV:
        return MPI_Igatherv(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                            c->recv.counts_arg, c->recv.displs_arg, c->recv.type, p->root, c->comm,
                            request);
    case COLL_GPU_IREDUCE:
        return MPI_Ireduce(c->send.ptr, c->recv.ptr, count, dt, op, p->root, c->comm, request);
    case COLL_GPU_IREDUCE_SCATTER:
        return MPI_Ireduce_scatter(c->send.ptr, c->recv.ptr, c->recv.counts_arg, dt, op, c->comm,
                                   request);
    case COLL_GPU_IREDUCE_SCATTER_BLOCK:
        return MPI_Ireduce_scatter_block(c->send.ptr, c->recv.ptr, count, dt, op, c->comm, request);
    case COLL_GPU_ISCAN:
        return MPI_Iscan(c->send.ptr, c->recv.ptr, count, dt, op, c->comm, request);
    case COLL_GPU_ISCATTER:
        return MPI_Iscatter(c->send.ptr, c->send.count, c->send.type, c->recv.ptr, c->recv.count,
                            c->recv.type, p->root, c->comm, request);
    case COLL_GPU_ISCATTERV:
        return MPI_Iscatterv(c->send.ptr, c->send.counts_arg, c->send.displs_arg, c->send.type,
                             c->recv.ptr, c->recv.count, c->recv.type, p->root, c->comm, request);
    case COLL_GPU_ALLGATHER_INIT:
        return TU_PERSISTENT(Allgather_init)(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                                             c->recv.count, c->recv.type, c->comm, MPI_INFO_NULL,
                                             request);
    case COLL_GPU_ALLGATHERV_INIT:
        return TU_PERSISTENT(Allgatherv_init)(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                                              c->recv.counts_arg, c->recv.displs_arg, c->recv.type,
                                              c->comm, MPI_INFO_NULL, request);
    case COLL_GPU_ALLREDUCE_INIT:
        return TU_PERSISTENT(Allreduce_init)(c->send.ptr, c->recv.ptr, count, dt, op, c->comm,
                                             MPI_INFO_NULL, request);
    case COLL_GPU_ALLTOALL_INIT:
        return TU_PERSISTENT(Alltoall_init)(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                                            c->recv.count, c->recv.type, c->comm, MPI_INFO_NULL,
                                            request);
    case COLL_GPU_ALLTOALLV_INIT:
        return TU_PERSISTENT(Alltoallv_init)(
            c->send.ptr, c->send.counts_arg, c->send.displs_arg, c->send.type, c->recv.ptr,
            c->recv.counts_arg, c->recv.displs_arg, c->recv.type, c->comm, MPI_INFO_NULL, request);
    case COLL_GPU_BCAST_INIT:
        return TU_PERSISTENT(Bcast_init)(c->recv.ptr, count, dt, p->root, c->comm, MPI_INFO_NULL,
                                         request);
    case COLL_GPU_EXSCAN_INIT:
        return TU_PERSISTENT(Exscan_init)(c->send.ptr, c->recv.ptr, count, dt, op, c->comm,
                                          MPI_INFO_NULL, request);
    case COLL_GPU_GATHER_INIT:
        return TU_PERSISTENT(Gather_init)(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                                          c->recv.count, c->recv.type, p->root, c->comm,
                                          MPI_INFO_NULL, request);
    case COLL_GPU_GATHERV_INIT:
        return TU_PERSISTENT(Gatherv_init)(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                                           c->recv.counts_arg, c->recv.displs_arg, c->recv.type,
                                           p->root, c->comm, MPI_INFO_NULL, request);
    case COLL_GPU_REDUCE_INIT:
        return TU_PERSISTENT(Reduce_init)(c->send.ptr, c->recv.ptr, count, dt, op, p->root, c->comm,
                                          MPI_INFO_NULL, request);
    case COLL_GPU_REDUCE_SCATTER_INIT:
        return TU_PERSISTENT(Reduce_scatter_init)(c->send.ptr, c->recv.ptr, c->recv.counts_arg, dt,
                                                  op, c->comm, MPI_INFO_NULL, request);
    case COLL_GPU_REDUCE_SCATTER_BLOCK_INIT:
        return TU_PERSISTENT(Reduce_scatter_block_init)(c->send.ptr, c->recv.ptr, count, dt, op,
                                                        c->comm, MPI_INFO_NULL, request);
    case COLL_GPU_SCAN_INIT:
        return TU_PERSISTENT(Scan_init)(c->send.ptr, c->recv.ptr, count, dt, op, c->comm,
                                        MPI_INFO_NULL, request);
    case COLL_GPU_SCATTER_INIT:
        return TU_PERSISTENT(Scatter_init)(c->send.ptr, c->send.count, c->send.type, c->recv.ptr,
                                           c->recv.count, c->recv.type, p->root, c->comm,
                                           MPI_INFO_NULL, request);
    case COLL_GPU_SCATTERV_INIT:
        return TU_PERSISTENT(Scatterv_init)(c->send.ptr, c->send.counts_arg, c->send.displs_arg,
                                            c->send.type, c->recv.ptr, c->recv.count, c->recv.type,
                                            p->root, c->comm, MPI_INFO_NULL, request);
    default:
        return MPI_ERR_OTHER;
    }
}

/* One side's memory and expected image, from a case of the same shape. */
static int tu_side_reload(tu_case_side_t *side, const tu_case_side_t *from) {
    unsigned char *bytes;
    int rc;

    if (!side->has_buf) {
        return 0;
    }
    if (!from->has_buf || side->buf.size != from->buf.size) {
        return -1;
    }
    bytes = malloc(side->buf.size);
    rc = (NULL == bytes) ? -1 : tu_mem_read(from->buf.mem, bytes, from->buf.alloc, from->buf.size);
    if (0 == rc) {
        rc = tu_mem_write(side->buf.mem, side->buf.alloc, bytes, side->buf.size);
    }
    free(bytes);
    memcpy(side->buf.image, from->buf.image, side->buf.size);
    memcpy(side->buf.care, from->buf.care, side->buf.size);
    return rc;
}

int tu_coll_case_reload(tu_coll_case_t *c, const tu_coll_case_t *from) {
    if (0 != tu_side_reload(&c->send, &from->send) || 0 != tu_side_reload(&c->recv, &from->recv)) {
        return -1;
    }
    return 0;
}

bool tu_coll_case_verify(tu_coll_case_t *c) {
    long bad = 0;
    if (c->send.has_buf) {
        /* send buffers are read-only for every collective */
        bad += labs(tu_buf_verify(&c->send.buf, "sendbuf"));
    }
    if (c->recv.has_buf) {
        bad += labs(tu_buf_verify(&c->recv.buf, COLL_GPU_BCAST == c->base ? "buffer" : "recvbuf"));
    }
    return 0 == bad;
}

static void tu_side_free(tu_case_side_t *side) {
    if (side->has_buf) {
        tu_buf_free(&side->buf);
    }
    free(side->counts);
    free(side->displs);
}

void tu_coll_case_destroy(tu_coll_case_t *c) {
    if (NULL == c) {
        return;
    }
    tu_side_free(&c->send);
    tu_side_free(&c->recv);
    free(c);
}

/* ------------------------------------------------------------------------------------------ */
/* The path the component must take                                                           */
/* ------------------------------------------------------------------------------------------ */

typedef enum { TU_CLASS_HOST, TU_CLASS_MANAGED, TU_CLASS_DEVICE } tu_call_class_t;

static tu_call_class_t tu_class_of(tu_mem_t mem) {
    return TU_MEM_DEVICE == mem    ? TU_CLASS_DEVICE
           : TU_MEM_MANAGED == mem ? TU_CLASS_MANAGED
                                   : TU_CLASS_HOST;
}

static tu_call_class_t tu_class_max(tu_call_class_t a, tu_call_class_t b) { return a > b ? a : b; }

/* The memory of one rank's call, over the buffers MPI uses on that rank (non-root receive
 * buffers of reduce/gather, non-root send buffers of scatter and MPI_IN_PLACE do not count):
 *   class: device if any of them is device memory, managed if any is managed, else host
 *          (pageable or pinned);
 *   all_device: every one of them is device memory;
 *   host_call: none of them is device memory (host, pinned or managed: host-accessible), the
 *          rank's whole call on memory Open MPI can read: it passes the call through. */
typedef struct {
    tu_call_class_t class;
    bool all_device;
    bool host_call;
} tu_rank_call_t;

static tu_rank_call_t tu_rank_call(coll_gpu_coll_t coll, bool is_root, bool in_place,
                                   const tu_kind_t *kind) {
    tu_rank_call_t call;
    bool send_used, recv_used, send_device, recv_device;

    tu_coll_buffers_used(coll, is_root, in_place, &send_used, &recv_used);
    send_device = send_used && TU_MEM_DEVICE == kind->send;
    recv_device = recv_used && TU_MEM_DEVICE == kind->recv;
    call.class = tu_class_max(send_used ? tu_class_of(kind->send) : TU_CLASS_HOST,
                              recv_used ? tu_class_of(kind->recv) : TU_CLASS_HOST);
    call.all_device = (!send_used || send_device) && (!recv_used || recv_device);
    call.host_call = !send_device && !recv_device;
    return call;
}

/* The memory of member m of the case's communicator. */
static const tu_kind_t *tu_case_member_kind(const tu_coll_case_t *c,
                                            const tu_kind_t *kind_of_world_rank, int m) {
    return NULL != kind_of_world_rank ? &kind_of_world_rank[c->p.comm->world_ranks[m]] : &c->p.kind;
}

/* Whether two ranks' calls are of one kind: both host-accessible, both all device, or both
 * some of each (a rank's send and receive buffers of different kinds). */
static bool tu_rank_calls_alike(const tu_rank_call_t *a, const tu_rank_call_t *b) {
    return a->class == b->class && a->all_device == b->all_device && a->host_call == b->host_call;
}

bool tu_coll_case_expect(const tu_coll_case_t *c, const tu_gpu_config_t *config,
                         const tu_kind_t *kind_of_world_rank, tu_expect_t *expect) {
    const tu_coll_params_t *p = &c->p;
    tu_rank_call_t mine = tu_rank_call(p->coll, c->is_root, p->in_place, &p->kind);
    /* uniform: every rank's call alike (tu_rank_calls_alike); all_device: every rank passes
     * device memory for every buffer it uses; any_host_call: some rank's whole call is on
     * host-accessible memory (it passes through to Open MPI) */
    bool uniform = true, all_device = mine.all_device, any_host_call = mine.host_call;
    /* class_uniform: every rank's call of one class (host, managed, device: any device buffer),
     * what coll_gpu_check_memory_kinds agrees on */
    bool class_uniform = true;
    bool any_managed = TU_CLASS_MANAGED == mine.class, pipelined_size;
    /* eligible: the native algorithm takes the call where every rank passes device memory;
     * host_eligible: coll_gpu_host_buffers, where every rank passes host memory */
    bool eligible = false, host_eligible = false, native_call = false, native_host_call = false;
    /* (auto stages small blocking device calls: tu_staged_auto) */
    bool device_native = tu_coll_native_expected(config, p->coll, c->size) &&
                         !tu_staged_auto(config, p->coll, p->comm, tu_coll_case_rule_bytes(c));
    bool host_native = config->host_buffers && tu_coll_is_blocking(p->coll) &&
                       tu_coll_native_expected(config, p->coll, c->size);
    /* the collectives the component has a native algorithm for: blocking, and nonblocking and
     * persistent where it runs the blocking form's (tu_coll_native_expected) */
    const tu_coll_info_t *native = (NULL != c->info->algorithm_cvar) ? c->info : NULL;

    if (COLL_GPU_REDUCE_LOCAL != c->base) {
        for (int m = 0; m < c->size; m++) {
            const tu_kind_t *kind = tu_case_member_kind(c, kind_of_world_rank, m);
            bool root = c->info->rooted && m == p->root;
            tu_rank_call_t other = tu_rank_call(p->coll, root, p->in_place, kind);

            uniform = uniform && tu_rank_calls_alike(&other, &mine);
            class_uniform = class_uniform && other.class == mine.class;
            all_device = all_device && other.all_device;
            any_host_call = any_host_call || other.host_call;
            any_managed = any_managed || TU_CLASS_MANAGED == other.class;
        }
    }
    /* Contiguous data larger than half the staging buffer is cut into chunks when every rank
     * stages it.  MPI_Bcast cuts in bytes of the type signature, whatever the layout (ranks may
     * pass different datatypes). */
    pipelined_size = tu_coll_pipelines(p->coll) &&
                     (c->type->contiguous || c->info->pipelines_any_type) &&
                     (long long)tu_coll_case_data_bytes(c) > config->staging_buffer_size / 2;
    /* Blocking MPI_Allreduce runs natively inside a node when every buffer of every rank is
     * on the device and the kernels define the reduction (predefined op, predefined
     * contiguous type).  The same for blocking MPI_Reduce_scatter(_block) and MPI_Reduce (a
     * reduction the kernels define), MPI_Allgather(v), MPI_Alltoall(v), MPI_Bcast, MPI_Gather
     * and MPI_Scatter (any datatype: they move bytes of the type signature, a non-dense layout
     * packed).  A native MPI_Alltoallv agrees on its counts (a host allreduce) before it can
     * tell that they are all zero.  Nonblocking and persistent calls only under
     * coll_gpu_memory_kinds_uniform (tu_coll_native_expected). */
    if (NULL != native &&
        (!native->reduction || (TU_OP_USER_COMM != p->op && TU_OP_USER_NONCOMM != p->op)) &&
        (c->type->contiguous || !native->reduction) &&
        (0 != p->count || native->native_when_empty) && (device_native || host_native)) {
        eligible = device_native;
        host_eligible = host_native;
        native_call = all_device && device_native;
        /* coll_gpu_host_buffers: host buffers everywhere run natively in host memory */
        native_host_call = host_native && uniform && mine.host_call;
    }

    expect->device_payload = c->device_payload;
    /* Open MPI's MPI layer returns before any coll module for zero counts (most collectives)
     * and for MPI_(I)bcast on a one-rank communicator (not MPI_Bcast_init: a persistent
     * request is made whatever the size) */
    if (0 == p->count ||
        (COLL_GPU_BCAST == c->base && 1 == c->size && !tu_coll_is_persistent(p->coll))) {
        expect->path = TU_PATH_MAYBE;
        expect->chunks = TU_CHUNKS_NONE;
        return true;
    }
    /* Ranks that pass different memory kinds to one call meet in one protocol: a rank whose
     * whole call is on host-accessible memory passes it through to Open MPI, the others stage
     * it as one host collective (no chunks).  Where no rank passes through but some pass
     * device memory for only some of their buffers (a root receiving into host memory), the
     * native algorithm may take the call on every rank, or staging on every rank. */
    if (mine.host_call) {
        if (TU_CLASS_MANAGED == mine.class) {
            expect->path = TU_PATH_EITHER;
        } else if (native_host_call) {
            expect->path = TU_PATH_NATIVE;
        } else if (!uniform && (config->check_memory_kinds || host_eligible)) {
            /* check_memory_kinds: a mixed call takes the staged path everywhere;
             * host_buffers: a host rank's call of a collective with a native algorithm runs
             * natively or passes through, as its peers' kinds allow */
            expect->path = TU_PATH_EITHER;
        } else {
            expect->path = TU_PATH_PASSTHROUGH;
        }
    } else if (COLL_GPU_REDUCE_LOCAL == c->base) {
        /* MPI_Reduce_local of a predefined op on a predefined type, both buffers on the
         * device: the accelerator's reduction kernel; else staged */
        expect->path = c->device_payload > 0 ? TU_PATH_STAGED : TU_PATH_EITHER;
        if (TU_MEM_DEVICE == p->kind.send && TU_MEM_DEVICE == p->kind.recv && c->type->contiguous &&
            (TU_OP_SUM == p->op || TU_OP_MAX == p->op || TU_OP_BXOR == p->op)) {
            expect->path = TU_PATH_NATIVE;
        }
    } else if (native_call) {
        expect->path = TU_PATH_NATIVE;
    } else if (0 == c->device_payload) {
        /* device pointers with nothing to copy may go either way */
        expect->path = TU_PATH_EITHER;
    } else if (host_eligible && !uniform) {
        /* coll_gpu_host_buffers: the host ranks' calls may run natively too */
        expect->path = TU_PATH_EITHER;
    } else if (eligible && !any_host_call && !config->check_memory_kinds) {
        /* device memory on every rank, some of it not on the device on some rank */
        expect->path = TU_PATH_STAGED_OR_NATIVE;
    } else {
        expect->path = TU_PATH_STAGED;
    }

    if (TU_PATH_PASSTHROUGH == expect->path || TU_PATH_NATIVE == expect->path) {
        expect->chunks = TU_CHUNKS_NONE;
    } else if (any_managed || (host_eligible && !uniform)) {
        expect->chunks = TU_CHUNKS_ANY;
    } else if (!mine.host_call && pipelined_size && config->pipeline &&
               (config->check_memory_kinds ? class_uniform : uniform)) {
        /* every rank stages alike: big calls are pipelined (those of ranks whose own send and
         * receive buffers differ in kind may run natively instead); check_memory_kinds agrees
         * on the class of every rank's call */
        expect->chunks =
            (TU_PATH_STAGED == expect->path && mine.all_device) ? TU_CHUNKS_SOME : TU_CHUNKS_ANY;
    } else if (!mine.host_call && pipelined_size && config->pipeline && !any_host_call &&
               !config->check_memory_kinds) {
        /* no rank passes its call through: every rank stages it (the call board's outcome
         * "mixed"), pipelined, unless the native algorithm took it everywhere */
        expect->chunks = (TU_PATH_STAGED == expect->path) ? TU_CHUNKS_SOME : TU_CHUNKS_ANY;
    } else {
        /* ranks of different kinds: one host collective */
        expect->chunks = TU_CHUNKS_NONE;
    }
    return true;
}

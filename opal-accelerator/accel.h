/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * accel, coll/gpu's own accelerator library (folder opal-accelerator/, library
 * libcgaccel.la): the device abstraction used by the component, the transport and the
 * tests.  It does not depend on OPAL nor include any Open MPI header (plain C; the cuda
 * backend uses only CUDA): the folder is named after the design card, not after a part of
 * Open MPI.
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
typedef struct accel_graph *accel_graph_h;

/* Conditions of stream_wait_value32 (CUDA's CU_STREAM_WAIT_VALUE_*). */
typedef enum {
    ACCEL_WAIT_VALUE_GEQ = 0, /* (int32_t)(*addr - value) >= 0 (wraps as a sequence number) */
    ACCEL_WAIT_VALUE_EQ,      /* *addr == value */
    ACCEL_WAIT_VALUE_AND,     /* (*addr & value) != 0 */
    ACCEL_WAIT_VALUE_NOR,     /* ~(*addr | value) != 0 */
} accel_wait_value_t;

/*
 * Element types of the reduction kernels.  The component maps MPI datatypes
 * onto these by size and kind (MPI_INT -> INT32, MPI_LONG -> INT64 on LP64,
 * MPI_BYTE -> UINT8, ...).  The pair types are the MAXLOC/MINLOC operands,
 * laid out as MPI's C pair types: {value, int index}, padded as C pads them.
 */
typedef enum {
    ACCEL_DT_INT8 = 0,
    ACCEL_DT_UINT8,
    ACCEL_DT_INT16,
    ACCEL_DT_UINT16,
    ACCEL_DT_INT32,
    ACCEL_DT_UINT32,
    ACCEL_DT_INT64,
    ACCEL_DT_UINT64,
    ACCEL_DT_FLOAT16,  /* IEEE binary16 (MPIX_C_FLOAT16) */
    ACCEL_DT_BFLOAT16, /* bfloat16 (coll_gpu_bf16.h) */
    ACCEL_DT_FLOAT,
    ACCEL_DT_DOUBLE,
    ACCEL_DT_COMPLEX_FLOAT,  /* C float _Complex: {re, im} */
    ACCEL_DT_COMPLEX_DOUBLE, /* C double _Complex */
    ACCEL_DT_BOOL,           /* C _Bool, one byte holding 0 or 1 */
    ACCEL_DT_SHORT_INT,      /* MPI_SHORT_INT: {short, int} */
    ACCEL_DT_2INT,           /* MPI_2INT: {int, int} */
    ACCEL_DT_LONG_INT,       /* MPI_LONG_INT: {long, int} */
    ACCEL_DT_FLOAT_INT,      /* MPI_FLOAT_INT: {float, int} */
    ACCEL_DT_DOUBLE_INT,     /* MPI_DOUBLE_INT: {double, int} */
    ACCEL_DT_COUNT
} accel_dtype_t;

/* Reduction operations: the predefined MPI ops. */
typedef enum {
    ACCEL_OP_SUM = 0,
    ACCEL_OP_PROD,
    ACCEL_OP_MAX,
    ACCEL_OP_MIN,
    ACCEL_OP_LAND,
    ACCEL_OP_LOR,
    ACCEL_OP_LXOR,
    ACCEL_OP_BAND,
    ACCEL_OP_BOR,
    ACCEL_OP_BXOR,
    ACCEL_OP_MAXLOC,
    ACCEL_OP_MINLOC,
    ACCEL_OP_COUNT
} accel_op_t;

/* Most inputs one reduce call combines in one pass. */
#define ACCEL_REDUCE_MAX_INPUTS 16

/*
 * An exported allocation, to be mapped by another process of the same node:
 * plain bytes, sent as they are.  It names the whole allocation that held the
 * exported pointer; offset is where that pointer lies in it.
 */
#define ACCEL_IPC_DATA_SIZE 72
typedef struct {
    uint64_t buffer_id;                /* exporter's buffer id of the allocation (reuse check) */
    uint64_t alloc_size;               /* bytes of the whole allocation */
    uint64_t offset;                   /* of the exported pointer from the allocation's base */
    int32_t pid;                       /* exporting process */
    uint32_t kind;                     /* backend's handle kind (legacy IPC, VMM fd, emulated) */
    uint8_t data[ACCEL_IPC_DATA_SIZE]; /* backend's handle */
} accel_ipc_handle_t;

/* The error that made the last call of this thread fail. */
typedef struct {
    const char *call;  /* the driver call, e.g. "cuMemcpyDtoHAsync" */
    const char *error; /* its error name, e.g. "CUDA_ERROR_ILLEGAL_ADDRESS" */
    int code;          /* the driver's error code */
} accel_error_t;

/* Host and device: the layout helpers below are also compiled by nvcc for the kernels. */
#ifdef __CUDACC__
#define ACCEL_HD __host__ __device__
#else
#define ACCEL_HD
#endif

/*
 * A collective among the ranks of a node, each rank's part queued on its stream as one kernel
 * (no host thread in the loop, one launch per call), written once for every backend
 * (accel_node_kernels.h).  Every rank has an area of device memory that every rank of the plan
 * maps (IPC):
 *
 *   head (accel_node_head_bytes): per lane, ready[nranks], reduced[nranks] and done[nranks]
 *     32-bit flags, then a 32-bit step counter per lane; zeroed on every rank before any
 *     rank's first call
 *   two halves of `half` bytes: step s's data goes to half (s & 1)
 *
 * A call is one or more steps; each step's data is cut into lanes (contiguous slices, one block
 * each, how many a function of the call alone: accel_node_lanes), and lane l's slice lies in the
 * l-th window of a half (accel_node_lane_window) whatever the call.  Step s of lane l, in the
 * rank's own area ("mine") and its peers' ("theirs"):
 *
 *   s = ++counter[l]                            kept in device memory: graph replays count too
 *   copy my slice of the step's input into my lane's window of half (s & 1)
 *   write theirs.ready[l][me] = s; wait mine.ready[l][p] >= s, every peer
 *   one-shot: dst slice = window_0 op ... op window_{n-1}, in rank order (reduce()'s bits)
 *   two-shot: my part of the slice (accel_node_slice of the slice among the ranks) =
 *     window_0 op ... op window_{n-1}, in rank order, into my window; write
 *     theirs.reduced[l][me] = s, wait mine.reduced[l][p] >= s; copy every rank's reduced part
 *     from its window into dst
 *   reduce-scatter: (the window holds the step's slice of every rank's block) this rank's
 *     block's slice = the fold of every rank's copy of it, into dst
 *   allgather: every rank's slice copied from its window into its block of dst
 *   bcast: (only the root's input goes into its window) the others copy it into dst
 *   reduce: the root folds every rank's window into dst
 *   write theirs.done[l][me] = s, every peer
 *
 * A one-shot call is one step of at most accel_node_per_step() elements; the other kinds take
 * accel_node_steps() steps of accel_node_per_step() elements (the last one shorter) in every
 * one of ACCEL_NODE_LANES lanes.  Every step advances every lane's counter and writes every
 * lane's flags, those of the lanes it does not use too, so that all the counters hold the
 * step's number: consecutive steps use different halves however their calls cut them into
 * lanes.  So no rank overwrites a window a peer still reads: only lane l reads lane l's windows,
 * and a peer's ready of lane l's step s - 1, which this rank waited for before it started step
 * s, comes after that peer's lane l's whole step s - 2 (the same parity).  Blocks run apart (a
 * lane may be steps ahead of another), so a lane's slices must stay in its own window: a slice
 * cut by another call, or by a shorter last step, would otherwise reach into another lane's
 * window while a peer's lane still reads it (test_accel_node's "apart" case).  The done flags
 * are for the end: once mine.done[l][p] reaches counter[l] for every lane and peer, no peer
 * touches this rank's area any more (it may be freed).
 *
 * Waits compare as sequence numbers (they wrap).  src and dst are device memory (dst may be
 * src); nothing else is touched.  src == NULL queues a call without data (the flags written,
 * the counters advanced, as a call of count elements of dtype would): what a rank whose call
 * could not be queued queues instead, so that its peers' streams go on.
 */
#define ACCEL_NODE_LANES 16
#define ACCEL_NODE_LANE_MIN_BYTES 16384 /* a one-shot lane's least share of a call */
#define ACCEL_NODE_MAX_RANKS 32

/* The collectives (count: elements of the buffer, or of one rank's block where named). */
typedef enum {
    ACCEL_NODE_ALLREDUCE_ONE_SHOT, /* every rank folds the whole input: one step, <= half bytes */
    ACCEL_NODE_ALLREDUCE_TWO_SHOT, /* each folds its part, then gathers the others': in steps */
    ACCEL_NODE_REDUCE_SCATTER,     /* src: nranks blocks of count; dst: this rank's block folded */
    ACCEL_NODE_ALLGATHER,          /* src: count; dst: nranks blocks of count */
    ACCEL_NODE_BCAST,              /* src: root's buffer (read at the root); dst: the others' */
    ACCEL_NODE_REDUCE,             /* every src folded into the root's dst */
    /* across nodes (plan.nnodes > 1, the plan's ranks this node's): two-shot whose parts the
     * host's proxy exchanges with the other nodes between the two folds (see below) */
    ACCEL_NODE_ALLREDUCE_HIERARCHICAL,
    ACCEL_NODE_KIND_COUNT
} accel_node_kind_t;

/* One call of a node collective: src NULL is a call without data (see above). */
typedef struct {
    accel_node_kind_t kind;
    const void *src;
    void *dst;
    size_t count;
    accel_dtype_t dtype; /* of the elements (any, for the kinds that only move them) */
    accel_op_t op;       /* the reducing kinds' */
    int root;            /* BCAST, REDUCE */
} accel_node_call_t;

/* Whether a rank's dst is written (the reduce's others and the bcast's root need none). */
static inline ACCEL_HD bool accel_node_writes_dst(accel_node_kind_t kind, int rank, int root) {
    return !((kind == ACCEL_NODE_REDUCE) && (rank != root)) &&
           !((kind == ACCEL_NODE_BCAST) && (rank == root));
}

/* Whether a kind combines elements (needs a kernel of its (op, dtype)). */
static inline ACCEL_HD bool accel_node_reduces(accel_node_kind_t kind) {
    return (kind != ACCEL_NODE_ALLGATHER) && (kind != ACCEL_NODE_BCAST);
}

/*
 * Across nodes (ACCEL_NODE_ALLREDUCE_HIERARCHICAL): the plan's ranks are this node's, and the
 * ranks of the same index on the other nodes hold the same parts.  A lane's window of a half is
 * cut in windows (accel_node_window), one for every rank's part: a step is nranks parts of
 * ACCEL_NODE_LANES shares, a share a window's worth of elements, so that a lane's bytes lie in
 * its own windows whatever the call (the lanes run apart).  The plan's stage, pinned host
 * memory the device and the host's proxy both reach (and the other nodes' proxies put into):
 * the proxy words, then ACCEL_NODE_STAGE_SLOTS sets (by step) of a slot per node of a window
 * per lane (accel_node_stage_off).  Step s, lane l, in two parts:
 *   into the network: its share of every rank's part into my half, ready; my part's share
 *     folded from the node's halves and copied into my node's slot; proxy[l] = s (the proxy
 *     puts the share into my node's slot at each other node's rank of my index, and theirs come
 *     into my slots);
 *   out of it: wait until proxy[ACCEL_NODE_LANES + l] >= s; the share folded from the nodes'
 *     slots in node order (my half standing for my node's), reduced; every rank's share copied
 *     into dst, done.
 * A lane keeps two steps in flight: step s + 1 goes into the network before step s comes out of
 * it, so the node's work overlaps the network's; it writes step s + 1 into its half once its
 * peers are done with step s - 1 (their done flags: the ready of a pipelined step comes before
 * the peer's copies of the step before).  The same bits on every rank of every node: the nodes'
 * sums of their ranks' inputs, in node order.  Each lane meets the proxy on its own, lane after
 * lane as the emulated device runs them.
 */
#define ACCEL_NODE_MAX_NODES 64
#define ACCEL_NODE_PROXY_WORDS (2 * ACCEL_NODE_LANES) /* the lanes' proxy[l], the proxy's after */

typedef struct {
    int nranks, rank;
    size_t half;                       /* bytes of each half of an area */
    char *areas[ACCEL_NODE_MAX_RANKS]; /* every rank's area, as mapped here */
    /* across nodes: how many (1: one node, the other fields unused), this rank's node, and the
     * stage (accel_node_stage_bytes, its proxy words zeroed before the first call) */
    int nnodes, node;
    char *stage;
} accel_node_plan_t;

/* The nodes a call of kind spans on plan (1 but for ACCEL_NODE_ALLREDUCE_HIERARCHICAL), and
 * the proxy words at the start of a plan's stage. */
static inline ACCEL_HD int accel_node_nnodes(const accel_node_plan_t *plan,
                                             accel_node_kind_t kind) {
    return (kind == ACCEL_NODE_ALLREDUCE_HIERARCHICAL) ? plan->nnodes : 1;
}
static inline ACCEL_HD uint32_t *accel_node_proxy(char *stage) { return (uint32_t *)(void *)stage; }

/* 32-bit words of an area's flags and counters (per lane: ready, reduced and done of every
 * rank, then the lanes' counters); a constant expression for a constant nranks. */
#define ACCEL_NODE_FLAG_WORDS(nranks) ((3 * (size_t)(nranks) + 1) * ACCEL_NODE_LANES)

/* Bytes before an area's halves: the flags, padded. */
static inline ACCEL_HD size_t accel_node_head_bytes(int nranks) {
    size_t flags = ACCEL_NODE_FLAG_WORDS(nranks) * sizeof(uint32_t);

    return (flags + 255) / 256 * 256;
}

/* Bytes of a lane's window in a half: lane l's slice of a step, whatever the call and its kind,
 * lies in the l-th window from the half's start (a multiple of 16 bytes: whole elements of any
 * type), so that lanes running apart never write where another lane of a peer still reads. */
static inline ACCEL_HD size_t accel_node_lane_window(size_t half) {
    return half / ACCEL_NODE_LANES / 16 * 16;
}

/* Lanes (blocks) of a call of count elements of size bytes (1 to ACCEL_NODE_LANES): the kinds
 * that step all of them; the one-shot by its size, and enough that each lane's slice fits its
 * window. */
static inline ACCEL_HD int accel_node_lanes(accel_node_kind_t kind, size_t count, size_t size,
                                            size_t half) {
    size_t lanes = count * size / ACCEL_NODE_LANE_MIN_BYTES;
    size_t per_lane = accel_node_lane_window(half) / size;

    if (kind != ACCEL_NODE_ALLREDUCE_ONE_SHOT) {
        return ACCEL_NODE_LANES;
    }
    if ((per_lane > 0) && (lanes < (count + per_lane - 1) / per_lane)) {
        lanes = (count + per_lane - 1) / per_lane;
    }
    return (lanes < 1) ? 1 : (lanes > ACCEL_NODE_LANES) ? ACCEL_NODE_LANES : (int)lanes;
}

/* Across nodes: bytes of a window, a lane's share of one part, aligned to 256 bytes: a lane's
 * window of a half holds one for every rank's part (nranks of them, multiples of 16 bytes within
 * a sixteenth of the half: in the lane's window by construction), and a set of the stage's
 * slots one per node. */
static inline ACCEL_HD size_t accel_node_window(size_t half, int nranks, int nnodes) {
    return half / (((size_t)nranks + (size_t)nnodes) * ACCEL_NODE_LANES) / 256 * 256;
}
/* The stage: its bytes, and from its start to node j's slot window of lane l for step s.  A lane
 * keeps two steps in flight (accel_node_kernels.h), so another node may put step s + 3 while this
 * one still folds step s: four slots, by the step's low bits (the 32-bit step wraps evenly). */
#define ACCEL_NODE_STAGE_HEAD 256
#define ACCEL_NODE_STAGE_SLOTS 4
static inline ACCEL_HD size_t accel_node_stage_bytes(size_t half, int nranks, int nnodes) {
    return ACCEL_NODE_STAGE_HEAD + ACCEL_NODE_STAGE_SLOTS * (size_t)nnodes * ACCEL_NODE_LANES *
                                       accel_node_window(half, nranks, nnodes);
}
static inline ACCEL_HD size_t accel_node_stage_off(size_t window, int nnodes, uint32_t s, int j,
                                                   int l) {
    return ACCEL_NODE_STAGE_HEAD +
           ((size_t)(s % ACCEL_NODE_STAGE_SLOTS) * (size_t)nnodes * ACCEL_NODE_LANES +
            (size_t)j * ACCEL_NODE_LANES + (size_t)l) *
               window;
}
/* Across nodes: the elements [*at_p, + *len_p) of a step of n that lane l's share of part p
 * holds (per_lane: the elements of a window). */
static inline ACCEL_HD void accel_node_share(size_t n, size_t per_lane, int p, int l, size_t *at_p,
                                             size_t *len_p) {
    size_t at = ((size_t)p * ACCEL_NODE_LANES + (size_t)l) * per_lane;

    *at_p = at;
    *len_p = (n <= at) ? 0 : (n - at < per_lane) ? n - at : per_lane;
}

/* Elements of count a step takes (a one-shot call: at most): every lane's slice of them fits its
 * window (reduce-scatter: the slice of every rank's block; across nodes: a window's worth per lane
 * and rank). */
static inline ACCEL_HD size_t accel_node_per_step(accel_node_kind_t kind, size_t size, size_t half,
                                                  int nranks, int nnodes) {
    size_t per_lane = accel_node_lane_window(half) / size;

    if (kind == ACCEL_NODE_ALLREDUCE_HIERARCHICAL) {
        return accel_node_window(half, nranks, nnodes) / size * (size_t)nranks * ACCEL_NODE_LANES;
    }
    return ((kind == ACCEL_NODE_REDUCE_SCATTER) ? per_lane / (size_t)nranks : per_lane) *
           ACCEL_NODE_LANES;
}

/* Elements of step k of a call of count elements, per a step (the last one may be shorter). */
static inline ACCEL_HD size_t accel_node_step_elems(size_t count, size_t per, size_t k) {
    return (count - k * per < per) ? count - k * per : per;
}

/* Steps of a call of count elements of size bytes (at least 1: a call of nothing still meets
 * its peers). */
static inline ACCEL_HD size_t accel_node_steps(accel_node_kind_t kind, size_t count, size_t size,
                                               size_t half, int nranks, int nnodes) {
    size_t per = accel_node_per_step(kind, size, half, nranks, nnodes);

    return ((kind == ACCEL_NODE_ALLREDUCE_ONE_SHOT) || (count <= per)) ? 1
                                                                       : (count + per - 1) / per;
}

/* Elements [*lo_p, *hi_p) of count that part k of parts takes. */
static inline ACCEL_HD void accel_node_slice(size_t count, int parts, int k, size_t *lo_p,
                                             size_t *hi_p) {
    size_t per = (count + (size_t)parts - 1) / (size_t)parts;
    size_t lo = per * (size_t)k, hi = lo + per;

    *lo_p = (lo < count) ? lo : count;
    *hi_p = (hi < count) ? hi : count;
}

/* Flags of lane l in an area (32-bit words: ready, reduced, done, then the counters); peer p's
 * flag `which` of lane l. */
typedef enum { ACCEL_NODE_READY, ACCEL_NODE_REDUCED, ACCEL_NODE_DONE } accel_node_flag_t;

static inline ACCEL_HD uint32_t *accel_node_flag(char *area, int nranks, int l,
                                                 accel_node_flag_t which, int p) {
    return (uint32_t *)(void *)area + ((size_t)l * 3 + (size_t)which) * (size_t)nranks + (size_t)p;
}
static inline ACCEL_HD uint32_t *accel_node_ready(char *area, int nranks, int l, int p) {
    return accel_node_flag(area, nranks, l, ACCEL_NODE_READY, p);
}
static inline ACCEL_HD uint32_t *accel_node_done(char *area, int nranks, int l, int p) {
    return accel_node_flag(area, nranks, l, ACCEL_NODE_DONE, p);
}
static inline ACCEL_HD uint32_t *accel_node_counter(char *area, int nranks, int l) {
    return (uint32_t *)(void *)area + (size_t)ACCEL_NODE_LANES * 3 * (size_t)nranks + (size_t)l;
}

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
    /* height rows of width bytes, row r from src + r * spitch to dst + r * dpitch, as one
     * operation on stream (cuMemcpy2DAsync): the blocks of a collective that lie at regular
     * strides move in one launch instead of one each.  width <= both pitches; rows of the
     * same side do not overlap.  A backend without it leaves it NULL (callers copy row by
     * row). */
    accel_status_t (*memcpy2d_async)(void *dst, size_t dpitch, const void *src, size_t spitch,
                                     size_t width, size_t height, accel_stream_h stream);

    accel_status_t (*stream_create)(accel_stream_h *stream_p);
    accel_status_t (*stream_destroy)(accel_stream_h stream);
    accel_status_t (*stream_synchronize)(accel_stream_h stream);

    accel_status_t (*event_create)(accel_event_h *event_p);
    accel_status_t (*event_destroy)(accel_event_h event);
    /* Streams run their work in order, asynchronously to the host (NULL: the
     * default stream, which does not order the others): read what a stream
     * wrote only after a stream_synchronize, or an event recorded after it
     * has completed.  An event completes when its stream reaches the point
     * of the latest event_record; one never recorded is complete. */
    accel_status_t (*event_record)(accel_event_h event, accel_stream_h stream);
    accel_status_t (*event_synchronize)(accel_event_h event);
    /* Whether the event has completed, without waiting: *done_p. */
    accel_status_t (*event_query)(accel_event_h event, bool *done_p);
    /* Work queued on stream after this call waits until the event's latest
     * record completed (a dependency between streams; the host does not wait). */
    accel_status_t (*stream_wait_event)(accel_stream_h stream, accel_event_h event);

    /*
     * Stream memory operations on a 4-byte aligned flag in memory the device
     * can reach (device, managed, pinned; IPC-mapped too): wait_value32 holds
     * the work queued after it until the condition holds of *addr (written by
     * the host, another stream or another process); write_value32 stores
     * value once the work queued before it completed.  ACCEL_ERR_UNSUPPORTED
     * where the driver lacks them.
     */
    accel_status_t (*stream_wait_value32)(accel_stream_h stream, uint32_t *addr, uint32_t value,
                                          accel_wait_value_t flags);
    accel_status_t (*stream_write_value32)(accel_stream_h stream, uint32_t *addr, uint32_t value);
    /* fn(arg) runs on a host thread of the backend's once the work queued before it completed;
     * the work queued after it waits until fn returned (cuLaunchHostFunc).  fn must not call
     * the accelerator, nor wait for work not queued before it.  Captured into a graph, fn runs
     * at each launch: arg must stay valid for as long as the graph may be launched. */
    accel_status_t (*stream_host_func)(accel_stream_h stream, void (*fn)(void *arg), void *arg);
    /* Whether work queued on stream now would be captured into a graph (cuStreamIsCapturing:
     * recorded to be launched later, not run) rather than run: *capturing_p.  NULL in a backend
     * without graphs. */
    accel_status_t (*stream_is_capturing)(accel_stream_h stream, bool *capturing_p);
    /* CUDA graphs, for tests and benchmarks: between begin and end the work queued on stream
     * is recorded, not run (cuStreamBeginCapture in CUDA's default mode, global: other threads
     * may not make unsafe calls meanwhile); end returns the recorded work as a graph ready to
     * launch (cuStreamEndCapture, cuGraphInstantiateWithFlags), whose every launch queues it on
     * a stream again (cuGraphLaunch).  NULL in a backend without graphs. */
    accel_status_t (*stream_begin_capture)(accel_stream_h stream);
    accel_status_t (*stream_end_capture)(accel_stream_h stream, accel_graph_h *graph_p);
    accel_status_t (*graph_launch)(accel_graph_h graph, accel_stream_h stream);
    accel_status_t (*graph_destroy)(accel_graph_h graph);

    /* Number of devices the backend sees. */
    int (*device_count)(void);

    /*
     * dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrcs-1][i], i < count,
     * combined left to right, for 2 <= nsrcs <= ACCEL_REDUCE_MAX_INPUTS;
     * "inout op= in" is dst = srcs[0] = inout, srcs[1] = in.  dst may be any
     * of the sources; it must not overlap one partially.  Queued on stream
     * (NULL: the default stream): record an event to learn of its end.  Any
     * mix of memory the device can reach.  ACCEL_ERR_UNSUPPORTED for a pair
     * MPI does not define (accel_reduce_supported()).
     */
    accel_status_t (*reduce)(void *dst, const void *const *srcs, int nsrcs, size_t count,
                             accel_dtype_t dtype, accel_op_t op, accel_stream_h stream);

    /*
     * A collective in a node above, this rank's part, queued on stream as one kernel.
     * 2 <= plan->nranks <= ACCEL_NODE_MAX_RANKS; one-shot: count * size of dtype <= plan->half;
     * reduce-scatter: plan->half holds nranks elements at least.  ACCEL_ERR_UNSUPPORTED for a
     * pair reduce() does not take (the reducing kinds).  NULL in a backend without it.
     */
    accel_status_t (*node_collective)(const accel_node_plan_t *plan, const accel_node_call_t *call,
                                      accel_stream_h stream);

    /*
     * Export the allocation that ptr lies in (device memory of this backend)
     * for a process of the same node; import a handle (maps the whole
     * allocation once per process: *base_p is its base, add handle->offset)
     * and close what import returned.  An exporter's allocation must stay
     * allocated while peers have it mapped.
     */
    accel_status_t (*ipc_export)(const void *ptr, accel_ipc_handle_t *handle);
    accel_status_t (*ipc_import)(const accel_ipc_handle_t *handle, void **base_p);
    accel_status_t (*ipc_close)(void *base);

    /* PCI address of device ordinal dev ("0000:3b:00.0"), for topology. */
    accel_status_t (*device_pci_bus_id)(int dev, char *buf, size_t len);
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

/*
 * What the process has asked of the device since it loaded the library, through the ops
 * accel_init() returns (which count before calling the backend): the measure of how much a
 * collective drives the device from the host.  Updated atomically; read as they are (MPI_T).
 */
typedef struct {
    /* work put on a stream: kernels (reduce, node_collective), asynchronous copies, stream
     * memory operations, host functions, graph launches (events are not counted) */
    unsigned long long submissions;
    /* the host waiting for the device: stream and event synchronizations, synchronous copies */
    unsigned long long host_waits;
} accel_counts_t;

ACCEL_API const accel_counts_t *accel_counts(void);
/* Counts a host wait the caller made by polling (event_query until reached): one, like a
 * synchronization. */
ACCEL_API void accel_count_host_wait(void);

ACCEL_API void accel_set_log(accel_log_func_t log, int verbosity);
ACCEL_API const accel_error_t *accel_last_error(void);
ACCEL_API const char *accel_status_string(accel_status_t status);
ACCEL_API const char *accel_mem_type_string(accel_mem_type_t type);

/* Whether MPI defines op on dtype (and so the kernels implement it). */
ACCEL_API bool accel_reduce_supported(accel_op_t op, accel_dtype_t dtype);
/* Bytes of one element; names for messages. */
ACCEL_API size_t accel_dtype_size(accel_dtype_t dtype);
ACCEL_API const char *accel_dtype_string(accel_dtype_t dtype);
ACCEL_API const char *accel_op_string(accel_op_t op);

/*
 * The CPU backend of the reductions: the reduce() of accel_ops_t, run now by
 * the calling thread on host-accessible memory.  It serves host-buffer mode
 * and the emulated backend, and is the same op code the CUDA kernels run.
 */
ACCEL_API accel_status_t accel_reduce_cpu(void *dst, const void *const *srcs, int nsrcs,
                                          size_t count, accel_dtype_t dtype, accel_op_t op);

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

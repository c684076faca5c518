/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one dispatch path of every intercepted call, and the entry points, prototypes, installation
 * and previous module's functions (coll_gpu_prev_<name>) generated for each row of
 * COLL_GPU_FOREACH_COLL (coll_gpu_colls.h) by one COLL_GPU_DEFINE_ENTRY line in the collective's
 * file.  docs/design.md, "Dispatch".
 */
#ifndef COLL_GPU_DISPATCH_H
#define COLL_GPU_DISPATCH_H

#include "coll_gpu.h"
#include "coll_gpu_board.h"
#include "coll_gpu_native_call.h"
#include "coll_gpu_native_mem.h"
#include "coll_gpu_nonblocking.h"

BEGIN_C_DECLS

/*
 * The parameter families: the parameters of a call before its communicator, as
 * B(type, name) for a buffer, C(type, name) for the element count the staged path may cut into
 * chunks (element-wise collectives), P(type, name) for any other.  The names are those of
 * coll_gpu_args_t's fields.
 */
// clang-format off
#define COLL_GPU_FAMILY_REDUCTION(B, C, P)                                                         \
    B(const void *, sbuf) B(void *, rbuf) C(int, count) P(struct ompi_datatype_t *, dtype)         \
    P(struct ompi_op_t *, op)
#define COLL_GPU_FAMILY_REDUCE(B, C, P)                                                            \
    COLL_GPU_FAMILY_REDUCTION(B, C, P) P(int, root)
#define COLL_GPU_FAMILY_REDUCE_SCATTER_BLOCK(B, C, P)                                              \
    B(const void *, sbuf) B(void *, rbuf) P(int, rcount) P(struct ompi_datatype_t *, dtype)        \
    P(struct ompi_op_t *, op)
#define COLL_GPU_FAMILY_REDUCE_SCATTER(B, C, P)                                                    \
    B(const void *, sbuf) B(void *, rbuf) P(const int *, rcounts)                                  \
    P(struct ompi_datatype_t *, dtype) P(struct ompi_op_t *, op)
/* the one buffer is the receive buffer: read at the root, written elsewhere */
#define COLL_GPU_FAMILY_BCAST(B, C, P)                                                             \
    B(void *, rbuf) C(int, count) P(struct ompi_datatype_t *, dtype) P(int, root)
#define COLL_GPU_FAMILY_BLOCKS(B, C, P)                                                            \
    B(const void *, sbuf) P(int, scount) P(struct ompi_datatype_t *, sdtype)                       \
    B(void *, rbuf) P(int, rcount) P(struct ompi_datatype_t *, rdtype)
#define COLL_GPU_FAMILY_BLOCKS_ROOT(B, C, P)                                                       \
    COLL_GPU_FAMILY_BLOCKS(B, C, P) P(int, root)
#define COLL_GPU_FAMILY_GATHERV_ALL(B, C, P)                                                       \
    B(const void *, sbuf) P(int, scount) P(struct ompi_datatype_t *, sdtype)                       \
    B(void *, rbuf) P(const int *, rcounts) P(const int *, rdispls)                                \
    P(struct ompi_datatype_t *, rdtype)
#define COLL_GPU_FAMILY_GATHERV(B, C, P)                                                           \
    COLL_GPU_FAMILY_GATHERV_ALL(B, C, P) P(int, root)
#define COLL_GPU_FAMILY_SCATTERV(B, C, P)                                                          \
    B(const void *, sbuf) P(const int *, scounts) P(const int *, sdispls)                          \
    P(struct ompi_datatype_t *, sdtype)                                                            \
    B(void *, rbuf) P(int, rcount) P(struct ompi_datatype_t *, rdtype) P(int, root)
#define COLL_GPU_FAMILY_ALLTOALLV(B, C, P)                                                         \
    B(const void *, sbuf) P(const int *, scounts) P(const int *, sdispls)                          \
    P(struct ompi_datatype_t *, sdtype)                                                            \
    B(void *, rbuf) P(const int *, rcounts) P(const int *, rdispls)                                \
    P(struct ompi_datatype_t *, rdtype)
#define COLL_GPU_FAMILY_ALLTOALLW(B, C, P)                                                         \
    B(const void *, sbuf) P(const int *, scounts) P(const int *, sdispls)                          \
    P(struct ompi_datatype_t *const *, sdtypes)                                                    \
    B(void *, rbuf) P(const int *, rcounts) P(const int *, rdispls)                                \
    P(struct ompi_datatype_t *const *, rdtypes)
/* MPI_Neighbor_alltoallw's displacements are in bytes, as MPI_Aint */
#define COLL_GPU_FAMILY_NEIGHBOR_ALLTOALLW(B, C, P)                                                \
    B(const void *, sbuf) P(const int *, scounts) P(const MPI_Aint *, asdispls)                    \
    P(struct ompi_datatype_t *const *, sdtypes)                                                    \
    B(void *, rbuf) P(const int *, rcounts) P(const MPI_Aint *, ardispls)                          \
    P(struct ompi_datatype_t *const *, rdtypes)
// clang-format on

/*
 * The forms: the parameters after the family's, up to the module.  PERSISTENT is MPI-4's
 * MPI_*_init (Open MPI 4.1: MPIX_*_init); LOCAL is MPI_Reduce_local's (no communicator: it
 * runs on MPI_COMM_SELF's module, with no peer).
 */
#define COLL_GPU_FORM_PARAMS_BLOCKING struct ompi_communicator_t *comm,
#define COLL_GPU_FORM_PARAMS_NONBLOCKING struct ompi_communicator_t *comm, ompi_request_t **request,
#define COLL_GPU_FORM_PARAMS_PERSISTENT                                                            \
    struct ompi_communicator_t *comm, struct ompi_info_t *info, ompi_request_t **request,
#define COLL_GPU_FORM_PARAMS_LOCAL
#define COLL_GPU_FORM_FORWARD_BLOCKING comm,
#define COLL_GPU_FORM_FORWARD_NONBLOCKING comm, request,
#define COLL_GPU_FORM_FORWARD_PERSISTENT comm, info, request,
#define COLL_GPU_FORM_FORWARD_LOCAL
#define COLL_GPU_FORM_FIELDS_BLOCKING .comm = comm,
#define COLL_GPU_FORM_FIELDS_NONBLOCKING .comm = comm, .request = request,
#define COLL_GPU_FORM_FIELDS_PERSISTENT                                                            \
    .comm = comm, .info = info, .request = request, .persistent = true,
#define COLL_GPU_FORM_FIELDS_LOCAL .comm = &ompi_mpi_comm_self.comm,
/* in coll_gpu_prev_<name>: the request is its argument (the staged path's own, for a
 * nonblocking call), the communicator the call's */
#define COLL_GPU_FORM_UNPACK_BLOCKING struct ompi_communicator_t *comm = a->comm;
#define COLL_GPU_FORM_UNPACK_NONBLOCKING struct ompi_communicator_t *comm = a->comm;
#define COLL_GPU_FORM_UNPACK_PERSISTENT                                                            \
    struct ompi_communicator_t *comm = a->comm;                                                    \
    struct ompi_info_t *info = a->info;
#define COLL_GPU_FORM_UNPACK_LOCAL

/* The arguments of any intercepted call: each family sets its own fields, the rest are 0. */
typedef struct coll_gpu_args {
    mca_coll_gpu_module_t *module;
    struct ompi_communicator_t *comm;
    coll_gpu_coll_t coll;     /* which call */
    ompi_request_t **request; /* the nonblocking and persistent forms' */
    struct ompi_info_t *info; /* the persistent forms' */
    bool persistent;
    const void *sbuf;
    void *rbuf;
    int count; /* element-wise collectives */
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    int root;
    int scount, rcount;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    const MPI_Aint *asdispls, *ardispls;
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_datatype_t *const *sdtypes, *const *rdtypes;
    struct coll_gpu_plan *plan; /* a persistent call's first start: record the plan here */
    bool deferred_post;         /* posted from its queue (coll_gpu_deferral.h): counted before */
} coll_gpu_args_t;

/*
 * Runs a call natively in kind's memory (device buffers, or host buffers under
 * coll_gpu_host_buffers) if its native algorithms take it.  kinds_mixed: the ranks pass
 * different kinds of memory (coll_gpu_check_memory_kinds), or it is not known that they do
 * not.  Returns false when the call is not native and must be staged (device) or handed to
 * Open MPI (host), else true with its result in *rc_p.  The decision depends only on what
 * every rank shares (counts, datatype signature, op, communicator, parameters).
 */
typedef bool (*coll_gpu_native_try_fn_t)(coll_gpu_args_t *a, coll_gpu_native_kind_t kind,
                                         bool kinds_mixed, int *rc_p);

/* What differs between the collectives on the dispatch path. */
typedef struct {
    /* Whether a buffer this rank's call uses (those MPI says are significant on it) is device
     * memory. */
    bool (*on_device)(const coll_gpu_args_t *a);
    /* Describes the call to the staged path (call comes set up: the previous module's function,
     * the count and datatype of an element-wise call); false to run call through it, true when
     * the collective ran the call itself (its result in *rc_p). */
    bool (*stage)(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call, int *rc_p);
    /* No peers (MPI_Reduce_local): nothing to agree on, no host-buffer mode, may pipeline. */
    bool local;
} coll_gpu_ops_t;

/* One intercepted call. */
typedef struct coll_gpu_entry {
    coll_gpu_host_fn_t prev; /* the previous module's function (coll_gpu_prev_<name>) */
    const coll_gpu_ops_t *ops;
    coll_gpu_native_try_fn_t native; /* NULL: no native algorithm runs this call */
    /* a persistent form: its nonblocking form, which every MPI_Start posts when that runs
     * natively (NULL: not persistent) */
    const struct coll_gpu_entry *started;
} coll_gpu_entry_t;

/* The dispatch path: classify, agree, then pass through, run natively or stage. */
int coll_gpu_dispatch(const coll_gpu_entry_t *entry, coll_gpu_args_t *a);

/* A call on host buffers under coll_gpu_host_buffers: native in host memory if the call's
 * algorithms take it, else Open MPI's (counted as passed through).  While the native context
 * sets itself up (its own collectives on the communicator) always Open MPI's. */
int coll_gpu_native_host_buffers(const coll_gpu_entry_t *entry, coll_gpu_args_t *a);

/* A rooted call's roles, and the blocks of a call's buffers, on an intra- or intercommunicator
 * (MPI's rules: on an intercommunicator the root passes MPI_ROOT, the other ranks of its group
 * MPI_PROC_NULL and use no buffer, the remote group's ranks the root's rank; blocks of a
 * gather, scatter, allgather, alltoall count the remote group's ranks). */
static inline bool coll_gpu_args_is_root(const coll_gpu_args_t *a) {
    return OMPI_COMM_IS_INTER(a->comm) ? (MPI_ROOT == a->root)
                                       : (ompi_comm_rank(a->comm) == a->root);
}
/* Whether this rank passes the buffers of a rooted call's other ranks: every rank of an
 * intracommunicator (the root too), the remote group's ranks of an intercommunicator. */
static inline bool coll_gpu_args_not_root_side(const coll_gpu_args_t *a) {
    return !OMPI_COMM_IS_INTER(a->comm) || (a->root >= 0);
}
static inline int coll_gpu_args_blocks(const coll_gpu_args_t *a) {
    return OMPI_COMM_IS_INTER(a->comm) ? ompi_comm_remote_size(a->comm) : ompi_comm_size(a->comm);
}

/* on_device classifiers for coll_gpu_ops_t: the send and receive buffers (a NULL one, as
 * bcast's send buffer, is host memory); the send buffer and, at the root only, the receive
 * buffer (gather, reduce); the receive buffer and, at the root only, the send buffer
 * (scatter). */
bool coll_gpu_args_on_device(const coll_gpu_args_t *a);
bool coll_gpu_args_on_device_root_recv(const coll_gpu_args_t *a);
bool coll_gpu_args_on_device_root_send(const coll_gpu_args_t *a);

/* For a stage function: the receive buffer of size blocks (rcounts and rdispls where blocks,
 * else rcount each), copied in under MPI_IN_PLACE and back out. */
/* The native attempt (coll_gpu_native_try_fn_t) of a call of rcount elements of rdtype per rank
 * received and send_blocks blocks of scount elements of sdtype sent (allgather: 1, alltoall: the
 * communicator's size), or MPI_IN_PLACE.  Blocks move as bytes of the type signature
 * (coll_gpu_signature.h), whatever datatypes the ranks (and a rank's two sides) pass. */
bool coll_gpu_args_native_blocks(coll_gpu_args_t *a, coll_gpu_ncoll_t ncoll, int send_blocks,
                                 coll_gpu_native_kind_t kind, bool kinds_mixed, int *rc_p);

void coll_gpu_args_stage_recv_blocks(const coll_gpu_args_t *a, coll_gpu_call_t *call, int size,
                                     bool blocks);

/* A native persistent call's plan: the native call its first MPI_Start built (the algorithm,
 * the chunking, the buffers' signature bytes, the v-collectives' blocks), which every later start
 * posts as it is: no memory-kind lookups, no eligibility, no algorithm choice, no datatype
 * walk (docs/nonblocking.md, "Persistent collectives"). */
typedef struct coll_gpu_plan {
    bool ready;
    coll_gpu_native_call_t call; /* counts/displs in blocks, posted_blocks NULL */
    size_t *blocks;              /* the v-collectives' blocks, the plan's own */
    size_t bytes;                /* counted per start (coll_gpu_native_bytes) */
    int ncoll, alg;              /* the element of coll_gpu_<coll>_algorithm_calls per start */
} coll_gpu_plan_t;

/* Runs a native call a collective's native attempt built: a blocking one now; a nonblocking one
 * (a->request) by the communicator's thread, *a->request completing when it is done.  send and
 * recv: the call's packed buffers (coll_gpu_signature.h), NULL where none; their temporaries
 * are freed after the algorithm.  bytes: the call's, counted as a native call of a->coll.  With
 * a->plan, a call whose buffers need no packing is also recorded there (coll_gpu_plan_t). */
struct coll_gpu_sig_buf;
int coll_gpu_native_launch(coll_gpu_args_t *a, coll_gpu_native_call_t *call,
                           struct coll_gpu_sig_buf *send, struct coll_gpu_sig_buf *recv,
                           size_t bytes);

/* coll_gpu_ops_t's stage of the element-wise reductions (allreduce, scan, exscan,
 * reduce_local; coll_gpu_allreduce.c). */
bool coll_gpu_reduction_stage(coll_gpu_args_t *a, coll_gpu_call_t *call, bool single_call,
                              int *rc_p);

/* The pieces the families' X-lists expand to. */
#define COLL_GPU_ARG_PARAM(type, name) type name,
#define COLL_GPU_ARG_FORWARD(type, name) name,
#define COLL_GPU_ARG_FIELD(type, name) .name = name,
#define COLL_GPU_ARG_UNPACK(type, name) type name = a->name;
#define COLL_GPU_ARG_HOST(type, name) coll_gpu_certainly_host(name) &&
#define COLL_GPU_ARG_NONE(type, name)

#define COLL_GPU_PARAMS(FAMILY, FORM)                                                              \
    COLL_GPU_FAMILY_##FAMILY(COLL_GPU_ARG_PARAM, COLL_GPU_ARG_PARAM, COLL_GPU_ARG_PARAM)           \
        COLL_GPU_FORM_PARAMS_##FORM mca_coll_base_module_t *base
#define COLL_GPU_FORWARD(FAMILY, FORM)                                                             \
    COLL_GPU_FAMILY_##FAMILY(COLL_GPU_ARG_FORWARD, COLL_GPU_ARG_FORWARD, COLL_GPU_ARG_FORWARD)     \
        COLL_GPU_FORM_FORWARD_##FORM

/* The prototypes of the entry points (and of the host-buffer entry points of the blocking
 * forms, which a module without an accelerator installs). */
#define COLL_GPU_HOST_ONLY_PROTO_BLOCKING(name, FAMILY)                                            \
    int mca_coll_gpu_##name##_host_only(COLL_GPU_PARAMS(FAMILY, BLOCKING));
#define COLL_GPU_HOST_ONLY_PROTO_NONBLOCKING(name, FAMILY)
#define COLL_GPU_HOST_ONLY_PROTO_PERSISTENT(name, FAMILY)
#define COLL_GPU_HOST_ONLY_PROTO_LOCAL(name, FAMILY)
#define COLL_GPU_ENTRY_PROTO(ID, mpi_name, name, FAMILY, FORM)                                     \
    int mca_coll_gpu_##name(COLL_GPU_PARAMS(FAMILY, FORM));                                        \
    COLL_GPU_HOST_ONLY_PROTO_##FORM(name, FAMILY)
COLL_GPU_FOREACH_COLL(COLL_GPU_ENTRY_PROTO)

/* Blocking forms: host buffers under coll_gpu_host_buffers go to the native algorithms, by
 * mca_coll_gpu_<name>_host_only, which skips the classification (a module without an
 * accelerator installs it as the entry point). */
#define COLL_GPU_HOST_ONLY_BLOCKING(name, ID, FAMILY)                                              \
    COLL_GPU_SLOW_PATH int mca_coll_gpu_##name##_host_only(COLL_GPU_PARAMS(FAMILY, BLOCKING)) {    \
        coll_gpu_args_t a = {                                                                      \
            .module = (mca_coll_gpu_module_t *)base,                                               \
            .coll = COLL_GPU_##ID,                                                                 \
            COLL_GPU_FAMILY_##FAMILY(COLL_GPU_ARG_FIELD, COLL_GPU_ARG_FIELD, COLL_GPU_ARG_FIELD)   \
                COLL_GPU_FORM_FIELDS_BLOCKING};                                                    \
        int rc;                                                                                    \
                                                                                                   \
        ++a.module->call_seq;                                                                      \
        a.module->current_call = coll_gpu_coll_name(COLL_GPU_##ID);                                \
        rc = coll_gpu_native_host_buffers(&coll_gpu_entry_##name, &a);                             \
        coll_gpu_board_settle(a.module);                                                           \
        return rc;                                                                                 \
    }
#define COLL_GPU_HOST_ONLY_NONBLOCKING(name, ID, FAMILY)
#define COLL_GPU_HOST_ONLY_PERSISTENT(name, ID, FAMILY)
#define COLL_GPU_HOST_ONLY_LOCAL(name, ID, FAMILY)
#define COLL_GPU_HOST_BUFFERS_BLOCKING(name, FAMILY)                                               \
    if ((NULL != coll_gpu_entry_##name.native) && mca_coll_gpu_component.host_buffers) {           \
        return mca_coll_gpu_##name##_host_only(COLL_GPU_FORWARD(FAMILY, BLOCKING) base);           \
    }
/* Nonblocking and persistent forms: behind calls queued on the communicator (coll_gpu_deferral.h)
 * whatever their memory, so that the communicator's calls keep their order. */
#define COLL_GPU_HOST_BUFFERS_NONBLOCKING(name, FAMILY)                                            \
    if (OPAL_UNLIKELY(NULL != module->deferral)) {                                                 \
        return coll_gpu_##name##_classified(COLL_GPU_FORWARD(FAMILY, NONBLOCKING) base);           \
    }
#define COLL_GPU_HOST_BUFFERS_PERSISTENT(name, FAMILY)                                             \
    if (OPAL_UNLIKELY(NULL != module->deferral)) {                                                 \
        return coll_gpu_##name##_classified(COLL_GPU_FORWARD(FAMILY, PERSISTENT) base);            \
    }
#define COLL_GPU_HOST_BUFFERS_LOCAL(name, FAMILY)

/*
 * Defines call name's entry point mca_coll_gpu_<name> (ID, FAMILY, FORM as in
 * COLL_GPU_FOREACH_COLL), the collective's ops and its native algorithms (NULL for none).
 * The entry point is the certainly-host test and a tail call to the previous module: a few
 * instructions, no registers to save; everything else is out of line.
 */
// clang-format off
#define COLL_GPU_DEFINE_ENTRY(name, ID, FAMILY, FORM, ops_, native_, started_)                     \
    static int coll_gpu_prev_##name(const void *sbuf, void *rbuf, int count, void *args,           \
                                    ompi_request_t **request) {                                    \
        const coll_gpu_args_t *a = args;                                                           \
        mca_coll_gpu_module_t *module = a->module;                                                 \
        COLL_GPU_FAMILY_##FAMILY(COLL_GPU_ARG_NONE, COLL_GPU_ARG_NONE, COLL_GPU_ARG_UNPACK)        \
        COLL_GPU_FORM_UNPACK_##FORM                                                                \
        (void)sbuf;                                                                                \
        (void)rbuf;                                                                                \
        (void)count;                                                                               \
        (void)request;                                                                             \
        return module->prev.coll_##name(COLL_GPU_FORWARD(FAMILY, FORM)                             \
                                        module->prev.coll_##name##_module);                        \
    }                                                                                              \
    static const coll_gpu_entry_t coll_gpu_entry_##name = {                                        \
        .prev = coll_gpu_prev_##name, .ops = (ops_), .native = (native_), .started = (started_)};  \
    COLL_GPU_HOST_ONLY_##FORM(name, ID, FAMILY)                                                    \
    static COLL_GPU_SLOW_PATH int coll_gpu_##name##_classified(COLL_GPU_PARAMS(FAMILY, FORM)) {    \
        coll_gpu_args_t a = {                                                                      \
            .module = (mca_coll_gpu_module_t *)base,                                               \
            .coll = COLL_GPU_##ID,                                                                 \
            COLL_GPU_FAMILY_##FAMILY(COLL_GPU_ARG_FIELD, COLL_GPU_ARG_FIELD, COLL_GPU_ARG_FIELD)   \
            COLL_GPU_FORM_FIELDS_##FORM};                                                          \
        int rc;                                                                                    \
                                                                                                   \
        ++a.module->call_seq;                                                                      \
        a.module->current_call = coll_gpu_coll_name(COLL_GPU_##ID);                                \
        rc = coll_gpu_dispatch(&coll_gpu_entry_##name, &a);                                        \
        coll_gpu_board_settle(a.module);                                                           \
        return rc;                                                                                 \
    }                                                                                              \
    int mca_coll_gpu_##name(COLL_GPU_PARAMS(FAMILY, FORM)) {                                       \
        mca_coll_gpu_module_t *module = (mca_coll_gpu_module_t *)base;                             \
                                                                                                   \
        if (OPAL_LIKELY(COLL_GPU_FAMILY_##FAMILY(COLL_GPU_ARG_HOST, COLL_GPU_ARG_NONE,             \
                                                 COLL_GPU_ARG_NONE) true)) {                       \
            COLL_GPU_HOST_BUFFERS_##FORM(name, FAMILY)                                             \
            /* this call's word on the board: host (coll_gpu_board.h) */                           \
            __atomic_store_n(module->board_host, ++module->call_seq, __ATOMIC_RELEASE);           \
            coll_gpu_count_add(&mca_coll_gpu_component.calls_passthrough[COLL_GPU_##ID], 1);       \
            return module->prev.coll_##name(COLL_GPU_FORWARD(FAMILY, FORM)                         \
                                            module->prev.coll_##name##_module);                    \
        }                                                                                          \
        return coll_gpu_##name##_classified(COLL_GPU_FORWARD(FAMILY, FORM) base);                  \
    }
// clang-format on

/* The blocking, nonblocking and persistent forms of one collective (native_: the blocking
 * form's native attempt; native_nb_: the nonblocking form's, run by the communicator's thread
 * when it is native; the persistent form posts the nonblocking one at every MPI_Start where
 * that runs natively, and is staged elsewhere: coll_gpu_persistent_native). */
#define COLL_GPU_DEFINE_ENTRIES(name, ID, FAMILY, ops_, native_, native_nb_)                       \
    COLL_GPU_DEFINE_ENTRY(name, ID, FAMILY, BLOCKING, ops_, native_, NULL)                         \
    COLL_GPU_DEFINE_ENTRY(i##name, I##ID, FAMILY, NONBLOCKING, ops_, native_nb_, NULL)             \
    COLL_GPU_DEFINE_ENTRY(name##_init, ID##_INIT, FAMILY, PERSISTENT, ops_, NULL,                  \
                          &coll_gpu_entry_i##name)

END_C_DECLS

#endif /* COLL_GPU_DISPATCH_H */

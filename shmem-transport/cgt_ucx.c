/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ucx backend of shmem-transport: one UCP context and worker per team.
 *
 * Endpoints.  Worker addresses are exchanged once (cgt_ucx_create); the endpoint to a peer
 * is created the first time an rkey of that peer is unpacked, with UCP_ERR_HANDLING_MODE_PEER
 * and an error callback that marks the peer failed.  A wait (flush, staging, signals) ends when
 * its operation completes or the peer is known failed; only a team given a timeout bounds it
 * too (a slow peer is no dead one): a peer that stops answering then costs CGT_ERR_TIMEOUT and
 * its endpoint is closed (its outstanding operations canceled, so that nothing lands in a buffer
 * after the caller gave up); a connection that breaks costs CGT_ERR_PEER_FAILED as soon as
 * UCX reports it.  Later calls to a failed peer return CGT_ERR_PEER_FAILED at once.
 *
 * Progress.  Over transports that emulate RMA with active messages (tcp, shared-memory FIFOs)
 * a put or get completes only while the target's worker progresses: the core calls
 * cgt_ucx_progress in every wait, and so must anyone polling a signal that arrives over UCX.
 * Open MPI's progress (params->progress) is never called from here: it could re-enter the
 * component in the middle of an operation.
 *
 * Signals (cgt_ucx_put_signal).  The data puts to a peer must be visible at the target
 * before the 8-byte signal, and a signal never lowers a slot (values to one slot only grow).
 * Three ways, chosen at create:
 *  - message (the default): the value travels in an eager active message whose handler, run
 *    by the target's progress, raises the slot to it (an atomic max, so that two signals
 *    delivered out of order leave the later value).  One one-way message: no round trip
 *    unless data puts to that peer are still unflushed, which are then flushed first, as
 *    below.  The handler writes only into host memory this context mapped, at an address the
 *    sender got from that mapping's rkey (the same trust as a put).  The target's worker must
 *    progress for the slot to move: every wait of the core does (see Progress).
 *  - flush: ucp_ep_flush_nbx() to the peer, and the value is put when that flush completes
 *    (remote completion of every earlier operation: correct with any UCX and any lanes, at the
 *    price of one round trip on every signal, not on the caller: put_signal returns at once,
 *    the signal is posted from progress).  It was the default until the message, which
 *    halves the latency of a small collective between nodes over tcp.
 *  - fence: ucp_worker_fence() then the put of the value.  Since UCX 1.16 (strong fence mode,
 *    UCX_FENCE_MODE=auto) the fence orders operations across every lane of an endpoint.
 *    UCX 1.18's tcp transport delivered fence-ordered signals to one peer out of order (a
 *    later value overwritten by an earlier one); a measuring knob only.
 * CGT_UCX_SIGNAL=message|flush|fence in the environment chooses.  Signals leave in the order
 * put_signal was called.  At the target the value is one aligned 8-byte store (by the NIC,
 * by UCX's emulated put or by the handler): the poller sees the old or the new value, never a
 * mix, and must use an acquire fence after seeing it before reading the data.
 *
 * Device memory.  When UCX moves CUDA memory itself (its context lists UCS_MEMORY_TYPE_CUDA:
 * GPUDirect RDMA, or UCX's own staging) and the accelerator is CUDA, device buffers go
 * straight to ucp_put_nbx/ucp_get_nbx.  Otherwise a local device buffer is staged through
 * pinned host bounce buffers of this context (CGT_UCX_STAGE_SLOTS x CGT_UCX_STAGE_CHUNK,
 * allocated on first use through the accelerator), pipelined: the copy of chunk k+1 runs on
 * the accelerator's stream while chunk k is on the wire.  Emulated device memory (tests) is
 * always staged: the host cannot touch it, nor can UCX.  A staged put returns once its data is
 * out of the bounce buffers, a staged get once the data is in the device buffer.  The remote
 * side cannot be staged: without CUDA support in UCX, cgt_ucx_mem_map refuses device
 * memory (CGT_ERR_UNSUPPORTED), and the core maps host scratch for such peers instead.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cgt_ucx.h"

#include <ucp/api/ucp.h>

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Staging of device memory UCX cannot reach: slots in flight and the size of each. */
#define CGT_UCX_STAGE_SLOTS 4
#define CGT_UCX_STAGE_CHUNK (1024 * 1024)
/* Signals waiting for their flush or their put to complete, at most. */
#define CGT_UCX_SIGNAL_RING 64
/* Packed rkey: magic "SUCX". */
#define CGT_UCX_PACKED_MAGIC 0x58435553u
/* Destroy waits this long at most for its endpoints to close when the team has no timeout: a
 * peer that is gone must not hold MPI_Comm_free, and everything was flushed before. */
#define CGT_UCX_DESTROY_LINGER 10.0

typedef enum {
    CGT_UCX_SIGNAL_ORDER_MESSAGE,
    CGT_UCX_SIGNAL_ORDER_FENCE,
    CGT_UCX_SIGNAL_ORDER_FLUSH,
} cgt_ucx_signal_order_t;

/* The active message of a signal (CGT_UCX_SIGNAL_ORDER_MESSAGE). */
#define CGT_UCX_AM_SIGNAL 0x43u
typedef struct {
    uint64_t addr;  /* the slot, in the target's address space */
    uint64_t value; /* raise it to this */
} cgt_ucx_signal_msg_t;

typedef struct cgt_ucx_peer {
    cgt_ucx_t *ucx;
    int rank;
    ucp_ep_h ep;           /* NULL until first use, and again once closed */
    bool failed;           /* the endpoint reported an error, or a wait timed out */
    bool dirty;            /* operations issued since the last flush */
    bool puts_unflushed;   /* data puts issued since the last flush (a signal must follow them) */
    bool no_err_handling;  /* created with UCP_ERR_HANDLING_MODE_NONE (see cgt_ucx_peer_ep) */
    ucs_status_t error;    /* why it failed */
    ucs_status_t op_error; /* an operation completed with an error (reported by flush) */
    size_t outstanding;    /* callback-tracked requests not yet completed */
    void *flush_req;       /* flush in progress (cgt_ucx_flush) */
    uint64_t signal_puts;  /* signal puts posted to this peer so far */
} cgt_ucx_peer_t;

typedef enum {
    CGT_UCX_SIGNAL_FLUSHING, /* req: the flush that must complete before the put (or NULL) */
    CGT_UCX_SIGNAL_PUTTING,  /* req: the put of value */
} cgt_ucx_signal_state_t;

typedef struct {
    cgt_ucx_peer_t *peer;
    ucp_rkey_h rkey;
    uint64_t remote_addr;
    cgt_ucx_signal_msg_t msg; /* the put's or message's source: lives here until it completes
                               * locally (msg.value is the put's 8 bytes) */
    void *req;
    cgt_ucx_signal_state_t state;
    uint64_t flushed_puts; /* flush order: the peer's signal_puts when the flush was issued */
} cgt_ucx_signal_t;

struct cgt_ucx_mem {
    cgt_ucx_mem_t *prev, *next;
    void *ptr;
    size_t len;
    accel_mem_type_t type;
    ucp_mem_h memh;
};

struct cgt_ucx_rkey {
    cgt_ucx_rkey_t *prev, *next;
    cgt_ucx_peer_t *peer;
    uint64_t base;
    uint64_t len;
    ucp_rkey_h rkey;
};

/* What cgt_ucx_mem_pack writes in front of UCX's rkey buffer. */
typedef struct {
    uint32_t magic;
    uint32_t rkey_len;
    uint64_t base;
    uint64_t len;
    uint32_t mem_type; /* accel_mem_type_t of the mapping */
    uint32_t reserved;
} cgt_ucx_packed_hdr_t;

struct cgt_ucx {
    int rank;
    int size;
    const accel_ops_t *accel;
    cgt_log_fn_t log;
    int verbose;
    double timeout;
    bool yield_when_idle;   /* the host is oversubscribed: waits yield (cgt_ucx_wait_turn) */
    void (*progress)(void); /* the team's: the rest of the process's communication */

    ucp_context_h context;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    bool device_direct; /* UCX moves the accelerator's device memory itself */
    cgt_ucx_signal_order_t signal_order;
    char devices[256];
    char tls[128]; /* the explicit transport list (parameter or UCX_TLS), "" for UCX's default */

    size_t addr_slot; /* bytes per rank in addrs: 8-byte length, then the address */
    uint8_t *addrs;   /* every rank's worker address */
    cgt_ucx_peer_t *peers;
    size_t num_eps;

    cgt_ucx_mem_t *mems;       /* live mappings (released at destroy if the caller did not) */
    cgt_ucx_mem_t *signal_mem; /* the mapping the last signal message landed in (a cache) */
    cgt_ucx_rkey_t *rkeys;     /* live unpacked rkeys (idem) */

    cgt_ucx_signal_t signals[CGT_UCX_SIGNAL_RING];
    unsigned signal_head;
    unsigned signal_count;

    /* Staging, set up on first use. */
    bool stage_ready;
    char *stage_buf; /* CGT_UCX_STAGE_SLOTS chunks of pinned host memory */
    accel_stream_h stage_stream;
    accel_event_h stage_events[CGT_UCX_STAGE_SLOTS];
};

/* Endpoints open in the process, every context together (leak checks). */
static size_t cgt_ucx_total_eps;

static __thread char cgt_ucx_errbuf[256];

/* ------------------------------------------------------------------------------------------ */
/* Errors, logging, time                                                                      */
/* ------------------------------------------------------------------------------------------ */

static void cgt_ucx_log(const cgt_ucx_t *ucx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cgt_status_t cgt_ucx_error(const cgt_ucx_t *ucx, cgt_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cgt_ucx_vlog(cgt_log_fn_t log, int verbose, int level, const char *fmt, va_list ap) {
    char msg[512];

    if ((log == NULL) || (level > verbose)) {
        return;
    }
    vsnprintf(msg, sizeof(msg), fmt, ap);
    log(level, msg);
}

static void cgt_ucx_log(const cgt_ucx_t *ucx, int level, const char *fmt, ...) {
    va_list ap;

    va_start(ap, fmt);
    cgt_ucx_vlog(ucx->log, ucx->verbose, level, fmt, ap);
    va_end(ap);
}

/* The first to see an error records it in words (cgt_ucx_last_error) and logs it at level 2;
 * callers pass the status up. */
static cgt_status_t cgt_ucx_error(const cgt_ucx_t *ucx, cgt_status_t status, const char *fmt, ...) {
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cgt_ucx_errbuf, sizeof(cgt_ucx_errbuf), fmt, ap);
    va_end(ap);
    if (ucx != NULL) {
        cgt_ucx_log(ucx, 2, "ucx: rank %d: %s", ucx->rank, cgt_ucx_errbuf);
    }
    return status;
}

const char *cgt_ucx_last_error(void) { return cgt_ucx_errbuf; }

static double cgt_ucx_now(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* When a wait started now gives up: never, unless the team was given a timeout (a slow peer is
 * not a dead one; a dead one is reported by its endpoint or by Open MPI's runtime). */
static double cgt_ucx_deadline(const cgt_ucx_t *ucx) {
    return (ucx->timeout > 0) ? cgt_ucx_now() + ucx->timeout : HUGE_VAL;
}

static bool cgt_ucx_peer_valid(const cgt_ucx_t *ucx, int peer) {
    return (peer >= 0) && (peer < ucx->size);
}

/* ------------------------------------------------------------------------------------------ */
/* Endpoints                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void cgt_ucx_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status) {
    cgt_ucx_peer_t *peer = arg;

    (void)ep;
    if (!peer->failed) {
        peer->failed = true;
        peer->error = status;
        cgt_ucx_log(peer->ucx, 2, "ucx: rank %d: endpoint to rank %d failed: %s", peer->ucx->rank,
                    peer->rank, ucs_status_string(status));
    }
}

static void cgt_ucx_ep_forget(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer) {
    peer->ep = NULL;
    --ucx->num_eps;
    __atomic_sub_fetch(&cgt_ucx_total_eps, 1, __ATOMIC_RELAXED);
}

/* Close the endpoint of a failed peer: UCX wants an endpoint that reported an error closed
 * with FORCE; it cancels what is still outstanding on it. */
static void cgt_ucx_ep_close_force(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer) {
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
    void *req;

    if (peer->ep == NULL) {
        return;
    }
    req = ucp_ep_close_nbx(peer->ep, &param);
    if (UCS_PTR_IS_PTR(req)) {
        /* FORCE completes at once in practice; a request left over is released by UCX */
        ucp_worker_progress(ucx->worker);
        ucp_request_free(req);
    }
    cgt_ucx_ep_forget(ucx, peer);
}

/* A wait on peer ran out of time: from now on the peer counts as failed. */
static cgt_status_t cgt_ucx_peer_timeout(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer, const char *what) {
    if (!peer->failed) {
        peer->failed = true;
        peer->error = UCS_ERR_TIMED_OUT;
    }
    cgt_ucx_ep_close_force(ucx, peer);
    return cgt_ucx_error(ucx, CGT_ERR_TIMEOUT, "%s: rank %d did not answer within %.1f s", what,
                         peer->rank, ucx->timeout);
}

static cgt_status_t cgt_ucx_peer_failed_status(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer,
                                               const char *what) {
    /* the error callback has run: close now, outside UCX's callback */
    cgt_ucx_ep_close_force(ucx, peer);
    return cgt_ucx_error(ucx, CGT_ERR_PEER_FAILED, "%s: rank %d failed (%s)", what, peer->rank,
                         ucs_status_string(peer->error));
}

/* UCX logs an error each time an endpoint with peer error handling cannot be created: once a
 * transport list (an explicit one: UCX's default has tcp, which reports failures) proved that,
 * later contexts with the same list create their endpoints without error handling at once. */
static char cgt_ucx_no_err_tls[128];
static pthread_mutex_t cgt_ucx_no_err_lock = PTHREAD_MUTEX_INITIALIZER;

static bool cgt_ucx_no_err_handling_known(const cgt_ucx_t *ucx) {
    bool known;

    if (ucx->tls[0] == '\0') {
        return false;
    }
    pthread_mutex_lock(&cgt_ucx_no_err_lock);
    known = (strcmp(cgt_ucx_no_err_tls, ucx->tls) == 0);
    pthread_mutex_unlock(&cgt_ucx_no_err_lock);
    return known;
}

static void cgt_ucx_no_err_handling_learn(const cgt_ucx_t *ucx) {
    if (ucx->tls[0] == '\0') {
        return;
    }
    pthread_mutex_lock(&cgt_ucx_no_err_lock);
    snprintf(cgt_ucx_no_err_tls, sizeof(cgt_ucx_no_err_tls), "%s", ucx->tls);
    pthread_mutex_unlock(&cgt_ucx_no_err_lock);
}

/* The endpoint to peer, created on first use. */
static cgt_status_t cgt_ucx_peer_ep(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer, const char *what) {
    ucp_ep_params_t params;
    ucs_status_t status;
    const uint8_t *slot;

    if (peer->failed) {
        return cgt_ucx_peer_failed_status(ucx, peer, what);
    }
    if (peer->ep != NULL) {
        return CGT_OK;
    }
    slot = ucx->addrs + (size_t)peer->rank * ucx->addr_slot;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = (const ucp_address_t *)(slot + sizeof(uint64_t));
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = cgt_ucx_ep_error_cb;
    params.err_handler.arg = peer;
    status = cgt_ucx_no_err_handling_known(ucx) ? UCS_ERR_UNREACHABLE
                                                : ucp_ep_create(ucx->worker, &params, &peer->ep);
    if (status == UCS_ERR_UNREACHABLE) {
        /* No transport to peer reports peer failures (UCX 1.13's shared memory and self do
         * not): without error handling, a dead peer is then caught by the timeout. */
        params.field_mask &= ~(uint64_t)UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        status = ucp_ep_create(ucx->worker, &params, &peer->ep);
        if (status == UCS_OK) {
            cgt_ucx_no_err_handling_learn(ucx);
            peer->no_err_handling = true;
            cgt_ucx_log(ucx, 1,
                        "ucx: rank %d: the transports to rank %d cannot report peer "
                        "failures: a dead peer is found by Open MPI's runtime (or "
                        "coll_gpu_transport_timeout)",
                        ucx->rank, peer->rank);
        }
    }
    if (status != UCS_OK) {
        peer->ep = NULL;
        return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "%s: ucp_ep_create to rank %d: %s", what,
                             peer->rank, ucs_status_string(status));
    }
    ++ucx->num_eps;
    __atomic_add_fetch(&cgt_ucx_total_eps, 1, __ATOMIC_RELAXED);
    return CGT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Requests                                                                                   */
/* ------------------------------------------------------------------------------------------ */

/* Completion of a put/get tracked by count (released here: flush learns of errors). */
static void cgt_ucx_op_done_cb(void *request, ucs_status_t status, void *user_data) {
    cgt_ucx_peer_t *peer = user_data;

    --peer->outstanding;
    if ((status != UCS_OK) && (status != UCS_ERR_CANCELED) && (peer->op_error == UCS_OK)) {
        peer->op_error = status;
    }
    ucp_request_free(request);
}

static void cgt_ucx_signals_progress(cgt_ucx_t *ucx);

void cgt_ucx_progress(cgt_ucx_t *ucx) {
    if (ucx == NULL) {
        return;
    }
    ucp_worker_progress(ucx->worker);
    if (ucx->signal_count > 0) {
        cgt_ucx_signals_progress(ucx);
    }
}

/* One turn of a wait for the network: progress, and on an oversubscribed host let the peer
 * whose progress completes the operation run (over tcp and shared-memory FIFOs the target's
 * worker must progress: spinning here would keep it off the core for a whole time slice).
 * The rest of the process progresses too: the peer this flush waits for may itself wait, in
 * another team, for this rank (it finished this team's call and went on to the next). */
static void cgt_ucx_wait_turn(cgt_ucx_t *ucx) {
    cgt_ucx_progress(ucx);
    if (ucx->progress != NULL) {
        ucx->progress();
    }
    if (ucx->yield_when_idle) {
        sched_yield();
    }
}

/* Wait for one request (put, get or flush) to peer to complete; the request is released. */
static cgt_status_t cgt_ucx_req_wait(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer, void **req_p,
                                     const char *what) {
    double deadline = cgt_ucx_deadline(ucx);
    ucs_status_t status;

    while (*req_p != NULL) {
        status = ucp_request_check_status(*req_p);
        if (status != UCS_INPROGRESS) {
            ucp_request_free(*req_p);
            *req_p = NULL;
            if (status == UCS_OK) {
                return CGT_OK;
            }
            if (peer->failed) {
                return cgt_ucx_peer_failed_status(ucx, peer, what);
            }
            return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "%s to rank %d: %s", what, peer->rank,
                                 ucs_status_string(status));
        }
        cgt_ucx_wait_turn(ucx);
        if (peer->failed || (cgt_ucx_now() > deadline)) {
            /* released by UCX when it completes (canceled by the closing endpoint) */
            ucp_request_free(*req_p);
            *req_p = NULL;
            return peer->failed ? cgt_ucx_peer_failed_status(ucx, peer, what)
                                : cgt_ucx_peer_timeout(ucx, peer, what);
        }
    }
    return CGT_OK;
}

/*
 * Post a put or a get of [buf, buf + len) at remote_addr.  req_p NULL: the request is counted
 * on the peer and released by its callback (flush completes it); else it is returned in *req_p
 * (NULL when done at once) for the caller to wait on.
 */
static cgt_status_t cgt_ucx_post_rma(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, bool is_put, void *buf,
                                     size_t len, uint64_t remote_addr, ucs_memory_type_t mem_type,
                                     void **req_p) {
    cgt_ucx_peer_t *peer = rkey->peer;
    ucp_request_param_t param;
    void *req;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type = mem_type;
    if (req_p == NULL) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send = cgt_ucx_op_done_cb;
        param.user_data = peer;
    }
    req = is_put ? ucp_put_nbx(peer->ep, buf, len, remote_addr, rkey->rkey, &param)
                 : ucp_get_nbx(peer->ep, buf, len, remote_addr, rkey->rkey, &param);
    if (UCS_PTR_IS_ERR(req)) {
        if (peer->failed) {
            return cgt_ucx_peer_failed_status(ucx, peer, is_put ? "put" : "get");
        }
        return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "%s of %zu bytes to rank %d: %s",
                             is_put ? "ucp_put_nbx" : "ucp_get_nbx", len, peer->rank,
                             ucs_status_string(UCS_PTR_STATUS(req)));
    }
    peer->dirty = true;
    peer->puts_unflushed |= is_put;
    if (req_p != NULL) {
        *req_p = req;
    } else if (req != NULL) {
        ++peer->outstanding;
    }
    return CGT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Signals                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void cgt_ucx_signal_pop(cgt_ucx_t *ucx) {
    ucx->signal_head = (ucx->signal_head + 1) % CGT_UCX_SIGNAL_RING;
    --ucx->signal_count;
}

/* Post the message of a signal whose earlier puts are flushed (or that had none). */
static void cgt_ucx_signal_send_message(cgt_ucx_signal_t *sig) {
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_AM_SEND_FLAG_EAGER};
    void *req;

    req = ucp_am_send_nbx(sig->peer->ep, CGT_UCX_AM_SIGNAL, NULL, 0, &sig->msg, sizeof(sig->msg),
                          &param);
    /* a later flush to the peer waits for its delivery too (destroy, quiet) */
    sig->peer->dirty = true;
    sig->state = CGT_UCX_SIGNAL_PUTTING;
    if (UCS_PTR_IS_ERR(req)) {
        if (sig->peer->op_error == UCS_OK) {
            sig->peer->op_error = UCS_PTR_STATUS(req); /* flush reports it */
        }
        req = NULL;
    }
    sig->req = req;
}

/* The target's side of a signal message: raise the slot, if it lies in host memory this
 * context mapped (anything else is a sender's bug: dropped, said at verbose 1). */
static ucs_status_t cgt_ucx_signal_recv(void *arg, const void *header, size_t header_length,
                                        void *data, size_t length,
                                        const ucp_am_recv_param_t *param) {
    cgt_ucx_t *ucx = arg;
    cgt_ucx_signal_msg_t msg;
    cgt_ucx_mem_t *mem = ucx->signal_mem;
    uint64_t *slot, cur;

    (void)header;
    (void)header_length;
    if ((length != sizeof(msg)) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        cgt_ucx_log(ucx, 1, "ucx: rank %d: a signal message of %zu bytes dropped", ucx->rank,
                    length);
        return UCS_OK;
    }
    memcpy(&msg, data, sizeof(msg));
    if ((mem == NULL) || (msg.addr < (uintptr_t)mem->ptr) ||
        (msg.addr + sizeof(uint64_t) > (uintptr_t)mem->ptr + mem->len)) {
        for (mem = ucx->mems; mem != NULL; mem = mem->next) {
            if ((mem->type == ACCEL_MEM_HOST) && (msg.addr >= (uintptr_t)mem->ptr) &&
                (msg.addr + sizeof(uint64_t) <= (uintptr_t)mem->ptr + mem->len)) {
                break;
            }
        }
        if ((mem == NULL) || (msg.addr % sizeof(uint64_t) != 0)) {
            cgt_ucx_log(ucx, 1,
                        "ucx: rank %d: a signal message for 0x%" PRIx64
                        " (no host mapping of this rank) dropped",
                        ucx->rank, msg.addr);
            return UCS_OK;
        }
        ucx->signal_mem = mem;
    }
    slot = (uint64_t *)(uintptr_t)msg.addr;
    cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
    while ((cur < msg.value) && !__atomic_compare_exchange_n(slot, &cur, msg.value, true,
                                                             __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
    return UCS_OK;
}

/* Move the signals on, in order: post the put of the oldest once its flush completed (flush
 * order) or at once (fence order), release it once its put completed locally. */
static void cgt_ucx_signals_progress(cgt_ucx_t *ucx) {
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE,
                                 .memory_type = UCS_MEMORY_TYPE_HOST};
    cgt_ucx_signal_t *sig;
    ucs_status_t status;
    void *req;

    while (ucx->signal_count > 0) {
        sig = &ucx->signals[ucx->signal_head];
        if (sig->req != NULL) {
            status = ucp_request_check_status(sig->req);
            if (status == UCS_INPROGRESS) {
                return;
            }
            ucp_request_free(sig->req);
            sig->req = NULL;
            if ((status != UCS_OK) && (sig->peer->op_error == UCS_OK)) {
                sig->peer->op_error = status; /* flush reports it */
            }
            if ((status != UCS_OK) || (sig->state == CGT_UCX_SIGNAL_PUTTING)) {
                cgt_ucx_signal_pop(ucx);
                continue;
            }
        } else if (sig->state == CGT_UCX_SIGNAL_PUTTING) {
            cgt_ucx_signal_pop(ucx);
            continue;
        }
        /* flushed (or fenced): the signal may go */
        if (sig->peer->failed || (sig->peer->ep == NULL)) {
            cgt_ucx_signal_pop(ucx); /* the caller learns of it from flush */
            continue;
        }
        if (ucx->signal_order == CGT_UCX_SIGNAL_ORDER_MESSAGE) {
            cgt_ucx_signal_send_message(sig);
            continue;
        }
        if ((ucx->signal_order == CGT_UCX_SIGNAL_ORDER_FLUSH) &&
            (sig->flushed_puts != sig->peer->signal_puts)) {
            /* its flush was issued before an earlier signal's put to the peer was posted, so
             * it does not order them: the later value could land first (another lane) and
             * the earlier one overwrite it, or reach memory the peer freed once it saw the
             * later one.  Flush again, behind that put. */
            ucp_request_param_t flush_param = {.op_attr_mask = 0};
            sig->flushed_puts = sig->peer->signal_puts;
            req = ucp_ep_flush_nbx(sig->peer->ep, &flush_param);
            if (UCS_PTR_IS_ERR(req)) {
                if (sig->peer->op_error == UCS_OK) {
                    sig->peer->op_error = UCS_PTR_STATUS(req);
                }
                cgt_ucx_signal_pop(ucx); /* the caller learns of it from flush */
                continue;
            }
            sig->req = req;
            if (req != NULL) {
                continue; /* checked at the top */
            }
        }
        ++sig->peer->signal_puts;
        req = ucp_put_nbx(sig->peer->ep, &sig->msg.value, sizeof(sig->msg.value), sig->remote_addr,
                          sig->rkey, &param);
        sig->peer->dirty = true;
        sig->state = CGT_UCX_SIGNAL_PUTTING;
        if (UCS_PTR_IS_ERR(req)) {
            if (sig->peer->op_error == UCS_OK) {
                sig->peer->op_error = UCS_PTR_STATUS(req);
            }
        } else {
            sig->req = req;
        }
    }
}

/* Every queued signal posted and locally complete (within the timeout, if the team has one). */
static cgt_status_t cgt_ucx_signals_drain(cgt_ucx_t *ucx) {
    double deadline = cgt_ucx_deadline(ucx);

    while (ucx->signal_count > 0) {
        cgt_ucx_wait_turn(ucx);
        if ((ucx->signal_count > 0) && (cgt_ucx_now() > deadline)) {
            /* the oldest is stuck, and the others wait behind it: all are dropped */
            cgt_ucx_peer_t *peer = ucx->signals[ucx->signal_head].peer;
            while (ucx->signal_count > 0) {
                cgt_ucx_signal_t *sig = &ucx->signals[ucx->signal_head];
                if (sig->req != NULL) {
                    ucp_request_free(sig->req);
                    sig->req = NULL;
                }
                cgt_ucx_signal_pop(ucx);
            }
            return cgt_ucx_peer_timeout(ucx, peer, "signal");
        }
    }
    return CGT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Create / destroy                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* The device the accelerator allocates on: the only one when there is one, else found by
 * where a small allocation lands (accel_ops_t has no "current device"). */
static int cgt_ucx_current_device(const accel_ops_t *accel) {
    accel_mem_attr_t attr;
    void *probe;
    int count, device = -1;

    if ((accel == NULL) || (accel->device_count == NULL)) {
        return -1;
    }
    count = accel->device_count();
    if (count <= 1) {
        return count - 1;
    }
    if (accel->mem_alloc(ACCEL_MEM_DEVICE, 256, &probe) != ACCEL_OK) {
        return 0;
    }
    if (accel->mem_query(probe, &attr) == ACCEL_OK) {
        device = attr.device;
    }
    accel->mem_free(probe);
    return (device >= 0) ? device : 0;
}

/* UCX_NET_DEVICES of the context: the parameter, else the user's environment, else the NICs
 * nearest to this rank's GPU, else UCX's default.  Sets ucx->devices; *apply_p when it must
 * be written into the config. */
static void cgt_ucx_choose_devices(cgt_ucx_t *ucx, const cgt_team_params_t *params, bool *apply_p) {
    char nics[sizeof(ucx->devices)], why[256];
    const char *env = getenv("UCX_NET_DEVICES");
    int device;

    *apply_p = false;
    if ((params->net_devices != NULL) && (params->net_devices[0] != '\0')) {
        snprintf(ucx->devices, sizeof(ucx->devices), "%s", params->net_devices);
        *apply_p = true;
        cgt_ucx_log(ucx, 1, "ucx: rank %d: network devices %s (parameter)", ucx->rank,
                    ucx->devices);
        return;
    }
    if ((env != NULL) && (env[0] != '\0')) {
        snprintf(ucx->devices, sizeof(ucx->devices), "%s", env);
        cgt_ucx_log(ucx, 1, "ucx: rank %d: network devices %s (UCX_NET_DEVICES)", ucx->rank,
                    ucx->devices);
        return;
    }
    device = cgt_ucx_current_device(ucx->accel);
    if ((cgt_topo_nearest_nics_why(ucx->accel, device, nics, sizeof(nics), why, sizeof(why)) ==
         CGT_OK) &&
        (nics[0] != '\0')) {
        snprintf(ucx->devices, sizeof(ucx->devices), "%s", nics);
        *apply_p = true;
    } else {
        snprintf(ucx->devices, sizeof(ucx->devices), "all");
    }
    cgt_ucx_log(ucx, 1, "ucx: rank %d: network devices %s (nearest NIC: %s)", ucx->rank,
                ucx->devices, why);
}

static cgt_ucx_signal_order_t cgt_ucx_choose_signal_order(void) {
    const char *env = getenv("CGT_UCX_SIGNAL");

    if ((env != NULL) && (strcmp(env, "fence") == 0)) {
        return CGT_UCX_SIGNAL_ORDER_FENCE;
    }
    if ((env != NULL) && (strcmp(env, "flush") == 0)) {
        return CGT_UCX_SIGNAL_ORDER_FLUSH;
    }
    return CGT_UCX_SIGNAL_ORDER_MESSAGE;
}

static const char *cgt_ucx_signal_order_name(cgt_ucx_signal_order_t order) {
    switch (order) {
    case CGT_UCX_SIGNAL_ORDER_MESSAGE:
        return "active message";
    case CGT_UCX_SIGNAL_ORDER_FENCE:
        return "fence";
    default:
        return "flush";
    }
}

/* Local part of create: context, worker, address. */
static cgt_status_t cgt_ucx_open(cgt_ucx_t *ucx, const cgt_team_params_t *params) {
    ucp_context_attr_t ctx_attr;
    ucp_worker_params_t worker_params;
    ucp_params_t ucp_params;
    ucp_config_t *config;
    ucs_status_t status;
    bool apply_devices;
    cgt_status_t ret;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_config_read: %s",
                             ucs_status_string(status));
    }
    cgt_ucx_choose_devices(ucx, params, &apply_devices);
    if (apply_devices) {
        status = ucp_config_modify(config, "NET_DEVICES", ucx->devices);
        if (status != UCS_OK) {
            ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "UCX NET_DEVICES=%s: %s", ucx->devices,
                                ucs_status_string(status));
            goto err_release_config;
        }
    }
    if (getenv("UCX_TLS") != NULL) {
        snprintf(ucx->tls, sizeof(ucx->tls), "%s", getenv("UCX_TLS"));
    }
    if ((params->ucx_tls != NULL) && (params->ucx_tls[0] != '\0')) {
        snprintf(ucx->tls, sizeof(ucx->tls), "%s", params->ucx_tls);
        status = ucp_config_modify(config, "TLS", params->ucx_tls);
        if (status != UCS_OK) {
            ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "UCX TLS=%s: %s", params->ucx_tls,
                                ucs_status_string(status));
            goto err_release_config;
        }
    }

    memset(&ucp_params, 0, sizeof(ucp_params));
    ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                            UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    ucp_params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM;
    ucp_params.mt_workers_shared = 0;
    ucp_params.estimated_num_eps = (size_t)ucx->size;
    status = ucp_init(&ucp_params, config, &ucx->context);
    if (status != UCS_OK) {
        ucx->context = NULL;
        ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_init (TLS %s, devices %s): %s",
                            (ucx->tls[0] != '\0') ? ucx->tls : "default", ucx->devices,
                            ucs_status_string(status));
        goto err_release_config;
    }
    ucp_config_release(config);

    memset(&ctx_attr, 0, sizeof(ctx_attr));
    ctx_attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(ucx->context, &ctx_attr) == UCS_OK) {
        /* UCX touches CUDA memory only when it is real CUDA memory: never the emulated
         * backend's, which the host cannot access */
        ucx->device_direct = (ctx_attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) &&
                             (ucx->accel != NULL) && (strcmp(ucx->accel->name, "cuda") == 0);
    }

    /* Under MPI_THREAD_MULTIPLE the worker is progressed from whichever thread waits in MPI
     * (cgt_team_progress), not only from the one running the team's collective.  The
     * team's lock already keeps them apart (cgt_internal.h); MULTI makes UCX itself safe
     * too.  A UCX built without thread support grants less: the lock still serializes. */
    memset(&worker_params, 0, sizeof(worker_params));
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode =
        params->thread_multiple ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(ucx->context, &worker_params, &ucx->worker);
    if (status != UCS_OK) {
        ucx->worker = NULL;
        ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_worker_create: %s",
                            ucs_status_string(status));
        goto err_cleanup_context;
    }
    if (params->thread_multiple) {
        ucp_worker_attr_t worker_attr;

        memset(&worker_attr, 0, sizeof(worker_attr));
        worker_attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
        if ((ucp_worker_query(ucx->worker, &worker_attr) == UCS_OK) &&
            (worker_attr.thread_mode != UCS_THREAD_MODE_MULTI)) {
            cgt_ucx_log(ucx, 1,
                        "ucx: rank %d: UCX grants thread mode %s, not multi: the team's "
                        "lock serializes its worker",
                        ucx->rank,
                        (worker_attr.thread_mode == UCS_THREAD_MODE_SERIALIZED) ? "serialized"
                                                                                : "single");
        }
    }
    status = ucp_worker_get_address(ucx->worker, &ucx->address, &ucx->address_len);
    if (status != UCS_OK) {
        ucx->address = NULL;
        ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_worker_get_address: %s",
                            ucs_status_string(status));
        goto err_destroy_worker;
    }

    ucx->signal_order = cgt_ucx_choose_signal_order();
    if (ucx->signal_order == CGT_UCX_SIGNAL_ORDER_MESSAGE) {
        ucp_am_handler_param_t am_param;

        memset(&am_param, 0, sizeof(am_param));
        am_param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                              UCP_AM_HANDLER_PARAM_FIELD_ARG;
        am_param.id = CGT_UCX_AM_SIGNAL;
        am_param.cb = cgt_ucx_signal_recv;
        am_param.arg = ucx;
        status = ucp_worker_set_am_recv_handler(ucx->worker, &am_param);
        if (status != UCS_OK) {
            ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_worker_set_am_recv_handler: %s",
                                ucs_status_string(status));
            goto err_release_address;
        }
    }
    cgt_ucx_log(ucx, 1,
                "ucx: rank %d: TLS %s; device memory %s; signals ordered by %s; timeout %.1f s",
                ucx->rank, (ucx->tls[0] != '\0') ? ucx->tls : "UCX's default",
                ucx->device_direct ? "moved by UCX (GPUDirect RDMA or UCX staging)"
                                   : "staged through pinned host buffers",
                cgt_ucx_signal_order_name(ucx->signal_order), ucx->timeout);
    return CGT_OK;

err_release_address:
    ucp_worker_release_address(ucx->worker, ucx->address);
    ucx->address = NULL;
err_destroy_worker:
    ucp_worker_destroy(ucx->worker);
    ucx->worker = NULL;
err_cleanup_context:
    ucp_cleanup(ucx->context);
    ucx->context = NULL;
    return ret;
err_release_config:
    ucp_config_release(config);
    return ret;
}

/* Collective: every rank's worker address, in fixed-size slots.  A rank that could not open
 * UCX says so in the first allgather, so that all fail together. */
static cgt_status_t cgt_ucx_exchange(cgt_ucx_t *ucx, const cgt_team_params_t *params, bool opened) {
    uint64_t mine = opened ? (uint64_t)ucx->address_len : UINT64_MAX;
    uint64_t *lens, max_len = 0;
    cgt_status_t ret = CGT_OK;
    uint8_t *slot;
    int i;

    lens = calloc((size_t)ucx->size, sizeof(*lens));
    if (lens == NULL) {
        return cgt_ucx_error(ucx, CGT_ERR_NO_MEMORY, "no memory for %d address lengths", ucx->size);
    }
    if (params->oob_allgather(&mine, lens, sizeof(mine), params->oob_ctx) != 0) {
        ret = cgt_ucx_error(ucx, CGT_ERR_BOOTSTRAP, "allgather of UCX address lengths");
        goto out_free_lens;
    }
    for (i = 0; i < ucx->size; ++i) {
        if (lens[i] == UINT64_MAX) {
            ret = opened ? cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "rank %d could not open UCX", i)
                         : CGT_ERR_TRANSPORT; /* the reason is recorded already */
            goto out_free_lens;
        }
        max_len = (lens[i] > max_len) ? lens[i] : max_len;
    }
    ucx->addr_slot = sizeof(uint64_t) + ((max_len + 7) & ~(uint64_t)7);
    ucx->addrs = malloc(ucx->addr_slot * (size_t)ucx->size);
    slot = calloc(1, ucx->addr_slot);
    if ((ucx->addrs == NULL) || (slot == NULL)) {
        /* every rank fails here alike: the sizes are the same everywhere */
        free(slot);
        ret = cgt_ucx_error(ucx, CGT_ERR_NO_MEMORY, "no memory for %d UCX addresses", ucx->size);
        goto out_free_lens;
    }
    memcpy(slot, &mine, sizeof(mine));
    memcpy(slot + sizeof(mine), ucx->address, ucx->address_len);
    if (params->oob_allgather(slot, ucx->addrs, ucx->addr_slot, params->oob_ctx) != 0) {
        ret = cgt_ucx_error(ucx, CGT_ERR_BOOTSTRAP, "allgather of UCX addresses");
    }
    free(slot);
out_free_lens:
    free(lens);
    return ret;
}

cgt_status_t cgt_ucx_create(const cgt_team_params_t *params, cgt_ucx_t **ucx_p) {
    cgt_status_t status, open_status;
    cgt_ucx_t *ucx;
    int i;

    if ((params == NULL) || (ucx_p == NULL) || (params->oob_allgather == NULL) ||
        (params->size <= 0) || (params->rank < 0) || (params->rank >= params->size)) {
        return cgt_ucx_error(NULL, CGT_ERR_INVALID, "cgt_ucx_create: bad team parameters");
    }
    /* Allocation failures before the exchange would leave the other ranks in it: they are
     * not worth surviving (a few hundred bytes). */
    ucx = calloc(1, sizeof(*ucx));
    if (ucx == NULL) {
        return cgt_ucx_error(NULL, CGT_ERR_NO_MEMORY, "no memory for a UCX context");
    }
    ucx->rank = params->rank;
    ucx->size = params->size;
    ucx->accel = params->accel;
    ucx->log = params->log;
    ucx->verbose = params->verbose;
    ucx->timeout = params->timeout; /* <= 0: waits end by completion or a peer failure */
    ucx->yield_when_idle = params->oversubscribed;
    ucx->progress = params->progress;
    ucx->peers = calloc((size_t)params->size, sizeof(*ucx->peers));
    if (ucx->peers == NULL) {
        free(ucx);
        return cgt_ucx_error(NULL, CGT_ERR_NO_MEMORY, "no memory for %d UCX peers", params->size);
    }
    for (i = 0; i < ucx->size; ++i) {
        ucx->peers[i].ucx = ucx;
        ucx->peers[i].rank = i;
    }

    open_status = cgt_ucx_open(ucx, params);
    status = cgt_ucx_exchange(ucx, params, open_status == CGT_OK);
    if (open_status != CGT_OK) {
        status = open_status;
    }
    if (status != CGT_OK) {
        cgt_ucx_destroy(ucx);
        return status;
    }
    *ucx_p = ucx;
    return CGT_OK;
}

static void cgt_ucx_stage_fini(cgt_ucx_t *ucx) {
    int i;

    if (!ucx->stage_ready) {
        return;
    }
    for (i = 0; i < CGT_UCX_STAGE_SLOTS; ++i) {
        ucx->accel->event_destroy(ucx->stage_events[i]);
    }
    ucx->accel->stream_destroy(ucx->stage_stream);
    ucx->accel->mem_free(ucx->stage_buf);
    ucx->stage_ready = false;
}

void cgt_ucx_destroy(cgt_ucx_t *ucx) {
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS};
    void **close_reqs = NULL;
    double deadline, linger;
    size_t leftover = 0;
    int i, pending;

    if (ucx == NULL) {
        return;
    }
    if (ucx->worker != NULL) {
        cgt_ucx_signals_drain(ucx);
    }
    /* What the caller did not release: released here, said at level 2. */
    while (ucx->rkeys != NULL) {
        cgt_ucx_rkey_release(ucx, ucx->rkeys);
        ++leftover;
    }
    while (ucx->mems != NULL) {
        cgt_ucx_mem_unmap(ucx, ucx->mems);
        ++leftover;
    }
    if (leftover > 0) {
        cgt_ucx_log(ucx, 2, "ucx: rank %d: destroy released %zu mappings and rkeys", ucx->rank,
                    leftover);
    }

    /* Close every endpoint at once (flush mode, FORCE for failed peers), then wait for all,
     * for a bounded time: a peer that is gone must not hold the destroy. */
    if (ucx->num_eps > 0) {
        close_reqs = calloc((size_t)ucx->size, sizeof(*close_reqs));
    }
    for (i = 0; i < ucx->size; ++i) {
        cgt_ucx_peer_t *peer = &ucx->peers[i];
        void *req;
        if (peer->ep == NULL) {
            continue;
        }
        if (peer->failed || (close_reqs == NULL)) {
            cgt_ucx_ep_close_force(ucx, peer);
            continue;
        }
        param.flags = 0;
        req = ucp_ep_close_nbx(peer->ep, &param);
        if (UCS_PTR_IS_PTR(req)) {
            close_reqs[i] = req;
        }
        cgt_ucx_ep_forget(ucx, peer);
    }
    linger = (ucx->timeout > 0) ? ucx->timeout : CGT_UCX_DESTROY_LINGER;
    deadline = cgt_ucx_now() + linger;
    do {
        pending = 0;
        for (i = 0; (close_reqs != NULL) && (i < ucx->size); ++i) {
            if ((close_reqs[i] != NULL) &&
                (ucp_request_check_status(close_reqs[i]) != UCS_INPROGRESS)) {
                ucp_request_free(close_reqs[i]);
                close_reqs[i] = NULL;
            }
            pending += (close_reqs[i] != NULL);
        }
        if (pending > 0) {
            ucp_worker_progress(ucx->worker);
        }
    } while ((pending > 0) && (cgt_ucx_now() < deadline));
    for (i = 0; (close_reqs != NULL) && (i < ucx->size); ++i) {
        if (close_reqs[i] != NULL) {
            /* the worker's destruction ends it */
            ucp_request_free(close_reqs[i]);
        }
    }
    free(close_reqs);
    if (pending > 0) {
        cgt_ucx_log(ucx, 2, "ucx: rank %d: %d endpoint(s) not closed within %.1f s", ucx->rank,
                    pending, linger);
    }

    if (ucx->address != NULL) {
        ucp_worker_release_address(ucx->worker, ucx->address);
    }
    if (ucx->worker != NULL) {
        ucp_worker_destroy(ucx->worker);
    }
    if (ucx->context != NULL) {
        ucp_cleanup(ucx->context);
    }
    /* after the worker: nothing of UCX reads the bounce buffers any more */
    cgt_ucx_stage_fini(ucx);
    free(ucx->addrs);
    free(ucx->peers);
    free(ucx);
}

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                     */
/* ------------------------------------------------------------------------------------------ */

cgt_status_t cgt_ucx_mem_map(cgt_ucx_t *ucx, void *ptr, size_t len, accel_mem_type_t type,
                             cgt_ucx_mem_t **mem_p) {
    ucp_mem_map_params_t params;
    ucs_memory_type_t mem_type;
    ucs_status_t status;
    cgt_ucx_mem_t *mem;

    if ((ucx == NULL) || (ptr == NULL) || (len == 0) || (mem_p == NULL)) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "cgt_ucx_mem_map: bad arguments");
    }
    switch (type) {
    case ACCEL_MEM_HOST:
    case ACCEL_MEM_HOST_PINNED:
        mem_type = UCS_MEMORY_TYPE_HOST;
        break;
    case ACCEL_MEM_MANAGED:
        mem_type = ucx->device_direct ? UCS_MEMORY_TYPE_CUDA_MANAGED : UCS_MEMORY_TYPE_HOST;
        break;
    case ACCEL_MEM_DEVICE:
        if (!ucx->device_direct) {
            /* peers cannot stage on our side: the core maps host scratch instead */
            return cgt_ucx_error(ucx, CGT_ERR_UNSUPPORTED,
                                 "UCX cannot reach %s device memory (no CUDA support in "
                                 "this UCX, or an emulated device): map host memory",
                                 (ucx->accel != NULL) ? ucx->accel->name : "the");
        }
        mem_type = UCS_MEMORY_TYPE_CUDA;
        break;
    default:
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "cgt_ucx_mem_map: memory type %d", (int)type);
    }

    mem = calloc(1, sizeof(*mem));
    if (mem == NULL) {
        return cgt_ucx_error(ucx, CGT_ERR_NO_MEMORY, "no memory for a UCX mapping");
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    params.address = ptr;
    params.length = len;
    params.memory_type = mem_type;
    status = ucp_mem_map(ucx->context, &params, &mem->memh);
    if (status != UCS_OK) {
        free(mem);
        return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_mem_map of %zu bytes of %s: %s", len,
                             accel_mem_type_string(type), ucs_status_string(status));
    }
    mem->ptr = ptr;
    mem->len = len;
    mem->type = type;
    mem->next = ucx->mems;
    if (ucx->mems != NULL) {
        ucx->mems->prev = mem;
    }
    ucx->mems = mem;
    *mem_p = mem;
    return CGT_OK;
}

void cgt_ucx_mem_unmap(cgt_ucx_t *ucx, cgt_ucx_mem_t *mem) {
    if ((ucx == NULL) || (mem == NULL)) {
        return;
    }
    ucp_mem_unmap(ucx->context, mem->memh);
    if (ucx->signal_mem == mem) {
        ucx->signal_mem = NULL;
    }
    if (mem->prev != NULL) {
        mem->prev->next = mem->next;
    } else {
        ucx->mems = mem->next;
    }
    if (mem->next != NULL) {
        mem->next->prev = mem->prev;
    }
    free(mem);
}

cgt_status_t cgt_ucx_mem_pack(cgt_ucx_t *ucx, const cgt_ucx_mem_t *mem, void *buf, size_t *len_p) {
    cgt_ucx_packed_hdr_t hdr;
    cgt_status_t ret = CGT_OK;
    void *rkey_buf;
    size_t rkey_len;
    ucs_status_t status;

    if ((ucx == NULL) || (mem == NULL) || (buf == NULL) || (len_p == NULL)) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "cgt_ucx_mem_pack: bad arguments");
    }
    status = ucp_rkey_pack(ucx->context, mem->memh, &rkey_buf, &rkey_len);
    if (status != UCS_OK) {
        return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_rkey_pack: %s",
                             ucs_status_string(status));
    }
    if (sizeof(hdr) + rkey_len > CGT_UCX_PACKED_MAX) {
        ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT,
                            "UCX rkey of %zu bytes exceeds CGT_UCX_PACKED_MAX (%d)", rkey_len,
                            CGT_UCX_PACKED_MAX);
        goto out_release_rkey;
    }
    memset(&hdr, 0, sizeof(hdr));
    hdr.magic = CGT_UCX_PACKED_MAGIC;
    hdr.rkey_len = (uint32_t)rkey_len;
    hdr.base = (uint64_t)(uintptr_t)mem->ptr;
    hdr.len = mem->len;
    hdr.mem_type = (uint32_t)mem->type;
    memcpy(buf, &hdr, sizeof(hdr));
    memcpy((char *)buf + sizeof(hdr), rkey_buf, rkey_len);
    *len_p = sizeof(hdr) + rkey_len;
out_release_rkey:
    ucp_rkey_buffer_release(rkey_buf);
    return ret;
}

cgt_status_t cgt_ucx_rkey_unpack(cgt_ucx_t *ucx, int peer, const void *buf, size_t len,
                                 cgt_ucx_rkey_t **rkey_p) {
    cgt_ucx_packed_hdr_t hdr;
    cgt_ucx_rkey_t *rkey;
    cgt_status_t ret;
    ucs_status_t status;

    if ((ucx == NULL) || !cgt_ucx_peer_valid(ucx, peer) || (buf == NULL) || (rkey_p == NULL) ||
        (len < sizeof(hdr))) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "cgt_ucx_rkey_unpack: bad arguments");
    }
    memcpy(&hdr, buf, sizeof(hdr));
    if ((hdr.magic != CGT_UCX_PACKED_MAGIC) || (hdr.rkey_len == 0) ||
        (hdr.rkey_len > len - sizeof(hdr))) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID,
                             "cgt_ucx_rkey_unpack: not a packed UCX mapping (%zu bytes)", len);
    }
    ret = cgt_ucx_peer_ep(ucx, &ucx->peers[peer], "rkey unpack");
    if (ret != CGT_OK) {
        return ret;
    }
    rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL) {
        return cgt_ucx_error(ucx, CGT_ERR_NO_MEMORY, "no memory for an rkey");
    }
    status = ucp_ep_rkey_unpack(ucx->peers[peer].ep, (const char *)buf + sizeof(hdr), &rkey->rkey);
    if (status != UCS_OK) {
        free(rkey);
        return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_ep_rkey_unpack of rank %d: %s", peer,
                             ucs_status_string(status));
    }
    rkey->peer = &ucx->peers[peer];
    rkey->base = hdr.base;
    rkey->len = hdr.len;
    rkey->next = ucx->rkeys;
    if (ucx->rkeys != NULL) {
        ucx->rkeys->prev = rkey;
    }
    ucx->rkeys = rkey;
    *rkey_p = rkey;
    return CGT_OK;
}

void cgt_ucx_rkey_release(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey) {
    if ((ucx == NULL) || (rkey == NULL)) {
        return;
    }
    if (ucx->signal_count > 0) {
        /* queued signals may still put through this rkey */
        cgt_ucx_signals_drain(ucx);
    }
    ucp_rkey_destroy(rkey->rkey);
    if (rkey->prev != NULL) {
        rkey->prev->next = rkey->next;
    } else {
        ucx->rkeys = rkey->next;
    }
    if (rkey->next != NULL) {
        rkey->next->prev = rkey->prev;
    }
    free(rkey);
}

size_t cgt_ucx_rkey_size(const cgt_ucx_rkey_t *rkey) {
    return (rkey != NULL) ? (size_t)rkey->len : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Put / get                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* [offset, offset + len) inside the peer's mapping, and the peer reachable. */
static cgt_status_t cgt_ucx_check_target(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, size_t offset,
                                         size_t len, const char *what) {
    if ((ucx == NULL) || (rkey == NULL)) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "%s: no context or rkey", what);
    }
    if ((offset > rkey->len) || (len > rkey->len - offset)) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID,
                             "%s of %zu bytes at offset %zu: past the %" PRIu64
                             " bytes rank %d mapped",
                             what, len, offset, rkey->len, rkey->peer->rank);
    }
    if (rkey->peer->failed || (rkey->peer->ep == NULL)) {
        return cgt_ucx_peer_failed_status(ucx, rkey->peer, what);
    }
    return CGT_OK;
}

/* How UCX takes a local buffer: as it is (host, or device memory UCX handles), or staged. */
static bool cgt_ucx_local_staged(const cgt_ucx_t *ucx, const void *ptr,
                                 ucs_memory_type_t *mem_type_p) {
    accel_mem_attr_t attr;

    *mem_type_p = UCS_MEMORY_TYPE_HOST;
    if ((ucx->accel == NULL) || !accel_may_be_device(ucx->accel, ptr) ||
        (ucx->accel->mem_query(ptr, &attr) != ACCEL_OK)) {
        return false;
    }
    if (attr.type == ACCEL_MEM_DEVICE) {
        *mem_type_p = UCS_MEMORY_TYPE_CUDA;
        return !ucx->device_direct;
    }
    if ((attr.type == ACCEL_MEM_MANAGED) && ucx->device_direct) {
        *mem_type_p = UCS_MEMORY_TYPE_CUDA_MANAGED;
    }
    return false;
}

static cgt_status_t cgt_ucx_accel_error(cgt_ucx_t *ucx, const char *what) {
    const accel_error_t *err = accel_last_error();

    return cgt_ucx_error(ucx, CGT_ERR_ACCEL, "%s: %s: %s", what,
                         (err->call != NULL) ? err->call : "?",
                         (err->error != NULL) ? err->error : "?");
}

static cgt_status_t cgt_ucx_stage_init(cgt_ucx_t *ucx) {
    const accel_ops_t *accel = ucx->accel;
    int i;

    if (ucx->stage_ready) {
        return CGT_OK;
    }
    if (accel->mem_alloc(ACCEL_MEM_HOST_PINNED, (size_t)CGT_UCX_STAGE_SLOTS * CGT_UCX_STAGE_CHUNK,
                         (void **)&ucx->stage_buf) != ACCEL_OK) {
        return cgt_ucx_accel_error(ucx, "pinned bounce buffers for UCX");
    }
    if (accel->stream_create(&ucx->stage_stream) != ACCEL_OK) {
        cgt_ucx_accel_error(ucx, "stream for UCX staging");
        goto err_free_buf;
    }
    for (i = 0; i < CGT_UCX_STAGE_SLOTS; ++i) {
        if (accel->event_create(&ucx->stage_events[i]) != ACCEL_OK) {
            cgt_ucx_accel_error(ucx, "event for UCX staging");
            goto err_destroy_events;
        }
    }
    ucx->stage_ready = true;
    return CGT_OK;

err_destroy_events:
    while (i-- > 0) {
        accel->event_destroy(ucx->stage_events[i]);
    }
    accel->stream_destroy(ucx->stage_stream);
err_free_buf:
    accel->mem_free(ucx->stage_buf);
    return CGT_ERR_ACCEL;
}

static char *cgt_ucx_slot_buf(cgt_ucx_t *ucx, size_t chunk) {
    return ucx->stage_buf + (chunk % CGT_UCX_STAGE_SLOTS) * CGT_UCX_STAGE_CHUNK;
}

static size_t cgt_ucx_chunk_len(size_t len, size_t chunk) {
    size_t off = chunk * CGT_UCX_STAGE_CHUNK;
    return (len - off < CGT_UCX_STAGE_CHUNK) ? len - off : CGT_UCX_STAGE_CHUNK;
}

/* Wait for every slot's request; the first error wins. */
static cgt_status_t cgt_ucx_stage_wait_all(cgt_ucx_t *ucx, cgt_ucx_peer_t *peer, void **reqs,
                                           cgt_status_t status) {
    cgt_status_t ret;
    int i;

    for (i = 0; i < CGT_UCX_STAGE_SLOTS; ++i) {
        if (status != CGT_OK) {
            if (reqs[i] != NULL) {
                ucp_request_free(reqs[i]); /* the bounce buffer outlives it */
                reqs[i] = NULL;
            }
            continue;
        }
        ret = cgt_ucx_req_wait(ucx, peer, &reqs[i], "staged transfer");
        status = (status == CGT_OK) ? ret : status;
    }
    return status;
}

/*
 * Device -> remote, through the bounce slots: copies run ahead on the stream up to
 * CGT_UCX_STAGE_SLOTS chunks; chunk k is put as soon as its copy is done, and its slot is
 * refilled once that put completed locally.
 */
static cgt_status_t cgt_ucx_put_staged(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, uint64_t remote_addr,
                                       const char *src, size_t len) {
    const accel_ops_t *accel = ucx->accel;
    void *reqs[CGT_UCX_STAGE_SLOTS] = {NULL};
    size_t nchunks = (len + CGT_UCX_STAGE_CHUNK - 1) / CGT_UCX_STAGE_CHUNK;
    size_t copied = 0, sent = 0, slot;
    cgt_status_t status = CGT_OK;

    while ((status == CGT_OK) && (sent < nchunks)) {
        /* refill free slots */
        while ((copied < nchunks) && (copied < sent + CGT_UCX_STAGE_SLOTS)) {
            slot = copied % CGT_UCX_STAGE_SLOTS;
            if ((reqs[slot] != NULL) && (copied > sent) &&
                (ucp_request_check_status(reqs[slot]) == UCS_INPROGRESS)) {
                break; /* the slot is still on the wire: send what is ready first */
            }
            if (reqs[slot] != NULL) {
                status = cgt_ucx_req_wait(ucx, rkey->peer, &reqs[slot], "staged put");
                if (status != CGT_OK) {
                    break;
                }
            }
            if ((accel->memcpy_async(
                     cgt_ucx_slot_buf(ucx, copied), src + copied * CGT_UCX_STAGE_CHUNK,
                     cgt_ucx_chunk_len(len, copied), ucx->stage_stream) != ACCEL_OK) ||
                (accel->event_record(ucx->stage_events[slot], ucx->stage_stream) != ACCEL_OK)) {
                status = cgt_ucx_accel_error(ucx, "staged put: copy to the bounce buffer");
                break;
            }
            ++copied;
        }
        if (status != CGT_OK) {
            break;
        }
        /* the oldest copied chunk goes on the wire */
        slot = sent % CGT_UCX_STAGE_SLOTS;
        if (accel->event_synchronize(ucx->stage_events[slot]) != ACCEL_OK) {
            status = cgt_ucx_accel_error(ucx, "staged put: copy to the bounce buffer");
            break;
        }
        status = cgt_ucx_post_rma(
            ucx, rkey, true, cgt_ucx_slot_buf(ucx, sent), cgt_ucx_chunk_len(len, sent),
            remote_addr + sent * CGT_UCX_STAGE_CHUNK, UCS_MEMORY_TYPE_HOST, &reqs[slot]);
        ++sent;
        ucp_worker_progress(ucx->worker);
    }
    if (status != CGT_OK) {
        /* copies queued on the stream must end before the slots are reused */
        accel->stream_synchronize(ucx->stage_stream);
    }
    return cgt_ucx_stage_wait_all(ucx, rkey->peer, reqs, status);
}

/*
 * Remote -> device: gets into up to CGT_UCX_STAGE_SLOTS slots at once; each completed get is
 * copied to the device buffer on the stream, and its slot gets the next chunk once that copy
 * is done.
 */
static cgt_status_t cgt_ucx_get_staged(cgt_ucx_t *ucx, char *dst, cgt_ucx_rkey_t *rkey,
                                       uint64_t remote_addr, size_t len) {
    const accel_ops_t *accel = ucx->accel;
    void *reqs[CGT_UCX_STAGE_SLOTS] = {NULL};
    bool copying[CGT_UCX_STAGE_SLOTS] = {false};
    size_t nchunks = (len + CGT_UCX_STAGE_CHUNK - 1) / CGT_UCX_STAGE_CHUNK;
    size_t fetched = 0, copied = 0, slot;
    cgt_status_t status = CGT_OK;

    while ((status == CGT_OK) && (copied < nchunks)) {
        while ((fetched < nchunks) && (fetched < copied + CGT_UCX_STAGE_SLOTS)) {
            slot = fetched % CGT_UCX_STAGE_SLOTS;
            if (copying[slot]) {
                if (accel->event_synchronize(ucx->stage_events[slot]) != ACCEL_OK) {
                    status = cgt_ucx_accel_error(ucx, "staged get: copy to the device");
                    break;
                }
                copying[slot] = false;
            }
            status = cgt_ucx_post_rma(
                ucx, rkey, false, cgt_ucx_slot_buf(ucx, fetched), cgt_ucx_chunk_len(len, fetched),
                remote_addr + fetched * CGT_UCX_STAGE_CHUNK, UCS_MEMORY_TYPE_HOST, &reqs[slot]);
            if (status != CGT_OK) {
                break;
            }
            ++fetched;
        }
        if (status != CGT_OK) {
            break;
        }
        slot = copied % CGT_UCX_STAGE_SLOTS;
        status = cgt_ucx_req_wait(ucx, rkey->peer, &reqs[slot], "staged get");
        if (status != CGT_OK) {
            break;
        }
        if ((accel->memcpy_async(dst + copied * CGT_UCX_STAGE_CHUNK, cgt_ucx_slot_buf(ucx, copied),
                                 cgt_ucx_chunk_len(len, copied), ucx->stage_stream) != ACCEL_OK) ||
            (accel->event_record(ucx->stage_events[slot], ucx->stage_stream) != ACCEL_OK)) {
            status = cgt_ucx_accel_error(ucx, "staged get: copy to the device");
            break;
        }
        copying[slot] = true;
        ++copied;
    }
    if ((accel->stream_synchronize(ucx->stage_stream) != ACCEL_OK) && (status == CGT_OK)) {
        status = cgt_ucx_accel_error(ucx, "staged get: copy to the device");
    }
    return cgt_ucx_stage_wait_all(ucx, rkey->peer, reqs, status);
}

cgt_status_t cgt_ucx_put(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, size_t offset, const void *src,
                         size_t len) {
    ucs_memory_type_t mem_type;
    cgt_status_t status;

    status = cgt_ucx_check_target(ucx, rkey, offset, len, "put");
    if ((status != CGT_OK) || (len == 0)) {
        return status;
    }
    if (src == NULL) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "put: NULL source");
    }
    if (cgt_ucx_local_staged(ucx, src, &mem_type)) {
        status = cgt_ucx_stage_init(ucx);
        return (status != CGT_OK) ? status
                                  : cgt_ucx_put_staged(ucx, rkey, rkey->base + offset, src, len);
    }
    return cgt_ucx_post_rma(ucx, rkey, true, (void *)src, len, rkey->base + offset, mem_type, NULL);
}

cgt_status_t cgt_ucx_get(cgt_ucx_t *ucx, void *dst, cgt_ucx_rkey_t *rkey, size_t offset,
                         size_t len) {
    ucs_memory_type_t mem_type;
    cgt_status_t status;

    status = cgt_ucx_check_target(ucx, rkey, offset, len, "get");
    if ((status != CGT_OK) || (len == 0)) {
        return status;
    }
    if (dst == NULL) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "get: NULL destination");
    }
    if (cgt_ucx_local_staged(ucx, dst, &mem_type)) {
        status = cgt_ucx_stage_init(ucx);
        return (status != CGT_OK) ? status
                                  : cgt_ucx_get_staged(ucx, dst, rkey, rkey->base + offset, len);
    }
    return cgt_ucx_post_rma(ucx, rkey, false, dst, len, rkey->base + offset, mem_type, NULL);
}

cgt_status_t cgt_ucx_put_signal(cgt_ucx_t *ucx, cgt_ucx_rkey_t *rkey, size_t offset,
                                uint64_t value) {
    ucp_request_param_t param = {.op_attr_mask = 0};
    cgt_ucx_signal_t *sig;
    cgt_status_t status;
    double deadline;
    void *req = NULL;

    status = cgt_ucx_check_target(ucx, rkey, offset, sizeof(uint64_t), "put_signal");
    if (status != CGT_OK) {
        return status;
    }
    if ((rkey->base + offset) % sizeof(uint64_t) != 0) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID,
                             "put_signal at offset %zu: not 8-byte aligned at rank %d", offset,
                             rkey->peer->rank);
    }
    deadline = cgt_ucx_deadline(ucx);
    while (ucx->signal_count == CGT_UCX_SIGNAL_RING) {
        cgt_ucx_wait_turn(ucx);
        if ((ucx->signal_count == CGT_UCX_SIGNAL_RING) && (cgt_ucx_now() > deadline)) {
            return cgt_ucx_signals_drain(ucx); /* names the peer that does not answer */
        }
    }

    if ((ucx->signal_order == CGT_UCX_SIGNAL_ORDER_MESSAGE) && !rkey->peer->puts_unflushed) {
        req = NULL; /* nothing to order it after: it goes at once */
    } else if (ucx->signal_order == CGT_UCX_SIGNAL_ORDER_FENCE) {
        ucs_status_t ret = ucp_worker_fence(ucx->worker);
        if (ret != UCS_OK) {
            return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_worker_fence: %s",
                                 ucs_status_string(ret));
        }
    } else {
        req = ucp_ep_flush_nbx(rkey->peer->ep, &param);
        if (UCS_PTR_IS_ERR(req)) {
            if (rkey->peer->failed) {
                return cgt_ucx_peer_failed_status(ucx, rkey->peer, "put_signal");
            }
            return cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "ucp_ep_flush_nbx to rank %d: %s",
                                 rkey->peer->rank, ucs_status_string(UCS_PTR_STATUS(req)));
        }
    }
    sig = &ucx->signals[(ucx->signal_head + ucx->signal_count) % CGT_UCX_SIGNAL_RING];
    sig->peer = rkey->peer;
    sig->rkey = rkey->rkey;
    sig->remote_addr = rkey->base + offset;
    sig->msg.addr = sig->remote_addr;
    sig->msg.value = value;
    sig->req = req;
    sig->state = CGT_UCX_SIGNAL_FLUSHING;
    sig->flushed_puts = rkey->peer->signal_puts;
    ++ucx->signal_count;
    cgt_ucx_signals_progress(ucx);
    return CGT_OK;
}

cgt_status_t cgt_ucx_flush(cgt_ucx_t *ucx, int peer) {
    ucp_request_param_t param = {.op_attr_mask = 0};
    cgt_status_t status, ret = CGT_OK;
    int i, first, last;
    double deadline;

    if ((ucx == NULL) || ((peer != -1) && !cgt_ucx_peer_valid(ucx, peer))) {
        return cgt_ucx_error(ucx, CGT_ERR_INVALID, "flush: no rank %d", peer);
    }
    first = (peer == -1) ? 0 : peer;
    last = (peer == -1) ? ucx->size - 1 : peer;

    /* queued signals are operations issued before this flush */
    ret = cgt_ucx_signals_drain(ucx);

    /* flush every endpoint concerned at once, then wait */
    for (i = first; i <= last; ++i) {
        cgt_ucx_peer_t *p = &ucx->peers[i];
        void *req;
        if (!p->dirty || p->failed || (p->ep == NULL)) {
            continue;
        }
        req = ucp_ep_flush_nbx(p->ep, &param);
        if (UCS_PTR_IS_ERR(req)) {
            if (p->op_error == UCS_OK) {
                p->op_error = UCS_PTR_STATUS(req);
            }
        } else {
            p->flush_req = req;
        }
    }
    for (i = first; i <= last; ++i) {
        cgt_ucx_peer_t *p = &ucx->peers[i];
        if (p->flush_req != NULL) {
            status = cgt_ucx_req_wait(ucx, p, &p->flush_req, "flush");
            ret = (ret == CGT_OK) ? status : ret;
        }
        /* the completion callbacks of what the flush completed */
        deadline = cgt_ucx_deadline(ucx);
        while ((p->outstanding > 0) && !p->failed && (cgt_ucx_now() < deadline)) {
            cgt_ucx_wait_turn(ucx);
        }
        if (p->dirty && (ret == CGT_OK)) {
            if (p->failed) {
                ret = cgt_ucx_peer_failed_status(ucx, p, "flush");
            } else if (p->outstanding > 0) {
                ret = cgt_ucx_peer_timeout(ucx, p, "flush");
            } else if (p->op_error != UCS_OK) {
                ret = cgt_ucx_error(ucx, CGT_ERR_TRANSPORT, "put/get to rank %d: %s", i,
                                    ucs_status_string(p->op_error));
            }
        }
        p->op_error = UCS_OK;
        p->dirty = false;
        p->puts_unflushed = false;
    }
    return ret;
}

bool cgt_ucx_peer_failed(const cgt_ucx_t *ucx, int peer) {
    return (ucx != NULL) && cgt_ucx_peer_valid(ucx, peer) && ucx->peers[peer].failed;
}

size_t cgt_ucx_endpoint_count(const cgt_ucx_t *ucx) {
    if (ucx == NULL) {
        return __atomic_load_n(&cgt_ucx_total_eps, __ATOMIC_RELAXED);
    }
    return ucx->num_eps;
}

const char *cgt_ucx_devices(const cgt_ucx_t *ucx) { return (ucx != NULL) ? ucx->devices : ""; }

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/gpu: collectives on GPU device buffers for Open MPI.
 *
 * The component wraps the collectives of the module Open MPI selected before
 * it (tuned, han, basic, libnbc, self ...).  Host buffers go straight to that
 * module; device buffers run the component's native algorithms where it has
 * one for the call (coll_gpu_alg.h), and are staged through host memory
 * around that module otherwise (coll_gpu_staged.h).
 *
 * This header is the leaf every folder includes: the configuration (read-only once the
 * component is open), the counters and the module's state; base/ calls no other folder.
 */
#ifndef MCA_COLL_GPU_H
#define MCA_COLL_GPU_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "opal/util/output.h"

#include "accel.h"
#include "coll_gpu_colls.h"
#include "coll_gpu_compat.h"
#include "coll_gpu_params.h"

#include <time.h>

BEGIN_C_DECLS

#ifndef COLL_GPU_VERSION_MAJOR
#define COLL_GPU_VERSION_MAJOR 0
#define COLL_GPU_VERSION_MINOR 1
#define COLL_GPU_VERSION_RELEASE 0
#endif

/* Values of coll_gpu_accelerator. */
enum {
    COLL_GPU_ACCELERATOR_AUTO = ACCEL_BACKEND_AUTO,
    COLL_GPU_ACCELERATOR_CUDA = ACCEL_BACKEND_CUDA,
    COLL_GPU_ACCELERATOR_EMULATED = ACCEL_BACKEND_EMULATED,
};

/* Values of coll_gpu_tree_rails. */
enum {
    COLL_GPU_RAILS_AUTO = -1, /* on where the nodes' ranks use several network interfaces */
    COLL_GPU_RAILS_OFF = 0,
    COLL_GPU_RAILS_ON = 1,
};

/* coll_gpu_native_setup: when a communicator's native context and device scratch are set up. */
enum {
    COLL_GPU_NATIVE_SETUP_FIRST_CALL = 0, /* by its first blocking native call on device memory */
    COLL_GPU_NATIVE_SETUP_CREATE = 1,     /* when the communicator is created */
};

/* Room for the algorithms (coll_gpu_alg.h) and fallback reasons (coll_gpu_native_ctx.h), checked
 * in their .c files. */
#define COLL_GPU_MAX_ALGS 12
#define COLL_GPU_MAX_FALLBACKS 16
#define COLL_GPU_MAX_NCOLLS 12

/* The three numbers of auto's band rule for a row (coll_gpu_alg_size_rule_t): from min_nodes
 * nodes on, calls from min_bytes up to max_bytes. */
typedef struct {
    int min_nodes;
    size_t min_bytes;
    size_t max_bytes;
} coll_gpu_band_t;

/* A band rule (binomial's; gather's and scatter's hierarchical): its parameters
 * (coll_gpu_<coll>_<alg>_*, by default the cost model's band for communicators with rails), and the
 * model's band without rails, which a communicator without them (coll_gpu_team_t.rails) takes where
 * none of the three parameters was set. */
typedef struct {
    coll_gpu_band_t params;
    coll_gpu_band_t no_rails;
    bool params_set;
} coll_gpu_band_rule_t;

typedef struct mca_coll_gpu_component_t {
    coll_gpu_base_component_t super;

    /* MCA parameters: the fields named after them (coll_gpu_params.h) */
    COLL_GPU_PARAM_FIELDS
    struct coll_gpu_tuning_state *tuning; /* the rules read from tuning_file, NULL: none */
    /* of every parameter marked PROTOCOL (coll_gpu_params_hash): ranks must agree on it */
    uint64_t native_config_hash;

    int output; /* opal_output stream, verbosity from coll_gpu_verbose */
    /* MPI_THREAD_MULTIPLE (init_query's enable_mpi_threads): shared state is locked and
     * counted atomically, UCX workers run in UCS_THREAD_MODE_MULTI */
    bool thread_multiple;
    /* The thread level MPI_Init gave, read at init_query: Open MPI 4.1's MPI_T_init_thread
     * overwrites the process's (ompi_mpi_thread_provided) with its own argument later */
    int thread_level;

    /* The accelerator backend; NULL when none could be opened (the component
     * then declines every communicator, or with host_buffers installs only its
     * host-buffer allreduce). */
    const accel_ops_t *accel;
    const char *accel_unavailable_reason;
    bool accel_opened;

    /* MPI_T counters (coll_gpu_* pvars) */
    unsigned long long calls_passthrough[COLL_GPU_NUM_COLLS];
    unsigned long long calls_staged[COLL_GPU_NUM_COLLS];
    unsigned long long calls_native[COLL_GPU_NUM_COLLS];
    /* bytes of this rank's receive buffer that native calls filled, per collective */
    unsigned long long native_bytes[COLL_GPU_NUM_COLLS];
    unsigned long long staged_bytes;
    unsigned long long staged_chunks;
    unsigned long long pageable_fallbacks;
    unsigned long long accelerator_errors;
    unsigned long long peer_errors;    /* calls that failed on another rank (native agreement) */
    unsigned long long board_arrivals; /* words given on a call board, waiting for the peers' */
    unsigned long long calls_deferred; /* queued behind their communicator's native setup */
    unsigned long long teams_created;
    unsigned long long teams_retiring; /* freed communicators' teams waiting for their peers */
    unsigned long long native_fallbacks[COLL_GPU_MAX_FALLBACKS];
    /* per coll_gpu_ncoll_t and parameter value: auto (0, never counted), staged, the rows */
    unsigned long long algorithm_calls[COLL_GPU_MAX_NCOLLS][COLL_GPU_MAX_ALGS];
} mca_coll_gpu_component_t;

COLL_GPU_EXPORT extern mca_coll_gpu_component_t mca_coll_gpu_component;

/* Host memory that stands in for device buffers, and the stream and events
 * that order the copies; created on the first staged call of a communicator. */
typedef struct coll_gpu_staging {
    void *buffer;
    size_t size;
    bool pinned; /* false: pinning failed and the buffer is pageable */
    accel_stream_h stream;
    accel_event_h copied_in[2]; /* device-to-host copy of each pipeline half done */
} coll_gpu_staging_t;

/* The call board's statuses (coll_gpu_board.h): what a rank can run of a call whose protocol needs
 * every rank alike, and what the ranks together can (a call's outcome: the status every rank
 * arrived with, else MIXED or ABSENT). */
typedef enum {
    COLL_GPU_BOARD_DEVICE = 1, /* natively, in device memory */
    COLL_GPU_BOARD_HOST = 2,   /* natively, in host memory (coll_gpu_host_buffers); else it
                                  passes the call to Open MPI */
    COLL_GPU_BOARD_STAGED = 3, /* a pipelined staged call */
    COLL_GPU_BOARD_DEAD = 4,   /* outcome: a rank of the call is dead (its process is gone) */
    COLL_GPU_BOARD_CANNOT = 5, /* not natively (a buffer of another kind): it stages the call */
    COLL_GPU_BOARD_MIXED = 6,  /* outcome: every rank stages, not every one could go native */
    COLL_GPU_BOARD_ABSENT = 7, /* outcome: some rank passes the call to Open MPI */
    COLL_GPU_BOARD_SINGLE = 8, /* a staged call of one host collective (its first word) */
    /* a flag beside a staged call's status: this rank's (a rank's) copies into host memory
     * failed (coll_gpu_board_stage_agree) */
    COLL_GPU_BOARD_FAILED = 16,
} coll_gpu_board_status_t;

typedef struct coll_gpu_board coll_gpu_board_t;

typedef struct mca_coll_gpu_module_t {
    coll_gpu_base_module_t super;

    /* The functions (and their modules, retained) this module wraps: those of
     * the module selected before it on the communicator. */
    mca_coll_base_comm_coll_t prev;

    coll_gpu_staging_t *staging;

    /* The stream the accelerator's kernels of this communicator run on (created on
     * first use; internal: the application's streams are never touched). */
    accel_stream_h stream;

    /* The transport team (coll_gpu_team.h), created by the first native collective. */
    struct coll_gpu_team *team;
    bool team_failed; /* creation failed once: not tried again on this communicator */

    /* The native algorithms' context (coll_gpu_native_ctx.h), set up by the first native call;
     * native_unavailable: 1 + the coll_gpu_fallback_t that ruled it out on this communicator
     * (0: not decided yet). */
    struct coll_gpu_native *native;
    int native_unavailable;
    /* The setup started at the communicator's creation, still running (coll_gpu_setup.h). */
    struct coll_gpu_setup_task *setup_task;
    /* Every rank can run a setup as a task (told at the board's creation): a nonblocking call
     * may start the native setup.  The calls posted while it runs wait in deferral
     * (coll_gpu_deferral.h; NULL when none waits). */
    bool setup_tasks_everywhere;
    struct coll_gpu_deferral *deferral;
    /* The thread and queue of its native nonblocking calls (coll_gpu_native_async.c), created
     * by the first one. */
    struct coll_gpu_async *async;

    /* The call board (coll_gpu_board.h): the number of the communicator's current call (every
     * entry point counts each call once), where the pass-through path publishes it (the
     * board's word of this rank; board_host_local until the board is made, or without one),
     * the last call this rank published a word for and its verdict. */
    uint64_t call_seq;
    volatile uint64_t *board_host;
    uint64_t board_host_local;
    uint64_t board_done;
    int board_outcome; /* coll_gpu_board_status_t */
    coll_gpu_board_t *board;
    /* The ranks were given different parameters that change the protocol (compared at the
     * communicator's creation): every device call is one staged host collective. */
    bool params_differ;
    bool params_told;
    /* Every rank passes device memory to this communicator's nonblocking calls (the stream
     * communicator's duplicate: the stream API's contract), as coll_gpu_memory_kinds_uniform
     * promises for every communicator. */
    bool kinds_promised;
    /* The current call's MPI name, for the messages of what waits on the board. */
    const char *current_call;
} mca_coll_gpu_module_t;

OBJ_CLASS_DECLARATION(mca_coll_gpu_module_t);

/* The module's stream, created on first use. */
accel_status_t coll_gpu_module_stream(mca_coll_gpu_module_t *module, accel_stream_h *stream_p);

/* Reports a failed accelerator operation of a native collective: counts it, shows the
 * "accelerator error" help message with the driver call and error name (accel_last_error())
 * and returns MPI_ERR_OTHER, or MPI_ERR_NO_MEM for status ACCEL_ERR_NO_MEMORY. */
int coll_gpu_accel_failed(accel_status_t status, const char *mpi_call,
                          struct ompi_communicator_t *comm);

/* Host memory for staging (len bytes) could not be had.  The peers are already in, or on
 * their way into, the host collective this rank would have to join with that memory: the one
 * outcome every rank shares is the job's end.  Shows the help message, aborts the job. */
void coll_gpu_out_of_host_memory(size_t len) __attribute__((noreturn));

/* Calls hook at MPI_Finalize's first step, while every peer still progresses: MPI deletes
 * MPI_COMM_SELF's attributes before anything else is finalized (MPI-4.0 section 11.2.4).  Once
 * MPI is initialized; best effort (no hook where the attribute cannot be set). */
void coll_gpu_at_finalize(MPI_Comm_delete_attr_function *hook);

/* The call's name for messages ("MPI_Allreduce"). */
const char *coll_gpu_coll_name(coll_gpu_coll_t coll);

/* Component / module entry points */
int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority);
int mca_coll_gpu_accel_open(void);

/* Debug level for one line per staged call. */
#define COLL_GPU_VERBOSE_CALLS 10

#define COLL_GPU_VERBOSE(level, ...)                                                               \
    opal_output_verbose(level, mca_coll_gpu_component.output, "coll:gpu: " __VA_ARGS__)

/* A monotonic clock in ns, for the deadlines of polling loops. */
static inline uint64_t coll_gpu_now_ns(void) {
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Where a collective's buffers live; the hot path of every wrapper. */
static inline bool coll_gpu_on_device(const void *buf) {
    const accel_ops_t *accel = mca_coll_gpu_component.accel;
    accel_mem_attr_t attr;

    /* MPI_IN_PLACE and NULL lie below any device range too. */
    if (OPAL_LIKELY(!accel_may_be_device(accel, buf)) || MPI_IN_PLACE == buf || NULL == buf) {
        return false;
    }
    /* A pointer the backend cannot classify (inside its device range, but in
     * no live allocation) is not host memory either: the staged path will
     * fail cleanly on it instead of handing it to the host collective. */
    if (ACCEL_OK != accel->mem_query(buf, &attr)) {
        return true;
    }
    return !accel_mem_type_is_host_accessible(attr.type);
}

/* The first test of every wrapper: true when ptr is host memory by the
 * backend's address range alone and no debug check asks for more.  A few
 * instructions; anything else goes through coll_gpu_on_device(). */
static inline bool coll_gpu_certainly_host(const void *ptr) {
    return !accel_may_be_device(mca_coll_gpu_component.accel, ptr) &&
           !mca_coll_gpu_component.check_memory_kinds;
}

/* What a wrapper does after its certainly-host test fails.  Kept out of line
 * so that the test and the tail call to the previous module stay a few
 * instructions, with no registers to save. */
#define COLL_GPU_SLOW_PATH __attribute__((noinline))

/* Adds to a pvar counter: atomically under MPI_THREAD_MULTIPLE, else a plain add (the
 * pass-through path of host buffers pays one predictable branch, no locked instruction). */
static inline void coll_gpu_count_add(unsigned long long *counter, unsigned long long n) {
    if (OPAL_UNLIKELY(mca_coll_gpu_component.thread_multiple)) {
        (void)__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
    } else {
        *counter += n;
    }
}

/* Raises a high-water-mark pvar to n (atomically under MPI_THREAD_MULTIPLE). */
static inline void coll_gpu_count_max(unsigned long long *mark, unsigned long long n) {
    if (OPAL_UNLIKELY(mca_coll_gpu_component.thread_multiple)) {
        unsigned long long seen = __atomic_load_n(mark, __ATOMIC_RELAXED);
        while ((n > seen) && !__atomic_compare_exchange_n(mark, &seen, n, true, __ATOMIC_RELAXED,
                                                          __ATOMIC_RELAXED)) {
        }
    } else if (n > *mark) {
        *mark = n;
    }
}

/* A native call of coll: counted, with the bytes it writes into this rank's receive buffer. */
static inline void coll_gpu_count_native(coll_gpu_coll_t coll, size_t bytes) {
    coll_gpu_count_add(&mca_coll_gpu_component.calls_native[coll], 1);
    coll_gpu_count_add(&mca_coll_gpu_component.native_bytes[coll], (unsigned long long)bytes);
}

/* Calls the saved function of the previous module. */
#define COLL_GPU_PREV(m, name, ...)                                                                \
    ((m)->prev.coll_##name(__VA_ARGS__, (m)->prev.coll_##name##_module))

/*
 * Runs the previous module's collective on host buffers.  count is the
 * element count of an element-wise collective (a chunk of it when
 * pipelining; unused by the others); request is NULL for a blocking call.
 */
typedef int (*coll_gpu_host_fn_t)(const void *sbuf, void *rbuf, int count, void *args,
                                  ompi_request_t **request);

/* The entry points of the collectives: coll_gpu_dispatch.h. */

END_C_DECLS

#endif /* MCA_COLL_GPU_H */

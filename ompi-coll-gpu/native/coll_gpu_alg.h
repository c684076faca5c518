/* SPDX-License-Identifier: BSD-3-Clause */
/* The collectives' algorithm tables, the helpers their rows are written with, and the choice
 * of a call's algorithm (parameter, tuning rule, auto), so that a table row is all an
 * algorithm adds. */
#ifndef COLL_GPU_ALG_H
#define COLL_GPU_ALG_H

#include "coll_gpu.h"
#include "coll_gpu_native_ctx.h"

BEGIN_C_DECLS

/* Values of every coll_gpu_<coll>_algorithm parameter and elements of every
 * coll_gpu_<coll>_algorithm_calls pvar: auto (never counted), staged, then the collective's
 * native algorithms in the order of its table (coll_gpu_alg_table_t). */
enum { COLL_GPU_ALG_AUTO = 0, COLL_GPU_ALG_STAGED = 1, COLL_GPU_ALG_FIRST_NATIVE = 2 };

/* One native call (coll_gpu_native_call_t, coll_gpu_native_call.h). */
struct coll_gpu_native_call;

/* A native algorithm: runs call on comm, every rank of it alike. */
typedef int (*coll_gpu_native_alg_fn_t)(struct ompi_communicator_t *comm,
                                        const struct coll_gpu_native_call *call);

/* The collectives with native algorithms: blocking calls, every buffer of every rank of one
 * memory kind, a contiguous type (data movement: any type, as bytes of its signature). */
typedef enum {
    COLL_GPU_NCOLL_REDUCE_SCATTER_BLOCK = 0,
    COLL_GPU_NCOLL_ALLGATHER,
    COLL_GPU_NCOLL_BCAST,
    COLL_GPU_NCOLL_REDUCE,
    COLL_GPU_NCOLL_GATHER,
    COLL_GPU_NCOLL_SCATTER,
    COLL_GPU_NCOLL_ALLGATHERV,
    COLL_GPU_NCOLL_REDUCE_SCATTER,
    COLL_GPU_NCOLL_ALLTOALL,
    COLL_GPU_NCOLL_ALLTOALLV,
    COLL_GPU_NCOLL_ALLREDUCE,
    COLL_GPU_NCOLL_NUM
} coll_gpu_ncoll_t;

/* What an algorithm's predicates see of a call: the same on every rank. */
typedef struct {
    const coll_gpu_native_t *native; /* its team (size, nodes) and scratch */
    size_t bytes;                    /* per rank (the largest block of a v-collective) */
    size_t esize;                    /* bytes of an element */
    coll_gpu_native_kind_t kind;     /* the memory the call runs in */
    bool nonblocking;                /* it may not run a collective of its own */
} coll_gpu_alg_query_t;

/*
 * One native algorithm: a row of its collective's table.  Adding an algorithm is a file with
 * its function, a row, its name in the table's auto_order where auto may take it, and a line in
 * Makefile.am: its parameter value, pvar element, tuning name and ompi_info text all come from
 * the row.
 */
typedef struct {
    const char *name;       /* parameter value, pvar element, tuning-file name */
    const char *help;       /* what it does, for ompi_info */
    const char *cost_model; /* its entry in perf/cost_model (NULL: the model has none) */
    bool multi_node;        /* it runs on communicators spanning nodes */
    /* whether it can run a call it was chosen for (NULL: always); why: the reason when not */
    bool (*fits)(const coll_gpu_alg_query_t *query, char *why, size_t why_len);
    /* auto: whether this row would take the call, by its own measure only: which row wins is
     * the table's auto_order (NULL: never chosen by auto).  why: the reason, for the verbose
     * log, written whether it says yes or no: a row that always says yes (coll_gpu_alg_always,
     * auto's last resort) writes none, and the log keeps why the row asked before it said no */
    bool (*preferred)(const coll_gpu_alg_query_t *query, char *why, size_t why_len);
    coll_gpu_native_alg_fn_t run;
    /* A device-driven row's (run: coll_gpu_kernel_run): the accelerator's node collective that
     * is the whole call, one kernel on call->stream with its flags and call counters in device
     * memory (the communicator's kernel_plan).  Host-driven rows (their steps signal and wait
     * from the host, and a closing agreement ends them) leave it unset. */
    accel_node_kind_t node_kind;
} coll_gpu_alg_desc_t;

/* A collective's algorithms (coll_gpu_<coll>.c).  Its parameter is coll_gpu_<name>_algorithm:
 * auto, staged, then the rows; its pvar coll_gpu_<name>_algorithm_calls counts calls per
 * value. */
typedef struct {
    const char *name;      /* "allreduce": parameter, pvar and tuning-file name */
    const char *mpi_call;  /* "MPI_Allreduce" */
    const char *auto_help; /* what auto takes without a tuning rule, for ompi_info */
    const char *note;      /* more ompi_info text, or NULL */
    bool per_rank_blocks;  /* a step holds up to an element per rank in a scratch half:
                            * reduce_scatter(_block) and the alltoalls (every rank's block),
                            * scatter (the root's chunk of every block), reduce (the root's
                            * copies of other nodes' inputs) */
    bool uniform_count;    /* every rank passes the same count (coll_gpu_check_counts) */
    int num_algs;
    const coll_gpu_alg_desc_t *algs;
    /* auto's order of preference, stated once here: the rows' names (COLL_GPU_ALG_ORDER); auto
     * runs the first whose preferred says yes.  NULL: the rows in table order. */
    const char *const *auto_order;
    /* auto, before any row: the sizes staging takes (where the cost model has it faster than
     * the row auto would run).  NULL: never. */
    const struct coll_gpu_alg_staged_rule *staged;
} coll_gpu_alg_table_t;

/* auto's staging of a collective with a staged time model: blocking calls on device buffers of
 * at most coll_gpu_<name>_staged_max_bytes inside a node, _staged_nodes_max_bytes across nodes
 * (the call's bytes: a rank's message or block).  Not nonblocking ones: the native ones
 * progress on the communicator's thread, the staged ones only inside MPI calls.  Not
 * host-buffer mode's: their staged path is no cheaper. */
typedef struct coll_gpu_alg_staged_rule {
    const char *name;
    const size_t *max_bytes, *nodes_max_bytes;
} coll_gpu_alg_staged_rule_t;

/* The staged rule of collective coll (an identifier: its parameters'), named var. */
#define COLL_GPU_ALG_STAGED_RULE(var, coll)                                                        \
    static const coll_gpu_alg_staged_rule_t var = {                                                \
        .name = #coll,                                                                             \
        .max_bytes = &mca_coll_gpu_component.coll##_staged_max_bytes,                              \
        .nodes_max_bytes = &mca_coll_gpu_component.coll##_staged_nodes_max_bytes}

/* Whether rule stages query's call; why: the reason, for the verbose log. */
bool coll_gpu_alg_staged(const coll_gpu_alg_staged_rule_t *rule, const coll_gpu_alg_query_t *query,
                         char *why, size_t why_len);

/* A table's auto_order: row names, most preferred first. */
#define COLL_GPU_ALG_ORDER(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The tables, by collective; the parameter value of row i is COLL_GPU_ALG_FIRST_NATIVE + i. */
extern const coll_gpu_alg_table_t *const coll_gpu_alg_tables[COLL_GPU_NCOLL_NUM];
extern const coll_gpu_alg_table_t coll_gpu_allreduce_algs, coll_gpu_reduce_scatter_block_algs,
    coll_gpu_allgather_algs, coll_gpu_bcast_algs, coll_gpu_reduce_algs, coll_gpu_gather_algs,
    coll_gpu_scatter_algs, coll_gpu_allgatherv_algs, coll_gpu_reduce_scatter_algs,
    coll_gpu_alltoall_algs, coll_gpu_alltoallv_algs;

/* The reason of a choice, for the verbose log: formatted only when why_len > 0, which the
 * dispatch gives only when the log is on (a formatted string per call costs as much as a
 * small collective). */
#define COLL_GPU_WHY(why, why_len, ...)                                                            \
    do {                                                                                           \
        if ((why_len) > 0) {                                                                       \
            snprintf((why), (why_len), __VA_ARGS__);                                               \
        }                                                                                          \
    } while (0)

/* A row's preferred that always says yes: a collective's only algorithm, or auto's last resort
 * (it writes no reason: the log keeps why the row asked before it said no). */
bool coll_gpu_alg_always(const coll_gpu_alg_query_t *query, char *why, size_t why_len);

/* auto's size rule for an algorithm of a few rounds between node leaders (allreduce and
 * allgather(v) hierarchical_doubling, reduce_scatter(_block) hierarchical_halving, bcast and
 * reduce binomial): from coll_gpu_<param>_min_nodes nodes on, calls of at most
 * coll_gpu_<param>_max_bytes (per_rank: the largest block x ranks, where its step holds a chunk
 * of every rank), and of at least coll_gpu_<param>_min_bytes where the rule has one. */
typedef struct {
    const char *param;      /* "allgather_doubling": the parameters' names */
    const char *bytes_what; /* what the call's bytes are, for the log: " gathered" */
    bool per_rank;
    const int *min_nodes; /* the parameters */
    const size_t *max_bytes;
    const size_t *min_bytes; /* NULL: none */
    /* a band rule's (binomial's; gather's, scatter's and alltoall's hierarchical; else NULL): a
     * communicator without rails takes its band without them where no parameter was set */
    const coll_gpu_band_rule_t *band;
} coll_gpu_alg_size_rule_t;

/* Whether rule takes query's call; _why: and the reason, for the verbose log. */
bool coll_gpu_alg_size_rule(const coll_gpu_alg_size_rule_t *rule,
                            const coll_gpu_alg_query_t *query);
bool coll_gpu_alg_size_rule_why(const coll_gpu_alg_size_rule_t *rule,
                                const coll_gpu_alg_query_t *query, char *why, size_t why_len);

/* Collectives with a "direct" and a "hierarchical" row (allgather(v), reduce_scatter(_block),
 * reduce, gather, scatter, alltoall): hierarchical's preferred.  It takes calls across nodes where
 * a node has several ranks (or of one rank each where it segments its messages: from seg_min_bytes
 * on 3 nodes or more, SIZE_MAX: never), where its layout fits (hier_fits: the algorithm's _fits),
 * on hier_band where the collective has one (gather, scatter, alltoall: the cost model's band of
 * hierarchical against direct; NULL: none).  Direct, asked after it, takes the rest. */
bool coll_gpu_alg_hierarchical_preferred(const coll_gpu_alg_query_t *query,
                                         bool (*hier_fits)(const coll_gpu_native_t *, size_t),
                                         size_t seg_min_bytes,
                                         const coll_gpu_alg_size_rule_t *hier_band, char *why,
                                         size_t why_len);
bool coll_gpu_alg_hierarchical_fits(const coll_gpu_alg_query_t *query,
                                    bool (*hier_fits)(const coll_gpu_native_t *, size_t), char *why,
                                    size_t why_len);

/* A band rule (coll_gpu_alg_size_rule_t) named var over rule_params, a coll_gpu_band_rule_t of
 * the component (coll_gpu_<param_name>_* parameters; per_rank: their bytes are the block x
 * ranks; what: the bytes' name in the log). */
#define COLL_GPU_ALG_BAND_RULE(var, param_name, what, is_per_rank, rule_params)                    \
    static const coll_gpu_alg_size_rule_t var = {.param = param_name,                              \
                                                 .bytes_what = what,                               \
                                                 .per_rank = is_per_rank,                          \
                                                 .min_nodes = &(rule_params).params.min_nodes,     \
                                                 .max_bytes = &(rule_params).params.max_bytes,     \
                                                 .min_bytes = &(rule_params).params.min_bytes,     \
                                                 .band = &(rule_params)}

/* A binomial row (bcast; reduce, gather and scatter, beside their direct and hierarchical rows):
 * defines prefix##_binomial_rule and the row's predicates, from its rule (rule_params: the
 * coll_gpu_<param>_{min_nodes,min_bytes,max_bytes} parameters; per_rank: their bytes are the
 * block x ranks) and its _fits (layout: what a scratch half must hold, for the log).  auto: across
 * nodes, on the rule's band, where its layout fits. */
#define COLL_GPU_ALG_BINOMIAL_RULE(prefix, param_name, what, is_per_rank, rule_params, fits_fn,    \
                                   layout)                                                         \
    COLL_GPU_ALG_BAND_RULE(prefix##_binomial_rule, param_name, what, is_per_rank, rule_params);    \
    static bool prefix##_binomial_preferred(const coll_gpu_alg_query_t *query, char *why,          \
                                            size_t why_len) {                                      \
        return coll_gpu_alg_size_rule_why(&prefix##_binomial_rule, query, why, why_len) &&         \
               (query->native->team->nnodes > 1) && fits_fn(query->native, query->esize);          \
    }                                                                                              \
    static bool prefix##_binomial_fits_query(const coll_gpu_alg_query_t *query, char *why,         \
                                             size_t why_len) {                                     \
        if (fits_fn(query->native, query->esize)) {                                                \
            return true;                                                                           \
        }                                                                                          \
        COLL_GPU_WHY(why, why_len, ": the scratch half (%zu bytes) cannot hold %s",                \
                     query->native->half, layout);                                                 \
        return false;                                                                              \
    }
/* The row those define. */
#define COLL_GPU_ALG_BINOMIAL_ROW(prefix, row_help, model, fn)                                     \
    {                                                                                              \
        .name = "binomial", .help = row_help, .cost_model = model, .multi_node = true,             \
        .fits = prefix##_binomial_fits_query, .preferred = prefix##_binomial_preferred, .run = fn  \
    }

/* Row `device` of a collective (device-driven: coll_gpu_kernel.h; forced or named by a tuning
 * rule only, until a GPU run has measured it). */
#define COLL_GPU_ALG_DEVICE_ROW(kind, fits_fn)                                                     \
    {                                                                                              \
        .name = "device",                                                                          \
        .help = "one kernel per call inside a node (device-driven: the host launches and waits "   \
                "once, flags and step counters in device memory; steps of 1 MiB inside the "       \
                "kernel); only when forced or named by a tuning rule until a GPU run has "         \
                "measured it",                                                                     \
        .fits = fits_fn, .run = coll_gpu_kernel_run, .node_kind = kind                             \
    }

/* The rows of such a collective (prefix##_rows) and hierarchical's predicates; the variable
 * arguments: more rows (an algorithm between node leaders: allgather(v) hierarchical_doubling,
 * reduce_scatter(_block) hierarchical_halving, reduce, gather and scatter binomial). */
#define COLL_GPU_ALG_ROWS_DIRECT_HIERARCHICAL(prefix, direct_help, direct_fn, hier_help, hier_fn,  \
                                              hier_fits, seg_min_bytes, hier_band, ...)            \
    static bool prefix##_hierarchical_fits(const coll_gpu_alg_query_t *query, char *why,           \
                                           size_t why_len) {                                       \
        return coll_gpu_alg_hierarchical_fits(query, hier_fits, why, why_len);                     \
    }                                                                                              \
    static bool prefix##_hierarchical_preferred(const coll_gpu_alg_query_t *query, char *why,      \
                                                size_t why_len) {                                  \
        return coll_gpu_alg_hierarchical_preferred(query, hier_fits, seg_min_bytes, hier_band,     \
                                                   why, why_len);                                  \
    }                                                                                              \
    static const coll_gpu_alg_desc_t prefix##_rows[] = {                                           \
        {.name = "direct",                                                                         \
         .help = direct_help,                                                                      \
         .multi_node = true,                                                                       \
         .preferred = coll_gpu_alg_always,                                                         \
         .run = direct_fn},                                                                        \
        {.name = "hierarchical",                                                                   \
         .help = hier_help,                                                                        \
         .multi_node = true,                                                                       \
         .fits = prefix##_hierarchical_fits,                                                       \
         .preferred = prefix##_hierarchical_preferred,                                             \
         .run = hier_fn},                                                                          \
        ##__VA_ARGS__}
/* auto's order of such a collective: its row between node leaders (leaders: its name), then
 * hierarchical, then direct. */
#define COLL_GPU_ALG_DIRECT_HIERARCHICAL_ORDER(leaders)                                            \
    COLL_GPU_ALG_ORDER(leaders, "hierarchical", "direct")

/* auto's text of a collective with a staged rule (coll a string literal), before its rows'. */
#define COLL_GPU_ALG_STAGED_AUTO_HELP(coll)                                                        \
    "device buffers staged up to " coll "_staged_max_bytes inside a node and " coll                \
    "_staged_nodes_max_bytes across nodes; "

#define COLL_GPU_ALG_DIRECT_HIERARCHICAL_AUTO_HELP                                                 \
    "direct on one node and across nodes of one rank each, hierarchical across nodes where a "     \
    "node has several ranks"
/* The same where hierarchical runs on a band (gather, scatter, alltoall: coll a string
 * literal). */
#define COLL_GPU_ALG_DIRECT_HIERARCHICAL_BAND_AUTO_HELP(coll)                                      \
    "direct on one node and across nodes of one rank each; across nodes where a node has "         \
    "several ranks hierarchical on " coll "_hierarchical's band (from " coll                       \
    "_hierarchical_min_nodes nodes for calls from _min_bytes to _max_bytes), direct elsewhere"

/* A collective's table from its rows (prefix##_rows), auto's text for ompi_info and its order
 * (COLL_GPU_ALG_ORDER); the variable arguments: more fields (.staged). */
#define COLL_GPU_ALG_TABLE(table, prefix, coll, mpi, blocks, uniform, auto_text, order, ...)       \
    const coll_gpu_alg_table_t table = {                                                           \
        .name = coll,                                                                              \
        .mpi_call = mpi,                                                                           \
        .auto_help = auto_text,                                                                    \
        .per_rank_blocks = blocks,                                                                 \
        .uniform_count = uniform,                                                                  \
        .num_algs = (int)(sizeof(prefix##_rows) / sizeof(prefix##_rows[0])),                       \
        .algs = prefix##_rows,                                                                     \
        .auto_order = order,                                                                       \
        ##__VA_ARGS__}

/* The name of value alg of coll's parameter ("auto", "staged", a row's). */
const char *coll_gpu_alg_name(coll_gpu_ncoll_t coll, int alg);

/*
 * The parameter value that runs a call of coll (COLL_GPU_ALG_STAGED or a row's): the parameter
 * when it forces one, else the first tuning rule that matches and names staged or one of the
 * collective's algorithms (rules naming another collective's are ignored; auto falls through),
 * else the first row, in the table's auto_order, that prefers the call.  *chunk_p: the rule's
 * chunk, else coll_gpu_native_chunk_size.  why: a sentence for the verbose log.
 */
int coll_gpu_alg_choose(coll_gpu_ncoll_t coll, const coll_gpu_alg_query_t *query, size_t *chunk_p,
                        char *why, size_t why_len);

/* Reads coll_gpu_tuning_file (component open); the rules apply to every communicator.  Also
 * resolves the tables' auto_order into rows. */
void coll_gpu_native_tuning_load(void);
/* The hash of the rules read (0: none), what the ranks compare of coll_gpu_tuning_file
 * (coll_gpu_params_hash). */
uint64_t coll_gpu_native_tuning_hash(void);
void coll_gpu_native_tuning_free(void);

END_C_DECLS

#endif /* COLL_GPU_ALG_H */

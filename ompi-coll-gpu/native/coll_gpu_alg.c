/* SPDX-License-Identifier: BSD-3-Clause */
/* The collectives' algorithm tables and the helpers of their rows, the tuning rules' names, and
 * the choice of a call's algorithm: parameter, then tuning rule, then auto. */
#include "coll_gpu_alg.h"
#include "coll_gpu_tuning.h"

#include "opal/util/show_help.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(COLL_GPU_NCOLL_NUM <= COLL_GPU_MAX_NCOLLS, "COLL_GPU_MAX_NCOLLS too small");

const coll_gpu_alg_table_t *const coll_gpu_alg_tables[COLL_GPU_NCOLL_NUM] = {
    [COLL_GPU_NCOLL_REDUCE_SCATTER_BLOCK] = &coll_gpu_reduce_scatter_block_algs,
    [COLL_GPU_NCOLL_ALLGATHER] = &coll_gpu_allgather_algs,
    [COLL_GPU_NCOLL_BCAST] = &coll_gpu_bcast_algs,
    [COLL_GPU_NCOLL_REDUCE] = &coll_gpu_reduce_algs,
    [COLL_GPU_NCOLL_GATHER] = &coll_gpu_gather_algs,
    [COLL_GPU_NCOLL_SCATTER] = &coll_gpu_scatter_algs,
    [COLL_GPU_NCOLL_ALLGATHERV] = &coll_gpu_allgatherv_algs,
    [COLL_GPU_NCOLL_REDUCE_SCATTER] = &coll_gpu_reduce_scatter_algs,
    [COLL_GPU_NCOLL_ALLTOALL] = &coll_gpu_alltoall_algs,
    [COLL_GPU_NCOLL_ALLTOALLV] = &coll_gpu_alltoallv_algs,
    [COLL_GPU_NCOLL_ALLREDUCE] = &coll_gpu_allreduce_algs,
};

bool coll_gpu_alg_always(const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    (void)query;
    (void)why;
    (void)why_len;
    return true;
}

/* The band rule applies to team's calls (min_bytes 0 where the rule has none); true where it is
 * a band rule's band without rails (the team has none and no parameter was set). */
static bool coll_gpu_alg_size_rule_band(const coll_gpu_alg_size_rule_t *rule,
                                        const coll_gpu_team_t *team, coll_gpu_band_t *band) {
    if ((NULL != rule->band) && !team->rails && !rule->band->params_set) {
        *band = rule->band->no_rails;
        return true;
    }
    band->min_nodes = *rule->min_nodes;
    band->min_bytes = (NULL != rule->min_bytes) ? *rule->min_bytes : 0;
    band->max_bytes = *rule->max_bytes;
    return false;
}

bool coll_gpu_alg_size_rule(const coll_gpu_alg_size_rule_t *rule,
                            const coll_gpu_alg_query_t *query) {
    const coll_gpu_team_t *team = query->native->team;
    size_t scale = rule->per_rank ? (size_t)team->size : 1;
    coll_gpu_band_t band;

    (void)coll_gpu_alg_size_rule_band(rule, team, &band);
    return (team->nnodes >= band.min_nodes) && (query->bytes <= band.max_bytes / scale) &&
           (query->bytes * scale >= band.min_bytes);
}

bool coll_gpu_alg_size_rule_why(const coll_gpu_alg_size_rule_t *rule,
                                const coll_gpu_alg_query_t *query, char *why, size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;
    size_t bytes = query->bytes * (rule->per_rank ? (size_t)team->size : 1);
    coll_gpu_band_t band;

    if (coll_gpu_alg_size_rule_band(rule, team, &band)) {
        COLL_GPU_WHY(why, why_len,
                     "no rails, the cost model's band without them: %d nodes >= %d; %zu <= %zu "
                     "bytes%s <= %zu (coll_gpu_%s_* not set)",
                     team->nnodes, band.min_nodes, band.min_bytes, bytes, rule->bytes_what,
                     band.max_bytes, rule->param);
    } else if (NULL != rule->min_bytes) {
        COLL_GPU_WHY(why, why_len,
                     "%d nodes >= coll_gpu_%s_min_nodes=%d; coll_gpu_%s_min_bytes=%zu <= %zu "
                     "bytes%s <= coll_gpu_%s_max_bytes=%zu",
                     team->nnodes, rule->param, band.min_nodes, rule->param, band.min_bytes, bytes,
                     rule->bytes_what, rule->param, band.max_bytes);
    } else {
        COLL_GPU_WHY(
            why, why_len,
            "%d nodes >= coll_gpu_%s_min_nodes=%d; %zu bytes%s <= coll_gpu_%s_max_bytes=%zu",
            team->nnodes, rule->param, band.min_nodes, bytes, rule->bytes_what, rule->param,
            band.max_bytes);
    }
    return coll_gpu_alg_size_rule(rule, query);
}

/* hierarchical's reason where it takes the call */
static bool coll_gpu_alg_across_nodes(const coll_gpu_alg_query_t *query, char *why,
                                      size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    if (team->nnodes == team->size) {
        COLL_GPU_WHY(why, why_len, "%d nodes, one rank each; %zu bytes: segments between nodes",
                     team->nnodes, query->bytes);
    } else {
        COLL_GPU_WHY(why, why_len, "%d nodes, some with several ranks", team->nnodes);
    }
    return true;
}

bool coll_gpu_alg_hierarchical_preferred(const coll_gpu_alg_query_t *query,
                                         bool (*hier_fits)(const coll_gpu_native_t *, size_t),
                                         size_t seg_min_bytes,
                                         const coll_gpu_alg_size_rule_t *hier_band, char *why,
                                         size_t why_len) {
    const coll_gpu_team_t *team = query->native->team;

    /* where it says no, the reason is what direct, asked next, is taken for */
    if (1 == team->nnodes) {
        COLL_GPU_WHY(why, why_len, "one node");
        return false;
    }
    if ((team->nnodes == team->size) && ((team->nnodes < 3) || (query->bytes < seg_min_bytes))) {
        COLL_GPU_WHY(why, why_len, "%d nodes, one rank each", team->nnodes);
        return false;
    }
    if (!hier_fits(query->native, query->esize)) {
        COLL_GPU_WHY(why, why_len, "%d nodes; hierarchical does not fit the scratch", team->nnodes);
        return false;
    }
    if ((NULL != hier_band) && (team->nnodes < team->size)) {
        char band[256];

        if (!coll_gpu_alg_size_rule_why(hier_band, query, band, sizeof(band))) {
            COLL_GPU_WHY(why, why_len, "not hierarchical's band: %s", band);
            return false;
        }
    }
    return coll_gpu_alg_across_nodes(query, why, why_len);
}

bool coll_gpu_alg_hierarchical_fits(const coll_gpu_alg_query_t *query,
                                    bool (*hier_fits)(const coll_gpu_native_t *, size_t), char *why,
                                    size_t why_len) {
    if (hier_fits(query->native, query->esize)) {
        return true;
    }
    COLL_GPU_WHY(why, why_len, ": the scratch half (%zu bytes) cannot hold hierarchical's layout",
                 query->native->half);
    return false;
}

const char *coll_gpu_alg_name(coll_gpu_ncoll_t coll, int alg) {
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];

    if (alg >= COLL_GPU_ALG_FIRST_NATIVE && alg < COLL_GPU_ALG_FIRST_NATIVE + t->num_algs) {
        return t->algs[alg - COLL_GPU_ALG_FIRST_NATIVE].name;
    }
    return (COLL_GPU_ALG_STAGED == alg) ? "staged" : "auto";
}

/* The names a tuning rule may give: auto, staged and every table's rows (a rule stores its
 * index here), and what each is for each collective: its parameter value, or -1 where the
 * collective has no algorithm of that name (auto: -1 too, the rule is passed over). */
#define COLL_GPU_MAX_TUNING_NAMES (2 + COLL_GPU_NCOLL_NUM * COLL_GPU_MAX_ALGS)
static const char *coll_gpu_tuning_names[COLL_GPU_MAX_TUNING_NAMES];
static int coll_gpu_num_tuning_names;
static int8_t coll_gpu_tuning_alg[COLL_GPU_NCOLL_NUM][COLL_GPU_MAX_TUNING_NAMES];

static void coll_gpu_tuning_names_init(void) {
    coll_gpu_tuning_names[0] = "auto";
    coll_gpu_tuning_names[1] = "staged";
    coll_gpu_num_tuning_names = 2;
    memset(coll_gpu_tuning_alg, -1, sizeof(coll_gpu_tuning_alg));
    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        coll_gpu_tuning_alg[k][COLL_GPU_ALG_STAGED] = COLL_GPU_ALG_STAGED;
        for (int a = 0; a < coll_gpu_alg_tables[k]->num_algs; ++a) {
            const char *name = coll_gpu_alg_tables[k]->algs[a].name;
            int n = 0;

            while ((n < coll_gpu_num_tuning_names) &&
                   (0 != strcmp(coll_gpu_tuning_names[n], name))) {
                ++n;
            }
            if (n == coll_gpu_num_tuning_names) {
                coll_gpu_tuning_names[coll_gpu_num_tuning_names++] = name;
            }
            coll_gpu_tuning_alg[k][n] = (int8_t)(COLL_GPU_ALG_FIRST_NATIVE + a);
        }
    }
}

/* Each table's auto_order as rows (resolved at component open): auto asks coll's rows
 * coll_gpu_auto_rows[coll][0 .. coll_gpu_num_auto_rows[coll] - 1]. */
static int8_t coll_gpu_auto_rows[COLL_GPU_NCOLL_NUM][COLL_GPU_MAX_ALGS];
static int coll_gpu_num_auto_rows[COLL_GPU_NCOLL_NUM];

static void coll_gpu_auto_order_init(void) {
    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[k];
        int n = 0;

        if (NULL == t->auto_order) {
            for (int a = 0; a < t->num_algs; ++a) {
                coll_gpu_auto_rows[k][n++] = (int8_t)a;
            }
        }
        for (int i = 0; (NULL != t->auto_order) && (NULL != t->auto_order[i]); ++i) {
            int a = 0;

            while ((a < t->num_algs) && (0 != strcmp(t->algs[a].name, t->auto_order[i]))) {
                ++a;
            }
            if ((a == t->num_algs) || (n == COLL_GPU_MAX_ALGS)) {
                /* a table's mistake: the name is left out */
                opal_output(0, "coll:gpu: %s's auto order: no row %s", t->name, t->auto_order[i]);
                continue;
            }
            coll_gpu_auto_rows[k][n++] = (int8_t)a;
        }
        coll_gpu_num_auto_rows[k] = n;
    }
}

struct coll_gpu_tuning_state {
    coll_gpu_tuning_t rules;
};

static void coll_gpu_native_tuning_log(int level, const char *msg, void *ctx) {
    (void)ctx;
    opal_show_help("help-mpi-coll-gpu.txt", "tuning file", true, (0 == level) ? "error" : "warning",
                   msg);
}

void coll_gpu_native_tuning_load(void) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    struct coll_gpu_tuning_state *state;

    c->tuning = NULL;
    coll_gpu_tuning_names_init();
    coll_gpu_auto_order_init();
    if ((NULL != c->tuning_file) && ('\0' != c->tuning_file[0])) {
        state = calloc(1, sizeof(*state));
        if ((NULL != state) &&
            (coll_gpu_tuning_load(&state->rules, c->tuning_file, coll_gpu_tuning_names,
                                  coll_gpu_num_tuning_names, coll_gpu_native_tuning_log,
                                  NULL) >= 0)) {
            c->tuning = state;
            COLL_GPU_VERBOSE(1, "tuning file %s: %d rules", c->tuning_file, state->rules.num_rules);
        } else {
            free(state);
        }
    }
}

uint64_t coll_gpu_native_tuning_hash(void) {
    return (NULL != mca_coll_gpu_component.tuning) ? mca_coll_gpu_component.tuning->rules.hash : 0;
}

void coll_gpu_native_tuning_free(void) {
    if (NULL != mca_coll_gpu_component.tuning) {
        coll_gpu_tuning_free(&mca_coll_gpu_component.tuning->rules);
        free(mca_coll_gpu_component.tuning);
        mca_coll_gpu_component.tuning = NULL;
    }
}

bool coll_gpu_alg_staged(const coll_gpu_alg_staged_rule_t *rule, const coll_gpu_alg_query_t *query,
                         char *why, size_t why_len) {
    bool across = query->native->team->nnodes > 1;
    size_t max = across ? *rule->nodes_max_bytes : *rule->max_bytes;

    if ((COLL_GPU_NATIVE_DEVICE != query->kind) || query->nonblocking || (query->bytes > max)) {
        return false;
    }
    COLL_GPU_WHY(why, why_len, "auto, %zu bytes <= coll_gpu_%s_staged_%smax_bytes=%zu",
                 query->bytes, rule->name, across ? "nodes_" : "", max);
    return true;
}

int coll_gpu_alg_choose(coll_gpu_ncoll_t coll, const coll_gpu_alg_query_t *query, size_t *chunk_p,
                        char *why, size_t why_len) {
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[coll];
    const coll_gpu_team_t *team = query->native->team;
    const coll_gpu_tuning_rule_t *rule = NULL;
    int alg = c->algorithm[coll];

    *chunk_p = c->native_chunk_size;
    if (COLL_GPU_ALG_AUTO != alg) {
        COLL_GPU_WHY(why, why_len, "coll_gpu_%s_algorithm=%s", t->name,
                     coll_gpu_alg_name(coll, alg));
        return alg;
    }
    if (NULL != c->tuning) {
        rule = coll_gpu_tuning_find(&c->tuning->rules, t->name, (uint64_t)team->size,
                                    (uint64_t)team->local_size, (uint64_t)query->bytes);
    }
    if ((NULL != rule) && (coll_gpu_tuning_alg[coll][rule->algorithm] >= 0)) {
        if (0 != rule->chunk) {
            *chunk_p = rule->chunk;
        }
        COLL_GPU_WHY(why, why_len, "rule at %s:%d", c->tuning_file, rule->line);
        return coll_gpu_tuning_alg[coll][rule->algorithm];
    }
    COLL_GPU_WHY(why, why_len, "coll_gpu_%s_algorithm=auto", t->name);
    if ((NULL != t->staged) && coll_gpu_alg_staged(t->staged, query, why, why_len)) {
        return COLL_GPU_ALG_STAGED;
    }
    for (int i = 0; i < coll_gpu_num_auto_rows[coll]; ++i) {
        int a = coll_gpu_auto_rows[coll][i];
        const coll_gpu_alg_desc_t *desc = &t->algs[a];

        if ((desc->multi_node || (1 == team->nnodes)) && (NULL != desc->preferred) &&
            desc->preferred(query, why, why_len)) {
            return COLL_GPU_ALG_FIRST_NATIVE + a;
        }
    }
    return COLL_GPU_ALG_STAGED;
}

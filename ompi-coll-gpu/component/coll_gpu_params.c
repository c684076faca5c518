/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/gpu's MCA parameters, registered and hashed from their table (coll_gpu_params.h): the
 * rows' defaults, enums, help and levels, and native_config_hash from their marks.
 */
#include "coll_gpu.h"
#include "coll_gpu_alg.h"
#include "coll_gpu_hash.h"
#include "coll_gpu_model_defaults.h"

#include "cgt.h"

#include <stdio.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"

/* ------------------------------------------------------------------------------------------ */
/* The enums the table names                                                                  */
/* ------------------------------------------------------------------------------------------ */

static const mca_base_var_enum_value_t coll_gpu_accelerator_values[] = {
    {COLL_GPU_ACCELERATOR_AUTO, "auto"},
    {COLL_GPU_ACCELERATOR_CUDA, "cuda"},
    {COLL_GPU_ACCELERATOR_EMULATED, "emulated"},
    {0, NULL},
};

static const mca_base_var_enum_value_t coll_gpu_tree_rails_values[] = {
    {COLL_GPU_RAILS_AUTO, "auto"},
    {COLL_GPU_RAILS_OFF, "off"},
    {COLL_GPU_RAILS_ON, "on"},
    {0, NULL},
};

static const mca_base_var_enum_value_t coll_gpu_native_setup_values[] = {
    {COLL_GPU_NATIVE_SETUP_FIRST_CALL, "first_call"},
    {COLL_GPU_NATIVE_SETUP_CREATE, "create"},
    {0, NULL},
};

/* coll_gpu_transports: the shmem-transport backends a team may use. */
static const mca_base_var_enum_value_flag_t coll_gpu_transport_flags[] = {
    {.flag = CGT_BACKEND_POSIX, .string = "posix", .conflicting_flag = 0},
    {.flag = CGT_BACKEND_CUDA_IPC, .string = "cuda_ipc", .conflicting_flag = 0},
    {.flag = CGT_BACKEND_UCX, .string = "ucx", .conflicting_flag = 0},
    {.flag = 0, .string = NULL, .conflicting_flag = 0},
};

/* ------------------------------------------------------------------------------------------ */
/* Registration                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* The enum coll_gpu_<name> of values or of flags (NULL: neither). */
static mca_base_var_enum_t *coll_gpu_param_enum(const char *name,
                                                const mca_base_var_enum_value_t *values,
                                                const mca_base_var_enum_value_flag_t *flags) {
    mca_base_var_enum_t *values_enum = NULL;
    mca_base_var_enum_flag_t *flags_enum = NULL;
    char enum_name[96];

    snprintf(enum_name, sizeof(enum_name), "coll_gpu_%s", name);
    if (NULL != values) {
        (void)mca_base_var_enum_create(enum_name, values, &values_enum);
        return values_enum;
    }
    if ((NULL != flags) &&
        (OPAL_SUCCESS == mca_base_var_enum_create_flag(enum_name, flags, &flags_enum))) {
        return &flags_enum->super;
    }
    return NULL;
}

/* Registers coll_gpu_<name> (releasing its enum, if any): the help of a marked parameter ends
 * with COLL_GPU_PARAM_PROTOCOL_HELP.  Returns the variable's index (< 0: an error). */
static int coll_gpu_param_register(const mca_base_component_t *c, const char *name,
                                   const char *help, mca_base_var_type_t type,
                                   mca_base_var_enum_t *enumerator, int level,
                                   mca_base_var_scope_t scope, coll_gpu_param_mark_t mark,
                                   void *storage) {
    char text[4096];
    size_t len = strlen(help);
    int index;

    if (COLL_GPU_PARAM_LOCAL != mark) {
        snprintf(text, sizeof(text), "%s%s  %s", help,
                 ((len > 0) && ('.' == help[len - 1])) ? "" : ".", COLL_GPU_PARAM_PROTOCOL_HELP);
        help = text;
    }
    /* (the name and description are copied by the MCA base) */
    index = mca_base_component_var_register(c, name, help, type, enumerator, 0, 0, level, scope,
                                            storage);
    if (NULL != enumerator) {
        OBJ_RELEASE(enumerator);
    }
    return index;
}

/* coll_gpu_<coll>_algorithm of every collective with native algorithms, from its table: the
 * values auto, staged and the rows, and ompi_info's text naming what each does. */
static void coll_gpu_register_algorithms(const mca_base_component_t *c,
                                         coll_gpu_param_mark_t mark) {
    /* static: an enum may keep the values it was given */
    static mca_base_var_enum_value_t values[COLL_GPU_NCOLL_NUM][COLL_GPU_MAX_ALGS + 1];
    mca_base_var_enum_t *alg_enum;
    char help[2048], var[64], enum_name[96];

    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {
        const coll_gpu_alg_table_t *t = coll_gpu_alg_tables[k];
        int n = 0, len;

        values[k][0] = (mca_base_var_enum_value_t){COLL_GPU_ALG_AUTO, "auto"};
        values[k][1] = (mca_base_var_enum_value_t){COLL_GPU_ALG_STAGED, "staged"};
        len = snprintf(help, sizeof(help),
                       "Algorithm of blocking %s on device buffers (and host buffers under "
                       "host_buffers): auto (the tuning file's rule, else %s), staged (through "
                       "host memory and Open MPI's %s)",
                       t->mpi_call, t->auto_help, t->mpi_call);
        for (int a = 0; a < t->num_algs; ++a) {
            const coll_gpu_alg_desc_t *alg = &t->algs[a];

            values[k][COLL_GPU_ALG_FIRST_NATIVE + a] =
                (mca_base_var_enum_value_t){COLL_GPU_ALG_FIRST_NATIVE + a, alg->name};
            n += !alg->multi_node;
            len += snprintf(help + len, sizeof(help) - (size_t)len, ", %s (%s%s)", alg->name,
                            alg->help, alg->multi_node ? "" : "; one node");
        }
        values[k][COLL_GPU_ALG_FIRST_NATIVE + t->num_algs] = (mca_base_var_enum_value_t){0, NULL};
        snprintf(help + len, sizeof(help) - (size_t)len, ".%s%s%s%s", (NULL != t->note) ? "  " : "",
                 (NULL != t->note) ? t->note : "", (NULL != t->note) ? "." : "",
                 (n > 0) ? "  An algorithm of one node forced on a communicator spanning nodes "
                           "is staged."
                         : "");
        snprintf(var, sizeof(var), "%s_algorithm", t->name);
        snprintf(enum_name, sizeof(enum_name), "coll_gpu_%s_algorithms", t->name);
        mca_coll_gpu_component.algorithm[k] = COLL_GPU_ALG_AUTO;
        alg_enum = NULL;
        (void)mca_base_var_enum_create(enum_name, values[k], &alg_enum);
        (void)coll_gpu_param_register(c, var, help, MCA_BASE_VAR_TYPE_INT, alg_enum,
                                      OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, mark,
                                      &mca_coll_gpu_component.algorithm[k]);
    }
}

/* The cost model's bands of a rule (coll_gpu_model_defaults.h: NAME BCAST_BINOMIAL,
 * GATHER_HIERARCHICAL, ...): with rails, without. */
#define COLL_GPU_MODEL_BAND(NAME)                                                                  \
    (coll_gpu_band_t) {                                                                            \
        COLL_GPU_MODEL_##NAME##_MIN_NODES, COLL_GPU_MODEL_##NAME##_MIN_BYTES,                      \
            COLL_GPU_MODEL_##NAME##_MAX_BYTES                                                      \
    }
#define COLL_GPU_MODEL_BAND_NO_RAILS(NAME)                                                         \
    (coll_gpu_band_t) {                                                                            \
        COLL_GPU_MODEL_##NAME##_NO_RAILS_MIN_NODES, COLL_GPU_MODEL_##NAME##_NO_RAILS_MIN_BYTES,    \
            COLL_GPU_MODEL_##NAME##_NO_RAILS_MAX_BYTES                                             \
    }

/* coll_gpu_<coll>_<alg>_{min_nodes,min_bytes,max_bytes}: the band auto runs alg on (binomial;
 * gather's, scatter's and alltoall's hierarchical, direct elsewhere), defaults the model's with
 * rails; the model's band without rails beside them.  what: what the row does, small_why and
 * large_why: why it loses below min_bytes and above max_bytes. */
static void coll_gpu_register_band_rule(const mca_base_component_t *c, const char *coll,
                                        const char *alg, const char *bytes_what,
                                        coll_gpu_band_rule_t *rule, coll_gpu_band_t rails,
                                        coll_gpu_band_t no_rails, const char *what,
                                        const char *small_why, const char *large_why,
                                        coll_gpu_param_mark_t mark) {
    struct {
        const char *suffix;
        mca_base_var_type_t type;
        void *storage;
    } vars[] = {{"min_nodes", MCA_BASE_VAR_TYPE_INT, &rule->params.min_nodes},
                {"min_bytes", MCA_BASE_VAR_TYPE_SIZE_T, &rule->params.min_bytes},
                {"max_bytes", MCA_BASE_VAR_TYPE_SIZE_T, &rule->params.max_bytes}};
    char name[64], help[1536];

    rule->params = rails;
    rule->no_rails = no_rails;
    rule->params_set = false;
    for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); ++k) {
        mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
        int index;

        snprintf(name, sizeof(name), "%s_%s_%s", coll, alg, vars[k].suffix);
        if (0 == k) {
            snprintf(help, sizeof(help),
                     "With %s_algorithm auto and no tuning rule: from this many nodes on, calls "
                     "from %s_%s_min_bytes to %s_%s_max_bytes run %s (%s).  The default is the "
                     "cost model's, with the other two: the rule that loses least on nodes of 8 "
                     "H200 with rails (coll_gpu_tree_rails; perf/cost_model --crossovers; its "
                     "tuning file gives each layout its own band).  A communicator without rails "
                     "(nodes of one rank, or whose ranks share their network devices) takes the "
                     "model's band without them where none of the three is set (from %d nodes, "
                     "%zu to %zu bytes: coll_gpu_verbose 10 says so)",
                     coll, coll, alg, coll, alg, alg, what, no_rails.min_nodes, no_rails.min_bytes,
                     no_rails.max_bytes);
        } else {
            snprintf(help, sizeof(help),
                     "With %s_algorithm auto and no tuning rule, from %s_%s_min_nodes nodes on: "
                     "the %s %s that runs %s (%s).  %sThe default is the cost model's (with "
                     "rails; see %s_%s_min_nodes)",
                     coll, coll, alg, (1 == k) ? "smallest" : "largest", bytes_what, alg,
                     (1 == k) ? small_why : large_why, (1 == k) ? "" : "0: never.  ", coll, alg);
        }
        index = coll_gpu_param_register(c, name, help, vars[k].type, NULL, OPAL_INFO_LVL_5,
                                        MCA_BASE_VAR_SCOPE_READONLY, mark, vars[k].storage);
        /* set by the user (command line, environment, a parameter file), whatever the value */
        if ((index >= 0) && (OPAL_SUCCESS == mca_base_var_get_value(index, NULL, &source, NULL)) &&
            (MCA_BASE_VAR_SOURCE_DEFAULT != source)) {
            rule->params_set = true;
        }
    }
}

/* coll_gpu_<old_name>: a deprecated name of coll_gpu_<name>. */
static void coll_gpu_param_synonym(const char *name, const char *old_name) {
    int index = mca_base_var_find("ompi", "coll", "gpu", name);

    if (index >= 0) {
        (void)mca_base_var_register_synonym(index, "ompi", "coll", "gpu", old_name,
                                            MCA_BASE_VAR_SYN_FLAG_DEPRECATED);
    }
}

/* ENUM of a row: the arguments values, flags of coll_gpu_param_enum. */
#define COLL_GPU_PARAM_ENUM_NO_ENUM NULL, NULL
#define COLL_GPU_PARAM_ENUM_VALUES(table) table, NULL
#define COLL_GPU_PARAM_ENUM_FLAGS(table) NULL, table

#define COLL_GPU_PARAM_REGISTER(name, type, def, en, level, scope, mark, help)                     \
    mca_coll_gpu_component.name = (def);                                                           \
    (void)coll_gpu_param_register(c, #name, help, MCA_BASE_VAR_TYPE_##type,                        \
                                  coll_gpu_param_enum(#name, COLL_GPU_PARAM_ENUM_##en),            \
                                  OPAL_INFO_LVL_##level, MCA_BASE_VAR_SCOPE_##scope,               \
                                  COLL_GPU_PARAM_##mark, &mca_coll_gpu_component.name);
#define COLL_GPU_PARAM_BAND_REGISTER(coll, alg, model, mark, bytes_what, what, small_why,          \
                                     large_why)                                                    \
    coll_gpu_register_band_rule(c, #coll, #alg, bytes_what, &mca_coll_gpu_component.coll##_##alg,  \
                                COLL_GPU_MODEL_BAND(model), COLL_GPU_MODEL_BAND_NO_RAILS(model),   \
                                what, small_why, large_why, COLL_GPU_PARAM_##mark);
#define COLL_GPU_PARAM_ALGORITHMS_REGISTER(mark)                                                   \
    coll_gpu_register_algorithms(c, COLL_GPU_PARAM_##mark);
#define COLL_GPU_PARAM_SYNONYM_REGISTER(name, old_name) coll_gpu_param_synonym(#name, #old_name);

void coll_gpu_params_register(const mca_base_component_t *c) {
    COLL_GPU_FOREACH_PARAM(COLL_GPU_PARAM_REGISTER, COLL_GPU_PARAM_BAND_REGISTER,
                           COLL_GPU_PARAM_ALGORITHMS_REGISTER, COLL_GPU_PARAM_SYNONYM_REGISTER)
}

/* ------------------------------------------------------------------------------------------ */
/* The configuration hash                                                                     */
/* ------------------------------------------------------------------------------------------ */

static uint64_t coll_gpu_param_hash_word(uint64_t hash, uint64_t word) {
    return coll_gpu_hash_bytes(hash, &word, sizeof(word));
}

/* A band rule as auto reads it: its three parameters, and whether any was set (set to the
 * default on one rank, left alone on another: the bands without rails differ). */
static uint64_t coll_gpu_param_hash_band(uint64_t hash, const coll_gpu_band_rule_t *rule) {
    hash = coll_gpu_param_hash_word(hash, (uint64_t)(int64_t)rule->params.min_nodes);
    hash = coll_gpu_param_hash_word(hash, (uint64_t)rule->params.min_bytes);
    hash = coll_gpu_param_hash_word(hash, (uint64_t)rule->params.max_bytes);
    return coll_gpu_param_hash_word(hash, (uint64_t)rule->params_set);
}

/* A value of each TYPE, added to the hash. */
#define COLL_GPU_PARAM_HASH_INT(hash, field)                                                       \
    coll_gpu_param_hash_word(hash, (uint64_t)(int64_t)(field))
#define COLL_GPU_PARAM_HASH_UNSIGNED_INT(hash, field)                                              \
    coll_gpu_param_hash_word(hash, (uint64_t)(field))
#define COLL_GPU_PARAM_HASH_SIZE_T(hash, field) coll_gpu_param_hash_word(hash, (uint64_t)(field))
#define COLL_GPU_PARAM_HASH_BOOL(hash, field) coll_gpu_param_hash_word(hash, (uint64_t)(field))
#define COLL_GPU_PARAM_HASH_DOUBLE(hash, field) coll_gpu_hash_bytes(hash, &(field), sizeof(double))
/* (NULL and "" are the same value: none) */
#define COLL_GPU_PARAM_HASH_STRING(hash, field)                                                    \
    coll_gpu_hash_bytes(hash, (NULL != (field)) ? (field) : "",                                    \
                        strlen((NULL != (field)) ? (field) : "") + 1)

/* What each MARK adds: nothing for LOCAL. */
#define COLL_GPU_PARAM_HASH_MARK_LOCAL(type, field)
#define COLL_GPU_PARAM_HASH_MARK_PROTOCOL(type, field)                                             \
    hash = COLL_GPU_PARAM_HASH_##type(hash, field);
#define COLL_GPU_PARAM_HASH_MARK_PROTOCOL_RULES(type, field)                                       \
    hash = coll_gpu_param_hash_word(hash, coll_gpu_native_tuning_hash());
#define COLL_GPU_PARAM_BAND_HASH_MARK_LOCAL(rule)
#define COLL_GPU_PARAM_BAND_HASH_MARK_PROTOCOL(rule) hash = coll_gpu_param_hash_band(hash, &(rule));
#define COLL_GPU_PARAM_ALGORITHMS_HASH_MARK_LOCAL
#define COLL_GPU_PARAM_ALGORITHMS_HASH_MARK_PROTOCOL                                               \
    for (int k = 0; k < COLL_GPU_NCOLL_NUM; ++k) {                                                 \
        hash = COLL_GPU_PARAM_HASH_INT(hash, mca_coll_gpu_component.algorithm[k]);                 \
    }

#define COLL_GPU_PARAM_HASH(name, type, def, en, level, scope, mark, help)                         \
    COLL_GPU_PARAM_HASH_MARK_##mark(type, mca_coll_gpu_component.name)
#define COLL_GPU_PARAM_BAND_HASH(coll, alg, model, mark, ...)                                      \
    COLL_GPU_PARAM_BAND_HASH_MARK_##mark(mca_coll_gpu_component.coll##_##alg)
#define COLL_GPU_PARAM_ALGORITHMS_HASH(mark) COLL_GPU_PARAM_ALGORITHMS_HASH_MARK_##mark

uint64_t coll_gpu_params_hash(void) {
    uint64_t hash = COLL_GPU_HASH_SEED;

    COLL_GPU_FOREACH_PARAM(COLL_GPU_PARAM_HASH, COLL_GPU_PARAM_BAND_HASH,
                           COLL_GPU_PARAM_ALGORITHMS_HASH, COLL_GPU_PARAM_NOTHING)
    return hash;
}

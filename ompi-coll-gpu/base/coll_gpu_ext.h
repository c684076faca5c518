/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_gpu_ext.h: coll/gpu's installed extensions for C programs: bfloat16 and float16 types and
 * ops (docs/kernels.md, "bfloat16 and float16 in MPI"), and MPICH's stream API for a
 * stream-ordered MPIX_Allreduce_enqueue (docs/nonblocking.md, "Stream-ordered allreduce": an
 * example, CUDA graphs; define COLL_GPU_EXT_NO_MPIX_STREAM to leave those names out).
 *
 * The ops are MPI user ops whose functions, defined here, convert to float, combine and round to
 * nearest even: Open MPI runs them wherever coll/gpu does not take the call.  Handles are created
 * on first use, after MPI_Init, and live until MPI_Finalize; calls are not thread safe before the
 * first use returns.  The stream calls reach coll/gpu through dlopen(RTLD_NOLOAD) (link with -ldl
 * before glibc 2.34); without it MPIX_Stream_comm_create returns MPI_ERR_UNSUPPORTED_OPERATION.
 */
#ifndef COLL_GPU_EXT_H
#define COLL_GPU_EXT_H

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The datatype names coll/gpu recognises. */
#define COLL_GPU_BFLOAT16_NAME "COLL_GPU_BFLOAT16"
#define COLL_GPU_FLOAT16_NAME "COLL_GPU_FLOAT16"

/* How coll/gpu asks one of these ops what it computes: it calls the op's function
 * with in == NULL, *len == 0 and inout pointing to this structure with magic set;
 * the function fills op and type.  Open MPI never calls an op with a NULL input. */
#define COLL_GPU_EXT_QUERY_MAGIC 0x636f6c6c67707531ULL /* "collgpu1" */
enum { COLL_GPU_EXT_SUM = 1, COLL_GPU_EXT_PROD, COLL_GPU_EXT_MAX, COLL_GPU_EXT_MIN };
enum { COLL_GPU_EXT_BFLOAT16 = 1, COLL_GPU_EXT_FLOAT16 };
typedef struct {
    uint64_t magic;
    int op;   /* COLL_GPU_EXT_SUM ... */
    int type; /* COLL_GPU_EXT_BFLOAT16, COLL_GPU_EXT_FLOAT16 */
} coll_gpu_ext_query_t;

/* bfloat16 <-> float: the upper half of the binary32 pattern, rounded to nearest even. */
static inline float coll_gpu_ext_bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static inline uint16_t coll_gpu_ext_float_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((bits >> 16) | 0x40u); /* NaN stays a (quiet) NaN */
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

/* IEEE binary16 <-> float. */
static inline float coll_gpu_ext_fp16_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    float f;

    if (exp == 0x1fu) {
        bits = sign | 0x7f800000u | (man << 13); /* Inf, NaN */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13); /* normal: rebias 15 -> 127 */
    } else if (man == 0) {
        bits = sign; /* zero */
    } else {
        exp = 113u; /* subnormal: normalize */
        while ((man & 0x400u) == 0) {
            man <<= 1;
            --exp;
        }
        bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static inline uint16_t coll_gpu_ext_float_to_fp16(float f) {
    uint32_t bits, sign, exp, man, shift, rest, half;
    uint16_t h;

    memcpy(&bits, &f, sizeof(bits));
    sign = (bits >> 16) & 0x8000u;
    exp = (bits >> 23) & 0xffu;
    man = bits & 0x7fffffu;
    if (exp == 0xffu) {
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
    }
    if (exp >= 143u) { /* |f| >= 65536: overflows to Inf */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (exp >= 113u) { /* normal half */
        h = (uint16_t)(((exp - 112u) << 10) | (man >> 13));
        rest = man & 0x1fffu;
        if ((rest > 0x1000u) || ((rest == 0x1000u) && (h & 1u))) {
            ++h; /* may carry into the exponent, up to Inf: correct */
        }
        return (uint16_t)(sign | h);
    }
    if (exp < 102u) { /* below half the smallest subnormal: zero */
        return (uint16_t)sign;
    }
    man |= 0x800000u; /* subnormal half: shift the full significand */
    shift = 126u - exp;
    h = (uint16_t)(man >> shift);
    rest = man & ((1u << shift) - 1u);
    half = 1u << (shift - 1u);
    if ((rest > half) || ((rest == half) && (h & 1u))) {
        ++h;
    }
    return (uint16_t)(sign | h);
}

#define COLL_GPU_EXT_COMBINE_SUM(a, b) ((a) + (b))
#define COLL_GPU_EXT_COMBINE_PROD(a, b) ((a) * (b))
#define COLL_GPU_EXT_COMBINE_MAX(a, b) (((a) > (b)) ? (a) : (b))
#define COLL_GPU_EXT_COMBINE_MIN(a, b) (((a) < (b)) ? (a) : (b))

/* One user-op function per (type, op): inout[i] = inout[i] op in[i], in float. */
#define COLL_GPU_EXT_OP_FN(_type, _TYPE, _conv, _OP)                                               \
    static void coll_gpu_ext_##_type##_##_OP(void *in, void *inout, int *len, MPI_Datatype *dt) {  \
        const uint16_t *a = (const uint16_t *)in;                                                  \
        uint16_t *b = (uint16_t *)inout;                                                           \
        (void)dt;                                                                                  \
        if (a == NULL) {                                                                           \
            coll_gpu_ext_query_t *q = (coll_gpu_ext_query_t *)inout;                               \
            if ((q != NULL) && (*len == 0) && (q->magic == COLL_GPU_EXT_QUERY_MAGIC)) {            \
                q->op = COLL_GPU_EXT_##_OP;                                                        \
                q->type = COLL_GPU_EXT_##_TYPE;                                                    \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        for (int i = 0; i < *len; ++i) {                                                           \
            float x = coll_gpu_ext_##_conv##_to_float(b[i]);                                       \
            float y = coll_gpu_ext_##_conv##_to_float(a[i]);                                       \
            b[i] = coll_gpu_ext_float_to_##_conv(COLL_GPU_EXT_COMBINE_##_OP(x, y));                \
        }                                                                                          \
    }

COLL_GPU_EXT_OP_FN(bf16, BFLOAT16, bf16, SUM)
COLL_GPU_EXT_OP_FN(bf16, BFLOAT16, bf16, PROD)
COLL_GPU_EXT_OP_FN(bf16, BFLOAT16, bf16, MAX)
COLL_GPU_EXT_OP_FN(bf16, BFLOAT16, bf16, MIN)
COLL_GPU_EXT_OP_FN(fp16, FLOAT16, fp16, SUM)
COLL_GPU_EXT_OP_FN(fp16, FLOAT16, fp16, PROD)
COLL_GPU_EXT_OP_FN(fp16, FLOAT16, fp16, MAX)
COLL_GPU_EXT_OP_FN(fp16, FLOAT16, fp16, MIN)

static inline MPI_Datatype coll_gpu_ext_type(MPI_Datatype *cache, const char *name) {
    if (*cache == MPI_DATATYPE_NULL) {
        MPI_Datatype type;
        if (MPI_Type_contiguous(1, MPI_UINT16_T, &type) != MPI_SUCCESS) {
            return MPI_DATATYPE_NULL;
        }
        MPI_Type_set_name(type, (char *)name);
        MPI_Type_commit(&type);
        *cache = type;
    }
    return *cache;
}

/* The bfloat16 / float16 datatypes. */
static inline MPI_Datatype coll_gpu_type_bfloat16(void) {
    static MPI_Datatype type = MPI_DATATYPE_NULL;
    return coll_gpu_ext_type(&type, COLL_GPU_BFLOAT16_NAME);
}

static inline MPI_Datatype coll_gpu_type_float16(void) {
    static MPI_Datatype type = MPI_DATATYPE_NULL;
    return coll_gpu_ext_type(&type, COLL_GPU_FLOAT16_NAME);
}

/* The op computing `base` (MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN) on `type` (one of the
 * two above); MPI_OP_NULL for anything else. */
static inline MPI_Op coll_gpu_op_half(MPI_Op base, MPI_Datatype type) {
    static MPI_Op ops[2][4] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                               {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
    static MPI_User_function *const fns[2][4] = {{coll_gpu_ext_bf16_SUM, coll_gpu_ext_bf16_PROD,
                                                  coll_gpu_ext_bf16_MAX, coll_gpu_ext_bf16_MIN},
                                                 {coll_gpu_ext_fp16_SUM, coll_gpu_ext_fp16_PROD,
                                                  coll_gpu_ext_fp16_MAX, coll_gpu_ext_fp16_MIN}};
    int t, o;

    if (type == coll_gpu_type_bfloat16()) {
        t = 0;
    } else if (type == coll_gpu_type_float16()) {
        t = 1;
    } else {
        return MPI_OP_NULL;
    }
    if (base == MPI_SUM) {
        o = 0;
    } else if (base == MPI_PROD) {
        o = 1;
    } else if (base == MPI_MAX) {
        o = 2;
    } else if (base == MPI_MIN) {
        o = 3;
    } else {
        return MPI_OP_NULL;
    }
    if ((ops[t][o] == MPI_OP_NULL) && (MPI_Op_create(fns[t][o], 1, &ops[t][o]) != MPI_SUCCESS)) {
        return MPI_OP_NULL;
    }
    return ops[t][o];
}

/* ---- stream-ordered calls ------------------------------------------------------------ */

/* What the component exports (coll_gpu_ext_stream_api) for the functions below. */
#define COLL_GPU_EXT_STREAM_API_VERSION 1u
typedef struct {
    unsigned version; /* COLL_GPU_EXT_STREAM_API_VERSION */
    /* a duplicate of comm whose MPIX_Allreduce_enqueue calls are ordered on stream (a
     * cudaStream_t) */
    int (*comm_create)(MPI_Comm comm, void *stream, MPI_Comm *newcomm);
    int (*allreduce_enqueue)(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm);
} coll_gpu_ext_stream_api_t;

#ifndef COLL_GPU_EXT_NO_MPIX_STREAM
#if !defined(MPIX_STREAM_NULL)
#include <dlfcn.h>
#include <stdlib.h>

/* The component's table: NULL when coll/gpu is not loaded in this process. */
static inline const coll_gpu_ext_stream_api_t *coll_gpu_ext_stream(void) {
    static const coll_gpu_ext_stream_api_t *api;
    const coll_gpu_ext_stream_api_t *(*get)(void);
    void *lib;

    if (api == NULL) {
        lib = dlopen("mca_coll_gpu.so", RTLD_LAZY | RTLD_NOLOAD);
        if (lib != NULL) {
            *(void **)&get = dlsym(lib, "coll_gpu_ext_stream_api");
            if ((get != NULL) && (get()->version == COLL_GPU_EXT_STREAM_API_VERSION)) {
                api = get();
            }
            dlclose(lib); /* still loaded: Open MPI holds it */
        }
    }
    return api;
}

typedef struct coll_gpu_ext_mpix_stream {
    void *cuda_stream;
} * MPIX_Stream;
#define MPIX_STREAM_NULL ((MPIX_Stream)0)

/* MPICH's: value_size bytes at value as hexadecimal text (two digits per byte, in memory
 * order) under key. */
static inline int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value,
                                    int value_size) {
    static const char digits[] = "0123456789abcdef";
    char text[2 * 64 + 1];
    int i;

    if ((value_size <= 0) || (value_size > 64)) {
        return MPI_ERR_ARG;
    }
    for (i = 0; i < value_size; ++i) {
        text[2 * i] = digits[((const unsigned char *)value)[i] >> 4];
        text[2 * i + 1] = digits[((const unsigned char *)value)[i] & 15];
    }
    text[2 * value_size] = '\0';
    return MPI_Info_set(info, key, text);
}

static inline int coll_gpu_ext_info_get(MPI_Info info, const char *key, char *buf, int len) {
    int flag = 0;
#if MPI_VERSION >= 4
    int buflen = len;
    if (MPI_Info_get_string(info, key, &buflen, buf, &flag) != MPI_SUCCESS) {
        return 0;
    }
#else
    if (MPI_Info_get(info, key, len - 1, buf, &flag) != MPI_SUCCESS) {
        return 0;
    }
#endif
    return flag;
}

/* A stream of info "type" "cudaStream_t" and "value" (MPIX_Info_set_hex of the stream). */
static inline int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream) {
    char type[32] = "", value[2 * sizeof(void *) + 8] = "";
    unsigned char bytes[sizeof(void *)];
    size_t i;

    *stream = MPIX_STREAM_NULL;
    if ((info == MPI_INFO_NULL) || !coll_gpu_ext_info_get(info, "type", type, sizeof(type)) ||
        (strcmp(type, "cudaStream_t") != 0) ||
        !coll_gpu_ext_info_get(info, "value", value, sizeof(value)) ||
        (strlen(value) != 2 * sizeof(void *))) {
        return MPI_ERR_INFO_VALUE;
    }
    for (i = 0; i < sizeof(void *); ++i) {
        unsigned hi = (unsigned)value[2 * i], lo = (unsigned)value[2 * i + 1];
        hi = (hi <= '9') ? hi - '0' : (hi | 0x20) - 'a' + 10;
        lo = (lo <= '9') ? lo - '0' : (lo | 0x20) - 'a' + 10;
        if ((hi > 15) || (lo > 15)) {
            return MPI_ERR_INFO_VALUE;
        }
        bytes[i] = (unsigned char)(hi << 4 | lo);
    }
    *stream = (MPIX_Stream)malloc(sizeof(**stream));
    if (*stream == NULL) {
        return MPI_ERR_NO_MEM;
    }
    memcpy(&(*stream)->cuda_stream, bytes, sizeof(void *));
    return MPI_SUCCESS;
}

static inline int MPIX_Stream_free(MPIX_Stream *stream) {
    free(*stream);
    *stream = MPIX_STREAM_NULL;
    return MPI_SUCCESS;
}

static inline int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm) {
    const coll_gpu_ext_stream_api_t *api = coll_gpu_ext_stream();

    if (stream == MPIX_STREAM_NULL) {
        return MPI_ERR_ARG;
    }
    return (api != NULL) ? api->comm_create(comm, stream->cuda_stream, newcomm)
                         : MPI_ERR_UNSUPPORTED_OPERATION;
}

static inline int MPIX_Allreduce_enqueue(const void *sendbuf, void *recvbuf, int count,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    const coll_gpu_ext_stream_api_t *api = coll_gpu_ext_stream();

    return (api != NULL) ? api->allreduce_enqueue(sendbuf, recvbuf, count, datatype, op, comm)
                         : MPI_ERR_UNSUPPORTED_OPERATION;
}

/* Elements per call of MPIX_Allreduce_enqueue_c (tests define it smaller). */
#ifndef COLL_GPU_EXT_ENQUEUE_PIECE
#define COLL_GPU_EXT_ENQUEUE_PIECE INT_MAX
#endif

/* MPICH's large-count form: counts beyond an int are enqueued as consecutive calls of at most
 * COLL_GPU_EXT_ENQUEUE_PIECE elements (element-wise, the same result; every rank cuts the same
 * count alike).  A piece's MPI_ERR_OTHER (a failure reported, or a refused capture: the same on
 * every rank that queued alike) does not stop the others, which keeps the ranks' calls in step;
 * the first error is returned. */
static inline int MPIX_Allreduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    MPI_Aint lb, extent;
    MPI_Count done = 0;
    int first = MPI_SUCCESS, rc, error_class;

    if (count < 0) {
        return MPI_ERR_COUNT;
    }
    if (count <= COLL_GPU_EXT_ENQUEUE_PIECE) {
        return MPIX_Allreduce_enqueue(sendbuf, recvbuf, (int)count, datatype, op, comm);
    }
    rc = MPI_Type_get_extent(datatype, &lb, &extent);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    while (done < count) {
        MPI_Count n = count - done;
        MPI_Aint offset = (MPI_Aint)(done * extent);

        n = (n > COLL_GPU_EXT_ENQUEUE_PIECE) ? COLL_GPU_EXT_ENQUEUE_PIECE : n;
        rc = MPIX_Allreduce_enqueue((sendbuf == MPI_IN_PLACE) ? MPI_IN_PLACE
                                                              : (const char *)sendbuf + offset,
                                    (char *)recvbuf + offset, (int)n, datatype, op, comm);
        if (rc != MPI_SUCCESS) {
            first = (first == MPI_SUCCESS) ? rc : first;
            MPI_Error_class(rc, &error_class);
            if (error_class != MPI_ERR_OTHER) {
                return first;
            }
        }
        done += n;
    }
    return first;
}
#endif /* !MPIX_STREAM_NULL */
#endif /* !COLL_GPU_EXT_NO_MPIX_STREAM */

#ifdef __cplusplus
}
#endif

#endif /* COLL_GPU_EXT_H */

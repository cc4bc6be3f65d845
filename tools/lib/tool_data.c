/* The result oracle: input values and reference checks (see tool_data.h). */
#include "tools/lib/tool_data.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algos/reduce.h"

/* The prod values' period, the others', and their product (STB_DATA_PERIOD). */
#define DATA_PROD_PERIOD 7
#define DATA_SUM_PERIOD 19
#define DATA_SUM_OFFSET 9

/* fp8: the element's owner, and the owner's values (period 7 x 19 too). */
#define DATA_FP8_OWNERS 7
#define DATA_FP8_SPAN 15
#define DATA_FP8_OFFSET 7

static int data_is_fp8(strata_dtype_t t)
{
    return t == STRATA_FP8_E4M3 || t == STRATA_FP8_E5M2;
}

int64_t stb_data_value(int rank, size_t g, strata_op_t op, strata_dtype_t dtype)
{
    if (data_is_fp8(dtype)) {
        int owner = rank == (int)(g % DATA_FP8_OWNERS);
        if (op == STRATA_PROD)
            return owner && (g % DATA_SUM_PERIOD) % 2 == 0 ? 2 : 1;
        return owner ? (int64_t)((g % DATA_SUM_PERIOD) * 5 % DATA_FP8_SPAN) - DATA_FP8_OFFSET : 0;
    }
    if (op == STRATA_PROD)
        return (g + 3 * (size_t)rank) % DATA_PROD_PERIOD == 0 ? 2 : 1;
    return (int64_t)((g + 5 * (size_t)rank) % DATA_SUM_PERIOD) - DATA_SUM_OFFSET;
}

static int data_is_float(strata_dtype_t t)
{
    return t == STRATA_FP16 || t == STRATA_BF16 || t == STRATA_FP32 || t == STRATA_FP64 ||
           data_is_fp8(t);
}

static int data_is_signed(strata_dtype_t t)
{
    return t == STRATA_INT8 || t == STRATA_INT32 || t == STRATA_INT64;
}

/* Stores v (an integer, or a float's value) as element i of the type. */
static void data_put(void *buf, size_t i, strata_dtype_t t, int64_t iv, double fv)
{
    char *p = (char *)buf + i * strata_dtype_size(t);
    switch (t) {
    case STRATA_INT8: case STRATA_UINT8: { uint8_t v = (uint8_t)iv; memcpy(p, &v, 1); break; }
    case STRATA_INT32: case STRATA_UINT32: { uint32_t v = (uint32_t)iv; memcpy(p, &v, 4); break; }
    case STRATA_INT64: case STRATA_UINT64: { uint64_t v = (uint64_t)iv; memcpy(p, &v, 8); break; }
    case STRATA_FP16: { uint16_t v = sta_fp16_encode((float)fv); memcpy(p, &v, 2); break; }
    case STRATA_BF16: { uint16_t v = sta_bf16_encode((float)fv); memcpy(p, &v, 2); break; }
    case STRATA_FP32: { float v = (float)fv; memcpy(p, &v, 4); break; }
    case STRATA_FP64: memcpy(p, &fv, 8); break;
    case STRATA_FP8_E4M3: { uint8_t v = sta_fp8_e4m3_encode((float)fv); memcpy(p, &v, 1); break; }
    case STRATA_FP8_E5M2: { uint8_t v = sta_fp8_e5m2_encode((float)fv); memcpy(p, &v, 1); break; }
    default: break;
    }
}

/* Element i as a double (floats) or as its 64-bit integer, sign- or zero-extended. */
static double data_get_float(const void *buf, size_t i, strata_dtype_t t)
{
    const char *p = (const char *)buf + i * strata_dtype_size(t);
    uint16_t h;
    uint8_t b;
    float f;
    double d;
    switch (t) {
    case STRATA_FP8_E4M3: memcpy(&b, p, 1); return sta_fp8_e4m3_decode(b);
    case STRATA_FP8_E5M2: memcpy(&b, p, 1); return sta_fp8_e5m2_decode(b);
    case STRATA_FP16: memcpy(&h, p, 2); return sta_fp16_decode(h);
    case STRATA_BF16: memcpy(&h, p, 2); return sta_bf16_decode(h);
    case STRATA_FP32: memcpy(&f, p, 4); return f;
    case STRATA_FP64: memcpy(&d, p, 8); return d;
    default: return 0;
    }
}

static uint64_t data_get_bits(const void *buf, size_t i, strata_dtype_t t)
{
    const char *p = (const char *)buf + i * strata_dtype_size(t);
    int8_t s8; uint8_t u8; int32_t s32; uint32_t u32; uint64_t u64;
    switch (t) {
    case STRATA_INT8: memcpy(&s8, p, 1); return (uint64_t)(int64_t)s8;
    case STRATA_UINT8: memcpy(&u8, p, 1); return u8;
    case STRATA_INT32: memcpy(&s32, p, 4); return (uint64_t)(int64_t)s32;
    case STRATA_UINT32: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

/* Prints one wrong element (the first STB_DATA_REPORT_MAX of a check) when what is set. */
static void data_report(const char *what, size_t *reported, const void *got, size_t i,
                        const void *want, size_t j, strata_dtype_t t, size_t g)
{
    char gtext[32], wtext[32];

    if (what == NULL || (*reported)++ >= STB_DATA_REPORT_MAX)
        return;
    if (data_is_float(t)) {
        snprintf(gtext, sizeof(gtext), "%g", data_get_float(got, i, t));
        snprintf(wtext, sizeof(wtext), "%g", data_get_float(want, j, t));
    } else if (data_is_signed(t)) {
        snprintf(gtext, sizeof(gtext), "%" PRId64, (int64_t)data_get_bits(got, i, t));
        snprintf(wtext, sizeof(wtext), "%" PRId64, (int64_t)data_get_bits(want, j, t));
    } else {
        snprintf(gtext, sizeof(gtext), "%" PRIu64, data_get_bits(got, i, t));
        snprintf(wtext, sizeof(wtext), "%" PRIu64, data_get_bits(want, j, t));
    }
    fprintf(stderr, "%s: %s element %zu: got %s, expected %s\n", what, strata_dtype_name(t), g,
            gtext, wtext);
}

void stb_data_fill(void *buf, size_t count, strata_dtype_t dtype, strata_op_t op, int rank,
                   size_t first)
{
    size_t esz = strata_dtype_size(dtype);
    unsigned char one[STB_DATA_PERIOD * STB_DATA_MAX_ELEM];

    /* One period of the rank's values, then whole periods by copying. */
    for (size_t j = 0; j < STB_DATA_PERIOD; j++) {
        int64_t v = stb_data_value(rank, first + j, op, dtype);
        data_put(one, j, dtype, v, (double)v);
    }
    size_t period = STB_DATA_PERIOD * esz, total = count * esz;
    for (size_t at = 0; at < total; at += period)
        memcpy((char *)buf + at, one, total - at < period ? total - at : period);
}

/* acc op= x for a floating type (avg sums; the division comes last). */
static double data_combine_float(strata_op_t op, double acc, double x)
{
    switch (op) {
    case STRATA_PROD: return acc * x;
    case STRATA_MIN: return x < acc ? x : acc;
    case STRATA_MAX: return x > acc ? x : acc;
    default: return acc + x;
    }
}

/*
 * The same for an integer type: sums and products wrap modulo 2^64 here and
 * modulo the type's width at the store, which is the same residue; min and
 * max compare in the type's signedness.
 */
static uint64_t data_combine_int(strata_op_t op, int sgn, uint64_t acc, uint64_t x)
{
    switch (op) {
    case STRATA_PROD: return acc * x;
    case STRATA_MIN: return (sgn ? (int64_t)x < (int64_t)acc : x < acc) ? x : acc;
    case STRATA_MAX: return (sgn ? (int64_t)x > (int64_t)acc : x > acc) ? x : acc;
    default: return acc + x;
    }
}

/* One reduction of op over the nranks values of element g, in the type's arithmetic. */
static void data_reduce_one(stb_data_ref_t *ref, size_t g, void *out)
{
    const strata_dtype_t t = ref->dtype;
    const strata_op_t op = ref->op;
    const int is_float = data_is_float(t), sgn = data_is_signed(t);
    unsigned char in[STB_DATA_MAX_ELEM];
    double accf = 0;
    uint64_t acci = 0;

    for (int r = 0; r < ref->nranks; r++) {
        int64_t v = stb_data_value(r, g, op, t);
        data_put(in, 0, t, v, (double)v);          /* the value as the type stores it */
        if (is_float) {
            double x = data_get_float(in, 0, t);
            accf = r == 0 ? x : data_combine_float(op, accf, x);
        } else {
            uint64_t x = data_get_bits(in, 0, t);
            acci = r == 0 ? x : data_combine_int(op, sgn, acci, x);
        }
    }
    if (is_float) {
        data_put(out, 0, t, 0, op == STRATA_AVG ? accf / ref->nranks : accf);
        return;
    }
    data_put(out, 0, t, (int64_t)acci, 0);
    if (op == STRATA_AVG) {
        /* the library divides the wrapped sum, in the type, truncating toward zero */
        uint64_t w = data_get_bits(out, 0, t);
        w = sgn ? (uint64_t)((int64_t)w / ref->nranks) : w / (uint64_t)ref->nranks;
        data_put(out, 0, t, (int64_t)w, 0);
    }
}

void stb_data_ref_build(stb_data_ref_t *ref, strata_dtype_t dtype, strata_op_t op, int nranks)
{
    memset(ref, 0, sizeof(*ref));
    ref->dtype = dtype;
    ref->op = op;
    ref->nranks = nranks > 0 ? nranks : 1;
    size_t esz = strata_dtype_size(dtype);
    for (size_t j = 0; j < STB_DATA_PERIOD; j++)
        data_reduce_one(ref, j, ref->table + j * esz);
}

static double data_tolerance(strata_dtype_t t)
{
    switch (t) {
    case STRATA_FP8_E4M3: case STRATA_FP8_E5M2: return 0.13;   /* half an E5M2 ulp: 2^-3 */
    case STRATA_FP16: case STRATA_BF16: return 1e-2;
    case STRATA_FP32: return 1e-5;
    default: return 1e-12;
    }
}

size_t stb_data_check_reduced(const void *got, size_t count, const stb_data_ref_t *ref,
                              size_t first, const char *what)
{
    const strata_dtype_t t = ref->dtype;
    const size_t esz = strata_dtype_size(t);
    const double tol = ref->op == STRATA_AVG && data_is_float(t) ? data_tolerance(t) : 0;
    size_t wrong = 0, reported = 0, j = first % STB_DATA_PERIOD;

    for (size_t i = 0; i < count; i++) {
        int bad;
        if (data_is_float(t)) {
            double e = data_get_float(ref->table, j, t), v = data_get_float(got, i, t);
            /* equal values (infinities included) pass; NaN never does */
            bad = !(v == e || fabs(v - e) <= tol * (fabs(e) + 1));
        } else {
            bad = memcmp((const char *)got + i * esz, ref->table + j * esz, esz) != 0;
        }
        if (bad) {
            data_report(what, &reported, got, i, ref->table, j, t, first + i);
            wrong++;
        }
        if (++j == STB_DATA_PERIOD)
            j = 0;
    }
    return wrong;
}

size_t stb_data_check(const void *got, size_t count, strata_dtype_t dtype, strata_op_t op,
                      int nranks, size_t first, const char *what)
{
    stb_data_ref_t ref;

    stb_data_ref_build(&ref, dtype, op, nranks);
    return stb_data_check_reduced(got, count, &ref, first, what);
}

size_t stb_data_check_input(const void *got, size_t count, strata_dtype_t dtype, int rank,
                            size_t first, const char *what)
{
    const size_t esz = strata_dtype_size(dtype);
    unsigned char one[STB_DATA_PERIOD * STB_DATA_MAX_ELEM];
    const char *p = got;
    size_t wrong = 0, reported = 0, j = 0;

    stb_data_fill(one, STB_DATA_PERIOD, dtype, STRATA_SUM, rank, first);
    for (size_t i = 0; i < count; i++, p += esz) {
        if (memcmp(p, one + j * esz, esz) != 0) {
            data_report(what, &reported, got, i, one, j, dtype, first + i);
            wrong++;
        }
        if (++j == STB_DATA_PERIOD)
            j = 0;
    }
    return wrong;
}

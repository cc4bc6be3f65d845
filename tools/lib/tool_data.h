/*
 * The one result oracle: the input data of strata-perf (-c) and of the
 * collective tests, and the check of every result against the reference, so
 * strata-perf's #wrong and the tests judge a result alike. Rank r's input
 * element g (g counts from the start of the rank's whole input) is a small
 * integer:
 *
 *   prod:          v(r, g) = 2 if (g + 3r) mod 7 == 0, else 1
 *   anything else: v(r, g) = ((g + 5r) mod 19) - 9          (-9 .. 9)
 *
 * fp8 has too few fraction bits for those sums, so its elements are "owned": element g
 * of the fp8 types is v8(r, g) = ((g mod 19) * 5 mod 15) - 7 (-7 .. 7) on rank g mod 7 and
 * 0 elsewhere (prod: 2 on the owner when g mod 19 is even, else 1), so at most one rank
 * contributes anything but the identity and every partial result is exact in any order.
 *
 * So every sum, product, min and max over up to 200 ranks is exact in every
 * type, fp16, bf16 and fp8 included (integers wrap modulo 2^bits in the type, as
 * the library's do), and the reduction of element g depends only on
 * g mod 133 (= 7 * 19): the reference is a table of 133 elements computed
 * once per size, and checking is a table lookup per element, fast enough for
 * 64 MiB buffers. avg of a floating type is a division, checked to within a
 * relative 0.13 (fp8), 1e-2 (fp16, bf16), 1e-5 (fp32) or 1e-12 (fp64); everything else
 * must match exactly (for floats, as values: -0 equals 0).
 *
 * Pure functions over caller buffers; thread-safe.
 */
#ifndef STB_DATA_H
#define STB_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "strata/types.h"

#define STB_DATA_PERIOD 133      /* lcm(7, 19): the period of v(r, g) in g */
#define STB_DATA_MAX_ELEM 8      /* bytes of the largest element type */
#define STB_DATA_REPORT_MAX 3    /* wrong elements a check prints (with `what`) */

/* The reference reduction: element g's expected value is at table[(g % PERIOD) * esz]. */
typedef struct stb_data_ref {
    strata_dtype_t dtype;
    strata_op_t op;
    int nranks;
    unsigned char table[STB_DATA_PERIOD * STB_DATA_MAX_ELEM];
} stb_data_ref_t;

/* v(r, g) for op and the type (see above), as an integer. */
int64_t stb_data_value(int rank, size_t g, strata_op_t op, strata_dtype_t dtype);

/* Writes elements first .. first+count-1 of rank's input into buf (as the type stores them). */
void stb_data_fill(void *buf, size_t count, strata_dtype_t dtype, strata_op_t op, int rank,
                   size_t first);

/* Builds the reference of op over ranks 0 .. nranks-1. */
void stb_data_ref_build(stb_data_ref_t *ref, strata_dtype_t dtype, strata_op_t op, int nranks);

/*
 * How many of got[0 .. count) differ from the reduction's elements first ..
 * first+count-1. what (may be NULL): a name for the first few wrong elements,
 * printed on stderr with their position, value and the expected one.
 */
size_t stb_data_check_reduced(const void *got, size_t count, const stb_data_ref_t *ref,
                              size_t first, const char *what);

/* The same against a reference built here: for a caller that checks one buffer per reference. */
size_t stb_data_check(const void *got, size_t count, strata_dtype_t dtype, strata_op_t op,
                      int nranks, size_t first, const char *what);

/* How many of got[0 .. count) differ from rank's input elements first .. (op sum's values). */
size_t stb_data_check_input(const void *got, size_t count, strata_dtype_t dtype, int rank,
                            size_t first, const char *what);

#endif /* STB_DATA_H */

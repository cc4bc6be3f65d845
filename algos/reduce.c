/*
 * Reduction dispatch: picks a kernel family once (best the CPU and OS can run), then every call
 * is one table lookup [dtype][op] and one indirect call; the kernels hold no per-element branch
 * on the type. The average's final division goes through the family's table the same way.
 *
 * Families in order of preference, each with a probe (docs/style.md: an ordered const table):
 * avx512 (F+BW+VL+DQ), avx2 (+F16C), scalar (always). sta_reduce_force_isa overrides.
 */
#include <assert.h>
#include <stdatomic.h>
#include <string.h>

#include "algos/reduce.h"
#include "algos/reduce_kern.h"
#include "util/compiler.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#define REDUCE_STREAM_ALIGN 16   /* one SSE2 streaming store (x86-64 baseline) */
#endif

static const sta_reduce_family_t *const reduce_families[] = {
    &sta_reduce_family_avx512,
    &sta_reduce_family_avx2,
    &sta_reduce_family_scalar,
};

/* Bytes per element, local so the hot path makes no call for it. */
static const uint8_t reduce_esize[STRATA_DTYPE_COUNT] = {
    [STRATA_INT8] = 1, [STRATA_UINT8] = 1, [STRATA_INT32] = 4, [STRATA_UINT32] = 4,
    [STRATA_INT64] = 8, [STRATA_UINT64] = 8, [STRATA_FP16] = 2, [STRATA_BF16] = 2,
    [STRATA_FP32] = 4, [STRATA_FP64] = 8, [STRATA_FP8_E4M3] = 1, [STRATA_FP8_E5M2] = 1,
};

/* NULL until the first reduction (or sta_reduce_force_isa) publishes a family. */
static _Atomic(const sta_reduce_family_t *) reduce_current;
static _Atomic size_t reduce_nt_min = STA_REDUCE_NT_MIN_BYTES;

static const sta_reduce_family_t *reduce_probe(void)
{
    for (size_t i = 0; i < STU_ARRAY_SIZE(reduce_families); i++) {
        if (reduce_families[i]->supported())
            return reduce_families[i];
    }
    return &sta_reduce_family_scalar;
}

/* The probe is pure, so two threads racing on the first call compute the same family; the
 * compare-and-swap publishes exactly one and never overrides a forced choice. */
static const sta_reduce_family_t *reduce_family(void)
{
    const sta_reduce_family_t *f = atomic_load_explicit(&reduce_current, memory_order_acquire);
    if (STU_LIKELY(f != NULL))
        return f;
    const sta_reduce_family_t *expected = NULL;
    f = reduce_probe();
    if (!atomic_compare_exchange_strong_explicit(&reduce_current, &expected, f,
                                                 memory_order_acq_rel, memory_order_acquire))
        f = expected;
    return f;
}

static void reduce_run(void *dst, const void *const *srcs, int nsrc, size_t count,
                       strata_dtype_t dtype, strata_op_t op, int stream)
{
    assert((unsigned)dtype < STRATA_DTYPE_COUNT && (unsigned)op < STRATA_OP_COUNT);
    assert(nsrc >= 1 && srcs != NULL);
    if (STU_UNLIKELY((unsigned)dtype >= STRATA_DTYPE_COUNT || (unsigned)op >= STRATA_OP_COUNT ||
                     nsrc < 1 || srcs == NULL || count == 0))
        return;

    size_t esize = reduce_esize[dtype];
    unsigned flags = 0;
    if ((stream || count * esize >= atomic_load_explicit(&reduce_nt_min, memory_order_relaxed)) &&
        (uintptr_t)dst % esize == 0)
        flags |= STA_REDUCE_F_NT;
    reduce_family()->kern[dtype][op](dst, srcs, nsrc, 0, count, flags);
}

void sta_reduce_n(void *dst, const void *const *srcs, int nsrc, size_t count,
                  strata_dtype_t dtype, strata_op_t op)
{
    reduce_run(dst, srcs, nsrc, count, dtype, op, 0);
}

void sta_reduce_n_stream(void *dst, const void *const *srcs, int nsrc, size_t count,
                         strata_dtype_t dtype, strata_op_t op)
{
    reduce_run(dst, srcs, nsrc, count, dtype, op, 1);
}

void sta_copy_stream(void *dst, const void *src, size_t bytes)
{
#if defined(__SSE2__)
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & (REDUCE_STREAM_ALIGN - 1));

    if (bytes < 2 * REDUCE_STREAM_ALIGN) {
        memcpy(dst, src, bytes);
        return;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= REDUCE_STREAM_ALIGN; d += REDUCE_STREAM_ALIGN, s += REDUCE_STREAM_ALIGN,
                                          bytes -= REDUCE_STREAM_ALIGN)
        _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
    memcpy(d, s, bytes);
    _mm_sfence();
#else
    memcpy(dst, src, bytes);
#endif
}

void sta_reduce(void *dst, const void *a, const void *b, size_t count, strata_dtype_t dtype,
                strata_op_t op)
{
    const void *srcs[2] = {a, b};
    sta_reduce_n(dst, srcs, 2, count, dtype, op);
}

const char *sta_reduce_isa(void)
{
    return reduce_family()->name;
}

int sta_reduce_force_isa(const char *name)
{
    const sta_reduce_family_t *f = NULL;

    if (name == NULL || strcmp(name, "auto") == 0) {
        f = reduce_probe();
    } else {
        for (size_t i = 0; i < STU_ARRAY_SIZE(reduce_families); i++) {
            if (strcmp(reduce_families[i]->name, name) == 0 && reduce_families[i]->supported())
                f = reduce_families[i];
        }
    }
    if (f == NULL)
        return 0;
    atomic_store_explicit(&reduce_current, f, memory_order_release);
    return 1;
}

size_t sta_reduce_nt_min_bytes(void)
{
    return atomic_load_explicit(&reduce_nt_min, memory_order_relaxed);
}

size_t sta_reduce_nt_min_bytes_set(size_t bytes)
{
    return atomic_exchange_explicit(&reduce_nt_min, bytes, memory_order_relaxed);
}

void sta_reduce_avg_finish(void *buf, size_t count, strata_dtype_t dtype, int nranks)
{
    assert((unsigned)dtype < STRATA_DTYPE_COUNT && nranks >= 1);
    if ((unsigned)dtype >= STRATA_DTYPE_COUNT || nranks <= 1 || count == 0)
        return;
    reduce_family()->finish[dtype](buf, 0, count, nranks);
}

/*
 * strata-reduce: throughput of the reduction kernels, fp32 sum, per kernel family, in GB/s of
 * output (10^9 bytes of dst written per second; memory traffic is (nsrc + 1) times that).
 *
 *   strata-reduce [--reps N] [--sizes 256K,64M] [--nsrc 2,4] [--clock wall|cpu]
 *                 [--nt-sweep | --avg | --membw THREADS | --xcore CHUNK | --rtt]
 *
 * Every (size, nsrc, family) cell is measured once per repetition, the families interleaved in
 * time (the machines are shared and noisy, docs/machines.md), and the table prints the median
 * of the repetitions with the lowest and highest. Buffers are allocated and written once before
 * timing, so page faults stay out of the numbers. --nt-sweep instead compares cache-allocating
 * with non-temporal stores over a range of sizes (how STA_REDUCE_NT_MIN_BYTES was chosen);
 * --avg measures the average's final division (sta_reduce_avg_finish) per dtype, in place,
 * on the first size; --membw N measures the memcpy bandwidth of N threads at once on the
 * first size (the memory bound of docs/benchmarks.md); --xcore CHUNK hands the first size
 * from CPU 0 to CPU 1 through two shared CHUNK-byte slots (what crossing cores costs);
 * --rtt times a cache line's round trip between CPU 0 and CPU 1 (--reps batches; how far apart
 * the host placed the two CPUs).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algos/reduce.h"
#include "bench/reduce/reduce_membw.h"
#include "bench/reduce/reduce_xcore.h"

/* Time per measurement: long enough for >= 20 calls at 64 MiB, short enough for a table in
 * well under a minute. */
#define BENCH_MIN_NS   250000000ull
#define BENCH_MAX_NSRC 8
#define BENCH_MAX_REPS 15
#define BENCH_MAX_LIST 16

static const char *const families[] = {"scalar", "avx2", "avx512"};
#define NFAM (sizeof(families) / sizeof(families[0]))

typedef struct bufs {
    float *src[BENCH_MAX_NSRC];
    float *dst;
    size_t count;
} bufs_t;

static int bufs_alloc(bufs_t *b, size_t bytes, int nsrc)
{
    memset(b, 0, sizeof(*b));
    b->count = bytes / sizeof(float);
    for (int k = 0; k <= nsrc; k++) {
        float *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        if (p == NULL)
            return -1;
        for (size_t i = 0; i < b->count; i++)      /* touch every page; ordinary values */
            p[i] = (float)((i + (size_t)k * 7) % 1000) * 0.25f;
        if (k == nsrc)
            b->dst = p;
        else
            b->src[k] = p;
    }
    return 0;
}

static void bufs_free(bufs_t *b)
{
    for (int k = 0; k < BENCH_MAX_NSRC; k++)
        free(b->src[k]);
    free(b->dst);
}

/* The clock the rates are computed from: wall (CLOCK_MONOTONIC, the default) or this thread's
 * CPU time (--clock cpu: excludes time the shared machine's scheduler gave to others). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static uint64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* GB/s of output for one family and one store policy, over at least BENCH_MIN_NS; -1 if this
 * CPU cannot run the family. */
static double measure(const bufs_t *b, int nsrc, const char *fam, size_t nt_min)
{
    const void *srcs[BENCH_MAX_NSRC];
    for (int k = 0; k < nsrc; k++)
        srcs[k] = b->src[k];
    if (!sta_reduce_force_isa(fam))
        return -1;
    sta_reduce_nt_min_bytes_set(nt_min);
    sta_reduce_n(b->dst, srcs, nsrc, b->count, STRATA_FP32, STRATA_SUM);     /* warm */

    uint64_t iters = 0, t0 = bench_now(), t;
    do {
        sta_reduce_n(b->dst, srcs, nsrc, b->count, STRATA_FP32, STRATA_SUM);
        iters++;
        t = bench_now();
    } while (t - t0 < BENCH_MIN_NS);
    return (double)iters * (double)(b->count * sizeof(float)) / (double)(t - t0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "256K,64M,1G" -> bytes; returns how many were parsed, or -1. */
static int parse_list(const char *s, size_t *out, int max, int sizes)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s)
            return -1;
        if (sizes && (*end == 'K' || *end == 'k'))
            v <<= 10, end++;
        else if (sizes && (*end == 'M' || *end == 'm'))
            v <<= 20, end++;
        else if (sizes && (*end == 'G' || *end == 'g'))
            v <<= 30, end++;
        out[n++] = (size_t)v;
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

static void size_name(size_t bytes, char *buf, size_t len)
{
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, len, "%zu KiB", bytes >> 10);
    else
        snprintf(buf, len, "%zu B", bytes);
}

/* The table: one row per (size, nsrc), one column per family (median [min-max]). */
static int run_table(const size_t *sizes, int nsizes, const size_t *nsrcs, int nnsrc, int reps)
{
    static double r[BENCH_MAX_LIST][BENCH_MAX_LIST][NFAM][BENCH_MAX_REPS];
    size_t nt_default = sta_reduce_nt_min_bytes();

    for (int si = 0; si < nsizes; si++) {
        for (int ni = 0; ni < nnsrc; ni++) {
            bufs_t b;
            if (bufs_alloc(&b, sizes[si], (int)nsrcs[ni]) != 0) {
                fprintf(stderr, "strata-reduce: out of memory\n");
                return 1;
            }
            for (int rep = 0; rep < reps; rep++) {
                for (size_t f = 0; f < NFAM; f++)
                    r[si][ni][f][rep] = measure(&b, (int)nsrcs[ni], families[f], nt_default);
            }
            bufs_free(&b);
        }
    }
    sta_reduce_force_isa(NULL);
    printf("fp32 sum, GB/s of output (%s clock), median of %d [min-max]; default family: %s\n\n",
           bench_clock == CLOCK_MONOTONIC ? "wall" : "cpu", reps, sta_reduce_isa());
    printf("| size per buffer | nsrc |");
    for (size_t f = 0; f < NFAM; f++)
        printf(" %s |", families[f]);
    printf("\n|---|---|");
    for (size_t f = 0; f < NFAM; f++)
        printf("---|");
    printf("\n");
    for (int si = 0; si < nsizes; si++) {
        for (int ni = 0; ni < nnsrc; ni++) {
            char name[32];
            size_name(sizes[si], name, sizeof(name));
            printf("| %s | %zu |", name, nsrcs[ni]);
            for (size_t f = 0; f < NFAM; f++) {
                double *v = r[si][ni][f];
                double m = median(v, reps);
                if (m < 0)
                    printf(" n/a |");
                else
                    printf(" %.1f [%.1f-%.1f] |", m, v[0], v[reps - 1]);
            }
            printf("\n");
        }
    }
    return 0;
}

/* Cache-allocating vs non-temporal stores, vector families, per size: medians and ratio. */
static int run_nt_sweep(const size_t *nsrcs, int nnsrc, int reps)
{
    static const size_t sizes[] = {256u << 10, 1u << 20, 4u << 20, 8u << 20, 16u << 20,
                                   64u << 20};
    printf("fp32 sum, GB/s of output (%s clock), median of %d: regular / non-temporal stores\n\n",
           bench_clock == CLOCK_MONOTONIC ? "wall" : "cpu", reps);
    printf("| size per buffer | nsrc | avx2 | avx2 NT | avx512 | avx512 NT |"
           " NT/regular (avx512) |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (int ni = 0; ni < nnsrc; ni++) {
            double v[4][BENCH_MAX_REPS], m[4];
            bufs_t b;
            if (bufs_alloc(&b, sizes[si], (int)nsrcs[ni]) != 0)
                return 1;
            for (int rep = 0; rep < reps; rep++) {
                for (int c = 0; c < 4; c++)
                    v[c][rep] = measure(&b, (int)nsrcs[ni], families[1 + c / 2],
                                        c % 2 ? 0 : SIZE_MAX);
            }
            bufs_free(&b);
            for (int c = 0; c < 4; c++)
                m[c] = median(v[c], reps);
            char name[32];
            size_name(sizes[si], name, sizeof(name));
            printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.2f |\n", name, nsrcs[ni], m[0],
                   m[1], m[2], m[3], m[3] / m[2]);
            fflush(stdout);
        }
    }
    sta_reduce_force_isa(NULL);
    return 0;
}

/* sta_reduce_avg_finish, GB/s of buffer, per dtype and family (nranks 3; the buffer holds
 * small values of every type, so no float is subnormal). */
static int run_avg(size_t bytes, int reps)
{
    static const strata_dtype_t dts[] = {STRATA_INT8, STRATA_UINT8, STRATA_INT32, STRATA_UINT32,
                                         STRATA_INT64, STRATA_UINT64, STRATA_FP16, STRATA_BF16,
                                         STRATA_FP32, STRATA_FP64};
    char name[32];
    uint8_t *buf = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (buf == NULL)
        return 1;
    size_name(bytes, name, sizeof(name));
    printf("sta_reduce_avg_finish, %s in place, nranks 3, GB/s (%s clock), median of %d\n\n",
           name, bench_clock == CLOCK_MONOTONIC ? "wall" : "cpu", reps);
    printf("| dtype | scalar | avx2 | avx512 |\n|---|---|---|---|\n");
    for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
        size_t es = strata_dtype_size(dts[d]), count = bytes / es;
        double v[NFAM][BENCH_MAX_REPS];
        for (int rep = 0; rep < reps; rep++) {
            for (size_t f = 0; f < NFAM; f++) {
                v[f][rep] = -1;
                if (!sta_reduce_force_isa(families[f]))
                    continue;
                /* Fresh data for every call (dividing the same buffer again and again would
                 * soon time divisions of zeros); only the call is timed. */
                uint64_t iters = 0, spent = 0;
                do {
                    memset(buf, 0x3c, bytes);   /* 1.06 (fp16), 0.0115 (bf16, fp32), ... */
                    uint64_t t0 = bench_now();
                    sta_reduce_avg_finish(buf, count, dts[d], 3);
                    spent += bench_now() - t0;
                    iters++;
                } while (spent < BENCH_MIN_NS / 2);
                v[f][rep] = (double)iters * (double)(count * es) / (double)spent;
            }
        }
        printf("| %s |", strata_dtype_name(dts[d]));
        for (size_t f = 0; f < NFAM; f++) {
            double m = median(v[f], reps);
            if (m < 0)
                printf(" n/a |");
            else
                printf(" %.1f |", m);
        }
        printf("\n");
        fflush(stdout);
    }
    free(buf);
    sta_reduce_force_isa(NULL);
    return 0;
}

int main(int argc, char **argv)
{
    size_t sizes[BENCH_MAX_LIST] = {256u << 10, 64u << 20}, nsrcs[BENCH_MAX_LIST] = {2, 4};
    int nsizes = 2, nnsrc = 2, reps = 3, sweep = 0, avg = 0, membw = 0, rtt = 0;
    size_t xcore = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = parse_list(argv[++i], sizes, BENCH_MAX_LIST, 1);
        } else if (strcmp(argv[i], "--nsrc") == 0 && i + 1 < argc) {
            nnsrc = parse_list(argv[++i], nsrcs, BENCH_MAX_LIST, 0);
        } else if (strcmp(argv[i], "--clock") == 0 && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "cpu") == 0)
                bench_clock = CLOCK_THREAD_CPUTIME_ID;
            else if (strcmp(argv[i], "wall") != 0)
                nsizes = -1;
        } else if (strcmp(argv[i], "--nt-sweep") == 0) {
            sweep = 1;
        } else if (strcmp(argv[i], "--rtt") == 0) {
            rtt = 1;
        } else if (strcmp(argv[i], "--avg") == 0) {
            avg = 1;
        } else if (strcmp(argv[i], "--membw") == 0 && i + 1 < argc) {
            membw = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--xcore") == 0 && i + 1 < argc) {
            size_t one[1];
            if (parse_list(argv[++i], one, 1, 1) != 1)
                nsizes = -1;
            xcore = one[0];
        } else {
            fprintf(stderr, "usage: %s [--reps N] [--sizes 256K,64M] [--nsrc 2,4] "
                    "[--clock wall|cpu] [--nt-sweep | --avg | --membw THREADS | --xcore CHUNK | --rtt]\n",
                    argv[0]);
            return 2;
        }
    }
    if (rtt)
        return stb_rtt_run(reps);
    if (reps < 1 || reps > BENCH_MAX_REPS || nsizes < 1 || nnsrc < 1) {
        fprintf(stderr, "strata-reduce: bad --reps (1..%d), --sizes, --nsrc or --clock\n",
                BENCH_MAX_REPS);
        return 2;
    }
    for (int i = 0; i < nnsrc; i++) {
        if (nsrcs[i] < 1 || nsrcs[i] > BENCH_MAX_NSRC) {
            fprintf(stderr, "strata-reduce: nsrc must be 1..%d\n", BENCH_MAX_NSRC);
            return 2;
        }
    }
    if (avg)
        return run_avg(sizes[0], reps);
    if (membw)
        return stb_membw_run(sizes[0], membw, reps);
    if (xcore)
        return stb_xcore_run(sizes[0], xcore, reps);
    if (sweep)
        return run_nt_sweep(nsrcs, nnsrc, reps);
    return run_table(sizes, nsizes, nsrcs, nnsrc, reps);
}

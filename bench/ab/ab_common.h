/*
 * Shared pieces of the A/B peer benchmarks (mpi_allreduce.c, gloo_allreduce.cc):
 * the nccl-tests command-line subset, the size sweep, the check data and the
 * nccl-tests output layout, so every peer prints rows that bench/ab/compare.sh
 * reads exactly like nccl-tests' and strata-perf's.
 *
 * Terms (nccl-tests' definitions, see docs/benchmarks.md):
 *   size    bytes per rank buffer (count * type size)
 *   time    mean time of one call in microseconds, averaged over the ranks
 *   algbw   size / time, GB/s with 1 GB = 10^9 B
 *   busbw   algbw * 2(n-1)/n for allreduce, n = number of ranks
 *
 * Plain C so that the C++ Gloo program links the same object.
 * Nothing here is thread safe; each program uses it from one thread.
 */
#ifndef STRATA_BENCH_AB_COMMON_H
#define STRATA_BENCH_AB_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { AB_FLOAT, AB_DOUBLE, AB_INT32, AB_INT64 } ab_dtype_t;
typedef enum { AB_SUM, AB_PROD, AB_MIN, AB_MAX } ab_op_t;

typedef struct ab_opts {
    size_t min_bytes;      /* -b, default 8 */
    size_t max_bytes;      /* -e, default 32M (nccl-tests' default) */
    size_t step_bytes;     /* -i, used when step_factor is 1 */
    double step_factor;    /* -f, default 2 */
    int iters;             /* -n, default 20 */
    int warmup;            /* -w, default 5 */
    int check;             /* -c, default 1: one checked call per size and placement */
    ab_dtype_t dtype;      /* -d float|double|int32|int64 */
    ab_op_t op;            /* -o sum|prod|min|max */
    int timeout_s;         /* -T, whole-run bound; the process exits when it passes */
    int nranks;            /* --np, self-launching programs only (0: not given) */
    const char *algo;      /* -A, programs with several algorithms (NULL: not given) */
    const char *store;     /* --store DIR: one rank started by a launcher (NULL: not given) */
    const char *iface;     /* --iface NAME: the interface ranks talk over (NULL: loopback) */
} ab_opts_t;

/* Which optional flags a program takes (--np, -A, --store and --iface). */
#define AB_OPT_NP       0x1
#define AB_OPT_ALGO     0x2
#define AB_OPT_LAUNCHED 0x4

/*
 * Parses argv into *o (defaults first). Prints usage with `extra_usage` and
 * returns -1 on a bad argument, 1 for -h, 0 otherwise.
 */
int ab_opts_parse(int argc, char **argv, unsigned accepted, const char *extra_usage,
                  ab_opts_t *o);

size_t ab_dtype_size(ab_dtype_t t);
const char *ab_dtype_name(ab_dtype_t t);
const char *ab_op_name(ab_op_t op);

/* The sweep: first size, then the next after `size`; 0 once past max_bytes. */
size_t ab_size_first(const ab_opts_t *o);
size_t ab_size_next(const ab_opts_t *o, size_t size);

/*
 * Check data: element i of rank r's input. Chosen so that the reduction of
 * up to 64 ranks is exact in every type (small integers), hence compared
 * with ==.
 */
void ab_fill(void *buf, size_t count, ab_dtype_t t, ab_op_t op, int rank);

/* Number of elements of `buf` that differ from the reduction over `nranks` inputs. */
size_t ab_check(const void *buf, size_t count, ab_dtype_t t, ab_op_t op, int nranks);

/* Header lines (rank 0 only): what ran, where, and the column titles. */
void ab_print_header(const ab_opts_t *o, const char *program, const char *system, int nranks);

/* One "#  Rank  r Pid p on host" line per rank, like nccl-tests' device list. */
void ab_print_rank(int rank, long pid, const char *host);

/* The column titles; call after the rank lines. */
void ab_print_titles(void);

/*
 * One row: size, count, type, redop, root -1, then out-of-place and
 * in-place time (us) / algbw / busbw / #wrong. `wrong` < 0 prints N/A.
 */
void ab_print_row(const ab_opts_t *o, size_t size, int nranks, double oop_us, long oop_wrong,
                  double ip_us, long ip_wrong);

/* The footer; returns the process exit status (0, or 1 if anything was wrong). */
int ab_print_footer(void);

/* Seconds since an arbitrary start, monotonic. */
double ab_now(void);

/* Aborts the process (exit 3) after o->timeout_s seconds, from a SIGALRM. */
void ab_arm_timeout(const ab_opts_t *o, const char *program);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_BENCH_AB_COMMON_H */

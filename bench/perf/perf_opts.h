/*
 * strata-perf's pure parts: its command line (nccl-tests' flags and names),
 * the size sweep, the per-size buffer geometry and the bus bandwidth factors.
 * No I/O except the messages written into a caller's buffer; no global state,
 * so every function may be called from any thread and from unit tests.
 *
 * Terms follow nccl-tests (its README's "Performance" section): P is the number of ranks; "size" is the number printed in the first
 * column, max(send bytes, receive bytes); "count" is the per-rank parameter
 * count (the count passed to the collective).
 */
#ifndef STB_PERF_OPTS_H
#define STB_PERF_OPTS_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "strata/status.h"
#include "strata/types.h"

/* nccl-tests' defaults (README "Arguments"; warmup is 1 since 2025-08, commit f2015cb). */
#define STB_PERF_DEFAULT_BYTES ((size_t)32 << 20)
#define STB_PERF_DEFAULT_STEP ((size_t)1 << 20)
#define STB_PERF_DEFAULT_ITERS 20
#define STB_PERF_DEFAULT_WARMUP 1
/* Rounds of the --model sweep; each algorithm's time is the median over rounds, which is
 * what docs/machines.md asks for on a shared, noisy machine. */
#define STB_PERF_DEFAULT_ROUNDS 3
/* Most sizes one sweep may have: 8 B .. 2^62 B doubling is 60. */
#define STB_PERF_MAX_SIZES 4096

/* -a: how the per-rank times become one (nccl-tests' values). */
typedef enum stb_perf_avg {
    STB_PERF_AVG_RANK0 = 0,
    STB_PERF_AVG_MEAN = 1,
    STB_PERF_AVG_MIN = 2,
    STB_PERF_AVG_MAX = 3,
} stb_perf_avg_t;

typedef struct stb_perf_opts {
    size_t min_bytes;           /* -b */
    size_t max_bytes;           /* -e */
    size_t step_bytes;          /* -i, used when step_factor <= 1 */
    size_t step_factor;         /* -f */
    int iters;                  /* -n */
    int warmup;                 /* -w, per size */
    int check;                  /* -c: check iterations per size and placement; 0: none */
    stb_perf_avg_t average;     /* -a */
    strata_dtype_t dtype;       /* -d */
    strata_op_t op;             /* -o */
    int root;                   /* -r */
    sta_coll_t coll;            /* --coll */
    int model;                  /* --model: forced-algorithm sweep and regret */
    int rounds;                 /* --rounds: --model rounds */
    int help;                   /* -h: the caller prints stb_perf_usage() */
} stb_perf_opts_t;

/* Geometry of one size of the sweep, in elements and bytes. */
typedef struct stb_perf_geom {
    size_t count;               /* per-rank parameter count, nccl-tests' "count" column */
    size_t send_bytes;          /* what each rank sends (its whole input) */
    size_t recv_bytes;          /* what each rank receives (its whole output) */
    size_t bytes;               /* max(send, recv): the "size" column and the model's n */
} stb_perf_geom_t;

/* Fills *opts with nccl-tests' defaults (float sum allreduce, 32 MiB, 20 iters). */
void stb_perf_opts_default(stb_perf_opts_t *opts);

/*
 * Parses argv[1..argc) into *opts (which it first sets to the defaults). Accepts nccl-tests'
 * short flags with the value attached or separate (-b8, -b 8), their long names
 * (--minbytes 8, --minbytes=8), sizes with K/M/G suffixes (binary), and strata's own
 * --coll, --model, --rounds. STRATA_ERR_INVALID with a one-line reason in err (may be NULL)
 * for anything unknown, malformed or inconsistent; *opts is then unspecified.
 */
strata_status_t stb_perf_opts_parse(int argc, char *const argv[], stb_perf_opts_t *opts,
                                    char *err, size_t errlen);

/* The usage text (static, never NULL). */
const char *stb_perf_usage(void);

/* nccl-tests' type names: float, double, half, bfloat16, int8, ... STRATA_ERR_INVALID if not. */
strata_status_t stb_perf_dtype_parse(const char *text, strata_dtype_t *dtype_p);
/* sum, prod, min, max, avg. */
strata_status_t stb_perf_op_parse(const char *text, strata_op_t *op_p);
/* allreduce, reduce_scatter, allgather, broadcast, reduce (also nccl-tests' all_reduce, ...). */
strata_status_t stb_perf_coll_parse(const char *text, sta_coll_t *coll_p);
/* "123", "64K", "4M", "1G" (binary multiples, either case). */
strata_status_t stb_perf_size_parse(const char *text, size_t *bytes_p);

/*
 * The sweep: min, then times step_factor (> 1) or plus step_bytes, while <= max. Writes at
 * most max_sizes values and returns how many the sweep has (which may be more).
 */
size_t stb_perf_sweep(const stb_perf_opts_t *opts, size_t *sizes, size_t max_sizes);

/*
 * The buffers of one size, as nccl-tests computes them: count = size / element size;
 * reduce_scatter sends and allgather receives (count / P) * P elements, of which each rank's
 * share (count / P) is the parameter count.
 */
stb_perf_geom_t stb_perf_geom(sta_coll_t coll, size_t size, size_t elem_size, int nranks);

/* busbw / algbw: allreduce 2(P-1)/P; reduce_scatter, allgather (P-1)/P; broadcast, reduce 1. */
double stb_perf_busbw_factor(sta_coll_t coll, int nranks);

/* "all_reduce_perf", "reduce_scatter_perf", ...: nccl-tests' name of the same test. */
const char *stb_perf_test_name(sta_coll_t coll);

/* Whether the collective takes an op / a root (nccl-tests prints "none" / -1 otherwise). */
int stb_perf_coll_has_op(sta_coll_t coll);
int stb_perf_coll_has_root(sta_coll_t coll);

#endif /* STB_PERF_OPTS_H */

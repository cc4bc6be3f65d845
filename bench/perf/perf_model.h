/*
 * strata-perf --model: for every size, every algorithm the selector may pick
 * (sta_algo_selectable: it applies and is implemented) is forced
 * in turn (stb_comm_force) and timed out of place; the rounds are interleaved
 * (round 1 of every algorithm, then round 2, ...) so that a slow phase of the
 * shared machine hits them alike, and each algorithm's time is the median of
 * its rounds. Next to each measured time is the model's prediction.
 *
 * The selection regret at a size is how much slower the algorithm the
 * selector picks ("auto") ran than the fastest forced algorithm:
 *   regret = t(auto's algorithm) / min over algorithms t(a) - 1   (>= 0).
 * Auto runs exactly the code of its algorithm forced (the table lookup is the
 * only difference), so its time is that algorithm's forced measurement, and
 * noise cannot make the regret negative.
 *
 * The sweep is collective; the summary and the printing are pure.
 */
#ifndef STB_PERF_MODEL_H
#define STB_PERF_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "bench/perf/perf_exec.h"

typedef struct stb_model_row {
    size_t bytes;                          /* the size column */
    sta_algo_t chosen;                     /* the selector's choice at init */
    double pred_us[STA_ALGO_COUNT];        /* < 0: not selectable here */
    double meas_us[STA_ALGO_COUNT];        /* < 0: not measured (not selectable) */
} stb_model_row_t;

typedef struct stb_model_summary {
    int nsizes;                            /* rows with at least one measurement */
    int best_hits;                         /* rows where auto's algorithm measured fastest */
    double mean_regret;                    /* fractions: 0.25 is 25 % */
    double median_regret;
    double max_regret;
    size_t max_regret_bytes;
    double time_regret;                    /* sum of auto's times / sum of the best - 1 */
    double model_err[STA_ALGO_COUNT];      /* median |pred - meas| / meas; < 0: none */
} stb_model_summary_t;

/*
 * Times every selectable algorithm at each size (rounds, warmup and iters from opts), fills
 * rows[0..n), and leaves the selection as it was at init. Collective.
 */
strata_status_t stb_model_sweep(stb_exec_t *x, const size_t *sizes, size_t n,
                                stb_model_row_t *rows);

/* Regret of one row (see above) and the fastest measured algorithm; -1 if nothing measured. */
double stb_model_regret(const stb_model_row_t *row, sta_algo_t *best_p);

/* Median of v[0..n) (sorts a copy; n <= 4096); 0 for n == 0. */
double stb_model_median(const double *v, size_t n);

void stb_model_summarise(const stb_model_row_t *rows, size_t n, stb_model_summary_t *sum);

/* The table and the summary lines, every line starting with "#". */
void stb_model_print(FILE *out, const stb_model_row_t *rows, size_t n, const char *what);

#endif /* STB_PERF_MODEL_H */

/*
 * Algorithm selection tables: built once at init from the cost model, read on
 * the data path with a size compare.
 *
 * For each collective the table is a short sorted array of ranges
 * {upper, algo}: algo is the cheapest applicable algorithm for every size
 * <= upper (and > the previous range's upper). The last range's upper is
 * SIZE_MAX. Boundaries are the exact crossings of the formulas, to the byte
 * (docs/algorithms.md, "Algorithm selection").
 *
 * Every rank must build its table from the same model and dims, or ranks would
 * pick different algorithms for one call.
 *
 * At init, the collective library does, in this order:
 *   sta_model_load(&model);                       defaults, STRATA_* variables, profile
 *   if STRATA_CALIBRATE: measure, sta_fit_alpha_beta() per tier, agree on the results
 *       across ranks, sta_model_apply_calibration(&model, &shm, &net);
 *   sta_rail_map_env_read(L, ndev, &map); dims.nrails = sta_rail_count(L, ndev, &map);
 *   sta_algo_env_read(&forced);
 *   sta_select_build(&model, &dims, forced, &table); sta_select_log(&table);
 * and on each call, sta_select_lookup(&table, coll, bytes).
 */
#ifndef STA_SELECT_H
#define STA_SELECT_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "strata/status.h"

/* Sizes the build evaluates: 0 and every power of two up to 2^40 (1 TiB, beyond any buffer
 * of these hosts); the winner at 2^40 keeps every larger size. The spec. */
#define STA_SELECT_MAX_LOG2 40

/* Range slots per collective. Linear formulas change winner at most STA_ALGO_COUNT - 1 times;
 * the chunked chains (broadcast, reduce) add a few more: 32 is ample headroom. */
#define STA_SELECT_MAX_RANGES 32

/* Two predictions within this relative distance are a tie, won by the lower-numbered
 * (simpler) algorithm: double rounding is ~1e-16 per operation, so equal formulas
 * (e.g. ring and recursive allgather at P = 2) never flip-flop. */
#define STA_SELECT_TIE_REL 1e-9

/* Predictions this close to the cheapest (relative) are a near tie: on a loaded host which of
 * them runs faster is decided by noise, and the selector weighs latency twice among them (see
 * sta_select_best): the least exposed to noise wins. 10 %: the regret target of the sweep's 95th
 * percentile (docs/benchmarks.md), so a near-tie pick costs at most what that target allows. */
#define STA_SELECT_NEAR_REL 0.10

/* A rate that makes any byte count cost nothing next to an α (1e300 GB/s: n/β < 1e-280 µs),
 * for an algorithm's latency, its cost with every β and γ infinite. */
#define STA_SELECT_RATE_INF 1e300

typedef struct sta_select_range {
    size_t upper;               /* inclusive upper bound of the range, bytes */
    sta_algo_t algo;
} sta_select_range_t;

typedef struct sta_select {
    sta_model_t model;          /* what the table was built from, for sta_select_log() */
    sta_dims_t dims;
    sta_algo_t forced;          /* STA_ALGO_AUTO, or STRATA_ALGO's algorithm */
    /* Per collective, why `forced` does not run it (a static sentence; the model's choice
     * does instead), NULL when it does or nothing is forced. */
    const char *fallback[STA_COLL_COUNT];
    int nranges[STA_COLL_COUNT];
    sta_select_range_t ranges[STA_COLL_COUNT][STA_SELECT_MAX_RANGES];
} sta_select_t;

/*
 * Reads STRATA_ALGO (auto|ring|recursive|hierarchical|leader, any case). OK, or
 * STRATA_ERR_INVALID for another value (logged with the accepted ones), *algo_p untouched.
 */
strata_status_t sta_algo_env_read(sta_algo_t *algo_p);

/*
 * Builds every collective's table. forced = STA_ALGO_AUTO lets the model choose; any other
 * algorithm is used for every size of each collective it applies to, and where it does not
 * (sta_algo_unfit, or the model has no time for it) the model's choice is used instead and
 * table->fallback says why (one INFO line per such collective;
 * the collective library warns when such a collective first runs, coll/coll.c).
 * STRATA_ERR_INVALID for a bad model or dims; on error *table is untouched.
 * Pure computation (about 10^4 cost evaluations), no allocation; thread-safe.
 */
strata_status_t sta_select_build(const sta_model_t *model, const sta_dims_t *dims,
                                 sta_algo_t forced, sta_select_t *table);

/*
 * What the build picks at one size, computed directly: among the selectable algorithms whose
 * sta_cost_us() at `bytes` is within STA_SELECT_NEAR_REL of the lowest, the one with the
 * lowest cost + latency (latency: its cost with every β and γ infinite, the α, ω and
 * per-round terms, where a scheduler's noise lands); a tie within STA_SELECT_TIE_REL goes to
 * the cheaper, then to the lower-numbered algorithm. Its time in *us_p when us_p is not NULL (STA_COST_NA when none applies, and then the return is
 * STA_ALGO_COUNT). The tables are made of these choices; planners that cost one size call it
 * instead of building a table. Pure; thread-safe.
 */
sta_algo_t sta_select_best(const sta_model_t *model, const sta_dims_t *dims, sta_coll_t coll,
                           size_t bytes, double *us_p);

/*
 * The algorithm for `bytes` of `coll`: a binary search over a handful of sizes; no floating
 * point, no allocation. `table` must have been built; coll must be in range.
 */
sta_algo_t sta_select_lookup(const sta_select_t *table, sta_coll_t coll, size_t bytes);

/* Logs, at INFO, the model (values, sources, n*) and each collective's ranges with the
 * predicted µs at each boundary. */
void sta_select_log(const sta_select_t *table);

#endif /* STA_SELECT_H */

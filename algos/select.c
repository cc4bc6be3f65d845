/*
 * Selection tables from the cost model.
 *
 * best(n) = the applicable algorithm with the lowest sta_cost_us() at n bytes,
 * a tie (STA_SELECT_TIE_REL) going to the lower-numbered algorithm; among those within
 * STA_SELECT_NEAR_REL of it (a near tie, decided by noise on a loaded host), the one
 * whose cost with its latency counted twice (α, ω and rounds as a noisy host inflates
 * them) is the lowest: fewer and cheaper waits give a scheduler's tick fewer places to land. The sweep
 * evaluates best() at 0 and at 2^0 .. 2^40; wherever it changes between two
 * evaluated sizes, bisection on "best(x) is still the current algorithm" finds
 * adjacent bytes lo, lo+1 with best(lo) = current != best(lo+1): lo closes the
 * range. The sweep then continues from lo+1, so a third algorithm inside the
 * same octave is found too.
 *
 * Exactness: every formula except the chunked chains (ring broadcast and
 * reduce) is linear in n, and the lower envelope of lines gives each algorithm
 * one interval, so these tables are exact. On host shared memory with a cache tier the
 * formulas bend where the working set reaches the cache (cost_model.c, shm_beta) and are
 * linear on each side: the sweep evaluates that size too. The chains are staircases in n
 * above one chunk; near a crossing with a line they may cross it several times
 * within one chunk-sized step, and the sweep keeps one of those crossings (a
 * true one, to the byte), not all of them. The near-tie band's edges, where
 * c_a = (1 + STA_SELECT_NEAR_REL)·c_b, are crossings of lines too, and a
 * latency is constant in n outside the chunked formulas.
 */
#include "algos/select.h"

#include <stdint.h>
#include <string.h>

#include "algos/profile.h"
#include "util/log.h"
#include "util/param.h"

/* An algorithm's latency: its cost with bytes free (every β and γ at STA_SELECT_RATE_INF). */
static double select_latency_us(const sta_model_t *model, const sta_dims_t *dims,
                                sta_coll_t coll, sta_algo_t algo, size_t bytes)
{
    sta_model_t lat = *model;
    lat.shm.beta_gbps = lat.net.beta_gbps = lat.gamma_gbps = STA_SELECT_RATE_INF;
    lat.cache.beta_gbps = STA_SELECT_RATE_INF;
    return sta_cost_us(&lat, dims, coll, algo, bytes);
}

sta_algo_t sta_select_best(const sta_model_t *model, const sta_dims_t *dims, sta_coll_t coll,
                           size_t bytes, double *us_p)
{
    double us[STA_ALGO_COUNT];
    sta_algo_t best = STA_ALGO_COUNT;
    double best_us = STA_COST_NA;

    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        us[a] = STA_COST_NA;
        if (!sta_algo_selectable(dims, coll, (sta_algo_t)a))
            continue;
        us[a] = sta_cost_us(model, dims, coll, (sta_algo_t)a, bytes);
        if (us[a] < 0.0)
            continue;
        if (best == STA_ALGO_COUNT || us[a] < best_us - STA_SELECT_TIE_REL * best_us) {
            best = (sta_algo_t)a;
            best_us = us[a];
        }
    }
    /* Near ties: the least cost with its latency counted twice wins (ties: the cheaper, then
     * the lower-numbered; best is the first candidate). */
    if (best != STA_ALGO_COUNT) {
        double limit = best_us * (1.0 + STA_SELECT_NEAR_REL);
        double pick_score = best_us + select_latency_us(model, dims, coll, best, bytes);
        sta_algo_t pick = best;
        for (int a = 0; a < STA_ALGO_COUNT; a++) {
            if (a == (int)best || us[a] < 0.0 || us[a] > limit)
                continue;
            double score = us[a] + select_latency_us(model, dims, coll, (sta_algo_t)a, bytes);
            if (score < pick_score - STA_SELECT_TIE_REL * pick_score ||
                (score <= pick_score + STA_SELECT_TIE_REL * pick_score && us[a] < us[pick])) {
                pick = (sta_algo_t)a;
                pick_score = score;
            }
        }
        best = pick;
        best_us = us[pick];
    }
    if (us_p != NULL)
        *us_p = best_us;
    return best;
}

static sta_algo_t select_best(const sta_model_t *model, const sta_dims_t *dims, sta_coll_t coll,
                              size_t bytes)
{
    return sta_select_best(model, dims, coll, bytes, NULL);
}

/*
 * Why a forced algorithm cannot take coll's whole table (a static sentence), or NULL:
 * it does not apply to these dims, or the model has no time for it (leader off host shm).
 */
static const char *select_unfit(const sta_model_t *model, const sta_dims_t *dims,
                                sta_coll_t coll, sta_algo_t forced)
{
    const char *why = sta_algo_unfit(dims, coll, forced);

    if (why == NULL && sta_cost_us(model, dims, coll, forced, 0) < 0.0)
        why = "the cost model has no time for it on this intra-node kind";
    return why;
}

/*
 * The size at which the shm tier's working set 2·S·n reaches the cache (sta_cache_t): the
 * formulas bend there (linear on each side), so the sweep evaluates it too. 0: no bend.
 */
static size_t select_cache_knee(const sta_model_t *model, const sta_dims_t *dims)
{
    double S = dims->local_size > dims->host_ranks ? dims->local_size : dims->host_ranks;

    if (model->intra != STA_INTRA_SHM || !(model->cache.bytes > 0.0) || S < 1)
        return 0;
    double n = model->cache.bytes / (2.0 * S);
    return n >= 1.0 && n < (double)((size_t)1 << STA_SELECT_MAX_LOG2) ? (size_t)n : 0;
}

/* Fills one collective's ranges; STRATA_ERR_INTERNAL if they do not fit. */
static strata_status_t select_sweep(const sta_model_t *model, const sta_dims_t *dims,
                                    sta_coll_t coll, sta_select_range_t *ranges, int *nranges_p)
{
    sta_algo_t cur = select_best(model, dims, coll, 0);
    size_t pos = 0, knee = select_cache_knee(model, dims);
    int nr = 0;

    for (int e = 0; e <= STA_SELECT_MAX_LOG2; e++) {
        size_t s = (size_t)1 << e;
        if (knee > pos && knee < s) {   /* the bend first, then this power of two */
            s = knee;
            knee = 0;
            e--;
        }
        while (select_best(model, dims, coll, s) != cur) {
            size_t lo = pos, hi = s;
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (select_best(model, dims, coll, mid) == cur)
                    lo = mid;
                else
                    hi = mid;
            }
            if (nr == STA_SELECT_MAX_RANGES - 1) {
                STU_WARN("select: %s changes algorithm more than %d times; the model is "
                         "degenerate", sta_coll_name(coll), STA_SELECT_MAX_RANGES - 1);
                return STRATA_ERR_INTERNAL;
            }
            ranges[nr].upper = lo;
            ranges[nr].algo = cur;
            nr++;
            cur = select_best(model, dims, coll, hi);
            pos = hi;
        }
        pos = s;
    }
    ranges[nr].upper = SIZE_MAX;
    ranges[nr].algo = cur;
    *nranges_p = nr + 1;
    return STRATA_OK;
}

strata_status_t sta_algo_env_read(sta_algo_t *algo_p)
{
    const char *text = stu_param_str(STU_PARAM_ALGO);

    if (sta_algo_parse(text, algo_p) != STRATA_OK) {
        STU_WARN("STRATA_ALGO='%s' is not one of auto, ring, recursive, hierarchical, leader",
                 text);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

strata_status_t sta_select_build(const sta_model_t *model, const sta_dims_t *dims,
                                 sta_algo_t forced, sta_select_t *table)
{
    static sta_select_t zero;
    strata_status_t status;
    sta_select_t tmp = zero;

    if (sta_model_check(model) != STRATA_OK) {
        STU_WARN("select: invalid model (every alpha must be >= 0, every beta and gamma > 0)");
        return STRATA_ERR_INVALID;
    }
    if (sta_dims_check(dims) != STRATA_OK) {
        STU_WARN("select: invalid dims P=%d N=%d L=%d rails=%d (need P = N*L, 1 <= rails <= L)",
                 dims->nranks, dims->nnodes, dims->local_size, dims->nrails);
        return STRATA_ERR_INVALID;
    }
    if (forced != STA_ALGO_AUTO && ((int)forced < 0 || forced >= STA_ALGO_COUNT)) {
        STU_WARN("select: forced algorithm %d is out of range", (int)forced);
        return STRATA_ERR_INVALID;
    }
    tmp.model = *model;
    tmp.dims = *dims;
    tmp.forced = forced;
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        const char *unfit = forced != STA_ALGO_AUTO
                                ? select_unfit(model, dims, (sta_coll_t)c, forced)
                                : NULL;
        tmp.fallback[c] = unfit;
        if (forced != STA_ALGO_AUTO && unfit == NULL) {
            tmp.ranges[c][0].upper = SIZE_MAX;
            tmp.ranges[c][0].algo = forced;
            tmp.nranges[c] = 1;
            continue;
        }
        if (unfit != NULL)   /* the collective library warns when the collective first runs */
            STU_INFO(STU_LOG_TUNING, "select: STRATA_ALGO=%s does not apply to %s with P=%d "
                     "(%s); using the model's choice", sta_algo_name(forced),
                     sta_coll_name((sta_coll_t)c), dims->nranks, unfit);
        status = select_sweep(model, dims, (sta_coll_t)c, tmp.ranges[c], &tmp.nranges[c]);
        if (status != STRATA_OK)
            return status;
    }
    *table = tmp;
    return STRATA_OK;
}

sta_algo_t sta_select_lookup(const sta_select_t *table, sta_coll_t coll, size_t bytes)
{
    const sta_select_range_t *r = table->ranges[coll];
    int lo = 0, hi = table->nranges[coll] - 1;

    /* The first range whose upper bound is >= bytes; the last one's is SIZE_MAX. */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (r[mid].upper < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    return r[lo].algo;
}

void sta_select_log(const sta_select_t *table)
{
    const sta_dims_t *d = &table->dims;

    if (stu_log_level < STU_LOG_INFO)
        return;
    sta_model_log(&table->model);
    STU_INFO(STU_LOG_TUNING, "select: P=%d N=%d L=%d rails=%d, ranks %s, %d rank(s) on a host "
             "of %d core(s), STRATA_ALGO=%s", d->nranks, d->nnodes, d->local_size, d->nrails,
             d->contiguous ? "contiguous per node" : "interleaved", d->host_ranks, d->host_cores,
             sta_algo_name(table->forced));
    if (d->net_msg_min > 0)
        STU_INFO(STU_LOG_TUNING, "select: the two-tier pipeline cuts no ring message of "
                 "%zu..%zu B (the transport stripes from %zu B, and the hosts' cores bound the "
                 "net)", d->net_msg_min / 2, d->net_msg_min - 1, d->net_msg_min);
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        size_t first = 0;
        for (int i = 0; i < table->nranges[c]; i++) {
            const sta_select_range_t *r = &table->ranges[c][i];
            double t_first = sta_cost_us(&table->model, d, (sta_coll_t)c, r->algo, first);
            if (r->upper == SIZE_MAX) {
                STU_INFO(STU_LOG_TUNING, "select %s: %zu B and up -> %s (%.1f us at %zu B)",
                         sta_coll_name((sta_coll_t)c), first, sta_algo_name(r->algo), t_first,
                         first);
                break;
            }
            STU_INFO(STU_LOG_TUNING, "select %s: %zu..%zu B -> %s (%.1f us at %zu B, "
                     "%.1f us at %zu B)", sta_coll_name((sta_coll_t)c), first, r->upper,
                     sta_algo_name(r->algo), t_first, first,
                     sta_cost_us(&table->model, d, (sta_coll_t)c, r->algo, r->upper),
                     r->upper);
            first = r->upper + 1;
        }
    }
}

/* strata-perf --model: forced-algorithm sweep, regret, report (see perf_model.h). */
#include "bench/perf/perf_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/introspect.h"
#include "bench/perf/perf_fmt.h"

/* Most rounds a median is taken over (opts->rounds is clamped to it). */
#define MODEL_MAX_ROUNDS 64

static int model_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stb_model_median(const double *v, size_t n)
{
    double tmp[STB_PERF_MAX_SIZES];
    if (n == 0)
        return 0;
    if (n > STB_PERF_MAX_SIZES)
        n = STB_PERF_MAX_SIZES;
    memcpy(tmp, v, n * sizeof(double));
    qsort(tmp, n, sizeof(double), model_cmp);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* Times every applicable algorithm at one size, interleaving the rounds. */
static strata_status_t model_size(stb_exec_t *x, const sta_dims_t *dims, size_t size,
                                  stb_model_row_t *row)
{
    const stb_perf_opts_t *o = x->opts;
    const int rounds = o->rounds < MODEL_MAX_ROUNDS ? o->rounds : MODEL_MAX_ROUNDS;
    double t[STA_ALGO_COUNT][MODEL_MAX_ROUNDS];
    stb_perf_geom_t g = stb_perf_geom(o->coll, size, x->esz, x->nranks);
    strata_status_t status = STRATA_OK;

    row->bytes = g.bytes;
    row->chosen = stb_comm_algo(x->comm, o->coll, g.bytes);
    /* only what the selector may pick: an algorithm that cannot run here (a two-tier one on
     * nodes of unequal size) would run the fallback when forced, under the wrong name */
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        row->pred_us[a] = sta_algo_selectable(dims, o->coll, (sta_algo_t)a)
                              ? stb_comm_predict_us(x->comm, o->coll, (sta_algo_t)a, g.bytes)
                              : -1;
        row->meas_us[a] = -1;
    }
    for (int r = 0; r < rounds && status == STRATA_OK; r++)
        for (int a = 0; a < STA_ALGO_COUNT && status == STRATA_OK; a++) {
            if (!sta_algo_selectable(dims, o->coll, (sta_algo_t)a))
                continue;
            status = stb_comm_force(x->comm, (sta_algo_t)a);
            if (status == STRATA_OK)
                status = stb_exec_time(x, &g, 0, o->warmup, o->iters, &t[a][r]);
        }
    for (int a = 0; a < STA_ALGO_COUNT && status == STRATA_OK; a++)
        if (sta_algo_selectable(dims, o->coll, (sta_algo_t)a))
            row->meas_us[a] = stb_model_median(t[a], (size_t)rounds);
    return status;
}

strata_status_t stb_model_sweep(stb_exec_t *x, const size_t *sizes, size_t n,
                                stb_model_row_t *rows)
{
    const sta_algo_t initial = stb_comm_forced(x->comm);
    strata_status_t status = STRATA_OK;
    sta_dims_t dims;

    stb_comm_model(x->comm, NULL, &dims);
    for (size_t i = 0; i < n && status == STRATA_OK; i++) {
        /* the row's "chosen" is read from the table as init built it */
        status = stb_comm_force(x->comm, initial);
        if (status == STRATA_OK)
            status = model_size(x, &dims, sizes[i], &rows[i]);
    }
    strata_status_t restore = stb_comm_force(x->comm, initial);
    return status != STRATA_OK ? status : restore;
}

double stb_model_regret(const stb_model_row_t *row, sta_algo_t *best_p)
{
    int best = -1;
    for (int a = 0; a < STA_ALGO_COUNT; a++)
        if (row->meas_us[a] >= 0 && (best < 0 || row->meas_us[a] < row->meas_us[best]))
            best = a;
    if (best_p != NULL)
        *best_p = (sta_algo_t)best;
    if (best < 0 || (unsigned)row->chosen >= STA_ALGO_COUNT || row->meas_us[row->chosen] < 0)
        return -1;
    if (row->meas_us[best] <= 0)
        return 0;
    return row->meas_us[row->chosen] / row->meas_us[best] - 1;
}

void stb_model_summarise(const stb_model_row_t *rows, size_t n, stb_model_summary_t *sum)
{
    double regrets[STB_PERF_MAX_SIZES], errs[STB_PERF_MAX_SIZES];
    double auto_total = 0, best_total = 0;
    size_t k = 0;

    memset(sum, 0, sizeof(*sum));
    for (size_t i = 0; i < n && k < STB_PERF_MAX_SIZES; i++) {
        sta_algo_t best;
        double r = stb_model_regret(&rows[i], &best);
        if (r < 0)
            continue;
        regrets[k++] = r;
        sum->best_hits += best == rows[i].chosen || r == 0;
        sum->mean_regret += r;
        if (r > sum->max_regret || k == 1) {
            sum->max_regret = r;
            sum->max_regret_bytes = rows[i].bytes;
        }
        auto_total += rows[i].meas_us[rows[i].chosen];
        best_total += rows[i].meas_us[best];
    }
    sum->nsizes = (int)k;
    if (k > 0) {
        sum->mean_regret /= (double)k;
        sum->median_regret = stb_model_median(regrets, k);
    }
    sum->time_regret = best_total > 0 ? auto_total / best_total - 1 : 0;
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        size_t m = 0;
        for (size_t i = 0; i < n && m < STB_PERF_MAX_SIZES; i++)
            if (rows[i].meas_us[a] > 0 && rows[i].pred_us[a] >= 0)
                errs[m++] = fabs(rows[i].pred_us[a] - rows[i].meas_us[a]) / rows[i].meas_us[a];
        sum->model_err[a] = m > 0 ? stb_model_median(errs, m) : -1;
    }
}

/* A time in 9 columns, or "-" where there is none. */
static void model_us_str(double us, char *buf, size_t len)
{
    if (us < 0)
        snprintf(buf, len, "%9s", "-");
    else
        stb_perf_float_str(us, 9, buf, len);
}

void stb_model_print(FILE *out, const stb_model_row_t *rows, size_t n, const char *what)
{
    stb_model_summary_t sum;
    char line[512];
    int at;

    fprintf(out, "#\n# Model vs measurement: %s\n", what);
    at = snprintf(line, sizeof(line), "# %10s  %12s", "size", "auto");
    for (int a = 0; a < STA_ALGO_COUNT; a++)
        at += snprintf(line + at, sizeof(line) - (size_t)at, "  %19s",
                       sta_algo_name((sta_algo_t)a));
    fprintf(out, "%s  %12s  %7s\n", line, "fastest", "regret");
    at = snprintf(line, sizeof(line), "# %10s  %12s", "(B)", "");
    for (int a = 0; a < STA_ALGO_COUNT; a++)
        at += snprintf(line + at, sizeof(line) - (size_t)at, "  %9s %9s", "model(us)",
                       "meas(us)");
    fprintf(out, "%s  %12s  %7s\n", line, "(measured)", "(%)");
    for (size_t i = 0; i < n; i++) {
        const stb_model_row_t *r = &rows[i];
        sta_algo_t best;
        double regret = stb_model_regret(r, &best);
        at = snprintf(line, sizeof(line), "# %10zu  %12s", r->bytes, sta_algo_name(r->chosen));
        for (int a = 0; a < STA_ALGO_COUNT; a++) {
            char p[32], m[32];
            model_us_str(r->pred_us[a], p, sizeof(p));
            model_us_str(r->meas_us[a], m, sizeof(m));
            at += snprintf(line + at, sizeof(line) - (size_t)at, "  %s %s", p, m);
        }
        if (regret < 0)
            fprintf(out, "%s  %12s  %7s\n", line, "-", "-");
        else
            fprintf(out, "%s  %12s  %7.1f\n", line, sta_algo_name(best), regret * 100);
    }
    stb_model_summarise(rows, n, &sum);
    fprintf(out, "# Selection regret (auto's algorithm vs the fastest forced, measured): "
            "mean %.1f %%, median %.1f %%, max %.1f %% at %zu B; over the sweep's total time "
            "%.1f %%\n", sum.mean_regret * 100, sum.median_regret * 100, sum.max_regret * 100,
            sum.max_regret_bytes, sum.time_regret * 100);
    fprintf(out, "# Auto chose the measured fastest at %d of %d sizes\n", sum.best_hits,
            sum.nsizes);
    at = snprintf(line, sizeof(line), "# Model error, median |model - measured| / measured:");
    for (int a = 0; a < STA_ALGO_COUNT; a++)
        if (sum.model_err[a] >= 0)
            at += snprintf(line + at, sizeof(line) - (size_t)at, " %s %.0f %%",
                           sta_algo_name((sta_algo_t)a), sum.model_err[a] * 100);
    fprintf(out, "%s\n", line);
}

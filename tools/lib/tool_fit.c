/*
 * Weighted least-squares alpha-beta fit (see bench_fit.h for the model).
 *
 * With a = alpha, b = 1/beta and weights w_i = 1/t_i^2 the problem is ordinary
 * weighted linear regression of t on n. It is solved in centred form
 * (weighted means first, then deviations from them) rather than through the
 * raw normal equations: sizes span seven decades, and sum(w n^2) * sum(w) -
 * sum(w n)^2 would cancel most of its digits.
 */
#include "tools/lib/tool_fit.h"

#include <math.h>

/* us per byte -> GB/s: 1 byte/us is 10^6 B/s, i.e. 10^-3 GB/s. */
#define FIT_GBS_PER_BYTE_PER_US 1e-3

static int fit_inputs_valid(const double *sizes, const double *times_us, size_t npoints)
{
    int distinct = 0;

    if (sizes == NULL || times_us == NULL || npoints < 2)
        return 0;
    for (size_t i = 0; i < npoints; i++) {
        if (!(times_us[i] > 0.0) || !isfinite(times_us[i]) || !(sizes[i] >= 0.0) ||
            !isfinite(sizes[i]))
            return 0;
        if (sizes[i] != sizes[0])
            distinct = 1;
    }
    return distinct;
}

strata_status_t stb_fit_alpha_beta(const double *sizes, const double *times_us, size_t npoints,
                                   stb_fit_t *fit_p)
{
    double sw = 0.0, swn = 0.0, swt = 0.0;
    double snn = 0.0, snt = 0.0, sq = 0.0;
    stb_fit_t fit = {0};

    if (fit_p == NULL || !fit_inputs_valid(sizes, times_us, npoints))
        return STRATA_ERR_INVALID;

    for (size_t i = 0; i < npoints; i++) {
        double w = 1.0 / (times_us[i] * times_us[i]);
        sw += w;
        swn += w * sizes[i];
        swt += w * times_us[i];
    }
    double nmean = swn / sw;
    double tmean = swt / sw;
    for (size_t i = 0; i < npoints; i++) {
        double w = 1.0 / (times_us[i] * times_us[i]);
        double dn = sizes[i] - nmean;
        snn += w * dn * dn;
        snt += w * dn * (times_us[i] - tmean);
    }
    if (!(snn > 0.0))
        return STRATA_ERR_INVALID;

    fit.inv_beta_us_b = snt / snn;
    fit.alpha_us = tmean - fit.inv_beta_us_b * nmean;
    if (fit.inv_beta_us_b > 0.0) {
        fit.beta_gbs = FIT_GBS_PER_BYTE_PER_US / fit.inv_beta_us_b;
        if (fit.alpha_us > 0.0)
            fit.nstar_bytes = fit.alpha_us / fit.inv_beta_us_b;
    }
    for (size_t i = 0; i < npoints; i++) {
        double rel = (stb_fit_eval(&fit, sizes[i]) - times_us[i]) / times_us[i];
        sq += rel * rel;
    }
    fit.rms_rel_err = sqrt(sq / (double)npoints);
    fit.npoints = npoints;
    *fit_p = fit;
    return STRATA_OK;
}

double stb_fit_eval(const stb_fit_t *fit, double n)
{
    return fit->alpha_us + n * fit->inv_beta_us_b;
}

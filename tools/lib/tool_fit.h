/*
 * The alpha-beta latency model fitted to measured one-way latencies:
 *
 *     t(n) = alpha + n / beta
 *
 * alpha is the fixed cost of a message (us), beta the asymptotic bandwidth
 * (GB/s, 10^9 B/s), and n* = alpha * beta the size (bytes) at which the two
 * terms are equal: below n* a message costs mostly latency, above it mostly
 * bandwidth.
 *
 * The fit is weighted least squares on relative error: it minimises
 * sum(((alpha + n_i / beta - t_i) / t_i)^2), which is linear in (alpha, 1/beta)
 * with weights 1 / t_i^2. Plain least squares would let the largest sizes
 * (milliseconds) drown the smallest (microseconds) and give a meaningless
 * alpha; the relative form lets every size count the same.
 *
 * Pure computation: no allocation, no I/O, thread-safe. Self-contained (only
 * the C library and strata/status.h) so a unit test can include the .c file.
 */
#ifndef STB_FIT_H
#define STB_FIT_H

#include <stddef.h>

#include "strata/status.h"

typedef struct stb_fit {
    double alpha_us;        /* fixed cost per message, us (may come out <= 0 on bad data) */
    double inv_beta_us_b;   /* 1/beta in us per byte; <= 0 means no bandwidth term */
    double beta_gbs;        /* 10^9 B/s; 0 when inv_beta_us_b <= 0 */
    double nstar_bytes;     /* alpha * beta; 0 when beta is 0 or alpha <= 0 */
    double rms_rel_err;     /* root mean square of (model - t) / t over the points */
    size_t npoints;
} stb_fit_t;

/*
 * Fits the model to npoints pairs (sizes[i] bytes, times_us[i] microseconds).
 * Needs at least two distinct sizes and every time > 0; returns
 * STRATA_ERR_INVALID otherwise, leaving *fit_p untouched. On STRATA_OK the fit
 * is the exact minimiser, even when it is unphysical (alpha < 0 or beta <= 0):
 * the caller decides how to print that.
 */
strata_status_t stb_fit_alpha_beta(const double *sizes, const double *times_us, size_t npoints,
                                   stb_fit_t *fit_p);

/* Model time in us for a message of n bytes. */
double stb_fit_eval(const stb_fit_t *fit, double n);

#endif /* STB_FIT_H */

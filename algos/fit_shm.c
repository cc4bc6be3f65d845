/*
 * The shm tier and its cache fitted to one-node broadcasts (algos/profile.h,
 * sta_fit_shm_cache). A broadcast through the node's segment is one shm phase in the model,
 * t(n) = α_s + n/β(n), where β(n) blends the cache's rate and the tier's (sta_cost_shm_beta_gbps):
 * the share of the working set 2·S·n that C bytes hold runs at β_llc, the rest at β_s. The fit
 * goes through that same function, so what it finds is what the model will charge.
 */
#include "algos/profile.h"

#include <math.h>

#include "util/compiler.h"

#define FIT_RATE_MIN_BYTES 4096         /* smaller sizes are α's: they say nothing of a rate */
#define FIT_GBPS_LO 0.1                 /* the rates searched, GB/s */
#define FIT_GBPS_HI 1000.0
#define FIT_GOLDEN_STEPS 40             /* golden-section steps: the interval shrinks 0.618x each */
#define FIT_C_LO (32.0 * 1024)          /* the cache sizes tried: 32 KiB x sqrt(2)^k */
#define FIT_C_STEPS 24                  /* ... up to 128 MiB */
#define FIT_KNEE_FASTER 1.1             /* a cache tier: β_llc at least this x β_s ... */
#define FIT_KNEE_GAIN 0.9               /* ... and its error under this x the best so far */

typedef struct fit_in {
    const size_t *bytes;
    const double *us;
    int n;
    int ranks;
    double alpha;
} fit_in_t;

/* The model's one-phase time of bytes under (shm, cache) on `ranks` ranks of one host. */
static double phase_us(const fit_in_t *in, const sta_tier_t *shm, const sta_cache_t *cache,
                       size_t bytes)
{
    sta_model_t m;
    sta_dims_t d = {.nranks = in->ranks, .nnodes = 1, .local_size = in->ranks, .nrails = 1,
                    .contiguous = 1, .host_ranks = in->ranks};

    sta_model_default(&m);
    m.shm = *shm;
    m.cache = *cache;
    double beta = sta_cost_shm_beta_gbps(&m, &d, bytes);
    return shm->alpha_us + (double)bytes / (beta * STA_BYTES_PER_US_PER_GBPS);
}

/* 1 where size i's working set fits C (it speaks of β_llc), 0 where it spills (β_s too). */
static int fits(const fit_in_t *in, int i, double c)
{
    return 2.0 * in->ranks * (double)in->bytes[i] <= c;
}

/* The squared log errors of the sizes with rates that `cached` selects (1: those that fit,
 * 0: those that spill). */
static double fit_error(const fit_in_t *in, double beta_llc, double beta_s, double c, int cached)
{
    sta_tier_t shm = {.alpha_us = in->alpha, .beta_gbps = beta_s};
    sta_cache_t cache = {.beta_gbps = beta_llc, .bytes = c};
    double e = 0.0;

    for (int i = 0; i < in->n; i++) {
        if (in->bytes[i] < FIT_RATE_MIN_BYTES || fits(in, i, c) != cached)
            continue;
        double r = log(phase_us(in, &shm, &cache, in->bytes[i]) / in->us[i]);
        e += r * r;
    }
    return e;
}

/* The rate in [FIT_GBPS_LO, FIT_GBPS_HI] (log scale) minimising fit_error over one of
 * β_llc (which = 0) or β_s (which = 1), the other held. */
static double golden_rate(const fit_in_t *in, double other, double c, int which)
{
    const double g = (sqrt(5.0) - 1.0) / 2.0;
    double lo = log(FIT_GBPS_LO), hi = log(FIT_GBPS_HI);

    for (int k = 0; k < FIT_GOLDEN_STEPS; k++) {
        double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
        double ea = which == 0 ? fit_error(in, exp(a), other, c, 1)
                               : fit_error(in, other, exp(a), c, 0);
        double eb = which == 0 ? fit_error(in, exp(b), other, c, 1)
                               : fit_error(in, other, exp(b), c, 0);
        if (ea < eb)
            hi = b;
        else
            lo = a;
    }
    return exp((lo + hi) / 2.0);
}

/* Counts the rate-bearing sizes that fit C (*cached) and that spill (*spilled). */
static void count_sizes(const fit_in_t *in, double c, int *cached, int *spilled)
{
    *cached = *spilled = 0;
    for (int i = 0; i < in->n; i++) {
        if (in->bytes[i] < FIT_RATE_MIN_BYTES)
            continue;
        if (fits(in, i, c))
            (*cached)++;
        else
            (*spilled)++;
    }
}

/*
 * No knee first: one rate for every size (C = 0, so every size "spills"), reported as a
 * cache no faster than β_s up to the largest working set measured. Then each C with sizes on
 * both sides: β_llc from those that fit, then β_s from those that spill, kept only where the
 * cache is 10 % faster and the error falls by a tenth (else it is no cache, or noise). 0 when
 * there is no size to fit a rate to.
 */
static int fit_rates(const fit_in_t *in, sta_tier_t *shm, sta_cache_t *cache)
{
    double c = FIT_C_LO, largest = 0.0;
    int cached, spilled;

    count_sizes(in, 0.0, &cached, &spilled);
    if (spilled == 0)
        return 0;
    for (int i = 0; i < in->n; i++)
        largest = STU_MAX(largest, 2.0 * in->ranks * (double)in->bytes[i]);
    double flat = golden_rate(in, 1.0, 0.0, 1);
    double best = fit_error(in, 1.0, flat, 0.0, 0);
    shm->beta_gbps = flat;
    cache->beta_gbps = flat;
    cache->bytes = largest;
    for (int k = 0; k <= FIT_C_STEPS; k++, c *= sqrt(2.0)) {
        count_sizes(in, c, &cached, &spilled);
        if (cached == 0 || spilled == 0)
            continue;
        /* β_s does not enter the sizes that fit: any value serves for the first search */
        double llc = golden_rate(in, 1.0, c, 0);
        double s = golden_rate(in, llc, c, 1);
        double e = fit_error(in, llc, s, c, 1) + fit_error(in, llc, s, c, 0);
        if (llc >= FIT_KNEE_FASTER * s && e < FIT_KNEE_GAIN * best) {
            best = e;
            shm->beta_gbps = s;
            cache->beta_gbps = llc;
            cache->bytes = c;
        }
    }
    return 1;
}

strata_status_t sta_fit_shm_cache(const size_t *bytes, const double *us, int n, int ranks,
                                  sta_tier_t *shm_out, sta_cache_t *cache_out)
{
    fit_in_t in = {.bytes = bytes, .us = us, .n = n, .ranks = ranks};
    sta_tier_t shm;
    sta_cache_t cache;
    int smallest = 0;

    if (bytes == NULL || us == NULL || shm_out == NULL || cache_out == NULL || n < 3 ||
        ranks < 2)
        return STRATA_ERR_INVALID;
    for (int i = 0; i < n; i++) {
        if (!isfinite(us[i]) || us[i] <= 0.0 || bytes[i] == 0)
            return STRATA_ERR_INVALID;
        if (bytes[i] < bytes[smallest])
            smallest = i;
    }
    if (bytes[smallest] >= FIT_RATE_MIN_BYTES)
        return STRATA_ERR_INVALID;              /* no size that is mostly α */
    /* α from the smallest size, then less that size's bytes at the fitted rate (twice: the
     * second pass fits the rates with the corrected α) */
    in.alpha = us[smallest];
    for (int pass = 0; pass < 2; pass++) {
        if (!fit_rates(&in, &shm, &cache))
            return STRATA_ERR_INVALID;          /* no knee the sizes can place */
        shm.alpha_us = in.alpha;
        double bytes_us = phase_us(&in, &shm, &cache, bytes[smallest]) - in.alpha;
        in.alpha = STU_MAX(0.0, us[smallest] - bytes_us);
    }
    shm.alpha_us = in.alpha;
    *shm_out = shm;
    *cache_out = cache;
    return STRATA_OK;
}

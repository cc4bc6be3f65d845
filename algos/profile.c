/*
 * The cost model's parameters: defaults, the profile file, STRATA_* variables,
 * calibration, and the α-β fit calibration uses. Precedence and file format
 * are in algos/profile.h and docs/algorithms.md.
 *
 * Fit: t_i ≈ α + b_i·x with x = 1/(β·1e3) µs per byte; minimising
 * Σ ((α + b_i·x - t_i)/t_i)^2 is weighted least squares with w_i = 1/t_i^2:
 *   x = Σ w(b - b̄)(t - t̄) / Σ w(b - b̄)^2,   α = t̄ - x·b̄,
 * b̄ and t̄ the w-weighted means (centred, so 2^30-byte sizes do not cancel).
 * If α < 0, α = 0 and x = Σ w·b·t / Σ w·b^2 (the same objective on x alone).
 */
#include "algos/profile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/log.h"
#include "util/param.h"

static const char *const field_names[STA_FIELD_COUNT] = {
    [STA_FIELD_SHM_ALPHA] = "shm.alpha_us",
    [STA_FIELD_SHM_BETA] = "shm.beta_gbps",
    [STA_FIELD_NET_ALPHA] = "net.alpha_us",
    [STA_FIELD_NET_BETA] = "net.beta_gbps",
    [STA_FIELD_GAMMA] = "gamma_gbps",
    [STA_FIELD_WAKE] = "wake_us",
    [STA_FIELD_SHM_CACHE_BETA] = "shm.cache_beta_gbps",
    [STA_FIELD_SHM_CACHE_BYTES] = "shm.cache_bytes",
    [STA_FIELD_YIELD] = "yield_us",
};

static const stu_param_id_t field_params[STA_FIELD_COUNT] = {
    [STA_FIELD_SHM_ALPHA] = STU_PARAM_SHM_ALPHA_US,
    [STA_FIELD_SHM_BETA] = STU_PARAM_SHM_BETA_GBPS,
    [STA_FIELD_NET_ALPHA] = STU_PARAM_NET_ALPHA_US,
    [STA_FIELD_NET_BETA] = STU_PARAM_NET_BETA_GBPS,
    [STA_FIELD_GAMMA] = STU_PARAM_GAMMA_GBPS,
    [STA_FIELD_WAKE] = STU_PARAM_WAKE_US,
    [STA_FIELD_SHM_CACHE_BETA] = STU_PARAM_SHM_CACHE_BETA_GBPS,
    [STA_FIELD_SHM_CACHE_BYTES] = STU_PARAM_SHM_CACHE_BYTES,
    [STA_FIELD_YIELD] = STU_PARAM_YIELD_US,
};

static const char *const source_names[STA_SRC_COUNT] = {
    [STA_SRC_DEFAULT] = "default",
    [STA_SRC_CALIBRATED] = "calibrated",
    [STA_SRC_ENV] = "env",
    [STA_SRC_PROFILE] = "profile",
};

const char *sta_field_name(sta_field_t field)
{
    if ((int)field < 0 || field >= STA_FIELD_COUNT)
        return "?";
    return field_names[field];
}

const char *sta_source_name(sta_source_t source)
{
    if ((int)source < 0 || source >= STA_SRC_COUNT)
        return "?";
    return source_names[source];
}

double *sta_model_field(sta_model_t *model, sta_field_t field)
{
    switch (field) {
    case STA_FIELD_SHM_ALPHA: return &model->shm.alpha_us;
    case STA_FIELD_SHM_BETA: return &model->shm.beta_gbps;
    case STA_FIELD_NET_ALPHA: return &model->net.alpha_us;
    case STA_FIELD_NET_BETA: return &model->net.beta_gbps;
    case STA_FIELD_WAKE: return &model->wake_us;
    case STA_FIELD_SHM_CACHE_BETA: return &model->cache.beta_gbps;
    case STA_FIELD_SHM_CACHE_BYTES: return &model->cache.bytes;
    case STA_FIELD_YIELD: return &model->yield_us;
    default: return &model->gamma_gbps;
    }
}

int sta_field_may_be_zero(sta_field_t field)
{
    return field == STA_FIELD_SHM_ALPHA || field == STA_FIELD_NET_ALPHA ||
           field == STA_FIELD_WAKE || field == STA_FIELD_SHM_CACHE_BYTES ||
           field == STA_FIELD_YIELD;
}

static int field_value_ok(sta_field_t field, double v)
{
    return isfinite(v) && (sta_field_may_be_zero(field) ? v >= 0.0 : v > 0.0);
}

/* What a field accepts, for error messages. */
static const char *field_range(sta_field_t field)
{
    return sta_field_may_be_zero(field) ? "a finite number >= 0" : "a finite number > 0";
}

/* A whole-string decimal in the field's range: OK, or STRATA_ERR_INVALID. */
static strata_status_t field_parse(sta_field_t field, const char *text, double *value_p)
{
    char *end;
    double v;

    if (text == NULL || *text == '\0')
        return STRATA_ERR_INVALID;
    errno = 0;
    v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !field_value_ok(field, v))
        return STRATA_ERR_INVALID;
    *value_p = v;
    return STRATA_OK;
}

/* Sets a field unless its current value came from a higher-precedence source. */
static int field_offer(sta_model_t *model, sta_field_t field, double v, sta_source_t source)
{
    if (source < model->source[field])
        return 0;
    *sta_model_field(model, field) = v;
    model->source[field] = source;
    return 1;
}

void sta_model_default(sta_model_t *model)
{
    memset(model, 0, sizeof(*model));
    model->shm.alpha_us = STA_DEFAULT_SHM_ALPHA_US;
    model->shm.beta_gbps = STA_DEFAULT_SHM_BETA_GBPS;
    model->net.alpha_us = STA_DEFAULT_NET_ALPHA_US;
    model->net.beta_gbps = STA_DEFAULT_NET_BETA_GBPS;
    model->gamma_gbps = STA_DEFAULT_GAMMA_GBPS;
    model->wake_us = STA_DEFAULT_WAKE_US;
    model->yield_us = STA_DEFAULT_YIELD_US;
    model->cache.beta_gbps = STA_DEFAULT_SHM_CACHE_BETA_GBPS;
    model->cache.bytes = STA_DEFAULT_SHM_CACHE_BYTES;
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        model->source[f] = STA_SRC_DEFAULT;
}

/* Trims leading and trailing blanks in place. */
static char *trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        e--;
    *e = '\0';
    return s;
}

/* The profile key of the intra-node kind, which is not one of the numeric fields. */
#define PROFILE_KEY_KIND "shm.kind"

/* shm.kind = shm|switch|pcie; *kind_line remembers where it was set. */
static strata_status_t profile_kind_apply(const char *path, int lineno, const char *val,
                                          sta_model_t *model, int *kind_line)
{
    sta_intra_t kind;

    if (*kind_line != 0) {
        STU_WARN("profile %s:%d: %s is already set at line %d", path, lineno, PROFILE_KEY_KIND,
                 *kind_line);
        return STRATA_ERR_INVALID;
    }
    if (sta_intra_parse(val, &kind) != STRATA_OK) {
        STU_WARN("profile %s:%d: %s = '%s' is not shm, switch or pcie", path, lineno,
                 PROFILE_KEY_KIND, val);
        return STRATA_ERR_INVALID;
    }
    *kind_line = lineno;
    model->intra = kind;
    model->intra_source = STA_SRC_PROFILE;
    return STRATA_OK;
}

/* One profile line into *model; first_line[] remembers where each key was set (the kind's
 * at first_line[STA_FIELD_COUNT]). */
static strata_status_t profile_line_apply(const char *path, int lineno, char *line,
                                          sta_model_t *model, int first_line[])
{
    char *hash = strchr(line, '#');
    char *eq, *key, *val;

    if (hash != NULL)
        *hash = '\0';
    line = trim(line);
    if (*line == '\0')
        return STRATA_OK;
    eq = strchr(line, '=');
    if (eq == NULL) {
        STU_WARN("profile %s:%d: expected 'key = value', got '%s'", path, lineno, line);
        return STRATA_ERR_INVALID;
    }
    *eq = '\0';
    key = trim(line);
    val = trim(eq + 1);
    if (strcmp(key, PROFILE_KEY_KIND) == 0)
        return profile_kind_apply(path, lineno, val, model, &first_line[STA_FIELD_COUNT]);
    for (int f = 0; f < STA_FIELD_COUNT; f++) {
        double v;
        if (strcmp(key, field_names[f]) != 0)
            continue;
        if (first_line[f] != 0) {
            STU_WARN("profile %s:%d: %s is already set at line %d", path, lineno, key,
                     first_line[f]);
            return STRATA_ERR_INVALID;
        }
        if (field_parse((sta_field_t)f, val, &v) != STRATA_OK) {
            STU_WARN("profile %s:%d: %s = '%s' is not %s", path, lineno, key, val,
                     field_range((sta_field_t)f));
            return STRATA_ERR_INVALID;
        }
        first_line[f] = lineno;
        field_offer(model, (sta_field_t)f, v, STA_SRC_PROFILE);
        return STRATA_OK;
    }
    STU_WARN("profile %s:%d: unknown key '%s' (keys: shm.alpha_us, shm.beta_gbps, "
             "net.alpha_us, net.beta_gbps, gamma_gbps, wake_us, yield_us, "
             "shm.cache_beta_gbps, shm.cache_bytes, shm.kind)", path, lineno, key);
    return STRATA_ERR_INVALID;
}

strata_status_t sta_profile_parse(const char *text, size_t len, const char *name,
                                  sta_model_t *model)
{
    strata_status_t status = STRATA_OK;
    int first_line[STA_FIELD_COUNT + 1] = {0};
    sta_model_t tmp = *model;
    char line[STA_PROFILE_LINE_MAX + 1];
    int lineno = 0;
    size_t at = 0;

    while (status == STRATA_OK && at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl != NULL ? (size_t)(nl - (text + at)) : len - at;
        lineno++;
        if (n > STA_PROFILE_LINE_MAX) {
            STU_WARN("profile %s:%d: line longer than %d bytes", name, lineno,
                     STA_PROFILE_LINE_MAX);
            return STRATA_ERR_INVALID;
        }
        if (memchr(text + at, '\0', n) != NULL) {
            STU_WARN("profile %s:%d: a NUL byte (not a text file?)", name, lineno);
            return STRATA_ERR_INVALID;
        }
        memcpy(line, text + at, n);
        line[n] = '\0';
        status = profile_line_apply(name, lineno, line, &tmp, first_line);
        at += n + (nl != NULL);
    }
    if (status == STRATA_OK)
        *model = tmp;
    return status;
}

strata_status_t sta_profile_read(const char *path, sta_model_t *model)
{
    char *text;
    size_t len;
    strata_status_t status =
        stu_file_read(path, STA_PROFILE_MAX_BYTES, 0, "STRATA_PROFILE", &text, &len);
    if (status != STRATA_OK)
        return status;
    status = sta_profile_parse(text, len, path, model);
    free(text);
    return status;
}

strata_status_t sta_model_apply_env(sta_model_t *model)
{
    strata_status_t status = STRATA_OK;
    for (int f = 0; f < STA_FIELD_COUNT; f++) {
        const stu_param_def_t *def = stu_param_def(field_params[f]);
        const char *text = stu_param_str(field_params[f]);
        double v;

        if (*text == '\0')
            continue;
        if (field_parse((sta_field_t)f, text, &v) != STRATA_OK) {
            STU_WARN("param: %s='%s' is not %s", def->name, text, field_range((sta_field_t)f));
            status = STRATA_ERR_INVALID;
            continue;
        }
        field_offer(model, (sta_field_t)f, v, STA_SRC_ENV);
    }
    return status;
}

/* Offers one measured value; logs when a higher-precedence value is kept. */
static void calibration_offer(sta_model_t *model, sta_field_t field, double v)
{
    if (!field_value_ok(field, v))
        return;
    if (!field_offer(model, field, v, STA_SRC_CALIBRATED))
        STU_INFO(STU_LOG_TUNING, "model: %s = %g from %s kept over calibrated %g",
                 field_names[field], *sta_model_field(model, field),
                 source_names[model->source[field]], v);
}

void sta_model_apply_calibration(sta_model_t *model, const sta_tier_t *measured_shm,
                                 const sta_tier_t *measured_net)
{
    if (measured_shm != NULL) {
        calibration_offer(model, STA_FIELD_SHM_ALPHA, measured_shm->alpha_us);
        calibration_offer(model, STA_FIELD_SHM_BETA, measured_shm->beta_gbps);
    }
    if (measured_net != NULL) {
        calibration_offer(model, STA_FIELD_NET_ALPHA, measured_net->alpha_us);
        calibration_offer(model, STA_FIELD_NET_BETA, measured_net->beta_gbps);
    }
}

void sta_model_apply_calibrated_wake(sta_model_t *model, double wake_us)
{
    calibration_offer(model, STA_FIELD_WAKE, wake_us);
}

void sta_model_apply_calibrated_yield(sta_model_t *model, double yield_us)
{
    calibration_offer(model, STA_FIELD_YIELD, yield_us);
}

void sta_model_apply_calibrated_cache(sta_model_t *model, const sta_cache_t *measured)
{
    if (measured == NULL || !(measured->bytes > 0.0))
        return;                                 /* 0 would drop the tier, not measure it */
    calibration_offer(model, STA_FIELD_SHM_CACHE_BETA, measured->beta_gbps);
    calibration_offer(model, STA_FIELD_SHM_CACHE_BYTES, measured->bytes);
}

strata_status_t sta_model_load(sta_model_t *model)
{
    strata_status_t status;
    const char *path;
    sta_model_t tmp;

    sta_model_default(&tmp);
    if ((status = sta_model_apply_env(&tmp)) != STRATA_OK)
        return status;
    path = stu_param_str(STU_PARAM_PROFILE);
    if (*path != '\0') {
        status = sta_profile_read(path, &tmp);
        if (status != STRATA_OK)
            return status;
    }
    *model = tmp;
    return STRATA_OK;
}

void sta_model_log(const sta_model_t *model)
{
    const sta_tier_t *tiers[2] = {&model->shm, &model->net};
    const char *names[2] = {"shm", "net"};

    if (stu_log_level < STU_LOG_INFO)
        return;
    for (int i = 0; i < 2; i++) {
        sta_field_t fa = i == 0 ? STA_FIELD_SHM_ALPHA : STA_FIELD_NET_ALPHA;
        sta_field_t fb = i == 0 ? STA_FIELD_SHM_BETA : STA_FIELD_NET_BETA;
        STU_INFO(STU_LOG_TUNING, "model %s: alpha %g us (%s), beta %g GB/s (%s), n* %.0f B",
                 names[i], tiers[i]->alpha_us, source_names[model->source[fa]],
                 tiers[i]->beta_gbps, source_names[model->source[fb]],
                 sta_tier_crossover_bytes(tiers[i]));
    }
    STU_INFO(STU_LOG_TUNING, "model gamma: %g GB/s (%s), wake-up %g us (%s), yield turn %g us"
             " (%s)", model->gamma_gbps, source_names[model->source[STA_FIELD_GAMMA]],
             model->wake_us, source_names[model->source[STA_FIELD_WAKE]], model->yield_us,
             source_names[model->source[STA_FIELD_YIELD]]);
    STU_INFO(STU_LOG_TUNING, "model shm cache: beta %g GB/s (%s) while the working set fits %.0f"
             " B (%s)", model->cache.beta_gbps,
             source_names[model->source[STA_FIELD_SHM_CACHE_BETA]], model->cache.bytes,
             source_names[model->source[STA_FIELD_SHM_CACHE_BYTES]]);
    STU_INFO(STU_LOG_TUNING, "model intra-node kind: %s (%s)", sta_intra_name(model->intra),
             sta_source_name(model->intra_source));
}

strata_status_t sta_profile_write(const char *path, const sta_model_t *model,
                                  const char *comment)
{
    sta_model_t copy = *model;   /* sta_model_field() reads through a non-const pointer */
    FILE *file;
    int bad;

    if (sta_model_check(model) != STRATA_OK)
        return STRATA_ERR_INVALID;
    file = fopen(path, "w");
    if (file == NULL) {
        STU_WARN("profile %s: cannot create: %s", path, strerror(errno));
        return STRATA_ERR_IO;
    }
    for (const char *c = comment; c != NULL && *c != '\0';) {
        size_t len = strcspn(c, "\n");
        fprintf(file, "# %.*s\n", (int)len, c);
        c += len + (c[len] == '\n');
    }
    /* %.17g: the value reads back to the same double. */
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        fprintf(file, "%-13s = %.17g   # %s\n", field_names[f],
                *sta_model_field(&copy, (sta_field_t)f), source_names[model->source[f]]);
    fprintf(file, "%-13s = %s   # %s\n", PROFILE_KEY_KIND, sta_intra_name(model->intra),
            source_names[model->intra_source]);
    bad = ferror(file);
    if (fclose(file) != 0 || bad) {
        STU_WARN("profile %s: write error: %s", path, strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

strata_status_t sta_fit_alpha_beta(const size_t *bytes, const double *us, int n,
                                   sta_tier_t *out)
{
    double sw = 0, swb = 0, swt = 0, sbb = 0, sbt = 0;
    double bbar, tbar, alpha, x;

    if (bytes == NULL || us == NULL || n < 2)
        return STRATA_ERR_INVALID;
    for (int i = 0; i < n; i++) {
        if (!isfinite(us[i]) || us[i] <= 0.0)
            return STRATA_ERR_INVALID;
        double w = 1.0 / (us[i] * us[i]);
        sw += w;
        swb += w * (double)bytes[i];
        swt += w * us[i];
    }
    bbar = swb / sw;
    tbar = swt / sw;
    for (int i = 0; i < n; i++) {
        double w = 1.0 / (us[i] * us[i]);
        double db = (double)bytes[i] - bbar;
        sbb += w * db * db;
        sbt += w * db * (us[i] - tbar);
    }
    if (!(sbb > 0.0))
        return STRATA_ERR_INVALID;           /* one distinct size: no slope to fit */
    x = sbt / sbb;
    alpha = tbar - x * bbar;
    if (alpha < 0.0) {
        double num = 0, den = 0;
        for (int i = 0; i < n; i++) {
            double w = 1.0 / (us[i] * us[i]), b = (double)bytes[i];
            num += w * b * us[i];
            den += w * b * b;
        }
        alpha = 0.0;
        x = den > 0.0 ? num / den : 0.0;
    }
    if (!(x > 0.0) || !isfinite(x))
        return STRATA_ERR_INVALID;           /* time does not grow with size: no β */
    out->alpha_us = alpha;
    out->beta_gbps = 1.0 / (x * STA_BYTES_PER_US_PER_GBPS);
    return STRATA_OK;
}

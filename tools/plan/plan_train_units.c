/* Units of strata-plan train's inputs (tools/plan/plan_train_units.h). */
#include "tools/plan/plan_train_units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* The widest value a plan handles: fp64 is 8 bytes; 16 leaves room for complex types. */
#define STB_WIDTH_MAX 16.0

typedef struct unit {
    const char *name;
    double scale;
} unit_t;

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* A finite number >= 0 at the start of text; *end_p after it. 0 when there is none. */
static int number_lead(const char *text, double *v_p, const char **end_p)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || !isfinite(v) || v < 0.0)
        return 0;
    *v_p = v;
    *end_p = end;
    return 1;
}

/* Matches `p` (blanks trimmed) against a table, case-insensitively unless exact_case. */
static const unit_t *unit_find(const char *p, size_t len, const unit_t *units, size_t n,
                               int exact_case)
{
    for (size_t i = 0; i < n; i++) {
        if (strlen(units[i].name) != len)
            continue;
        if (exact_case ? strncmp(p, units[i].name, len) == 0
                       : strncasecmp(p, units[i].name, len) == 0)
            return &units[i];
    }
    return NULL;
}

static size_t trimmed_len(const char *p)
{
    size_t len = strlen(p);
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    return len;
}

/* Prefix scale of k, M, G, T (any case). 0 when c is none of them. */
static double si_prefix(char c)
{
    switch (tolower((unsigned char)c)) {
    case 'k': return 1e3;
    case 'm': return 1e6;
    case 'g': return 1e9;
    case 't': return 1e12;
    default: return 0.0;
    }
}

/* "GB/s", "Gbps", ...: GB/s per unit (bits divide by 8). 0 when not a bandwidth unit. */
static double bw_unit(const char *p, size_t len)
{
    double prefix = len > 0 ? si_prefix(p[0]) : 0.0;
    if (prefix == 0.0 || len < 3)
        return 0.0;
    char bb = p[1];
    const char *rest = p + 2;
    size_t rlen = len - 2;
    if (bb != 'B' && bb != 'b')
        return 0.0;
    if (!((rlen == 2 && strncasecmp(rest, "/s", 2) == 0) ||
          (rlen == 2 && strncasecmp(rest, "ps", 2) == 0)))
        return 0.0;
    double bytes = prefix / 1e9;   /* in GB */
    return bb == 'B' ? bytes : bytes / STB_BITS_PER_BYTE;
}

strata_status_t stb_bw_parse(const char *text, double *gbps_p, char *note, size_t notelen)
{
    static const char *const duplex_words[] = {"-duplex", "-bidirectional", "-bidir"};
    char unit[16] = "";
    const char *p;
    double v, scale = 1.0;
    int duplex = 0, assumed = 0;

    if (text == NULL || !number_lead(skip_blanks(text), &v, &p))
        return STRATA_ERR_INVALID;
    p = skip_blanks(p);
    size_t len = trimmed_len(p);
    for (size_t i = 0; i < sizeof(duplex_words) / sizeof(duplex_words[0]); i++) {
        size_t w = strlen(duplex_words[i]);
        if (len >= w && strncasecmp(p + len - w, duplex_words[i], w) == 0) {
            duplex = 1;
            len -= w;
            while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
                len--;
            break;
        }
    }
    if (len == 0) {
        assumed = 1;
        snprintf(unit, sizeof(unit), "GB/s");
    } else {
        scale = bw_unit(p, len);
        if (scale == 0.0 || len >= sizeof(unit))
            return STRATA_ERR_INVALID;
        memcpy(unit, p, len);
        unit[len] = '\0';
    }
    double gbps = v * scale / (duplex ? 2.0 : 1.0);
    if (!(gbps > 0.0))
        return STRATA_ERR_INVALID;
    *gbps_p = gbps;
    if (note != NULL && notelen > 0) {
        snprintf(note, notelen, "%g %s%s%s = %g GB/s per direction%s", v, unit,
                 duplex ? " duplex" : "", duplex ? ", halved," : "", gbps,
                 assumed ? " (no unit given: GB/s assumed; write Gb/s for bits)" : "");
    }
    return STRATA_OK;
}

/* A number, then one of `units` (blanks between them allowed), or no unit when bare_scale
 * > 0. The value times its scale must be >= min (or > 0 when positive). */
static strata_status_t scaled_parse(const char *text, const unit_t *units, size_t nunits,
                                    int exact_case, double bare_scale, int positive,
                                    double *value_p)
{
    const char *p;
    double v, scale = bare_scale;

    if (text == NULL || !number_lead(skip_blanks(text), &v, &p))
        return STRATA_ERR_INVALID;
    p = skip_blanks(p);
    size_t len = trimmed_len(p);
    if (len > 0) {
        const unit_t *u = unit_find(p, len, units, nunits, exact_case);
        if (u == NULL)
            return STRATA_ERR_INVALID;
        scale = u->scale;
    }
    double x = v * scale;
    if (!(scale > 0.0) || !isfinite(x) || (positive && !(x > 0.0)))
        return STRATA_ERR_INVALID;
    *value_p = x;
    return STRATA_OK;
}

strata_status_t stb_latency_parse(const char *text, double *us_p)
{
    static const unit_t units[] = {
        {"us", 1.0}, {"µs", 1.0}, {"usec", 1.0}, {"ns", 1e-3}, {"ms", 1e3}, {"s", 1e6},
    };
    return scaled_parse(text, units, sizeof(units) / sizeof(units[0]), 1, 1.0, 0, us_p);
}

strata_status_t stb_count_parse(const char *text, double *value_p)
{
    static const unit_t units[] = {
        {"K", 1e3}, {"M", 1e6}, {"B", 1e9}, {"G", 1e9}, {"T", 1e12},
    };
    return scaled_parse(text, units, sizeof(units) / sizeof(units[0]), 0, 1.0, 1, value_p);
}

strata_status_t stb_mem_parse(const char *text, double *bytes_p)
{
    static const unit_t units[] = {
        {"GB", 1e9}, {"GiB", 1073741824.0}, {"TB", 1e12}, {"TiB", 1099511627776.0},
        {"MB", 1e6}, {"MiB", 1048576.0},
    };
    return scaled_parse(text, units, sizeof(units) / sizeof(units[0]), 0, 1e9, 1, bytes_p);
}

strata_status_t stb_width_parse(const char *text, double *bytes_p)
{
    static const unit_t names[] = {
        {"bf16", 2.0}, {"fp16", 2.0}, {"fp32", 4.0}, {"fp8", 1.0}, {"fp64", 8.0},
    };
    const char *p;
    double v;

    if (text == NULL)
        return STRATA_ERR_INVALID;
    const unit_t *u = unit_find(text, strlen(text), names, sizeof(names) / sizeof(names[0]), 0);
    if (u != NULL) {
        *bytes_p = u->scale;
        return STRATA_OK;
    }
    if (!number_lead(text, &v, &p) || *p != '\0' || !(v > 0.0) || v > STB_WIDTH_MAX)
        return STRATA_ERR_INVALID;
    *bytes_p = v;
    return STRATA_OK;
}

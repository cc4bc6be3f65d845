/* Bench helpers: tagged stderr messages, sizes, deadlines. */
#include "tools/lib/tool_util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/param.h"
#include "util/time.h"

int stb_log_verbose;
static char log_tag[64] = "strata-bench";

void stb_log_tag_set(const char *tag)
{
    snprintf(log_tag, sizeof(log_tag), "%s", tag);
}

static void log_vprint(const char *fmt, va_list ap)
{
    char msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* One write per line, so the two processes of a local run do not interleave mid-line. */
    fprintf(stderr, "%s: %s\n", log_tag, msg);
}

void stb_log_err(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vprint(fmt, ap);
    va_end(ap);
}

void stb_log_info(const char *fmt, ...)
{
    va_list ap;

    if (!stb_log_verbose)
        return;
    va_start(ap, fmt);
    log_vprint(fmt, ap);
    va_end(ap);
}

strata_status_t stb_size_parse(const char *text, size_t *value_p)
{
    int64_t v;

    if (stu_param_parse_int(text, &v) != STRATA_OK || v < 0)
        return STRATA_ERR_INVALID;
    *value_p = (size_t)v;
    return STRATA_OK;
}

void stb_size_format(size_t bytes, char *buf, size_t len)
{
    static const char units[] = {'G', 'M', 'K'};
    static const unsigned shifts[] = {30, 20, 10};

    for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++) {
        size_t unit = (size_t)1 << shifts[i];
        if (bytes >= unit && bytes % unit == 0) {
            snprintf(buf, len, "%zu%c", bytes / unit, units[i]);
            return;
        }
    }
    snprintf(buf, len, "%zu", bytes);
}

/* One 64-bit word of the pattern: a multiplicative hash of seed and word index. */
static inline uint64_t pattern_word(uint64_t seed, size_t index)
{
    uint64_t x = (seed ^ 0x5bd1e9955bd1e995ull) + (uint64_t)index * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return x * 0xbf58476d1ce4e5b9ull;
}

void stb_pattern_fill(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    size_t words = len / 8;

    for (size_t i = 0; i < words; i++) {
        uint64_t w = pattern_word(seed, i);
        memcpy(p + i * 8, &w, 8);
    }
    if (len % 8 != 0) {
        uint64_t w = pattern_word(seed, words);
        memcpy(p + words * 8, &w, len % 8);
    }
}

static uint64_t pattern_bytes_differ(const unsigned char *a, const unsigned char *b, size_t n)
{
    uint64_t wrong = 0;

    for (size_t i = 0; i < n; i++)
        wrong += a[i] != b[i];
    return wrong;
}

uint64_t stb_pattern_check(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = buf;
    size_t words = len / 8;
    uint64_t wrong = 0;

    for (size_t i = 0; i < words; i++) {
        uint64_t want = pattern_word(seed, i), got;
        memcpy(&got, p + i * 8, 8);
        if (got != want)
            wrong += pattern_bytes_differ((const unsigned char *)&got,
                                          (const unsigned char *)&want, 8);
    }
    if (len % 8 != 0) {
        uint64_t want = pattern_word(seed, words);
        wrong += pattern_bytes_differ(p + words * 8, (const unsigned char *)&want, len % 8);
    }
    return wrong;
}

static int median_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stb_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), median_cmp);
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

strata_status_t stb_int_parse(const char *text, long lo, long hi, int *value_p)
{
    char *end;

    if (text == NULL || *text == '\0' || (lo >= 0 && (*text < '0' || *text > '9')))
        return STRATA_ERR_INVALID;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi || v < INT_MIN || v > INT_MAX)
        return STRATA_ERR_INVALID;
    *value_p = (int)v;
    return STRATA_OK;
}

strata_status_t stb_err_set(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return STRATA_ERR_INVALID;
}

void stb_text_printable(const void *bytes, size_t len, char *out, size_t outlen)
{
    const unsigned char *b = bytes;
    size_t o = 0;

    for (size_t i = 0; i < len && b[i] != '\0'; i++) {
        char piece[5];
        int n = b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\'
                    ? snprintf(piece, sizeof(piece), "%c", b[i])
                    : snprintf(piece, sizeof(piece), "\\x%02x", b[i]);
        if (o + (size_t)n + 4 > outlen) {
            snprintf(out + o, outlen - o, "...");
            return;
        }
        memcpy(out + o, piece, (size_t)n);
        o += (size_t)n;
    }
    out[o] = '\0';
}

void *stb_alloc_touched(size_t align, size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, align, bytes > 0 ? bytes : align) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

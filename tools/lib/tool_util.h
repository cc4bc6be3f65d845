/*
 * Small helpers shared by the tools and benchmarks: error messages on stderr
 * tagged with the tool and role, size parsing, data patterns, medians.
 * Deadlines are util/time.h's.
 *
 * Thread safety: the log tag and verbosity are set once at start-up, before
 * any other thread exists; the rest is pure.
 */
#ifndef STB_UTIL_H
#define STB_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "util/compiler.h"

/* Messages are prefixed "<tag>: "; the tag is copied. */
void stb_log_tag_set(const char *tag);
extern int stb_log_verbose;

/* Always printed, to stderr. */
void stb_log_err(const char *fmt, ...) STU_PRINTF(1, 2);
/* Printed to stderr only when stb_log_verbose is set. */
void stb_log_info(const char *fmt, ...) STU_PRINTF(1, 2);

/* Formats a one-line reason into err (NULL or errlen 0: nothing); returns STRATA_ERR_INVALID. */
strata_status_t stb_err_set(char *err, size_t errlen, const char *fmt, ...) STU_PRINTF(3, 4);

/* A whole decimal integer in [lo, hi] (no sign unless lo < 0, no trailing text). */
strata_status_t stb_int_parse(const char *text, long lo, long hi, int *value_p);

/* "4096", "64K", "4M", "1G" (binary multiples). OK or STRATA_ERR_INVALID. */
strata_status_t stb_size_parse(const char *text, size_t *value_p);

/* Formats a byte count the way the size column shows it ("64K", "4M", "1000"). */
void stb_size_format(size_t bytes, char *buf, size_t len);

/*
 * Bytes from a peer as text safe to print: up to len bytes or the first NUL; printable
 * ASCII kept, anything else as \xNN; cut with "..." to fit out (outlen >= 4).
 */
void stb_text_printable(const void *bytes, size_t len, char *out, size_t outlen);

/*
 * Data patterns for integrity checks: a pseudo-random sequence determined by
 * (seed, offset), so the receiver can check any buffer without a copy of it.
 * stb_pattern_check returns the number of bytes that differ.
 */
void stb_pattern_fill(void *buf, size_t len, uint64_t seed);
uint64_t stb_pattern_check(const void *buf, size_t len, uint64_t seed);

/* The seed of a checked message of `size` bytes sent by the initiator (1) or responder (0). */
static inline uint64_t stb_pattern_seed(size_t size, int from_initiator)
{
    return ((uint64_t)size << 1) | (uint64_t)(from_initiator != 0);
}

/* Overwrites a receive buffer with data no checked message carries, so stale bytes fail. */
static inline void stb_pattern_poison(void *buf, size_t len)
{
    stb_pattern_fill(buf, len, ~0ull);
}

/*
 * A buffer of `bytes` (at least one byte's worth) aligned to align (a power of two, a
 * multiple of sizeof(void *)), zeroed so every page is faulted in now, not in a timed or
 * checked call; free() it. NULL when out of memory.
 */
void *stb_alloc_touched(size_t align, size_t bytes);

/* Median of v[0..n-1] (sorts v in place); 0 when n is 0. */
double stb_median(double *v, size_t n);

#endif /* STB_UTIL_H */

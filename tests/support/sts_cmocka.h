/*
 * cmocka conveniences for Strata tests: include after <cmocka.h>.
 * Failures name the statuses, so a log says "got STRATA_ERR_REMOTE, want
 * STRATA_OK" instead of two numbers.
 */
#ifndef STS_CMOCKA_H
#define STS_CMOCKA_H

#include "strata/status.h"

#define assert_status(expr, want)                                                      \
    do {                                                                               \
        strata_status_t sts_got_ = (expr);                                             \
        strata_status_t sts_want_ = (want);                                            \
        if (sts_got_ != sts_want_)                                                     \
            fail_msg("%s: got %s, want %s", #expr, strata_status_str(sts_got_),        \
                     strata_status_str(sts_want_));                                    \
    } while (0)

#define assert_ok(expr) assert_status((expr), STRATA_OK)

/* A data check: fails with the offset and the seed of the first bad byte. */
#define assert_pattern(buf, size, seed)                                                \
    do {                                                                               \
        size_t sts_off_ = sts_pattern_check((buf), (size), (seed));                    \
        if (sts_off_ != SIZE_MAX)                                                      \
            fail_msg("data mismatch at byte %zu of %zu (seed %u)", sts_off_,           \
                     (size_t)(size), (unsigned)(seed));                                \
    } while (0)

#endif /* STS_CMOCKA_H */

/* Monotonic time in nanoseconds; the only clock Strata uses for timeouts. */
#ifndef STU_TIME_H
#define STU_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t stu_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* STU_TIME_H */

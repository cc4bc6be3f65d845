/*
 * Monotonic time in nanoseconds, the only clock Strata uses for timeouts, and
 * the one deadline helper of every layer (util, tools, benchmarks and tests):
 * a deadline is an absolute stu_time_ns() value, so a loop of waits shares one
 * bound instead of restarting a timeout at each wait.
 */
#ifndef STU_TIME_H
#define STU_TIME_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

#define STU_NS_PER_MS 1000000ull

static inline uint64_t stu_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The deadline timeout_ms from now (a negative timeout is now: already past). */
static inline uint64_t stu_deadline_ms(int64_t timeout_ms)
{
    return stu_time_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * STU_NS_PER_MS;
}

/* Whether the deadline has passed. */
static inline int stu_deadline_passed(uint64_t deadline_ns)
{
    return stu_time_ns() >= deadline_ns;
}

/* Milliseconds left before the deadline, rounded up (a poll() timeout), 0 once past. */
static inline int stu_deadline_left_ms(uint64_t deadline_ns)
{
    uint64_t now = stu_time_ns();

    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + STU_NS_PER_MS - 1) / STU_NS_PER_MS;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Sleeps ms milliseconds (restarted after a signal only by the caller's loop). */
static inline void stu_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#endif /* STU_TIME_H */

/*
 * Small helpers shared by every test tier: scaled deadlines, data patterns,
 * resource counters. No transport or plugin knowledge here.
 *
 * Deadlines are util/time.h's (stu_time_ns, stu_deadline_passed); tests make
 * them with sts_deadline, generous on purpose and scaled: the test machines
 * are loaded 2-core VMs, so a bound exists to turn a hang into a failure,
 * never to measure speed.
 */
#ifndef STS_UTIL_H
#define STS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "util/time.h"

/* The deadline that many seconds from now, times sts_timeout_scale(). */
uint64_t sts_deadline(double seconds);

/* Gives the other core a chance (two busy processes share 2 cores). */
void sts_relax(void);

/*
 * A deterministic pattern: byte i of a buffer filled with seed s depends on
 * (s, i) only, so a receiver can check data it never saw sent, and a buffer
 * that landed in the wrong place (another seed) or shifted is caught.
 */
void sts_pattern_fill(void *buf, size_t size, uint32_t seed);

/* Offset of the first byte that differs from the pattern, or SIZE_MAX if none. */
size_t sts_pattern_check(const void *buf, size_t size, uint32_t seed);

/*
 * A permutation of 0..n-1 determined by seed (the same in every process),
 * never the identity when n > 1: for posting sends out of order.
 */
void sts_permute(int *perm, int n, uint32_t seed);

/* Guard bytes placed after a receive buffer to catch overruns. */
#define STS_GUARD_SIZE 64
#define STS_GUARD_BYTE 0xa5
void sts_guard_set(void *buf, size_t size);
int sts_guard_ok(const void *buf, size_t size);

/* Open descriptors of this process (entries of /proc/self/fd), -1 on error. */
int sts_fd_count(void);
/*
 * Waits until at most `most` descriptors are open or deadline (stu_time_ns)
 * passes; returns the last count. A transport may finish a close in the
 * background (ucx: a send comm whose flush waits for the peer), so a count
 * taken right after closing can be high for a moment.
 */
int sts_fd_count_settle(int most, uint64_t deadline);

/* Sockets among this process's descriptors, not counting `except` (-1: none excepted). */
int sts_socket_count(int except);

/*
 * Bytes of heap in use (glibc mallinfo2), or -1 when the number is not
 * meaningful (under AddressSanitizer, which replaces malloc; LeakSanitizer
 * does the leak check there instead).
 */
long long sts_heap_in_use(void);

/*
 * Resident memory of this process in bytes (/proc/self/statm), or -1 when the
 * number is not meaningful (under AddressSanitizer, whose quarantine keeps up
 * to 256 MiB of freed memory resident) or cannot be read.
 */
long long sts_rss_bytes(void);

/* Timeout multiplier from STS_TIMEOUT_SCALE (default 1; sanitizer builds set more). */
double sts_timeout_scale(void);

/*
 * Sets STRATA_JOB_SECRET to a new random secret (64 hex digits) for the ranks this process
 * forks next, as a launcher of a run across hosts would; returns it (static storage).
 */
const char *sts_job_secret_export(void);

/* A blocking TCP connection to an IPv4 address and port, or -1 (refused, unreachable). */
int sts_tcp_connect(const char *ip, int port);

/*
 * Bytes received (rx 1) or sent (rx 0) so far on each rail's interface of this emulated
 * node (veth0 .. veth<rails-1>, tools/lib/tool_netns.h), from /proc/net/dev, into
 * bytes[0..rails). 0, or -1 when an interface is missing.
 */
int sts_rail_if_bytes(int rx, int rails, unsigned long long *bytes);

#endif /* STS_UTIL_H */

/*
 * Units for strata-plan train's inputs. Vendors quote links in bits (Gb/s) and in both
 * directions added (duplex); the planner's model wants bytes per direction, so every
 * bandwidth says its unit, a duplex figure says so and is halved, and the parser writes
 * back a note saying how it read the text. Decimal prefixes throughout (G = 10^9), as link
 * and FLOP rates are quoted; memory sizes also take GiB (2^30).
 *
 * Pure functions; any thread.
 */
#ifndef STB_PLAN_TRAIN_UNITS_H
#define STB_PLAN_TRAIN_UNITS_H

#include <stddef.h>

#include "strata/status.h"

/* Bits in a byte: what turns a Gb/s quote into GB/s. */
#define STB_BITS_PER_BYTE 8.0

/*
 * A bandwidth: a number, then a unit (B/s or b/s with a k, M, G or T prefix: "GB/s", "GBps",
 * "Gb/s", "Gbps", "Tb/s", any case except the B/b that tells bytes from bits), then
 * optionally "-duplex" (or "-bidir", "-bidirectional"), meaning both directions added, which
 * is halved. A bare number is GB/s and the note says it was assumed. Blanks between the
 * parts are allowed. *gbps_p = GB/s per direction; note (may be NULL) = how it was read,
 * e.g. "400 Gb/s = 50 GB/s per direction". OK or STRATA_ERR_INVALID (outputs untouched).
 */
strata_status_t stb_bw_parse(const char *text, double *gbps_p, char *note, size_t notelen);

/* A latency: a number with us (or µs), ns, ms or s; a bare number is µs. *us_p in µs, >= 0. */
strata_status_t stb_latency_parse(const char *text, double *us_p);

/* A count with an optional decimal suffix K, M, B (or G), T: "7B" = 7·10^9, "70e9". > 0. */
strata_status_t stb_count_parse(const char *text, double *value_p);

/* A memory size: a number with GB, GiB, TB, TiB, MB, MiB (a bare number is GB). > 0. */
strata_status_t stb_mem_parse(const char *text, double *bytes_p);

/* Bytes per value: a number in (0, 16], or bf16, fp16, fp32, fp8 (any case). */
strata_status_t stb_width_parse(const char *text, double *bytes_p);

#endif /* STB_PLAN_TRAIN_UNITS_H */

/*
 * Where the cost model's parameters come from, highest precedence first:
 *
 *   1. a fabric profile file named by STRATA_PROFILE   (source "profile")
 *   2. STRATA_SHM_ALPHA_US, ..._GAMMA_GBPS, _WAKE_US    (source "env")
 *   3. calibration at init when STRATA_CALIBRATE=1      (source "calibrated")
 *   4. the documented defaults below                    (source "default")
 *
 * Each field of sta_model_t is resolved on its own and remembers its source, so
 * a profile may set only net.* and leave shm.* to the other sources. A value is
 * only ever replaced by one from a source of equal or higher precedence, so the
 * order in which the sources are applied does not matter.
 *
 * Profile file format: one `key = value` per line; `#` starts a comment (whole
 * line or after the value); blank lines are ignored; keys are shm.alpha_us,
 * shm.beta_gbps, net.alpha_us, net.beta_gbps, gamma_gbps, wake_us,
 * shm.cache_beta_gbps, shm.cache_bytes, whose values are decimal numbers (α, ω and the
 * cache's bytes >= 0, β and γ > 0), and shm.kind = shm|switch|pcie
 * (what the shm tier is, sta_intra_t; the file is its only source besides the
 * default, shm). An unknown key, a malformed or out-of-range value, a line without
 * '=', a key given twice, a line longer than STA_PROFILE_LINE_MAX or a NUL byte
 * is an error naming the line. The file is a regular file of at most
 * STA_PROFILE_MAX_BYTES (util/file.h: a FIFO, a device or a larger file is an
 * error, never a hang or a huge read).
 *
 * Thread safety: these functions touch only their arguments (and the parameter
 * table, which is thread-safe); call them from one thread per model.
 */
#ifndef STA_PROFILE_H
#define STA_PROFILE_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "strata/status.h"

/*
 * Defaults for the 2-core CI machines. Waits spin before they sleep (algos/ctx.c), so a
 * step costs a busy-polled hop, not a wake-up, while ranks have cores of their own; with
 * more ranks than cores the model adds ω per wait (algos/cost_model.c).
 */
/* One shm round with ranks on separate cores: 1 x 2, one-round shm collectives (allreduce,
 * reduce_scatter, allgather, broadcast) at 8-512 B took 0.42-0.48 µs (strata-perf --model;
 * docs/benchmarks.md "Model vs measurement"); the low end. */
#define STA_DEFAULT_SHM_ALPHA_US 0.15
/* memcpy on one core: 24.9 GB/s counting read + write = 12-13 GB/s copied; the low end. */
#define STA_DEFAULT_SHM_BETA_GBPS 12.0
/* One way through the plugin's TCP transport on loopback, polled: α 8.5 µs (strata-netperf
 * fit, docs/benchmarks.md "Point to point"); rounded up. */
#define STA_DEFAULT_NET_ALPHA_US 9.0
/* TCP loopback, one stream, 1 MiB writes: 3.6-4.1 GB/s; the low end (noisy shared host). */
#define STA_DEFAULT_NET_BETA_GBPS 3.6
/* Copies whose working set fits the cache (sta_cache_t): strata-reduce --membw 1, 256 KiB-4
 * MiB buffers, 83-96 GB/s read + write = 42-48 GB/s copied (docs/benchmarks.md, "The shm
 * tier's cache"); the low end. */
#define STA_DEFAULT_SHM_CACHE_BETA_GBPS 40.0
/* The working set copies keep that rate up to: one thread full rate to 8 MiB (4 MiB buffers),
 * two threads to 8 MiB together; at 16 and 32 MiB the rates fall as C/W predicts. The L3 is
 * 32 MiB (docs/machines.md); this VM's copies see a quarter of it. */
#define STA_DEFAULT_SHM_CACHE_BYTES (8.0 * 1024 * 1024)
/* A reduction's output rate on buffers much larger than L3: ~12-15 GB/s at best. */
#define STA_DEFAULT_GAMMA_GBPS 12.0
/* ω: waking a process that sleeps, from another core, 35-40 µs (docs/machines.md); the low end. */
#define STA_DEFAULT_WAKE_US 35.0
/*
 * ω_y (STRATA_YIELD_US, yield_us): one shm round where the node's ranks outnumber the host's cores and nothing but shm
 * lies between their rounds (one node). Such waits never block (algos/ctx.c: no spin, 20 µs
 * of sched_yield first): the round costs one turn of the ranks through the cores, not a
 * wake-up. Measured 1 x 4 on 2 cores, one-round shm collectives at 8 B - 2 KiB: 1.9-4.5 µs
 * (bench/model_results/2026-12-07-defaults.txt); rescoring that sweep with ω_y = 2, 2.5, 3
 * and 6 µs, 3 puts the most points within ±25 % (docs/benchmarks.md, "Which points miss").
 */
#define STA_DEFAULT_YIELD_US 3.0

/* A profile holds five short lines; 64 KiB leaves room for any amount of comments. */
#define STA_PROFILE_MAX_BYTES (64 * 1024)
/* One line: a key, '=', a number and a comment fit many times over. */
#define STA_PROFILE_LINE_MAX 1024

/* The profile key of a field ("shm.alpha_us", ...); "?" out of range. */
const char *sta_field_name(sta_field_t field);

/* The field of *model a sta_field_t names (never NULL: an out-of-range field is γ's). */
double *sta_model_field(sta_model_t *model, sta_field_t field);

/* 1 for the fields that may be 0 (α, ω, the cache's size), 0 for those that must be > 0. */
int sta_field_may_be_zero(sta_field_t field);

/* "default", "calibrated", "env", "profile"; "?" out of range. */
const char *sta_source_name(sta_source_t source);

/* Fills *model with the defaults, every source "default". */
void sta_model_default(sta_model_t *model);

/*
 * Reads a profile file and applies its values with source "profile". Blocking file I/O.
 * STRATA_ERR_IO if the file cannot be read, STRATA_ERR_INVALID for a bad file or line
 * (logged with path:line and the cause), STRATA_ERR_NO_MEMORY; on error *model is untouched.
 */
strata_status_t sta_profile_read(const char *path, sta_model_t *model);

/*
 * The same over the text of a profile (len bytes, NUL bytes refused), named `name` in
 * messages. Pure: no I/O but logging.
 */
strata_status_t sta_profile_parse(const char *text, size_t len, const char *name,
                                  sta_model_t *model);

/*
 * Writes *model as a profile file that sta_profile_read() reads back to the same values: the
 * comment's lines (NULL: none) each as a "# " line, then every key with its value and, after
 * a '#', the source it had. Blocking file I/O; replaces the file. STRATA_ERR_INVALID for a
 * model that fails sta_model_check(), STRATA_ERR_IO (logged) if it cannot be written.
 */
strata_status_t sta_profile_write(const char *path, const sta_model_t *model,
                                  const char *comment);

/*
 * Applies every STRATA_* model variable that is set and not empty, with source "env".
 * A malformed or out-of-range value is logged with the variable's name and makes the
 * result STRATA_ERR_INVALID (the other values are still applied).
 */
strata_status_t sta_model_apply_env(sta_model_t *model);

/*
 * Merges measured tiers (source "calibrated"): a measured value replaces only a default.
 * Either pointer may be NULL (tier not measured); a measured α that is negative or not
 * finite, or a β that is not > 0 and finite, is skipped. γ is never calibrated here.
 * Every rank must merge the same measurements (broadcast them), or ranks build different
 * selection tables and pick different algorithms.
 */
void sta_model_apply_calibration(sta_model_t *model, const sta_tier_t *measured_shm,
                                 const sta_tier_t *measured_net);

/*
 * Merges a measured ω (source "calibrated"), as sta_model_apply_calibration does for the
 * tiers: it replaces only a default; a negative or non-finite value is skipped. Every rank
 * must merge the same value.
 */
void sta_model_apply_calibrated_wake(sta_model_t *model, double wake_us);
/* ω_y measured at init (one node whose ranks outnumber the cores), merged likewise. */
void sta_model_apply_calibrated_yield(sta_model_t *model, double yield_us);

/*
 * Merges a measured cache tier (source "calibrated", β_llc and C), as
 * sta_model_apply_calibration does for the tiers: each value replaces only a default; a
 * β_llc not > 0 or a C not > 0, or either not finite, is skipped. Every rank must merge the
 * same values.
 */
void sta_model_apply_calibrated_cache(sta_model_t *model, const sta_cache_t *measured);

/*
 * Defaults, then STRATA_* variables, then the profile named by STRATA_PROFILE (if set).
 * Calibration, when wanted, is merged afterwards by the caller. Errors are the
 * variables' and the profile's; on error *model is untouched.
 */
strata_status_t sta_model_load(sta_model_t *model);

/* Logs each field's value and source, and each tier's n* = α·β, at INFO. */
void sta_model_log(const sta_model_t *model);

/*
 * Fits t(n) = α + n/β to measured (bytes[i], us[i]), minimising the sum of squared
 * relative errors ((α + n/β - t)/t)^2. A negative α is refitted with α = 0. Needs n >= 2
 * points, at least two distinct sizes, every time finite and > 0, and a positive slope:
 * STRATA_ERR_INVALID otherwise, with *out untouched.
 */
strata_status_t sta_fit_alpha_beta(const size_t *bytes, const double *us, int n,
                                   sta_tier_t *out);

/*
 * Fits the shm tier and the host's cache to one-node broadcasts through the node's segment:
 * bytes[i] took us[i] µs a call, back to back, on `ranks` (>= 2) ranks of one host, each on
 * a core of its own. The model prices such a call as one shm phase, α_s + n/β(n), with β(n)
 * sta_cost_shm_beta_gbps's blend of β_llc while the working set 2·ranks·n fits C and β_s
 * beyond (algos/fit_shm.c). α_s comes from the smallest size (which must be under 4 KiB),
 * less its bytes' time. The rates (least squared log error over the sizes of 4 KiB and
 * more): one β for all sizes, or, for each C of 32 KiB·√2^k up to 128 MiB that leaves sizes
 * on both sides, β_llc fitted to those that fit and then β_s to those that spill; a knee
 * wins where β_llc >= 1.1·β_s and its error is under 0.9 of the best before it. With one β the cache comes out no faster than β_s up to
 * the largest working set measured (β_llc = β_s, C = 2·ranks·max bytes). Needs n >= 3
 * points, every time finite and > 0, every size > 0, one of them of 4 KiB or more:
 * STRATA_ERR_INVALID otherwise, with the outputs untouched.
 */
strata_status_t sta_fit_shm_cache(const size_t *bytes, const double *us, int n, int ranks,
                                  sta_tier_t *shm_out, sta_cache_t *cache_out);

#endif /* STA_PROFILE_H */

/*
 * What strata-perf and the tests need from inside a communicator and the
 * public API does not give: the cost model and dims the selection was built
 * from, the model's prediction for any algorithm, which algorithm each
 * collective actually ran and whether a forced one fell back, and a
 * per-communicator override of the selection (every rank must make the same
 * override between the same two calls, as with any collective argument). An
 * internal header for tools and tests, backed by coll/comm.h; applications
 * use strata.h only.
 *
 * Thread safety: as the communicator (one thread at a time), except the
 * record of what ran, which may be read while a non-blocking collective runs
 * (it then shows the calls finished or started so far); the override must not
 * race a non-blocking collective in flight (strata-perf has none).
 */
#ifndef STB_PERF_COMM_H
#define STB_PERF_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "algos/cost_model.h"
#include "algos/select.h"
#include "strata/strata.h"

/* Copies the communicator's model and the dims its selection tables use. */
void stb_comm_model(const strata_comm_t *comm, sta_model_t *model_p, sta_dims_t *dims_p);

/* Where each model value came from: "default", "env", "profile", "calibrated". */
const char *stb_comm_source(const strata_comm_t *comm, sta_field_t field);

/* The transport between nodes ("tcp", ...). */
const char *stb_comm_transport(const strata_comm_t *comm);

/* The algorithm the current table picks for `bytes` of coll. */
sta_algo_t stb_comm_algo(const strata_comm_t *comm, sta_coll_t coll, size_t bytes);

/* The algorithm STRATA_ALGO forced at init (STA_ALGO_AUTO when none). */
sta_algo_t stb_comm_forced(const strata_comm_t *comm);

/* The algorithm the last call of coll (blocking or not) ran; STA_ALGO_AUTO before the first. */
sta_algo_t stb_comm_last_algo(const strata_comm_t *comm, sta_coll_t coll);

/* How many calls of coll ran algo on this communicator. */
uint64_t stb_comm_algo_runs(const strata_comm_t *comm, sta_coll_t coll, sta_algo_t algo);

/*
 * Why the forced algorithm (stb_comm_forced) does not apply to coll on this
 * communicator, so that the model's choice runs instead and the first call
 * logs a warning; NULL when nothing is forced or the forced one applies.
 */
const char *stb_comm_fallback(const strata_comm_t *comm, sta_coll_t coll);

/* Copies up to max of coll's selection ranges ({upper, algo}, ascending); returns how many. */
int stb_comm_ranges(const strata_comm_t *comm, sta_coll_t coll, sta_select_range_t *ranges,
                    int max);

/* The model's time in µs for algo, or a negative value where it does not apply. */
double stb_comm_predict_us(const strata_comm_t *comm, sta_coll_t coll, sta_algo_t algo,
                           size_t bytes);

/*
 * Rebuilds the selection tables as if STRATA_ALGO were `algo` (STA_ALGO_AUTO: the model
 * chooses); where algo does not apply to a collective the model's choice stays, as at init.
 * Collective in the sense of "every rank calls it at the same point". OK or the build's error.
 */
strata_status_t stb_comm_force(strata_comm_t *comm, sta_algo_t algo);

#endif /* STB_PERF_COMM_H */

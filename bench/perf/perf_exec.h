/*
 * strata-perf's engine: runs one collective of one size, in or out of place,
 * times it (warm-up, a barrier, `iters` back-to-back calls) and checks it
 * against the reference of tools/lib/tool_data.h. Every call is collective: all ranks
 * make the same calls with the same arguments.
 *
 * Buffers are allocated once, for the largest size, and touched at once, so
 * no timed call pays for page faults (docs/machines.md: fresh buffers cost ~45 %
 * at 64 MiB). Layout, as nccl-tests':
 *   out of place: send -> recv
 *   in place: allreduce, broadcast, reduce: recv -> recv;
 *             reduce_scatter: recv (P blocks) -> recv + rank's block;
 *             allgather: recv + rank's block -> recv (P blocks).
 *
 * Blocking, bounded: every wait is the library's, bounded by STRATA_TIMEOUT.
 */
#ifndef STB_PERF_EXEC_H
#define STB_PERF_EXEC_H

#include <stddef.h>

#include "tools/lib/tool_data.h"
#include "bench/perf/perf_opts.h"
#include "coll/introspect.h"
#include "strata/strata.h"

typedef struct stb_exec {
    strata_comm_t *comm;
    const stb_perf_opts_t *opts;
    int rank;
    int nranks;
    size_t esz;                 /* element size */
    char *send;
    char *recv;
    size_t send_cap;            /* bytes */
    size_t recv_cap;
    stb_data_ref_t ref;         /* the reduction's reference (dtype, op, P) */
    sta_algo_t timed_algo;      /* what the last timed calls ran, read before the combine */
} stb_exec_t;

/* Allocates and touches the buffers for sizes up to max_size. STRATA_ERR_NO_MEMORY. */
strata_status_t stb_exec_init(stb_exec_t *x, strata_comm_t *comm, const stb_perf_opts_t *opts,
                              size_t max_size);
void stb_exec_fini(stb_exec_t *x);

/* One call of the collective. */
strata_status_t stb_exec_run(stb_exec_t *x, const stb_perf_geom_t *g, int in_place);

/*
 * warmup untimed calls, a barrier, iters timed calls; *us_p gets the time per call in µs,
 * combined across ranks as opts->average says (so every rank gets the same value).
 */
strata_status_t stb_exec_time(stb_exec_t *x, const stb_perf_geom_t *g, int in_place, int warmup,
                              int iters, double *us_p);

/*
 * opts->check times: fill the inputs, one call, count the wrong elements; *wrong_p gets the
 * total over the iterations and all ranks (every rank gets it).
 */
strata_status_t stb_exec_check(stb_exec_t *x, const stb_perf_geom_t *g, int in_place,
                               long long *wrong_p);

/* Combines one double across ranks: 0 rank 0's, 1 mean, 2 min, 3 max. */
strata_status_t stb_exec_combine(stb_exec_t *x, stb_perf_avg_t how, double *v);

#endif /* STB_PERF_EXEC_H */

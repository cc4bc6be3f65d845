/* strata-perf's engine: buffers, one call, timing, checking (see perf_exec.h). */
#include "bench/perf/perf_exec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/tool_call.h"
#include "tools/lib/tool_util.h"
#include "util/time.h"

/* Buffers start on a page: the alignment a real application's allocator gives large buffers. */
#define EXEC_ALIGN 4096

strata_status_t stb_exec_init(stb_exec_t *x, strata_comm_t *comm, const stb_perf_opts_t *opts,
                              size_t max_size)
{
    memset(x, 0, sizeof(*x));
    x->comm = comm;
    x->opts = opts;
    x->rank = strata_comm_rank(comm);
    x->nranks = strata_comm_nranks(comm);
    x->esz = strata_dtype_size(opts->dtype);
    stb_perf_geom_t g = stb_perf_geom(opts->coll, max_size, x->esz, x->nranks);
    x->send_cap = g.send_bytes;
    x->recv_cap = g.bytes;    /* in-place reduce_scatter keeps its whole input in recv */
    x->send = stb_alloc_touched(EXEC_ALIGN, x->send_cap);
    x->recv = stb_alloc_touched(EXEC_ALIGN, x->recv_cap);
    if (x->send == NULL || x->recv == NULL) {
        stb_exec_fini(x);
        return STRATA_ERR_NO_MEMORY;
    }
    stb_data_ref_build(&x->ref, opts->dtype, opts->op, x->nranks);
    return STRATA_OK;
}

void stb_exec_fini(stb_exec_t *x)
{
    free(x->send);
    free(x->recv);
    x->send = x->recv = NULL;
}

/* The call one size and placement make. */
static stb_call_t exec_call(const stb_exec_t *x, const stb_perf_geom_t *g, int in_place)
{
    const stb_perf_opts_t *o = x->opts;
    stb_call_t c = {o->coll, o->dtype, o->op, o->root, g->count, in_place};
    return c;
}

strata_status_t stb_exec_run(stb_exec_t *x, const stb_perf_geom_t *g, int in_place)
{
    stb_call_t c = exec_call(x, g, in_place);
    void *sb, *rb;

    stb_call_bufs(&c, x->rank, x->nranks, x->send, x->recv, &sb, &rb);
    return stb_call_run(&c, sb, rb, x->comm);
}

strata_status_t stb_exec_combine(stb_exec_t *x, stb_perf_avg_t how, double *v)
{
    strata_status_t status;
    switch (how) {
    case STB_PERF_AVG_RANK0:
        return strata_broadcast(v, v, 1, STRATA_FP64, 0, x->comm);
    case STB_PERF_AVG_MIN:
        return strata_allreduce(v, v, 1, STRATA_FP64, STRATA_MIN, x->comm);
    case STB_PERF_AVG_MAX:
        return strata_allreduce(v, v, 1, STRATA_FP64, STRATA_MAX, x->comm);
    default:
        status = strata_allreduce(v, v, 1, STRATA_FP64, STRATA_SUM, x->comm);
        *v /= x->nranks;
        return status;
    }
}

strata_status_t stb_exec_time(stb_exec_t *x, const stb_perf_geom_t *g, int in_place, int warmup,
                              int iters, double *us_p)
{
    strata_status_t status = STRATA_OK;

    for (int i = 0; i < warmup && status == STRATA_OK; i++)
        status = stb_exec_run(x, g, in_place);
    /* Right before the timed calls, so every rank starts them together: a broadcast's root
     * runs ahead of its readers, and ranks that each started at the end of their own warm-up
     * would time a reader from its late start (2 x 2: broadcasts below a round trip). */
    if (status == STRATA_OK)
        status = strata_barrier(x->comm);
    uint64_t t0 = stu_time_ns();
    for (int i = 0; i < iters && status == STRATA_OK; i++)
        status = stb_exec_run(x, g, in_place);
    double us = (double)(stu_time_ns() - t0) / 1e3 / (iters > 0 ? iters : 1);
    /* before the combine: its own allreduce would overwrite the library's record */
    x->timed_algo = stb_comm_last_algo(x->comm, x->opts->coll);
    if (status == STRATA_OK)
        status = stb_exec_combine(x, x->opts->average, &us);
    if (status == STRATA_OK)
        *us_p = us;
    return status;
}

strata_status_t stb_exec_check(stb_exec_t *x, const stb_perf_geom_t *g, int in_place,
                               long long *wrong_p)
{
    strata_status_t status = STRATA_OK;
    int64_t wrong = 0;

    for (int i = 0; i < x->opts->check && status == STRATA_OK; i++) {
        stb_call_t c = exec_call(x, g, in_place);
        stb_call_fill(&c, x->rank, x->nranks, x->send, x->recv, STB_CALL_POISON);
        status = stb_exec_run(x, g, in_place);
        if (status == STRATA_OK)
            wrong += (int64_t)stb_call_verify(&c, &x->ref, x->rank, x->nranks, x->send, x->recv,
                                              NULL);
    }
    if (status == STRATA_OK)
        status = strata_allreduce(&wrong, &wrong, 1, STRATA_INT64, STRATA_SUM, x->comm);
    if (status == STRATA_OK)
        *wrong_p = (long long)wrong;
    return status;
}

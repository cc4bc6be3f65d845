/* strata-perf's engine: buffers, one call, timing, checking (see perf_exec.h). */
#include "bench/perf/perf_exec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/time.h"

/* Buffers start on a page: the alignment a real application's allocator gives large buffers. */
#define EXEC_ALIGN 4096
/* The byte that fills a receive buffer before a checked call: 0x7f is out of the data's range
 * in every type (127 for int8, NaN for fp16 and bf16, ~3.4e38 for fp32). */
#define EXEC_POISON 0x7f

static void *exec_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, EXEC_ALIGN, bytes > 0 ? bytes : EXEC_ALIGN) != 0)
        return NULL;
    memset(p, 0, bytes);      /* fault every page in now, not in a timed call */
    return p;
}

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
    x->send = exec_alloc(x->send_cap);
    x->recv = exec_alloc(x->recv_cap);
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

/* The send and receive pointers of one placement. */
static void exec_bufs(stb_exec_t *x, const stb_perf_geom_t *g, int in_place, void **sb, void **rb)
{
    size_t mine = (size_t)x->rank * g->count * x->esz;
    *sb = x->send;
    *rb = x->recv;
    if (!in_place)
        return;
    switch (x->opts->coll) {
    case STA_COLL_REDUCE_SCATTER: *sb = x->recv; *rb = x->recv + mine; break;
    case STA_COLL_ALLGATHER: *sb = x->recv + mine; break;
    default: *sb = x->recv; break;
    }
}

strata_status_t stb_exec_run(stb_exec_t *x, const stb_perf_geom_t *g, int in_place)
{
    const stb_perf_opts_t *o = x->opts;
    void *sb, *rb;

    exec_bufs(x, g, in_place, &sb, &rb);
    switch (o->coll) {
    case STA_COLL_ALLREDUCE:
        return strata_allreduce(sb, rb, g->count, o->dtype, o->op, x->comm);
    case STA_COLL_REDUCE_SCATTER:
        return strata_reduce_scatter(sb, rb, g->count, o->dtype, o->op, x->comm);
    case STA_COLL_ALLGATHER:
        return strata_allgather(sb, rb, g->count, o->dtype, x->comm);
    case STA_COLL_BROADCAST:
        return strata_broadcast(sb, rb, g->count, o->dtype, o->root, x->comm);
    case STA_COLL_REDUCE:
        return strata_reduce(sb, rb, g->count, o->dtype, o->op, o->root, x->comm);
    default:
        return STRATA_ERR_INVALID;
    }
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

/* Writes this rank's input for one checked call, and poisons what it must receive. */
static void exec_fill(stb_exec_t *x, const stb_perf_geom_t *g, int in_place)
{
    const stb_perf_opts_t *o = x->opts;
    const size_t m = g->count, P = (size_t)x->nranks, r = (size_t)x->rank;
    void *sb, *rb;

    exec_bufs(x, g, in_place, &sb, &rb);
    memset(x->recv, EXEC_POISON, g->recv_bytes > g->send_bytes ? g->recv_bytes : g->send_bytes);
    switch (o->coll) {
    case STA_COLL_REDUCE_SCATTER:
        stb_data_fill(sb, m * P, o->dtype, o->op, x->rank, 0);
        break;
    case STA_COLL_ALLGATHER:
        stb_data_fill(sb, m, o->dtype, STRATA_SUM, x->rank, r * m);
        break;
    case STA_COLL_BROADCAST:
        if (x->rank == o->root)
            stb_data_fill(sb, m, o->dtype, STRATA_SUM, x->rank, 0);
        break;
    default:
        stb_data_fill(sb, m, o->dtype, o->op, x->rank, 0);
        break;
    }
}

/* Wrong elements in what this rank received. */
static size_t exec_verify(stb_exec_t *x, const stb_perf_geom_t *g, int in_place)
{
    const stb_perf_opts_t *o = x->opts;
    const size_t m = g->count, r = (size_t)x->rank;
    size_t wrong = 0;
    void *sb, *rb;

    exec_bufs(x, g, in_place, &sb, &rb);
    switch (o->coll) {
    case STA_COLL_ALLREDUCE:
        return stb_data_check_reduced(rb, m, &x->ref, 0, NULL);
    case STA_COLL_REDUCE_SCATTER:
        return stb_data_check_reduced(rb, m, &x->ref, r * m, NULL);
    case STA_COLL_ALLGATHER:
        for (int q = 0; q < x->nranks; q++)
            wrong += stb_data_check_input(x->recv + (size_t)q * m * x->esz, m, o->dtype, q,
                                          (size_t)q * m, NULL);
        return wrong;
    case STA_COLL_BROADCAST:
        return stb_data_check_input(rb, m, o->dtype, o->root, 0, NULL);
    case STA_COLL_REDUCE:
        return x->rank == o->root ? stb_data_check_reduced(rb, m, &x->ref, 0, NULL) : 0;
    default:
        return m;
    }
}

strata_status_t stb_exec_check(stb_exec_t *x, const stb_perf_geom_t *g, int in_place,
                               long long *wrong_p)
{
    strata_status_t status = STRATA_OK;
    int64_t wrong = 0;

    for (int i = 0; i < x->opts->check && status == STRATA_OK; i++) {
        exec_fill(x, g, in_place);
        status = stb_exec_run(x, g, in_place);
        if (status == STRATA_OK)
            wrong += (int64_t)exec_verify(x, g, in_place);
    }
    if (status == STRATA_OK)
        status = strata_allreduce(&wrong, &wrong, 1, STRATA_INT64, STRATA_SUM, x->comm);
    if (status == STRATA_OK)
        *wrong_p = (long long)wrong;
    return status;
}

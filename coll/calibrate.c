/*
 * STRATA_CALIBRATE=1: measure the two tiers at init, so the α-β model fits
 * this machine and fabric. Node 0 measures for everyone and its figures are
 * shared through the bootstrap, so every rank builds the same tables.
 *
 *   shm: local rank 0 of node 0 broadcasts 8 B .. 16 MiB through the node's
 *        segment, back to back; a broadcast is one shm phase in the model,
 *        α_s + n/β(n), β(n) the blend of the cache's β_llc and β_s, and
 *        sta_fit_shm_cache finds α_s, β_s, β_llc and the cache's size. Each
 *        size keeps its fastest pass. Only where the host's ranks fit its cores
 *        (below).
 *   net: local rank 0 of node 0 ping-pongs 8 B .. 4 MiB with local rank 0 of
 *        node 1 over the transport; one way = round trip / 2 = α_n + n/β_n.
 *        Each size keeps its fastest repetition (the machine is noisy; the
 *        minimum is the least disturbed), then sta_fit_alpha_beta fits the line.
 *
 *   ω:   only where the ranks outnumber a host's cores (the model pays ω there): every
 *        rank runs the flat ring allreduce of 8 bytes, whose 2(P-1) steps each cost
 *        α_n + ω in the model; rank 0 takes the median of its repetitions (a wake-up is
 *        the typical case there, not the exception), and ω = step - α_n.
 *   ω_y: only on one node whose ranks outnumber the host's cores: every rank runs 2 KiB
 *        allreduces back to back (one shm round each, sta_node_allreduce_small, the
 *        one-node allreduce's path at that size); local rank 0 takes the median of its
 *        passes, and ω_y solves the model's one-node allreduce at 2 KiB, linear in ω_y,
 *        for it. The shm tier keeps its defaults there (below), so α_s is not re-fitted.
 */
#include <stdlib.h>
#include <string.h>

#include "algos/exec.h"
#include "algos/node_shm.h"
#include "algos/profile.h"
#include "coll/calibrate.h"
#include "coll/comm.h"
#include "util/log.h"
#include "util/time.h"

#define CAL_REPS 8                       /* repetitions per size; the fastest counts */
static const size_t cal_sizes[] = {8, 4096, 65536, 1 << 20, 4 << 20};
#define CAL_NSIZES ((int)(sizeof(cal_sizes) / sizeof(cal_sizes[0])))

/* The shm broadcasts: sizes whose working sets reach past the host's caches; each pass times
 * about CAL_SHM_PASS_BYTES of calls back to back (CAL_SHM_CALLS_MIN..MAX), the fastest of
 * CAL_SHM_PASSES passes counts. */
static const size_t cal_shm_sizes[] = {8, 4096, 16384, 65536, 262144, 524288, 1 << 20,
                                       2 << 20, 4 << 20, 8 << 20, 16 << 20};
#define CAL_SHM_NSIZES ((int)(sizeof(cal_shm_sizes) / sizeof(cal_shm_sizes[0])))
#define CAL_SHM_PASSES 3
#define CAL_SHM_PASS_BYTES ((size_t)8 << 20)
#define CAL_SHM_CALLS_MIN 4
#define CAL_SHM_CALLS_MAX 100
#define CAL_MAX_BYTES ((size_t)16 << 20)

#define CAL_WAKE_REPS 25                 /* 8-byte ring allreduces timed for ω; the median counts */
#define CAL_WAKE_BYTES 8
#define CAL_YIELD_PASSES 5               /* passes of node allreduces for ω_y; the median counts */
#define CAL_YIELD_CALLS 50               /* calls a pass */
/*
 * ω_y's rounds carry 2 KiB: the one-round path's largest benchmarked size. A round of 8 B is a
 * turn at its shortest; rounds that carry bytes take longer than the model's copies add, and
 * ω_y from 8 B left them under: 1 x 4 on 2 cores, ω_y 1.3-2.3 µs from 8 B, 2 KiB rounds 3.7-3.8
 * µs and the two-round 8 KiB call 8.1-8.2 measured against 2.2 and 4-5 modelled (3.8 and 7.6
 * with ω_y 3 µs; 2 KiB rounds calibrate 2.3-3.3: docs/benchmarks.md, "Calibrating ω_y").
 */
#define CAL_YIELD_BYTES 2048
/* The one-round path; the segment's chunk, at least 4096 bytes a local rank (coll/comm.c), holds
 * it too. */
_Static_assert(CAL_YIELD_BYTES <= STA_NODE_SMALL_BYTES, "ω_y's rounds take the one-round path");

typedef struct cal_result {
    int32_t have_shm, have_net, have_wake, have_yield;
    sta_tier_t shm, net;
    sta_cache_t cache;          /* with have_shm */
    double wake_us, yield_us;
} cal_result_t;

/* us[i]: µs a broadcast of cal_shm_sizes[i] took, back to back (how the model prices one, and
 * how a benchmark's loop runs them), the final barrier's share spread over the calls. */
static strata_status_t cal_shm(strata_comm_t *comm, char *buf, double *us)
{
    sta_ctx_t *ctx = &comm->ctx;
    for (int i = 0; i < CAL_SHM_NSIZES; i++) {
        size_t n = cal_shm_sizes[i];
        int calls = (int)STU_MAX(CAL_SHM_CALLS_MIN,
                                 STU_MIN(CAL_SHM_CALLS_MAX, CAL_SHM_PASS_BYTES / n));
        double best = 1e30;
        for (int k = 0; k < CAL_SHM_PASSES; k++) {
            strata_status_t status = sta_node_barrier(ctx);
            uint64_t t0 = stu_time_ns();
            for (int c = 0; c < calls && status == STRATA_OK; c++)
                status = sta_node_bcast(ctx, buf, n, STRATA_UINT8, 0);
            if (status == STRATA_OK)
                status = sta_node_barrier(ctx);   /* until every reader has its copy */
            if (status != STRATA_OK)
                return status;
            double t = (double)(stu_time_ns() - t0) / 1e3 / calls;
            best = t < best ? t : best;
        }
        us[i] = best;
        if (ctx->local_rank == 0)
            STU_TRACE(STU_LOG_TUNING, "calibration: shm broadcast %zu B %.3f µs (%.2f GB/s)", n,
                      best, (double)n / (best * 1e3));
    }
    return STRATA_OK;
}

static strata_status_t cal_net(strata_comm_t *comm, int peer, int first, char *buf, double *us)
{
    sta_ctx_t *ctx = &comm->ctx;
    for (int i = 0; i < CAL_NSIZES; i++) {
        double best = 1e30;
        size_t n = cal_sizes[i];
        for (int k = 0; k < CAL_REPS; k++) {
            uint64_t t0 = stu_time_ns();
            strata_status_t status;
            if (first) {
                status = sta_sendrecv(ctx, peer, buf, n, -1, NULL, 0);
                if (status == STRATA_OK)
                    status = sta_sendrecv(ctx, -1, NULL, 0, peer, buf, n);
            } else {
                status = sta_sendrecv(ctx, -1, NULL, 0, peer, buf, n);
                if (status == STRATA_OK)
                    status = sta_sendrecv(ctx, peer, buf, n, -1, NULL, 0);
            }
            if (status != STRATA_OK)
                return status;
            double t = (double)(stu_time_ns() - t0) / 2e3;
            best = t < best ? t : best;
        }
        us[i] = best;
    }
    return STRATA_OK;
}

/*
 * The net ping-pong where the host's ranks outnumber its cores: only this pair runs (every
 * other rank sleeps in a bootstrap barrier), so it waits yielding (STA_WAIT_YIELD), and α_n
 * is the transport's latency, not a wake-up, which is ω's and measured apart (cal_wake).
 * Blocking, each leg would carry a wake-up; spinning, a pair the scheduler had placed on one
 * core (it puts tasks that wake each other together) takes a 50 µs spin a leg: 2 x 2 on 2
 * cores measured α_n 3.7-27 µs from run to run blocking, 3.1-53 spinning, 3.1-4.0 yielding.
 */
static strata_status_t cal_net_yielding(strata_comm_t *comm, int peer, int first, char *buf,
                                        double *us)
{
    sta_ctx_t *ctx = &comm->ctx;
    sta_wait_mode_t wait = ctx->wait;

    if (wait == STA_WAIT_BLOCK)
        ctx->wait = STA_WAIT_YIELD;
    strata_status_t status = cal_net(comm, peer, first, buf, us);
    ctx->wait = wait;
    return status;
}

static int cal_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The α_n the model will hold after the merge: a profile's or variable's wins over a
 * measurement, a measurement (this rank's, when it made one) over the default. */
static double cal_net_alpha(const strata_comm_t *comm, const cal_result_t *mine)
{
    if (mine->have_net && comm->model.source[STA_FIELD_NET_ALPHA] <= STA_SRC_CALIBRATED)
        return mine->net.alpha_us;
    return comm->model.net.alpha_us;
}

/* ω from rank 0's timing of the flat ring over every rank (collective); net_alpha is the
 * α_n the model will hold. */
static strata_status_t cal_wake(strata_comm_t *comm, char *buf, double net_alpha, double *wake)
{
    sta_ctx_t *ctx = &comm->ctx;
    double us[CAL_WAKE_REPS];
    size_t count = CAL_WAKE_BYTES / sizeof(float);

    for (int k = -1; k < CAL_WAKE_REPS; k++) {        /* k = -1: a warm-up */
        uint64_t t0 = stu_time_ns();
        strata_status_t status = sta_ring_allreduce(ctx, &comm->flat, buf, count, STRATA_FP32,
                                                    STRATA_SUM);
        if (status != STRATA_OK)
            return status;
        if (k >= 0)
            us[k] = (double)(stu_time_ns() - t0) / 1e3;
    }
    qsort(us, CAL_WAKE_REPS, sizeof(us[0]), cal_cmp);
    double step = us[CAL_WAKE_REPS / 2] / (2.0 * (ctx->nranks - 1));
    *wake = step > net_alpha ? step - net_alpha : 0.0;
    return STRATA_OK;
}

/* ω_y on one oversubscribed node (collective over the node's ranks); *have on local rank 0
 * where the model's one-node allreduce grows with ω_y (it always should). */
static strata_status_t cal_yield(strata_comm_t *comm, char *buf, double *yield_us, int32_t *have)
{
    sta_ctx_t *ctx = &comm->ctx;
    double us[CAL_YIELD_PASSES];
    const size_t count = CAL_YIELD_BYTES / sizeof(float);

    for (int k = 0; k < CAL_YIELD_PASSES; k++) {
        strata_status_t status = sta_node_barrier(ctx);
        uint64_t t0 = stu_time_ns();
        for (int c = 0; c < CAL_YIELD_CALLS && status == STRATA_OK; c++)
            status = sta_node_allreduce_small(ctx, buf, buf + CAL_YIELD_BYTES, count,
                                              STRATA_FP32, STRATA_SUM);
        if (status == STRATA_OK)
            status = sta_node_barrier(ctx);
        if (status != STRATA_OK)
            return status;
        us[k] = (double)(stu_time_ns() - t0) / 1e3 / CAL_YIELD_CALLS;
    }
    if (ctx->local_rank != 0)
        return STRATA_OK;
    qsort(us, CAL_YIELD_PASSES, sizeof(us[0]), cal_cmp);
    sta_dims_t dims = {.nranks = ctx->local_size, .nnodes = 1, .local_size = ctx->local_size,
                       .nrails = 1};
    sta_dims_set_host(&dims, comm->host_ranks, comm->host_cores, stt_name(comm->ops));
    sta_model_t m = comm->model;
    m.yield_us = 0.0;
    double t0 = sta_cost_us(&m, &dims, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, CAL_YIELD_BYTES);
    m.yield_us = 1.0;
    double t1 = sta_cost_us(&m, &dims, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, CAL_YIELD_BYTES);
    double t = us[CAL_YIELD_PASSES / 2];
    STU_TRACE(STU_LOG_TUNING, "calibration: one-node allreduce %d B %.3f µs (median of %d "
              "passes of %d), modelled %.3f + %.3f·ω_y", CAL_YIELD_BYTES, t, CAL_YIELD_PASSES,
              CAL_YIELD_CALLS, t0, t1 - t0);
    if (!(t0 >= 0.0 && t1 > t0))
        return STRATA_OK;
    *yield_us = t > t0 ? (t - t0) / (t1 - t0) : 0.0;
    *have = 1;
    return STRATA_OK;
}

strata_status_t stc_calibrate(strata_comm_t *comm)
{
    sta_ctx_t *ctx = &comm->ctx;
    cal_result_t mine, *all;
    double us[CAL_NSIZES], shm_us[CAL_SHM_NSIZES];
    strata_status_t status = STRATA_OK;
    char *buf = calloc(1, CAL_MAX_BYTES);

    memset(&mine, 0, sizeof(mine));
    all = calloc((size_t)ctx->nranks, sizeof(*all));
    if (buf == NULL || all == NULL) {
        status = STRATA_ERR_NO_MEMORY;
        goto out;
    }
    /* Where the ranks outnumber the cores a shm round is a turn of the ranks through the
     * cores, which the model charges as ω_y and its copies as the cores' share: measured,
     * they would be counted twice (1 x 4 on 2 cores: α_s 3.1-7.7 µs calibrated, rounds of
     * 2.9-6.5 µs modelled at 9-14), so the shm tier keeps its defaults there. */
    int oversub = comm->host_cores > 0 && comm->host_ranks > comm->host_cores;
    if (ctx->node == 0 && ctx->local_size > 1 && !oversub) {
        status = cal_shm(comm, buf, shm_us);
        if (status == STRATA_OK && ctx->local_rank == 0 &&
            sta_fit_shm_cache(cal_shm_sizes, shm_us, CAL_SHM_NSIZES, ctx->local_size,
                              &mine.shm, &mine.cache) == STRATA_OK)
            mine.have_shm = 1;
    }
    if (status == STRATA_OK && ctx->nnodes == 1 && ctx->local_size > 1 && oversub)
        status = cal_yield(comm, buf, &mine.yield_us, &mine.have_yield);
    /* One measurement at a time: the other ranks wait in a (sleeping) bootstrap barrier. */
    strata_status_t synced = stc_boot_barrier(&comm->boot);
    if (status == STRATA_OK)
        status = synced;
    if (status == STRATA_OK && ctx->nnodes > 1 && ctx->uniform && ctx->local_rank == 0 &&
        ctx->node <= 1) {
        int peer = ctx->rank_of[(size_t)(1 - ctx->node) * ctx->local_size];
        status = cal_net_yielding(comm, peer, ctx->node == 0, buf, us);
        if (status == STRATA_OK && ctx->node == 0 &&
            sta_fit_alpha_beta(cal_sizes, us, CAL_NSIZES, &mine.net) == STRATA_OK)
            mine.have_net = 1;
    }
    /* ... and the others wait here until it is over (the net ping-pong's pair has the
     * cores; before, they went on to ω's ring and spun or yielded next to it). */
    synced = stc_boot_barrier(&comm->boot);
    if (status == STRATA_OK)
        status = synced;
    /* ω, where the model pays it: every rank takes part. */
    if (status == STRATA_OK && ctx->nranks > 1 && comm->host_cores > 0 &&
        comm->host_ranks > comm->host_cores) {
        double alpha = cal_net_alpha(comm, &mine);
        status = cal_wake(comm, buf, alpha, &mine.wake_us);
        mine.have_wake = status == STRATA_OK && ctx->rank == 0;
    }
    /* Everyone takes rank 0's figures (rank 0 is local rank 0 of node 0). */
    strata_status_t shared = stc_boot_allgather(&comm->boot, &mine, all, sizeof(mine));
    if (status == STRATA_OK)
        status = shared;
    if (status == STRATA_OK) {
        sta_model_apply_calibration(&comm->model, all[0].have_shm ? &all[0].shm : NULL,
                                    all[0].have_net ? &all[0].net : NULL);
        if (all[0].have_shm)
            sta_model_apply_calibrated_cache(&comm->model, &all[0].cache);
        if (all[0].have_wake)
            sta_model_apply_calibrated_wake(&comm->model, all[0].wake_us);
        if (all[0].have_yield)
            sta_model_apply_calibrated_yield(&comm->model, all[0].yield_us);
        if (ctx->rank == 0)
            STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "calibration: shm %s α %.2f µs β %.2f GB/s, "
                     "cache β %.2f GB/s to %.0f B; net %s α %.2f µs β %.2f GB/s; wake-up %s "
                     "%.2f µs; yield turn %s %.2f µs", all[0].have_shm ? "measured" : "skipped",
                     all[0].shm.alpha_us,
                     all[0].shm.beta_gbps, all[0].cache.beta_gbps, all[0].cache.bytes,
                     all[0].have_net ? "measured" : "skipped",
                     all[0].net.alpha_us, all[0].net.beta_gbps,
                     all[0].have_wake ? "measured" : "skipped", all[0].wake_us,
                     all[0].have_yield ? "measured" : "skipped", all[0].yield_us);
    }
out:
    free(buf);
    free(all);
    return status;
}

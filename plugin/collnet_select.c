/*
 * The CollNet's choice of schedule per size: the collective library's cost model and
 * selection (algos/cost_model.h, algos/select.h) over a group of one rank per node
 * (sta_dims_one_per_node; the host terms from the members' records, stp_cn_dims), member
 * 0's model. Above the crossover the
 * ring (each head's collComm rides its own NIC, the device NCCL listened on: one ring per
 * rail); below it recursive doubling. STRATA_COLLNET_ALGO forces one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "algos/profile.h"
#include "plugin/collnet.h"
#include "util/log.h"
#include "util/param.h"

sta_algo_t stp_cn_forced_algo(void)
{
    const char *algo = stu_param_str(STU_PARAM_COLLNET_ALGO);
    sta_algo_t forced = STA_ALGO_AUTO;

    if (sta_algo_parse(algo, &forced) != STRATA_OK ||
        (forced != STA_ALGO_AUTO && forced != STA_ALGO_RING && forced != STA_ALGO_RECURSIVE)) {
        STU_WARN("collnet: STRATA_COLLNET_ALGO='%s' is not auto, ring or recursive; using auto",
                 algo);
        forced = STA_ALGO_AUTO;
    }
    return forced;
}

strata_status_t stp_cn_record_local(stp_cn_record_t *r)
{
    sta_model_t model;
    sta_algo_t forced;
    int64_t chunk = stu_param_int(STU_PARAM_COLLNET_CHUNK);

    if (sta_model_load(&model) != STRATA_OK) {
        STU_WARN("collnet: the cost model's profile could not be read (above); using the"
                 " defaults and STRATA_* variables");
        sta_model_default(&model);
        sta_model_apply_env(&model);
    }
    forced = stp_cn_forced_algo();
    /* chunk is within the table's 0..64M (an out-of-range value reads as the default);
     * 1..4K-1 is a piece smaller than its per-message cost: 4K (the table's comment) */
    if (chunk > 0 && chunk < STP_CN_MIN_PIECE)
        chunk = STP_CN_MIN_PIECE;
    memset(r, 0, sizeof(*r));
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        r->model[f] = *sta_model_field(&model, (sta_field_t)f);
    r->intra = (int32_t)model.intra;
    r->forced = forced;
    r->chunk = (uint32_t)chunk;
    if (stu_param_env(STU_PARAM_COLLNET_CHUNK) == NULL)
        r->flags |= STP_CN_REC_CHUNK_AUTO;
    const char *order = stu_param_str(STU_PARAM_COLLNET_ORDER);
    if (strcmp(order, "step") == 0)
        r->flags |= STP_CN_REC_ORDER_STEP;
    else if (strcmp(order, "piece") == 0)
        r->flags |= STP_CN_REC_ORDER_PIECE;
    else if (strcmp(order, "auto") != 0)
        STU_WARN("collnet: STRATA_COLLNET_ORDER='%s' is not auto, step or piece; using auto",
                 order);
    return STRATA_OK;
}

/* 1 when member i is the first of its host among recs: then *members counts the host's
 * members and *cores is the fewest cores they report. Quadratic in the group, once per
 * connect; the records stay in position order. */
static int host_first(const stp_cn_record_t *recs, int n, int i, int *members,
                      uint32_t *cores)
{
    for (int j = 0; j < i; j++)
        if (recs[j].host == recs[i].host)
            return 0;
    *members = 0;
    *cores = recs[i].cores;
    for (int j = i; j < n; j++) {
        if (recs[j].host == recs[i].host) {
            (*members)++;
            *cores = STU_MIN(*cores, recs[j].cores);
        }
    }
    return 1;
}

size_t stp_cn_piece_min(const stp_cn_record_t *recs, int n, const sta_model_t *model)
{
    uint32_t stripe = 0;

    if (n < 2 || !(recs[0].flags & STP_CN_REC_CHUNK_AUTO))
        return 0;
    for (int i = 0; i < n; i++) {
        if (!(recs[i].flags & STP_CN_REC_CPU_COPIES))
            return 0;
        stripe = STU_MAX(stripe, recs[i].stripe_min);
    }
    if (stripe == 0)
        return 0;
    /* each host's members: S streams at once on that host's C cores */
    for (int i = 0; i < n; i++) {
        int members;
        uint32_t cores;
        if (!host_first(recs, n, i, &members, &cores))
            continue;
        sta_dims_t dims;
        sta_dims_one_per_node(n, &dims);
        dims.net_cpu = 1;
        dims.host_ranks = members;
        dims.host_cores = (int)STU_MIN(cores, (uint32_t)INT32_MAX);
        size_t floor = sta_cost_net_msg_min(model, &dims, stripe);
        if (floor > 0)
            return floor;
    }
    return 0;
}

int stp_cn_pieces_in_turn(const stp_cn_record_t *recs, int n)
{
    if (n < 2 || (recs[0].flags & STP_CN_REC_ORDER_STEP))
        return 0;
    if (recs[0].flags & STP_CN_REC_ORDER_PIECE)
        return 1;
    for (int i = 0; i < n; i++)
        if (!(recs[i].flags & STP_CN_REC_CPU_COPIES))
            return 0;
    for (int i = 0; i < n; i++) {
        int members;
        uint32_t cores;
        if (host_first(recs, n, i, &members, &cores) && cores > 0 &&
            (uint32_t)members > cores)
            return 1;
    }
    return 0;
}

/* One collective's ranges on one line: "0..8191 B recursive, 8192 B.. ring". */
static void select_log_coll(const stp_cn_comm_t *c, sta_coll_t coll)
{
    char line[512];
    size_t at = 0, first = 0;

    /* what runs (stp_cn_select: the ring wherever the table names another algorithm than
     * recursive doubling), neighbouring ranges of one schedule merged */
    for (int i = 0, n = c->table.nranges[coll]; i < n && at < sizeof(line); i++) {
        const sta_select_range_t *r = &c->table.ranges[coll][i];
        sta_sched_kind_t kind = stp_cn_select(c, coll, first);
        if (i + 1 < n && r->upper != SIZE_MAX && stp_cn_select(c, coll, r->upper + 1) == kind)
            continue;                             /* the next range runs the same */
        const char *name = kind == STA_SCHED_RD_ALLREDUCE || kind == STA_SCHED_RD_ALLGATHER
                               ? "recursive" : "ring";
        if (r->upper == SIZE_MAX)
            at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%zu B and up -> %s",
                                   at ? ", " : "", first, name);
        else
            at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%zu..%zu B -> %s",
                                   at ? ", " : "", first, r->upper, name);
        first = r->upper + 1;
    }
    size_t mib = (size_t)1 << 20;
    char at1m[96] = "";
    for (int a = STA_ALGO_RING, n = 0; a <= STA_ALGO_RECURSIVE; a++) {
        double us = sta_cost_us(&c->table.model, &c->table.dims, coll, (sta_algo_t)a, mib);
        if (us >= 0)
            n += snprintf(at1m + n, sizeof(at1m) - (size_t)n, "%s%s %.1f us", n ? ", " : "",
                          sta_algo_name((sta_algo_t)a), us);
    }
    STU_INFO(STU_LOG_NET | STU_LOG_TUNING, "Strata collnet: %s %s (model at 1 MiB: %s)",
             sta_coll_name(coll), line, at1m);
}

void stp_cn_dims(const uint8_t *recs, int nranks, const char *transport, sta_dims_t *dims)
{
    int host_ranks = 0, host_cores = 0;

    for (int p = 0; p < nranks; p++) {
        stp_cn_record_t r, q;
        int n = 0, cores = 0;
        if (stp_cn_record_decode(recs + (size_t)p * STP_CN_RECORD_BYTES, &r) != STRATA_OK)
            continue;
        for (int k = 0; k < nranks; k++) {   /* r's host: its members, its fewest cores */
            if (stp_cn_record_decode(recs + (size_t)k * STP_CN_RECORD_BYTES, &q) != STRATA_OK ||
                q.host != r.host)
                continue;
            n++;
            int qc = (int)STU_MIN(q.cores, (uint32_t)INT32_MAX);
            if (qc > 0 && (cores == 0 || qc < cores))
                cores = qc;
        }
        if (n > host_ranks || (n == host_ranks && cores < host_cores)) {
            host_ranks = n;
            host_cores = cores;
        }
    }
    sta_dims_one_per_node(nranks, dims);
    sta_dims_set_host(dims, host_ranks, host_cores, transport);
}

strata_status_t stp_cn_select_build(stp_cn_comm_t *c, const uint8_t *recs,
                                    const stp_cn_record_t *dec)
{
    const stt_ops_t *ops = stp_state_transport();
    const stp_cn_record_t *r0 = &dec[0];
    sta_model_t model;
    sta_dims_t dims;
    strata_status_t status;

    stp_cn_record_model(r0, &model);
    stp_cn_dims(recs, c->nranks, ops != NULL ? stt_name(ops) : NULL, &dims);
    status = sta_select_build(&model, &dims, (sta_algo_t)r0->forced, &c->table);
    if (status != STRATA_OK)
        return status;
    c->chunk = r0->chunk;
    c->pieces_in_turn = stp_cn_pieces_in_turn(dec, c->nranks);
    c->piece_min = stp_cn_piece_min(dec, c->nranks, &model);
    if (stu_log_level >= STU_LOG_INFO) {
        STU_INFO(STU_LOG_NET | STU_LOG_TUNING, "Strata collnet: comm 0x%" PRIx64 " dev %d:"
                 " member %d of %d (NCCL rank %d), %d link(s), net alpha %g us beta %g GB/s,"
                 " gamma %g GB/s, STRATA_COLLNET_ALGO=%s, pieces of %zu B (member 0's;"
                 " 0: the model's per step), at least %zu B (%s), posted %s",
                 c->comm_id, c->dev, c->pos, c->nranks, c->rank, c->nlinks,
                 model.net.alpha_us, model.net.beta_gbps, model.gamma_gbps,
                 sta_algo_name((sta_algo_t)r0->forced), c->chunk, c->piece_min,
                 c->piece_min ? "the transport stripes from there, and the hosts' cores bound"
                                " the net" : "0: no floor",
                 c->pieces_in_turn ? "piece by piece" : "step by step");
        select_log_coll(c, STA_COLL_ALLREDUCE);
        select_log_coll(c, STA_COLL_ALLGATHER);
        select_log_coll(c, STA_COLL_REDUCE_SCATTER);
    }
    return STRATA_OK;
}

sta_sched_kind_t stp_cn_select(const stp_cn_comm_t *c, sta_coll_t coll, size_t bytes)
{
    sta_algo_t a = sta_select_lookup(&c->table, coll, bytes);

    switch (coll) {
    case STA_COLL_ALLREDUCE:
        return a == STA_ALGO_RECURSIVE ? STA_SCHED_RD_ALLREDUCE : STA_SCHED_RING_ALLREDUCE;
    case STA_COLL_ALLGATHER:
        /* recursive doubling gathers aligned runs of blocks: only when positions are NCCL's
         * ranks, so that those runs are contiguous in the window */
        if (a == STA_ALGO_RECURSIVE && c->identity)
            return STA_SCHED_RD_ALLGATHER;
        return STA_SCHED_RING_ALLGATHER;
    default:
        return STA_SCHED_RING_REDUCE_SCATTER;
    }
}

/*
 * The cost model's vocabulary: names of collectives, algorithms and intra-node kinds, their
 * parsers, the checks of dimensions and parameters, and which algorithm applies where
 * (algos/cost_model.h). The formulas are in cost_model.c, the shape-free sizes in
 * cost_sizes.c.
 */
#include "algos/cost_model.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const char *const coll_names[STA_COLL_COUNT] = {
    [STA_COLL_ALLREDUCE] = "allreduce",
    [STA_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [STA_COLL_ALLGATHER] = "allgather",
    [STA_COLL_BROADCAST] = "broadcast",
    [STA_COLL_REDUCE] = "reduce",
};

static const char *const algo_names[STA_ALGO_COUNT] = {
    [STA_ALGO_RING] = "ring",
    [STA_ALGO_RECURSIVE] = "recursive",
    [STA_ALGO_HIERARCHICAL] = "hierarchical",
    [STA_ALGO_LEADER] = "leader",
};

static const char *const intra_names[STA_INTRA_COUNT] = {
    [STA_INTRA_SHM] = "shm",
    [STA_INTRA_SWITCH] = "switch",
    [STA_INTRA_PCIE] = "pcie",
};

const char *sta_intra_name(sta_intra_t intra)
{
    if ((int)intra < 0 || intra >= STA_INTRA_COUNT)
        return "?";
    return intra_names[intra];
}

strata_status_t sta_intra_parse(const char *text, sta_intra_t *intra_p)
{
    for (int k = 0; text != NULL && k < STA_INTRA_COUNT; k++) {
        if (strcasecmp(text, intra_names[k]) == 0) {
            *intra_p = (sta_intra_t)k;
            return STRATA_OK;
        }
    }
    return STRATA_ERR_INVALID;
}

const char *sta_coll_name(sta_coll_t coll)
{
    if ((int)coll < 0 || coll >= STA_COLL_COUNT)
        return "?";
    return coll_names[coll];
}

const char *sta_algo_name(sta_algo_t algo)
{
    if (algo == STA_ALGO_AUTO)
        return "auto";
    if ((int)algo < 0 || algo >= STA_ALGO_COUNT)
        return "?";
    return algo_names[algo];
}

strata_status_t sta_algo_parse(const char *text, sta_algo_t *algo_p)
{
    if (text == NULL || *text == '\0' || strcasecmp(text, "auto") == 0) {
        *algo_p = STA_ALGO_AUTO;
        return STRATA_OK;
    }
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        if (strcasecmp(text, algo_names[a]) == 0) {
            *algo_p = (sta_algo_t)a;
            return STRATA_OK;
        }
    }
    return STRATA_ERR_INVALID;
}

void sta_dims_one_per_node(int nnodes, sta_dims_t *dims)
{
    *dims = (sta_dims_t){.nranks = nnodes, .nnodes = nnodes, .local_size = 1, .nrails = 1,
                         .unequal = 0, .contiguous = 1};
}

void sta_dims_set_host(sta_dims_t *dims, int host_ranks, int host_cores, const char *transport)
{
    dims->host_ranks = host_ranks > 0 ? host_ranks : 0;
    dims->host_cores = host_cores > 0 ? host_cores : 0;
    dims->net_cpu = transport != NULL && strcmp(transport, "tcp") == 0;
}

strata_status_t sta_dims_check(const sta_dims_t *dims)
{
    if (dims == NULL || dims->nranks < 1 || dims->nnodes < 1 || dims->local_size < 1)
        return STRATA_ERR_INVALID;
    if (dims->unequal ? (long long)dims->nnodes * dims->local_size < dims->nranks
                      : (long long)dims->nnodes * dims->local_size != dims->nranks)
        return STRATA_ERR_INVALID;
    if (dims->nrails < 1 || dims->nrails > dims->local_size)
        return STRATA_ERR_INVALID;
    if (dims->host_ranks < 0 || dims->host_cores < 0)
        return STRATA_ERR_INVALID;
    return STRATA_OK;
}

static int alpha_ok(double a)
{
    return isfinite(a) && a >= 0.0;
}

static int rate_ok(double b)
{
    return isfinite(b) && b > 0.0;
}

strata_status_t sta_model_check(const sta_model_t *model)
{
    if (model == NULL || !alpha_ok(model->shm.alpha_us) || !rate_ok(model->shm.beta_gbps) ||
        !alpha_ok(model->net.alpha_us) || !rate_ok(model->net.beta_gbps) ||
        !rate_ok(model->gamma_gbps) || !alpha_ok(model->wake_us) ||
        !alpha_ok(model->yield_us) ||
        !alpha_ok(model->cache.bytes) ||
        (model->cache.bytes > 0.0 && !rate_ok(model->cache.beta_gbps)) || (int)model->intra < 0 ||
        model->intra >= STA_INTRA_COUNT)
        return STRATA_ERR_INVALID;
    return STRATA_OK;
}

/*
 * Why algo cannot run coll on dims (a static sentence), or NULL when it can.
 * two_tier: also the condition of the collective library's two-tier code,
 * the same number of ranks on every node.
 */
static const char *algo_unfit(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo,
                              int two_tier)
{
    if (sta_dims_check(dims) != STRATA_OK || (int)coll < 0 || coll >= STA_COLL_COUNT ||
        (int)algo < 0 || algo >= STA_ALGO_COUNT)
        return "invalid dimensions, collective or algorithm";
    if (algo == STA_ALGO_RECURSIVE && coll == STA_COLL_REDUCE_SCATTER)
        return "reduce_scatter has no recursive variant";
    if (algo == STA_ALGO_RECURSIVE && coll == STA_COLL_ALLGATHER &&
        (dims->nranks & (dims->nranks - 1)) != 0)
        return "recursive allgather needs a power-of-two number of ranks";
    if (algo == STA_ALGO_LEADER && coll != STA_COLL_ALLREDUCE)
        return "leader is an allreduce algorithm only";
    if (two_tier && dims->unequal && (algo == STA_ALGO_HIERARCHICAL || algo == STA_ALGO_LEADER))
        return "two-tier algorithms need the same number of ranks on every node";
    return NULL;
}

int sta_algo_applies(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo)
{
    return algo_unfit(dims, coll, algo, 0) == NULL;
}

int sta_algo_selectable(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo)
{
    return algo_unfit(dims, coll, algo, 1) == NULL;
}

const char *sta_algo_unfit(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo)
{
    return algo_unfit(dims, coll, algo, 1);
}

/* One axis's communicator for the α-β model (tools/plan/plan_train_group.h). */
#include "tools/plan/plan_train_group.h"

#include <math.h>
#include <string.h>

#include "algos/select.h"

/* µs per ms: the model speaks µs, a training step ms. */
#define US_PER_MS 1e3

void stb_train_group_make(const stb_train_cluster_t *cluster, int size, int stride,
                          stb_train_group_t *group)
{
    const int G = cluster->gpus_per_node;
    int nodes = 0, last = -1, cur = 0, per = 0;

    /* Members 0, stride, 2·stride, ...: nodes in increasing order. */
    for (int i = 0; i < size; i++) {
        int node = (int)(((long long)i * stride) / G);
        if (node != last) {
            nodes++;
            cur = 0;
            last = node;
        }
        per = ++cur > per ? cur : per;
    }
    memset(group, 0, sizeof(*group));
    group->size = size;
    group->stride = stride;
    group->nodes = nodes;
    group->extent = last + 1;
    group->fabric = cluster->fabric;

    /* G/per groups of this axis on a node share its R NICs. */
    double share = (double)cluster->nics * per / G;
    int rails = (int)floor(share);
    rails = rails < 1 ? 1 : rails > per ? per : rails;
    group->fabric.net.beta_gbps *= share / rails;
    if (cluster->leaf_nodes > 0 && group->extent > cluster->leaf_nodes)
        group->fabric.net.beta_gbps /= cluster->oversub;
    group->dims = (sta_dims_t){.nranks = size, .nnodes = nodes, .local_size = per,
                               .nrails = rails, .unequal = nodes * per != size,
                               .contiguous = 1};
}

const char *stb_train_group_tier(const stb_train_group_t *group)
{
    if (group->nodes <= 1)
        return "intra";
    return group->dims.local_size == 1 ? "inter" : "intra+inter";
}

double stb_train_group_coll_ms(const stb_train_group_t *group, sta_coll_t coll, double bytes,
                               const char **algo_p)
{
    double us;

    if (group->size <= 1) {
        *algo_p = "-";
        return 0.0;
    }
    sta_algo_t algo = sta_select_best(&group->fabric, &group->dims, coll, (size_t)bytes, &us);
    *algo_p = sta_algo_name(algo);
    return us < 0.0 ? us : us / US_PER_MS;
}

double stb_train_group_alltoall_ms(const stb_train_group_t *group, double bytes)
{
    if (group->size <= 1)
        return 0.0;
    double us = sta_cost_alltoall_us(&group->fabric, &group->dims, (size_t)bytes);
    return us < 0.0 ? us : us / US_PER_MS;
}

double stb_train_sent_per_byte(const char *coll, int nranks)
{
    double p = nranks;
    if (nranks <= 1)
        return 0.0;
    if (strcmp(coll, "allreduce") == 0)
        return 2 * (p - 1) / p;
    if (strcmp(coll, "send/recv") == 0)
        return 1.0;
    return (p - 1) / p;
}

double stb_train_pp_step_ms(const stb_train_cluster_t *cluster, int stride, int stages,
                            double bytes, const char **tier_p)
{
    const int G = cluster->gpus_per_node, ngpus = cluster->nodes * G;
    int crossers = 0, rho = 1, intra = 0;

    /* Per node: its GPUs that hand off to another node, and its same-node hand-offs that
     * straddle the halves of a PCIe tree; the busiest node sets the pace. */
    for (int node = 0; node < cluster->nodes; node++) {
        int out = 0, straddle = 0;
        for (int j = 0; j < G; j++) {
            int r = node * G + j, to = r + stride;
            if (r / stride >= stages - 1 || to >= ngpus)
                continue;              /* the last stage hands nothing on */
            if (to / G != node) {
                out++;
            } else {
                intra = 1;
                straddle += (j < G / 2) != ((to % G) < G / 2);
            }
        }
        crossers = out > crossers ? out : crossers;
        rho = straddle > rho ? straddle : rho;
    }
    *tier_p = crossers == 0 ? "intra" : intra ? "intra+inter" : "inter";

    sta_model_t fabric = cluster->fabric;
    int extent = (int)(((long long)(stages - 1) * stride) / G) + 1;
    if (cluster->leaf_nodes > 0 && extent > cluster->leaf_nodes)
        fabric.net.beta_gbps /= cluster->oversub;
    sta_dims_t dims = {.nranks = ngpus, .nnodes = cluster->nodes, .local_size = G,
                       .nrails = cluster->nics < G ? cluster->nics : G, .contiguous = 1};
    if (cluster->nics > G)   /* more NICs than GPUs: a crossing GPU drives several */
        fabric.net.beta_gbps *= (double)cluster->nics / G;
    double us = sta_cost_step_us(&fabric, &dims, (size_t)bytes, crossers, rho);
    return us < 0.0 ? us : us / US_PER_MS;
}

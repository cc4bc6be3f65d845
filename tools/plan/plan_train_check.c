/* A training plan's inputs, completed and checked (stb_train_resolve, tools/plan/plan_train.h). */
#include <math.h>

#include "tools/lib/tool_util.h"
#include "tools/plan/plan_train.h"

static strata_status_t check_model(const stb_train_model_t *m, char *err, size_t errlen)
{
    if (!(m->params > 0.0) || !isfinite(m->params))
        return stb_err_set(err, errlen, "--params: a parameter count > 0 is needed");
    if (m->layers < 1 || m->hidden < 1 || m->seq < 1 || m->micro_batch < 1 ||
        m->micro_batches < 1)
        return stb_err_set(err, errlen, "--layers, --hidden, --seq, --micro-batch and "
                                        "--micro-batches must be >= 1");
    if (m->heads < 0 || (m->heads == 0 && m->hidden < STB_TRAIN_HEAD_DIM))
        return stb_err_set(err, errlen, "--heads: give the attention heads (hidden %d is under "
                                        "one 128-wide head)", m->hidden);
    if (!(m->value_bytes > 0.0) || !(m->grad_bytes > 0.0) || !(m->optim_bytes >= 0.0))
        return stb_err_set(err, errlen, "value, gradient and optimizer bytes must be > 0");
    if (m->experts < 0 || (m->experts > 0 && (m->top_k < 1 || m->top_k > m->experts)))
        return stb_err_set(err, errlen, "--experts E --top-k K: need 1 <= K <= E");
    if (stb_train_expert_params(m) >= m->params)
        return stb_err_set(err, errlen, "--params %.4g is not more than the experts' own %.4g "
                           "(E·8h²·layers): check --params, --hidden, --experts", m->params,
                           stb_train_expert_params(m));
    return STRATA_OK;
}

/* The largest cluster a plan walks GPU by GPU (pipeline hand-offs, groups): 2^20 GPUs, far
 * beyond any machine built so far, and a fraction of a second to evaluate. */
#define STB_TRAIN_MAX_GPUS (1LL << 20)

static strata_status_t check_cluster(const stb_train_cluster_t *c, const stb_train_compute_t *k,
                                     char *err, size_t errlen)
{
    if (c->nodes < 1 || c->gpus_per_node < 1 || c->nics < 1)
        return stb_err_set(err, errlen, "--nodes, --gpus-per-node and --nics must be >= 1");
    if ((long long)c->nodes * c->gpus_per_node > STB_TRAIN_MAX_GPUS)
        return stb_err_set(err, errlen, "%d nodes x %d GPUs: at most %lld GPUs", c->nodes,
                           c->gpus_per_node, STB_TRAIN_MAX_GPUS);
    if (sta_model_check(&c->fabric) != STRATA_OK)
        return stb_err_set(err, errlen, "the fabric: every alpha >= 0, every bandwidth > 0");
    if (!(c->oversub >= 1.0) || c->leaf_nodes < 0)
        return stb_err_set(err, errlen, "--oversub must be >= 1 and --leaf-nodes >= 0");
    if (!(c->gpu_mem_bytes > 0.0))
        return stb_err_set(err, errlen, "--gpu-mem must be > 0");
    if (!(k->compute_ms > 0.0) && !(k->peak_tflops > 0.0 && k->achieved > 0.0 &&
                                   k->achieved <= 1.0))
        return stb_err_set(err, errlen, "compute: give --peak-tflops and --achieved (0..1], "
                                        "or --compute-ms");
    return STRATA_OK;
}

strata_status_t stb_train_resolve(const stb_train_model_t *model,
                                  const stb_train_cluster_t *cluster,
                                  const stb_train_compute_t *compute, stb_train_layout_t *layout,
                                  char *err, size_t errlen)
{
    stb_train_layout_t l = *layout;
    strata_status_t status;
    long long ngpus = (long long)cluster->nodes * cluster->gpus_per_node;
    int heads;

    if ((status = check_model(model, err, errlen)) != STRATA_OK ||
        (status = check_cluster(cluster, compute, err, errlen)) != STRATA_OK)
        return status;
    heads = stb_train_heads(model);
    if (l.tp < 1 || l.pp < 1 || ngpus % ((long long)l.tp * l.pp) != 0)
        return stb_err_set(err, errlen, "--tp %d x --pp %d must divide the %lld GPUs", l.tp,
                           l.pp, ngpus);
    int dp = (int)(ngpus / ((long long)l.tp * l.pp));
    if (l.dp != 0 && l.dp != dp)
        return stb_err_set(err, errlen, "--dp %d: TP %d x PP %d x DP must be the %lld GPUs "
                           "(DP %d)", l.dp, l.tp, l.pp, ngpus, dp);
    l.dp = dp;
    l.ep = l.ep > 0 ? l.ep : 1;
    l.zero_group = l.zero_group > 0 ? l.zero_group : l.dp;
    l.micro_batches = l.micro_batches > 0 ? l.micro_batches : model->micro_batches;
    if (model->layers % l.pp != 0)
        return stb_err_set(err, errlen, "--pp %d must divide the %d layers", l.pp, model->layers);
    if (model->hidden % l.tp != 0 || heads % l.tp != 0)
        return stb_err_set(err, errlen, "--tp %d must divide the hidden size %d and the %d "
                           "heads", l.tp, model->hidden, heads);
    if (l.tp > cluster->gpus_per_node ? l.tp % cluster->gpus_per_node != 0
                                      : cluster->gpus_per_node % l.tp != 0)
        return stb_err_set(err, errlen, "--tp %d: a TP group must fill whole nodes of %d GPUs "
                           "or divide one", l.tp, cluster->gpus_per_node);
    if (l.dp % l.ep != 0 || (model->experts > 0 ? model->experts % l.ep != 0 : l.ep != 1))
        return stb_err_set(err, errlen, "--ep %d must divide DP %d and the %d experts", l.ep,
                           l.dp, model->experts);
    if (l.zero < 0 || l.zero > 3)
        return stb_err_set(err, errlen, "--zero: a stage 0..3");
    if (l.dp % l.zero_group != 0 || (l.zero == 0 && l.zero_group != l.dp))
        return stb_err_set(err, errlen, "--zero-group %d must divide DP %d (and needs --zero "
                           ">= 1)", l.zero_group, l.dp);
    if (l.buckets < 0)
        return stb_err_set(err, errlen, "--buckets: a count >= 1, or 0 for the best");
    *layout = l;
    return STRATA_OK;
}

/*
 * The model's side of a training plan: parameters per token, activation memory per layer,
 * and the gradient-bucket optimum (tools/plan/plan_train.h; docs/planner.md derives each).
 */
#include "tools/plan/plan_train.h"

#include <math.h>
#include <string.h>

/* A transformer layer's MLP with a 4h inner size holds two h×4h matrices: 8h² parameters,
 * which is one expert of a mixture-of-experts layer (Megatron-LM's layer: 4h² attention +
 * 8h² MLP = 12h²). */
#define STB_MLP_PARAMS_PER_H2 8.0

/* Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
 * Models"), 16-bit activations, per layer in units of s·b·h bytes: 34 for the layer's
 * tensors (attention, MLP, layer norms, 1-byte dropout masks) and 5·a·s/h for the attention
 * scores, softmax and its dropout; with sequence parallelism every term is divided by t.
 * Selective recomputation drops the 5·a·s/h term; full recomputation keeps only the
 * layer's input, 2·s·b·h. */
#define STB_ACT_LAYER_TERMS 34.0
#define STB_ACT_SCORE_TERMS 5.0
#define STB_ACT_FORMULA_BYTES 2.0

const char *stb_train_recompute_name(stb_recompute_t r)
{
    return r == STB_RECOMPUTE_FULL ? "full" : r == STB_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

double stb_train_axis_ms(const stb_train_result_t *result, const char *axis, int exposed)
{
    double ms = 0.0;
    for (int i = 0; i < result->ncomm; i++)
        if (strcmp(result->comm[i].axis, axis) == 0)
            ms += exposed ? result->comm[i].exposed_ms : result->comm[i].total_ms;
    return ms;
}

int stb_train_heads(const stb_train_model_t *model)
{
    return model->heads > 0 ? model->heads : model->hidden / STB_TRAIN_HEAD_DIM;
}

double stb_train_expert_params(const stb_train_model_t *model)
{
    if (model->experts <= 0)
        return 0.0;
    double h = model->hidden;
    return (double)model->experts * STB_MLP_PARAMS_PER_H2 * h * h * model->layers;
}

double stb_train_active_params(const stb_train_model_t *model)
{
    if (model->experts <= 0)
        return model->params;
    double h = model->hidden;
    double unused = (double)(model->experts - model->top_k) * STB_MLP_PARAMS_PER_H2 * h * h *
                    model->layers;
    return model->params - unused;
}

double stb_train_act_layer_bytes(const stb_train_model_t *model, int tp)
{
    double s = model->seq, b = model->micro_batch, h = model->hidden;
    double a = stb_train_heads(model);
    double sbh = s * b * h / tp;
    double width = model->value_bytes / STB_ACT_FORMULA_BYTES;

    switch (model->recompute) {
    case STB_RECOMPUTE_FULL:
        return model->value_bytes * sbh;
    case STB_RECOMPUTE_SELECTIVE:
        return width * sbh * STB_ACT_LAYER_TERMS;
    default:
        return width * sbh * (STB_ACT_LAYER_TERMS + STB_ACT_SCORE_TERMS * a * s / h);
    }
}

double stb_train_buckets_exposed(stb_train_cost_fn cost, const void *ctx, double grad_bytes,
                                 double window_ms, int k)
{
    double c = cost(ctx, grad_bytes / k);
    double tail = window_ms / k + k * c - window_ms;
    return c > tail ? c : tail;
}

int stb_train_buckets_best(stb_train_cost_fn cost, const void *ctx, double grad_bytes,
                           double window_ms, int kmax, double *exposed_p)
{
    int best = 1;
    double best_ms = stb_train_buckets_exposed(cost, ctx, grad_bytes, window_ms, 1);

    for (int k = 2; k <= kmax; k++) {
        double e = stb_train_buckets_exposed(cost, ctx, grad_bytes, window_ms, k);
        if (e < best_ms) {
            best = k;
            best_ms = e;
        }
    }
    if (exposed_p != NULL)
        *exposed_p = best_ms;
    return best;
}

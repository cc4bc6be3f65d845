/*
 * One training layout, evaluated (tools/plan/plan_train.h): each axis's collectives from the
 * library's α-β model and algorithm choice, then the step.
 *
 * The step, per GPU (docs/planner.md derives it). A stage computes one micro-batch in
 * t_mb = compute/M (forward 1/3 of it, or 1/4 under full recomputation, backward the rest);
 * the comm that sits on that path stretches it to a slot:
 *   slot = t_mb + TP + EP + ZeRO-3's unhidden gathers + PP's unhidden hand-offs (per mb)
 *   step = (M + p - 1)·slot + 2(p-1)·t_x + DP's exposed sync + ZeRO-1/2's parameter gather
 * (M + p - 1 slots: the pipeline's fill and drain add p - 1 of them, the bubble).
 */
#include "tools/plan/plan_train.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tools/lib/tool_util.h"
#include "tools/plan/plan_train_group.h"

/* Training FLOPs per parameter and token: forward 2 (a multiply-add per weight), backward 4
 * (gradients of inputs and of weights): 6 (Kaplan et al. 2020). Full recomputation runs
 * the forward once more: 8. */
#define STB_FLOPS_PER_PARAM 6.0
#define STB_FLOPS_RECOMPUTE 2.0
#define STB_FLOPS_FORWARD 2.0
/* Megatron-LM's tensor parallelism: two all-reduces per layer forward (after attention and
 * after the MLP) and two backward (their conjugates); a recomputed forward repeats its two.
 * Expert parallelism: an alltoall to dispatch the tokens and one to combine them, forward
 * and backward (and again in a recomputed forward). */
#define STB_TP_CALLS_PER_LAYER 4
#define STB_EP_CALLS_PER_LAYER 4
#define STB_RECOMPUTE_CALLS 2
/* The threshold for warning about the pipeline: efficiency M/(M+p-1) under 80 %. */
#define STB_PIPE_EFF_MIN 0.8
/* A collective whose exposed time is over 10 % of the step gets a warning. */
#define STB_WARN_EXPOSED_FRAC 0.10
/* TFLOP/s to FLOP/ms. */
#define STB_FLOP_PER_MS_PER_TFLOPS 1e9
/* Bytes per ms in one GB/s. */
#define STB_BYTES_PER_MS_PER_GBPS 1e6

typedef struct ev {
    const stb_train_model_t *model;
    const stb_train_cluster_t *cluster;
    const stb_train_compute_t *compute;
    stb_train_result_t *r;
    int t, p, d, e, f, M, ls;   /* ls: layers per stage */
    double act;                 /* b·s·h·w: one micro-batch's activations */
    double dense_gpu, exp_gpu;  /* parameters a GPU holds before ZeRO */
    double t_mb, t_f, t_b;      /* a stage's compute per micro-batch */
    double slot_extra;          /* comm per micro-batch on the critical path */
    double tail;                /* exposed comm outside the pipeline's slots */
    int crossed_leaf;
} ev_t;

static void warn(stb_train_result_t *r, const char *fmt, ...) STU_PRINTF(2, 3);

static void warn(stb_train_result_t *r, const char *fmt, ...)
{
    va_list ap;
    if (r->nwarnings >= STB_TRAIN_MAX_WARNINGS)
        return;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->nwarnings++], STB_TRAIN_WARNING_LEN, fmt, ap);
    va_end(ap);
}

static stb_train_comm_t *row_add(ev_t *v, const char *axis, const char *what, const char *coll,
                                 const char *algo, const stb_train_group_t *g, double calls,
                                 double bytes, double call_ms, double exposed_ms)
{
    stb_train_result_t *r = v->r;
    if (r->ncomm >= STB_TRAIN_MAX_COMMS)
        return NULL;
    stb_train_comm_t *c = &r->comm[r->ncomm++];
    *c = (stb_train_comm_t){
        .axis = axis, .what = what, .coll = coll, .algo = algo,
        .tier = stb_train_group_tier(g), .group = g->size, .group_nodes = g->nodes,
        .calls = calls, .call_bytes = bytes,
        .gpu_bytes = calls * bytes * stb_train_sent_per_byte(coll, g->size),
        .call_ms = call_ms, .total_ms = calls * call_ms, .exposed_ms = exposed_ms,
    };
    if (v->cluster->leaf_nodes > 0 && g->extent > v->cluster->leaf_nodes && g->nodes > 1)
        v->crossed_leaf = 1;
    return c;
}

/* Tensor parallelism: the layer's activations all-reduced, on the critical path. */
static void eval_tp(ev_t *v)
{
    stb_train_group_t g;
    const char *algo;

    if (v->t <= 1)
        return;
    stb_train_group_make(v->cluster, v->t, 1, &g);
    double per_layer = STB_TP_CALLS_PER_LAYER +
                       (v->model->recompute == STB_RECOMPUTE_FULL ? STB_RECOMPUTE_CALLS : 0);
    double per_mb = per_layer * v->ls;
    double ms = stb_train_group_coll_ms(&g, STA_COLL_ALLREDUCE, v->act, &algo);
    row_add(v, "tp", "activations", "allreduce", algo, &g, per_mb * v->M, v->act, ms,
            per_mb * v->M * ms);
    v->slot_extra += per_mb * ms;
}

/* Expert parallelism: each GPU's share of the tokens (its TP rank's, sequence-parallel) goes
 * to K experts and comes back, forward and backward. */
static void eval_ep(ev_t *v)
{
    stb_train_group_t g;
    const stb_train_model_t *m = v->model;

    if (m->experts <= 0 || v->e <= 1)
        return;
    stb_train_group_make(v->cluster, v->e, v->t, &g);
    double bytes = v->act * m->top_k / v->t;
    double per_layer = STB_EP_CALLS_PER_LAYER +
                       (m->recompute == STB_RECOMPUTE_FULL ? STB_RECOMPUTE_CALLS : 0);
    double per_mb = per_layer * v->ls;
    double ms = stb_train_group_alltoall_ms(&g, bytes);
    row_add(v, "ep", "tokens", "alltoall", "pairwise", &g, per_mb * v->M, bytes, ms,
            per_mb * v->M * ms);
    v->slot_extra += per_mb * ms;
}

/* Pipeline: each micro-batch's activations forward and their gradients backward across a
 * stage boundary, 1/t of them per TP rank (Megatron's scatter-gather). The fill and the
 * drain wait for p-1 hand-offs each; in the steady state a hand-off hides under the next
 * micro-batch's forward (or backward) unless it is longer. */
static void eval_pp(ev_t *v)
{
    stb_train_group_t g;
    const char *tier;

    if (v->p <= 1)
        return;
    double bytes = v->act / v->t;
    double tx = stb_train_pp_step_ms(v->cluster, v->t * v->d, v->p, bytes, &tier);
    double excess = fmax(0.0, tx - v->t_f) + fmax(0.0, tx - v->t_b);
    stb_train_group_make(v->cluster, v->p, v->t * v->d, &g);
    stb_train_comm_t *c = row_add(v, "pp", "activations+grads", "send/recv", "p2p", &g,
                                  2.0 * v->M, bytes, tx, 2 * (v->p - 1) * tx + v->M * excess);
    if (c != NULL)
        c->tier = tier;
    v->slot_extra += excess;
    v->tail += 2 * (v->p - 1) * tx;
}

typedef struct bucket_ctx {
    const stb_train_group_t *g;
    sta_coll_t coll;
} bucket_ctx_t;

static double bucket_cost(const void *ctx, double bytes)
{
    const bucket_ctx_t *b = ctx;
    const char *algo;
    return stb_train_group_coll_ms(b->g, b->coll, bytes, &algo);
}

/* A gradient sync in buckets that overlap the last micro-batch's backward. */
static void eval_bucketed(ev_t *v, const char *what, sta_coll_t coll, int size, int stride,
                          double grad_bytes)
{
    stb_train_group_t g;
    const char *algo;

    if (size <= 1)
        return;
    stb_train_group_make(v->cluster, size, stride, &g);
    bucket_ctx_t ctx = {&g, coll};
    int best = stb_train_buckets_best(bucket_cost, &ctx, grad_bytes, v->t_b, v->ls, NULL);
    int k = v->r->layout.buckets > 0 ? v->r->layout.buckets : best;
    if (v->r->buckets_best == 0)
        v->r->buckets_best = best;   /* the first sync's (the dense gradients') */
    double exposed = stb_train_buckets_exposed(bucket_cost, &ctx, grad_bytes, v->t_b, k);
    double ms = stb_train_group_coll_ms(&g, coll, grad_bytes / k, &algo);
    row_add(v, "dp", what, sta_coll_name(coll), algo, &g, k, grad_bytes / k, ms, exposed);
    v->tail += exposed;
}

/* ZeRO-3 (FSDP): every micro-batch gathers each layer's parameters before its forward and
 * again before its backward, and reduce-scatters its gradients after; the gather of layer
 * i+1 runs under layer i's compute (prefetch), so only the first gather and what a layer's
 * compute cannot cover show. */
static void eval_zero3(ev_t *v, const stb_train_group_t *g)
{
    const char *algo_ag, *algo_rs;
    double ag_n = v->dense_gpu / v->ls * v->model->value_bytes;
    double rs_n = v->dense_gpu / v->ls * v->model->grad_bytes;
    double ag = stb_train_group_coll_ms(g, STA_COLL_ALLGATHER, ag_n, &algo_ag);
    double rs = stb_train_group_coll_ms(g, STA_COLL_REDUCE_SCATTER, rs_n, &algo_rs);
    double f_l = v->t_f / v->ls, b_l = v->t_b / v->ls, rest = v->ls - 1;
    double ag_mb = 2 * ag + rest * (fmax(0.0, ag - f_l) + fmax(0.0, ag - b_l));
    double rs_mb = rs + rest * (fmax(0.0, ag + rs - b_l) - fmax(0.0, ag - b_l));

    row_add(v, "dp", "parameters", "allgather", algo_ag, g, 2.0 * v->ls * v->M, ag_n, ag,
            v->M * ag_mb);
    row_add(v, "dp", "gradients", "reduce_scatter", algo_rs, g, (double)v->ls * v->M, rs_n, rs,
            v->M * rs_mb);
    v->slot_extra += ag_mb + rs_mb;
}

/* Data parallelism and ZeRO on it; with f < d (HSDP) the shards' replicas all-reduce too.
 * Expert parameters are plain data parallel over the d/e replicas of each expert. */
static void eval_dp(ev_t *v)
{
    const stb_train_model_t *m = v->model;
    double grads = v->dense_gpu * m->grad_bytes;
    stb_train_group_t g;

    if (v->r->layout.zero == 0) {
        eval_bucketed(v, "gradients", STA_COLL_ALLREDUCE, v->d, v->t, grads);
    } else {
        stb_train_group_make(v->cluster, v->f, v->t, &g);
        if (v->r->layout.zero == 3) {
            if (v->f > 1)
                eval_zero3(v, &g);
        } else if (v->f > 1) {
            const char *algo;
            double params = v->dense_gpu * m->value_bytes;
            eval_bucketed(v, "gradients", STA_COLL_REDUCE_SCATTER, v->f, v->t, grads);
            double ms = stb_train_group_coll_ms(&g, STA_COLL_ALLGATHER, params, &algo);
            row_add(v, "dp", "parameters", "allgather", algo, &g, 1.0, params, ms, ms);
            v->tail += ms;
        }
        eval_bucketed(v, "gradients (replicas)", STA_COLL_ALLREDUCE, v->d / v->f, v->t * v->f,
                      grads / v->f);
    }
    if (m->experts > 0)
        eval_bucketed(v, "expert gradients", STA_COLL_ALLREDUCE, v->d / v->e, v->t * v->e,
                      v->exp_gpu * m->grad_bytes);
}

static void eval_memory(ev_t *v)
{
    const stb_train_model_t *m = v->model;
    stb_train_result_t *r = v->r;
    int z = r->layout.zero;
    double f = v->f;

    r->mem_weights = v->dense_gpu * m->value_bytes / (z >= 3 ? f : 1) + v->exp_gpu * m->value_bytes;
    r->mem_grads = v->dense_gpu * m->grad_bytes / (z >= 2 ? f : 1) + v->exp_gpu * m->grad_bytes;
    r->mem_optim = v->dense_gpu * m->optim_bytes / (z >= 1 ? f : 1) + v->exp_gpu * m->optim_bytes;
    r->act_layer_bytes = stb_train_act_layer_bytes(m, v->t);
    /* 1F1B: stage 0 holds min(p, M) micro-batches' activations at its peak. */
    r->act_inflight = v->p > 1 ? (v->p < v->M ? v->p : v->M) : 1;
    r->mem_act = r->act_layer_bytes * v->ls * r->act_inflight;
    r->mem_total = r->mem_weights + r->mem_grads + r->mem_optim + r->mem_act;
    r->fits = r->mem_total <= v->cluster->gpu_mem_bytes;
}

/* What TP would cost if its group shared one switch: the same link, a node of t GPUs. */
static double tp_in_one_node_ms(const ev_t *v)
{
    stb_train_cluster_t big = *v->cluster;
    stb_train_group_t g;
    const char *algo;

    big.gpus_per_node = v->t;
    stb_train_group_make(&big, v->t, 1, &g);
    return stb_train_group_coll_ms(&g, STA_COLL_ALLREDUCE, v->act, &algo);
}

static void eval_warnings(ev_t *v)
{
    stb_train_result_t *r = v->r;
    const stb_train_comm_t *tp = NULL;

    for (int i = 0; i < r->ncomm; i++)
        if (strcmp(r->comm[i].axis, "tp") == 0)
            tp = &r->comm[i];
    if (tp != NULL && tp->group_nodes > 1) {
        warn(r, "TP=%d spans %d nodes: its %.0f all-reduces cost %.1f ms per step through the "
             "NICs, %.1f ms if its %d GPUs shared one switch; keep TP <= %d (a node's GPUs) and "
             "give the factor %d to PP or DP", v->t, tp->group_nodes, tp->calls, tp->total_ms,
             tp->calls * tp_in_one_node_ms(v), v->t, v->cluster->gpus_per_node,
             v->t / v->cluster->gpus_per_node);
    }
    if (v->p > 1 && r->pipeline_efficiency < STB_PIPE_EFF_MIN) {
        double need = STB_PIPE_EFF_MIN / (1 - STB_PIPE_EFF_MIN);
        int m_fix = (int)ceil(need * (v->p - 1) - 1e-9);
        int p_fix = (int)floor(1 + v->M / need + 1e-9);
        warn(r, "pipeline efficiency %.1f%% (bubble %.1f%% of the step) is under %.0f%%: raise "
             "micro-batches per step from %d to %d, or cut stages from %d to %d",
             100 * r->pipeline_efficiency, 100 * r->bubble_fraction, 100 * STB_PIPE_EFF_MIN,
             v->M, m_fix, v->p, p_fix);
    }
    if (!r->fits) {
        warn(r, "needs %.1f GB per GPU, more than its %.1f GB (weights %.1f, gradients %.1f, "
             "optimizer %.1f, activations %.1f GB): %s", r->mem_total / 1e9,
             v->cluster->gpu_mem_bytes / 1e9, r->mem_weights / 1e9, r->mem_grads / 1e9,
             r->mem_optim / 1e9, r->mem_act / 1e9,
             r->layout.zero < 3 ? "a higher ZeRO stage, full recomputation, or more TP or PP"
                                : "full recomputation, or more TP or PP");
    }
    for (int i = 0; i < r->ncomm; i++) {
        const stb_train_comm_t *c = &r->comm[i];
        if (c->exposed_ms <= STB_WARN_EXPOSED_FRAC * r->step_ms)
            continue;
        warn(r, "%s %s of %s exposes %.1f ms (%.0f%% of the step) on the %s tier (group of %d "
             "over %d node(s))", c->axis, c->coll, c->what, c->exposed_ms,
             100 * c->exposed_ms / r->step_ms, c->tier, c->group, c->group_nodes);
    }
    if (v->crossed_leaf && v->cluster->oversub > 1.0)
        warn(r, "groups spanning more than %d nodes cross the leaf uplinks, costed at 1/%g of "
             "the NIC bandwidth (oversubscription); placing them under one leaf avoids it",
             v->cluster->leaf_nodes, v->cluster->oversub);
}

strata_status_t stb_train_eval(const stb_train_model_t *model, const stb_train_cluster_t *cluster,
                               const stb_train_compute_t *compute,
                               const stb_train_layout_t *layout, stb_train_result_t *result)
{
    const stb_train_layout_t *l = layout;
    stb_train_result_t *r = result;
    ev_t v = {.model = model, .cluster = cluster, .compute = compute, .r = result,
              .t = l->tp, .p = l->pp, .d = l->dp, .e = l->ep, .f = l->zero_group,
              .M = l->micro_batches};

    if (v.t < 1 || v.p < 1 || v.d < 1 || v.e < 1 || v.f < 1 || v.M < 1 ||
        model->layers % v.p != 0)
        return STRATA_ERR_INVALID;   /* not resolved */
    memset(r, 0, sizeof(*r));
    r->layout = *l;
    r->ngpus = cluster->nodes * cluster->gpus_per_node;
    v.ls = model->layers / v.p;
    v.act = (double)model->micro_batch * model->seq * model->hidden * model->value_bytes;
    double experts = stb_train_expert_params(model);
    v.dense_gpu = (model->params - experts) / ((double)v.t * v.p);
    v.exp_gpu = experts / ((double)v.t * v.p * v.e);

    r->active_params = stb_train_active_params(model);
    r->tokens = (double)v.d * v.M * model->micro_batch * model->seq;
    r->model_flops = STB_FLOPS_PER_PARAM * r->active_params * r->tokens;
    double per_param = STB_FLOPS_PER_PARAM +
                       (model->recompute == STB_RECOMPUTE_FULL ? STB_FLOPS_RECOMPUTE : 0);
    r->hw_flops = per_param * r->active_params * r->tokens;
    r->compute_ms = compute->compute_ms > 0.0
                        ? compute->compute_ms
                        : r->hw_flops / r->ngpus /
                              (compute->peak_tflops * compute->achieved *
                               STB_FLOP_PER_MS_PER_TFLOPS);
    v.t_mb = r->compute_ms / v.M;
    v.t_f = v.t_mb * STB_FLOPS_FORWARD / per_param;
    v.t_b = v.t_mb - v.t_f;

    eval_tp(&v);
    eval_ep(&v);
    eval_pp(&v);
    eval_dp(&v);

    double slot = v.t_mb + v.slot_extra;
    r->bubble_fraction = (double)(v.p - 1) / (v.M + v.p - 1);
    r->bubble_1f1b = (double)(v.p - 1) / v.M;
    r->pipeline_efficiency = (double)v.M / (v.M + v.p - 1);
    r->bubble_ms = (v.p - 1) * slot;
    r->step_ms = (v.M + v.p - 1) * slot + v.tail;
    double peak = compute->peak_tflops * STB_FLOP_PER_MS_PER_TFLOPS * r->ngpus * r->step_ms;
    r->mfu = compute->peak_tflops > 0.0 ? r->model_flops / peak : -1.0;
    r->hfu = compute->peak_tflops > 0.0 ? r->hw_flops / peak : -1.0;
    if (v.p > 1) {
        double hand_off = v.act / v.t;
        r->stage_gbps_avg = v.M * hand_off / r->compute_ms / STB_BYTES_PER_MS_PER_GBPS;
        r->stage_gbps_hide = hand_off / v.t_f / STB_BYTES_PER_MS_PER_GBPS;
    }
    eval_memory(&v);
    eval_warnings(&v);
    return STRATA_OK;
}

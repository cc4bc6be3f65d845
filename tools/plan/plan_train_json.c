/*
 * strata-plan train --json (tools/plan/plan_train_out.h); docs/planner.md lists every key.
 * A small writer: objects and arrays nest, members are separated and indented as they come,
 * strings are escaped, numbers that are not finite (or not known) are null.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algos/profile.h"
#include "tools/plan/plan_train_out.h"

#define JSON_MAX_DEPTH 8
#define GB 1e9
#define MIB 1048576.0

typedef struct json {
    FILE *out;
    int depth;
    int count[JSON_MAX_DEPTH];  /* members written at each level */
} json_t;

static void j_key(json_t *j, const char *key)
{
    fprintf(j->out, "%s\n%*s", j->count[j->depth]++ ? "," : "", 2 * j->depth, "");
    if (key != NULL)
        fprintf(j->out, "\"%s\": ", key);
}

static void j_open(json_t *j, const char *key, char brace)
{
    if (j->depth > 0)
        j_key(j, key);
    fputc(brace, j->out);
    if (j->depth < JSON_MAX_DEPTH - 1)
        j->count[++j->depth] = 0;
}

static void j_close(json_t *j, char brace)
{
    int had = j->count[j->depth];
    j->depth--;
    if (had)
        fprintf(j->out, "\n%*s", 2 * j->depth, "");
    fputc(brace, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

static void j_num(json_t *j, const char *key, double v)
{
    j_key(j, key);
    if (isfinite(v))
        fprintf(j->out, "%.10g", v);
    else
        fputs("null", j->out);
}

static void j_str(json_t *j, const char *key, const char *s)
{
    j_key(j, key);
    fputc('"', j->out);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(j->out, "\\%c", c);
        else if (c < 0x20)
            fprintf(j->out, "\\u%04x", c);
        else
            fputc(c, j->out);
    }
    fputc('"', j->out);
}

static void j_bool(json_t *j, const char *key, int v)
{
    j_key(j, key);
    fputs(v ? "true" : "false", j->out);
}

static void j_layout(json_t *j, const char *key, const stb_train_layout_t *l)
{
    j_open(j, key, '{');
    j_num(j, "tp", l->tp);
    j_num(j, "pp", l->pp);
    j_num(j, "dp", l->dp);
    j_num(j, "ep", l->ep);
    j_num(j, "zero", l->zero);
    j_num(j, "zero_group", l->zero_group);
    j_num(j, "micro_batches", l->micro_batches);
    j_num(j, "buckets", l->buckets > 0 ? l->buckets : NAN);
    j_close(j, '}');
}

/* One tier of the fabric: its α, β and where each came from; the kind or the NIC count. */
static void j_tier(json_t *j, const char *key, const stb_train_opts_t *o, const sta_tier_t *t,
                   sta_field_t alpha, sta_field_t beta, const char *skey, const char *sval,
                   double per_node)
{
    j_open(j, key, '{');
    if (skey != NULL)
        j_str(j, skey, sval);
    if (isfinite(per_node))
        j_num(j, "per_node", per_node);
    j_num(j, "gbps_per_direction", t->beta_gbps);
    j_num(j, "alpha_us", t->alpha_us);
    j_str(j, "bw_source", stb_train_opts_source(o, beta));
    j_str(j, "alpha_source", stb_train_opts_source(o, alpha));
    j_close(j, '}');
}

static void j_inputs(json_t *j, const stb_train_opts_t *o, const stb_train_result_t *r)
{
    const stb_train_model_t *m = &o->model;
    const stb_train_cluster_t *c = &o->cluster;
    const sta_model_t *f = &c->fabric;

    j_open(j, "model", '{');
    j_num(j, "params", m->params);
    j_num(j, "active_params", r->active_params);
    j_num(j, "layers", m->layers);
    j_num(j, "hidden", m->hidden);
    j_num(j, "heads", stb_train_heads(m));
    j_num(j, "seq", m->seq);
    j_num(j, "micro_batch", m->micro_batch);
    j_num(j, "value_bytes", m->value_bytes);
    j_num(j, "grad_bytes", m->grad_bytes);
    j_num(j, "optimizer_bytes", m->optim_bytes);
    j_num(j, "experts", m->experts);
    j_num(j, "top_k", m->experts > 0 ? m->top_k : NAN);
    j_str(j, "recompute", stb_train_recompute_name(m->recompute));
    j_close(j, '}');

    j_open(j, "cluster", '{');
    j_num(j, "nodes", c->nodes);
    j_num(j, "gpus_per_node", c->gpus_per_node);
    j_num(j, "gpus", r->ngpus);
    j_num(j, "gpu_mem_gb", c->gpu_mem_bytes / GB);
    j_tier(j, "intra", o, &f->shm, STA_FIELD_SHM_ALPHA, STA_FIELD_SHM_BETA, "kind",
           sta_intra_name(f->intra), NAN);
    j_tier(j, "nic", o, &f->net, STA_FIELD_NET_ALPHA, STA_FIELD_NET_BETA, NULL, NULL, c->nics);
    j_num(j, "gamma_gbps", f->gamma_gbps);
    j_num(j, "oversubscription", c->oversub);
    j_num(j, "leaf_nodes", c->leaf_nodes > 0 ? c->leaf_nodes : c->nodes);
    j_close(j, '}');

    j_open(j, "compute", '{');
    j_num(j, "peak_tflops", o->compute.peak_tflops > 0 ? o->compute.peak_tflops : NAN);
    j_num(j, "achieved", o->compute.compute_ms > 0 ? NAN : o->compute.achieved);
    j_num(j, "measured_ms", o->compute.compute_ms > 0 ? o->compute.compute_ms : NAN);
    j_close(j, '}');
}

static void j_axes(json_t *j, const stb_train_result_t *r)
{
    j_open(j, "axes", '[');
    for (int i = 0; i < r->ncomm; i++) {
        const stb_train_comm_t *c = &r->comm[i];
        j_open(j, NULL, '{');
        j_str(j, "axis", c->axis);
        j_str(j, "collective", c->coll);
        j_str(j, "moves", c->what);
        j_str(j, "algorithm", c->algo);
        j_str(j, "tier", c->tier);
        j_num(j, "group", c->group);
        j_num(j, "group_nodes", c->group_nodes);
        j_num(j, "calls_per_step", c->calls);
        j_num(j, "bytes_per_call", c->call_bytes);
        j_num(j, "bytes_per_gpu_per_step", c->gpu_bytes);
        j_num(j, "ms_per_call", c->call_ms);
        j_num(j, "ms_per_step", c->total_ms);
        j_num(j, "exposed_ms", c->exposed_ms);
        j_str(j, "hidden", stb_train_hidden(c));
        j_close(j, '}');
    }
    j_close(j, ']');
}

static void j_result(json_t *j, const stb_train_opts_t *o, const stb_train_result_t *r)
{
    j_layout(j, "layout", &r->layout);
    j_axes(j, r);
    j_num(j, "tokens_per_step", r->tokens);
    j_num(j, "model_flops", r->model_flops);
    j_num(j, "hardware_flops", r->hw_flops);
    j_num(j, "compute_ms", r->compute_ms);
    j_open(j, "bubble", '{');
    j_num(j, "fraction", r->bubble_fraction);
    j_num(j, "one_f_one_b", r->bubble_1f1b);
    j_num(j, "pipeline_efficiency", r->pipeline_efficiency);
    j_num(j, "ms", r->bubble_ms);
    j_close(j, '}');
    j_num(j, "step_ms", r->step_ms);
    j_num(j, "mfu", r->mfu >= 0 ? r->mfu : NAN);
    j_num(j, "hfu", r->hfu >= 0 ? r->hfu : NAN);
    j_open(j, "memory_gb", '{');
    j_num(j, "weights", r->mem_weights / GB);
    j_num(j, "gradients", r->mem_grads / GB);
    j_num(j, "optimizer", r->mem_optim / GB);
    j_num(j, "activations", r->mem_act / GB);
    j_num(j, "total", r->mem_total / GB);
    j_num(j, "capacity", o->cluster.gpu_mem_bytes / GB);
    j_bool(j, "fits", r->fits);
    j_num(j, "activation_layer_mib", r->act_layer_bytes / MIB);
    j_num(j, "activation_micro_batches", r->act_inflight);
    j_close(j, '}');
    j_open(j, "inter_stage_gbps", '{');
    j_num(j, "average", r->layout.pp > 1 ? r->stage_gbps_avg : NAN);
    j_num(j, "hide", r->layout.pp > 1 ? r->stage_gbps_hide : NAN);
    j_close(j, '}');
    j_num(j, "buckets_best", r->buckets_best > 0 ? r->buckets_best : NAN);
    j_open(j, "warnings", '[');
    for (int i = 0; i < r->nwarnings; i++)
        j_str(j, NULL, r->warnings[i]);
    j_close(j, ']');
}

static void j_ranking(json_t *j, const stb_train_ranking_t *k)
{
    int show = k->n < k->top ? k->n : k->top;

    j_open(j, "search", '{');
    j_num(j, "global_batch", k->global_batch);
    j_num(j, "tried", k->count.tried);
    j_num(j, "fit", k->count.fit);
    j_open(j, "ranking", '[');
    for (int i = 0; i < show; i++) {
        const stb_train_result_t *r = &k->rows[i];
        static const char *const axes[] = {"tp", "pp", "dp", "ep"};
        j_open(j, NULL, '{');
        j_num(j, "rank", i + 1);
        j_layout(j, "layout", &r->layout);
        j_num(j, "step_ms", r->step_ms);
        j_num(j, "mfu", r->mfu >= 0 ? r->mfu : NAN);
        j_num(j, "bubble_fraction", r->bubble_fraction);
        j_num(j, "memory_gb", r->mem_total / GB);
        j_open(j, "exposed_ms", '{');
        for (size_t a = 0; a < sizeof(axes) / sizeof(axes[0]); a++)
            j_num(j, axes[a], stb_train_axis_ms(r, axes[a], 1));
        j_close(j, '}');
        j_close(j, '}');
    }
    j_close(j, ']');
    j_close(j, '}');
}

void stb_train_print_json(FILE *out, const stb_train_opts_t *opts, const stb_train_result_t *r,
                          const stb_train_ranking_t *ranking)
{
    json_t j = {.out = out};

    j_open(&j, NULL, '{');
    j_str(&j, "tool", "strata-plan train");
    j_inputs(&j, opts, r);
    j_result(&j, opts, r);
    if (ranking != NULL && ranking->rows != NULL)
        j_ranking(&j, ranking);
    j_close(&j, '}');
}

/* strata-plan train's table and plot data (tools/plan/plan_train_out.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algos/profile.h"
#include "tools/plan/plan_train_out.h"

#define GB 1e9
#define MIB 1048576.0

/* The axes a plot's columns sum, in column order. */
static const char *const plot_axes[] = {"tp", "pp", "dp", "ep"};
#define NPLOT_AXES (sizeof(plot_axes) / sizeof(plot_axes[0]))

const char *stb_train_hidden(const stb_train_comm_t *c)
{
    if (c->exposed_ms <= STB_TRAIN_HIDDEN_FRAC * c->total_ms)
        return "yes";
    return c->exposed_ms < c->total_ms ? "partly" : "no";
}

void stb_train_label(const stb_train_layout_t *l, char *buf, size_t len)
{
    snprintf(buf, len, "TP%d PP%d DP%d EP%d Z%d", l->tp, l->pp, l->dp, l->ep, l->zero);
    if (l->zero > 0 && l->zero_group != l->dp) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, "/%d", l->zero_group);
    }
}

static void print_inputs(FILE *out, const stb_train_opts_t *o, const stb_train_result_t *r)
{
    const stb_train_model_t *m = &o->model;
    const stb_train_cluster_t *c = &o->cluster;
    const sta_model_t *f = &c->fabric;
    char label[64];

    fprintf(out, "# strata-plan train: one training step, per axis, from Strata's alpha-beta "
                 "model (docs/planner.md)\n");
    fprintf(out, "# model    : %.4g B parameters (%.4g B active), %d layers, hidden %d, %d heads,"
                 " seq %d; micro-batch %d x %d per step; values %g B, gradients %g B, optimizer"
                 " %g B/param; recompute %s\n", m->params / 1e9, r->active_params / 1e9,
            m->layers, m->hidden, stb_train_heads(m), m->seq,
            m->micro_batch, r->layout.micro_batches, m->value_bytes, m->grad_bytes,
            m->optim_bytes, stb_train_recompute_name(m->recompute));
    if (m->experts > 0)
        fprintf(out, "# experts  : %d per layer, top-%d, %.4g B parameters in experts\n",
                m->experts, m->top_k, stb_train_expert_params(m) / 1e9);
    fprintf(out, "# cluster  : %d node(s) x %d GPUs = %d GPUs, %.4g GB each\n", c->nodes,
            c->gpus_per_node, r->ngpus, c->gpu_mem_bytes / GB);
    fprintf(out, "# intra    : %s, %g GB/s per GPU per direction (%s%s%s), alpha %g us (%s)\n",
            sta_intra_name(f->intra), f->shm.beta_gbps,
            stb_train_opts_source(o, STA_FIELD_SHM_BETA), o->intra_note[0] ? ": " : "",
            o->intra_note, f->shm.alpha_us, stb_train_opts_source(o, STA_FIELD_SHM_ALPHA));
    fprintf(out, "# NICs     : %d per node x %g GB/s = %g Gb/s per direction (%s%s%s), alpha %g us"
                 " (%s); oversubscription %g:1 above %d-node leaves\n", c->nics,
            f->net.beta_gbps, f->net.beta_gbps * 8, stb_train_opts_source(o, STA_FIELD_NET_BETA),
            o->nic_note[0] ? ": " : "", o->nic_note, f->net.alpha_us,
            stb_train_opts_source(o, STA_FIELD_NET_ALPHA), c->oversub,
            c->leaf_nodes > 0 ? c->leaf_nodes : c->nodes);
    if (f->gamma_gbps < 1e5)
        fprintf(out, "# reduction: %g GB/s (%s)\n", f->gamma_gbps,
                stb_train_opts_source(o, STA_FIELD_GAMMA));
    if (o->compute.compute_ms > 0.0)
        fprintf(out, "# compute  : measured, %g ms per step per GPU%s\n", o->compute.compute_ms,
                o->compute.peak_tflops > 0 ? "" : " (no --peak-tflops: no MFU)");
    else
        fprintf(out, "# compute  : %g TFLOP/s peak x %g achieved per GPU\n",
                o->compute.peak_tflops, o->compute.achieved);
    stb_train_label(&r->layout, label, sizeof(label));
    fprintf(out, "# layout   : %s (TP x PP x DP = %d GPUs), micro-batches %d, buckets %s",
            label, r->ngpus, r->layout.micro_batches, r->layout.buckets ? "fixed" : "best");
    if (r->layout.buckets)
        fprintf(out, " (%d)", r->layout.buckets);
    fprintf(out, "\n#\n");
}

static void print_comm(FILE *out, const stb_train_result_t *r)
{
    fprintf(out, "# %-4s %-14s %-20s %5s %5s %-11s %-12s %7s %11s %11s %10s %10s %-6s\n", "axis",
            "collective", "moves", "group", "nodes", "tier", "algorithm", "calls", "MiB/call",
            "GB/GPU/step", "ms/step", "exposed ms", "hidden");
    if (r->ncomm == 0)
        fprintf(out, "  (no communication: one GPU)\n");
    for (int i = 0; i < r->ncomm; i++) {
        const stb_train_comm_t *c = &r->comm[i];
        fprintf(out, "  %-4s %-14s %-20s %5d %5d %-11s %-12s %7.0f %11.3f %11.3f %10.3f %10.3f "
                     "%-6s\n", c->axis, c->coll, c->what, c->group, c->group_nodes, c->tier,
                c->algo, c->calls, c->call_bytes / MIB, c->gpu_bytes / GB, c->total_ms,
                c->exposed_ms, stb_train_hidden(c));
    }
}

static void print_step(FILE *out, const stb_train_opts_t *o, const stb_train_result_t *r)
{
    const stb_train_layout_t *l = &r->layout;
    double exposed = 0.0;

    for (int i = 0; i < r->ncomm; i++)
        exposed += r->comm[i].exposed_ms;
    fprintf(out, "#\n# compute per step      : %.3f ms per GPU (%g x %.4g params x %.4g tokens"
                 " = %.4g FLOPs%s)\n", r->compute_ms, r->hw_flops / r->active_params / r->tokens,
            r->active_params, r->tokens, r->hw_flops,
            o->model.recompute == STB_RECOMPUTE_FULL ? ", recomputation included" : "");
    fprintf(out, "# pipeline bubble       : (p-1)/(M+p-1) = %d/%d = %.1f%% of the step; 1F1B "
                 "estimate (p-1)/M = %.1f%%; efficiency %.1f%%\n", l->pp - 1,
            l->micro_batches + l->pp - 1, 100 * r->bubble_fraction, 100 * r->bubble_1f1b,
            100 * r->pipeline_efficiency);
    fprintf(out, "# step time             : %.3f ms = compute %.3f + bubble %.3f + exposed "
                 "communication %.3f\n", r->step_ms, r->compute_ms, r->bubble_ms, exposed);
    if (r->mfu >= 0.0)
        fprintf(out, "# MFU, HFU              : %.1f%%, %.1f%% (of %g TFLOP/s per GPU)\n",
                100 * r->mfu, 100 * r->hfu, o->compute.peak_tflops);
    fprintf(out, "# memory per GPU        : %.2f GB of %.4g GB: weights %.2f, gradients %.2f, "
                 "optimizer %.2f, activations %.2f (%d micro-batch(es) x %d layers x %.1f MiB)"
                 "%s\n", r->mem_total / GB, o->cluster.gpu_mem_bytes / GB, r->mem_weights / GB,
            r->mem_grads / GB, r->mem_optim / GB, r->mem_act / GB, r->act_inflight,
            o->model.layers / l->pp, r->act_layer_bytes / MIB, r->fits ? "" : ": DOES NOT FIT");
    if (l->pp > 1)
        fprintf(out, "# inter-stage bandwidth : %.3f GB/s per direction moves a step's hand-offs"
                     " in its compute time; %.3f GB/s hides each under one micro-batch's "
                     "forward\n", r->stage_gbps_avg, r->stage_gbps_hide);
    if (r->buckets_best > 0)
        fprintf(out, "# gradient buckets      : best %d (least exposed DP sync)%s\n",
                r->buckets_best, l->buckets ? "" : ", used");
    for (int i = 0; i < r->nwarnings; i++)
        fprintf(out, "# warning: %s\n", r->warnings[i]);
}

static void print_ranking(FILE *out, const stb_train_ranking_t *k)
{
    char label[64];
    int show = k->n < k->top ? k->n : k->top;

    fprintf(out, "#\n# search: %d layouts of the same %g sequences per step evaluated, %d fit in "
                 "memory", k->count.tried, k->global_batch, k->count.fit);
    if (show == 0) {
        fprintf(out, ": none to rank (try --recompute full, or more GPUs or memory)\n");
        return;
    }
    fprintf(out, "; the fastest %d:\n", show);
    fprintf(out, "# %4s %-24s %5s %10s %7s %8s %9s %9s %9s %9s %8s\n", "rank", "layout", "M",
            "step ms", "MFU %", "bubble %", "tp ms", "pp ms", "dp ms", "ep ms", "mem GB");
    for (int i = 0; i < show; i++) {
        const stb_train_result_t *r = &k->rows[i];
        double axis_ms[NPLOT_AXES];
        for (size_t a = 0; a < NPLOT_AXES; a++)
            axis_ms[a] = stb_train_axis_ms(r, plot_axes[a], 1);
        char mfu[16] = "-";
        if (r->mfu >= 0)
            snprintf(mfu, sizeof(mfu), "%.1f", 100 * r->mfu);
        stb_train_label(&r->layout, label, sizeof(label));
        fprintf(out, "  %4d %-24s %5d %10.3f %7s %8.1f %9.3f %9.3f %9.3f %9.3f %8.2f\n", i + 1,
                label, r->layout.micro_batches, r->step_ms, mfu, 100 * r->bubble_fraction,
                axis_ms[0], axis_ms[1], axis_ms[2], axis_ms[3], r->mem_total / GB);
    }
    if (show > 0)
        fprintf(out, "# (per-axis columns: exposed ms per step)\n");
}

void stb_train_print_table(FILE *out, const stb_train_opts_t *opts, const stb_train_result_t *r,
                           const stb_train_ranking_t *ranking)
{
    print_inputs(out, opts, r);
    print_comm(out, r);
    print_step(out, opts, r);
    if (ranking != NULL && ranking->rows != NULL)
        print_ranking(out, ranking);
}

static void plot_line(FILE *out, const stb_train_result_t *r, const char *prefix)
{
    char label[64];
    double axis_ms[NPLOT_AXES], exposed = 0.0;

    for (int c = 0; c < r->ncomm; c++)
        exposed += r->comm[c].exposed_ms;
    for (size_t a = 0; a < NPLOT_AXES; a++)
        axis_ms[a] = stb_train_axis_ms(r, plot_axes[a], 0);
    stb_train_label(&r->layout, label, sizeof(label));
    fprintf(out, "\"%s%s\" %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n", prefix, label, r->compute_ms,
            axis_ms[0], axis_ms[1], axis_ms[2], axis_ms[3], exposed, r->step_ms);
}

void stb_train_write_plot(FILE *out, const stb_train_result_t *r,
                          const stb_train_ranking_t *ranking)
{
    fprintf(out, "# strata-plan train --plot-data: per layout, ms per step per GPU\n");
    fprintf(out, "# layout compute tp pp dp ep exposed step  (tp..ep: each axis's communication,"
                 " hidden or not)\n");
    plot_line(out, r, "chosen: ");
    for (int i = 0; ranking != NULL && i < ranking->n && i < ranking->top; i++) {
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "#%d: ", i + 1);
        plot_line(out, &ranking->rows[i], prefix);
    }
}

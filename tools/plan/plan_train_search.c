/*
 * strata-plan train --search: every layout of the GPUs that the model allows (TP dividing
 * a node unless allowed across, PP dividing the layers, EP dividing DP and the experts, each
 * ZeRO stage), at the same global batch, evaluated; those that fit in memory ranked by step
 * time: which parallelism survives this fabric.
 */
#include "tools/plan/plan_train_search.h"

#include <stdlib.h>

static int by_step(const void *a, const void *b)
{
    const stb_train_result_t *x = a, *y = b;
    return (x->step_ms > y->step_ms) - (x->step_ms < y->step_ms);
}

/* Keeps the best `max` in out[0..*n): appends, or replaces the slowest when full. */
static void keep(stb_train_result_t *out, int max, int *n, const stb_train_result_t *r)
{
    if (*n < max) {
        out[(*n)++] = *r;
        return;
    }
    int worst = 0;
    for (int i = 1; i < *n; i++)
        if (out[i].step_ms > out[worst].step_ms)
            worst = i;
    if (r->step_ms < out[worst].step_ms)
        out[worst] = *r;
}

int stb_train_search(const stb_train_search_in_t *in, stb_train_result_t *out, int max,
                     stb_train_search_count_t *count)
{
    const stb_train_cluster_t *c = in->cluster;
    const int G = c->gpus_per_node;
    const long long ngpus = (long long)c->nodes * G;
    const int experts = in->model->experts;
    stb_train_result_t *r = malloc(sizeof(*r));
    int n = 0;

    *count = (stb_train_search_count_t){0};
    if (r == NULL)
        return 0;
    for (long long tp = 1; tp <= ngpus; tp++) {
        if (ngpus % tp != 0 || (tp > G && (!in->allow_tp_cross || tp % G != 0)) ||
            (tp <= G && G % tp != 0))
            continue;
        for (int pp = 1; pp <= in->model->layers; pp++) {
            if (in->model->layers % pp != 0 || ngpus % (tp * pp) != 0)
                continue;
            long long dp = ngpus / (tp * pp);
            long long per = dp * in->model->micro_batch;
            if ((long long)in->global_batch % per != 0)
                continue;
            for (long long ep = 1; ep <= (experts > 0 ? dp : 1); ep++) {
                if (dp % ep != 0 || (experts > 0 && experts % ep != 0))
                    continue;
                for (int zero = 0; zero <= 3; zero++) {
                    stb_train_layout_t l = {
                        .tp = (int)tp, .pp = pp, .ep = (int)ep, .zero = zero,
                        .buckets = in->base->buckets,
                        .micro_batches = (int)((long long)in->global_batch / per),
                    };
                    if (stb_train_resolve(in->model, c, in->compute, &l, NULL, 0) != STRATA_OK)
                        continue;
                    if (stb_train_eval(in->model, c, in->compute, &l, r) != STRATA_OK)
                        continue;
                    count->tried++;
                    if (!r->fits)
                        continue;
                    count->fit++;
                    keep(out, max, &n, r);
                }
            }
        }
    }
    free(r);
    qsort(out, (size_t)n, sizeof(*out), by_step);
    return n;
}

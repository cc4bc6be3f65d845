/*
 * strata-plan train --search: the layouts that fit, ranked by step time
 * (tools/plan/plan_train_search.c). Pure computation over the caller's buffers, apart from
 * one scratch result on the heap; any thread.
 */
#ifndef STB_PLAN_TRAIN_SEARCH_H
#define STB_PLAN_TRAIN_SEARCH_H

#include "tools/plan/plan_train.h"

typedef struct stb_train_search_in {
    const stb_train_model_t *model;
    const stb_train_cluster_t *cluster;
    const stb_train_compute_t *compute;
    const stb_train_layout_t *base;   /* its bucket count is kept (0: each layout's best) */
    double global_batch;              /* sequences per step, the same for every layout */
    int allow_tp_cross;               /* TP groups may span nodes */
} stb_train_search_in_t;

typedef struct stb_train_search_count {
    int tried;                        /* valid layouts evaluated */
    int fit;                          /* of which fit in memory */
} stb_train_search_count_t;

/*
 * Evaluates every layout: TP dividing G (or a multiple of G with allow_tp_cross) and the
 * hidden size and heads, PP dividing the layers, DP = GPUs/(TP·PP) with M = global_batch /
 * (DP·b) whole, EP dividing DP and the experts, ZeRO 0..3 over all of DP. Writes the `max`
 * fastest that fit, fastest first, into out; returns how many.
 */
int stb_train_search(const stb_train_search_in_t *in, stb_train_result_t *out, int max,
                     stb_train_search_count_t *count);

#endif /* STB_PLAN_TRAIN_SEARCH_H */

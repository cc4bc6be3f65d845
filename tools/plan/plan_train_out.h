/*
 * strata-plan train's outputs: the table, the JSON document (keys in docs/planner.md) and
 * the plot data gnuplot draws (scripts/plan-train-plot.sh). Each writes to the stream it is
 * given; nothing else.
 */
#ifndef STB_PLAN_TRAIN_OUT_H
#define STB_PLAN_TRAIN_OUT_H

#include <stdio.h>

#include "tools/plan/plan_train.h"
#include "tools/plan/plan_train_opts.h"
#include "tools/plan/plan_train_search.h"

/* A collective "hides" when at most this fraction of its time shows in the step. */
#define STB_TRAIN_HIDDEN_FRAC 0.05

/* The search's outcome, for the outputs: NULL rows when --search was not asked. */
typedef struct stb_train_ranking {
    const stb_train_result_t *rows;
    int n;                      /* rows held, fastest first */
    int top;                    /* rows to show */
    stb_train_search_count_t count;
    double global_batch;
} stb_train_ranking_t;

/* "yes" (at most STB_TRAIN_HIDDEN_FRAC of it shows), "partly", "no". */
const char *stb_train_hidden(const stb_train_comm_t *comm);

/* "TP8 PP4 DP4 EP1 Z1": a layout in one word-free label (spaces between the axes). */
void stb_train_label(const stb_train_layout_t *layout, char *buf, size_t len);

void stb_train_print_table(FILE *out, const stb_train_opts_t *opts, const stb_train_result_t *r,
                           const stb_train_ranking_t *ranking);

void stb_train_print_json(FILE *out, const stb_train_opts_t *opts, const stb_train_result_t *r,
                          const stb_train_ranking_t *ranking);

/*
 * One line per layout (the chosen one, then the ranking's first `top`): a label, then the
 * compute per step and each axis's communication per step (tp pp dp ep, ms), the exposed
 * communication and the step time. '#' lines say what the columns are.
 */
void stb_train_write_plot(FILE *out, const stb_train_result_t *r,
                          const stb_train_ranking_t *ranking);

#endif /* STB_PLAN_TRAIN_OUT_H */

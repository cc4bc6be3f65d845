/*
 * strata-plan train: reads the options, builds the fabric (defaults, profile, command line),
 * evaluates the layout, searches when asked, and writes the table or the JSON document and
 * the plot data. Exit status: 0, 2 for bad input (the reason on stderr), 1 when a file cannot
 * be read or written.
 */
#include "tools/plan/plan_train_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/plan/plan_train_out.h"
#include "tools/plan/plan_train_search.h"

#define EXIT_BAD_INPUT 2
#define EXIT_IO 1

static int bad(const char *why)
{
    fprintf(stderr, "strata-plan train: %s\n", why);
    return EXIT_BAD_INPUT;
}

/* --global-batch: micro-batches = it / (DP x micro-batch), a whole number. */
static int apply_global_batch(stb_train_opts_t *o, char *err, size_t errlen)
{
    double per = (double)o->layout.dp * o->model.micro_batch;
    double m = o->global_batch / per;

    if (m < 1.0 || m != floor(m) || m > 1e9) {
        snprintf(err, errlen, "--global-batch %g is not a whole multiple of DP %d x "
                 "micro-batch %d", o->global_batch, o->layout.dp, o->model.micro_batch);
        return 0;
    }
    o->layout.micro_batches = (int)m;
    return 1;
}

static int write_plot(const char *path, const stb_train_result_t *r,
                      const stb_train_ranking_t *ranking)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 0;
    }
    stb_train_write_plot(f, r, ranking);
    if (fclose(f) != 0) {
        perror(path);
        return 0;
    }
    return 1;
}

int stb_train_main(int argc, char **argv)
{
    stb_train_opts_t o;
    stb_train_result_t r;
    stb_train_ranking_t ranking = {0};
    stb_train_result_t *rows = NULL;
    char err[320];
    int rc = 0;

    if (stb_train_opts_parse(argc, argv, &o, err, sizeof(err)) != STRATA_OK)
        return bad(err);
    if (o.help) {
        fputs(stb_train_usage(), stdout);
        return 0;
    }
    if (stb_train_opts_fabric(&o) != STRATA_OK)
        return o.profile != NULL ? EXIT_IO : bad("the fabric: alpha >= 0, bandwidths > 0");
    if (stb_train_resolve(&o.model, &o.cluster, &o.compute, &o.layout, err, sizeof(err)) !=
        STRATA_OK)
        return bad(err);
    if (o.global_batch > 0.0 && !apply_global_batch(&o, err, sizeof(err)))
        return bad(err);
    if (stb_train_eval(&o.model, &o.cluster, &o.compute, &o.layout, &r) != STRATA_OK)
        return bad("the layout could not be evaluated");
    if (o.search) {
        stb_train_search_in_t in = {
            .model = &o.model, .cluster = &o.cluster, .compute = &o.compute, .base = &o.layout,
            .global_batch = (double)o.layout.dp * o.layout.micro_batches * o.model.micro_batch,
            .allow_tp_cross = o.allow_tp_cross,
        };
        rows = calloc(STB_TRAIN_SEARCH_MAX, sizeof(*rows));
        if (rows == NULL)
            return bad("out of memory for the search");
        ranking.n = stb_train_search(&in, rows, STB_TRAIN_SEARCH_MAX, &ranking.count);
        ranking.rows = rows;
        ranking.top = o.top;
        ranking.global_batch = in.global_batch;
    }
    if (o.json)
        stb_train_print_json(stdout, &o, &r, &ranking);
    else
        stb_train_print_table(stdout, &o, &r, &ranking);
    if (o.plot_data != NULL && !write_plot(o.plot_data, &r, &ranking))
        rc = EXIT_IO;
    free(rows);
    return rc;
}

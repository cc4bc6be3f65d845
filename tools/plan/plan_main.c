/*
 * strata-plan: what Strata's α-β model predicts for a cluster of any size.
 *
 *   strata-plan -N 64 -L 8 -R 8 --shm-alpha 2 --shm-beta 450 --net-alpha 5 --net-beta 50
 *
 * prints the tiers (α, β, crossover n* = α·β), the selection table Strata would build
 * for that shape, and per size every selectable algorithm's predicted time, the choice,
 * and the algbw/busbw nccl-tests would report for it. `strata-plan nccl ...` shows instead
 * what the plugin's NCCL tuner hands NCCL (tools/plan/plan_nccl.h). Nothing runs on a network; the
 * figures are the model's, and docs/benchmarks.md says how far they held where measured.
 *
 *   strata-plan train --params 70B --layers 80 --hidden 8192 --nodes 16 --tp 8 --pp 4 ...
 *
 * plans a training step instead (tools/plan/plan_train_cli.c, docs/planner.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "algos/profile.h"
#include "algos/select.h"
#include "tools/plan/plan_nccl.h"
#include "tools/plan/plan_table.h"
#include "tools/plan/plan_train_cli.h"
#include "util/log.h"

/* Where a value came from: the command line, or the model's own source record. */
static const char *source_of(const stb_plan_opts_t *o, const sta_model_t *m, sta_field_t f)
{
    return o->value[f] >= 0.0 ? "command line" : sta_source_name(m->source[f]);
}

static void print_tier(const stb_plan_opts_t *o, const char *name, const sta_tier_t *t,
                       const sta_model_t *m, sta_field_t alpha, sta_field_t beta)
{
    printf("# tier %-4s: alpha %10.3f us (%s), beta %10.3f GB/s (%s), n* = alpha*beta = %.0f B\n",
           name, t->alpha_us, source_of(o, m, alpha), t->beta_gbps, source_of(o, m, beta),
           sta_tier_crossover_bytes(t));
}

static void print_ranges(const sta_select_t *t, sta_coll_t c)
{
    size_t lo = 0;

    printf("# selection %-14s:", sta_coll_name(c));
    for (int i = 0; i < t->nranges[c]; i++) {
        const sta_select_range_t *r = &t->ranges[c][i];
        if (r->upper == SIZE_MAX)
            printf(" %s from %zu B", sta_algo_name(r->algo), lo);
        else
            printf(" %s %zu..%zu B,", sta_algo_name(r->algo), lo, r->upper);
        lo = r->upper + 1;
    }
    printf("\n");
}

static void print_us(double us, int width)
{
    if (us < 0.0)
        printf(" %*s", width, "-");
    else
        printf(" %*.2f", width, us);
}

static void print_coll(const stb_plan_opts_t *o, const sta_select_t *t, sta_coll_t c)
{
    printf("#\n# %s\n#%12s", sta_coll_name(c), "size(B)");
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        char h[32];
        snprintf(h, sizeof(h), "%s(us)", sta_algo_name((sta_algo_t)a));
        printf(" %16s", h);
    }
    printf(" %13s %13s %11s %11s\n", "chosen", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    for (size_t n = o->min_bytes;; n *= o->factor) {
        stb_plan_row_t row;
        stb_plan_row(t, c, n, &row);
        printf(" %12zu", n);
        for (int a = 0; a < STA_ALGO_COUNT; a++)
            print_us(row.us[a], 16);
        printf(" %13s", sta_algo_name(row.chosen));
        print_us(row.chosen_us, 13);
        printf(" %11.3f %11.3f\n", row.algbw_gbps, row.busbw_gbps);
        if (n > o->max_bytes / o->factor)
            break;
    }
}

int main(int argc, char **argv)
{
    stb_plan_opts_t o;
    sta_model_t model;
    sta_select_t table;
    char err[256];

    stu_log_init();
    if (argc > 1 && strcmp(argv[1], "train") == 0)
        return stb_train_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "nccl") == 0)
        return stb_plan_nccl_main(argc - 1, argv + 1);   /* tools/plan/plan_nccl.h */
    if (stb_plan_opts_parse(argc, argv, &o, err, sizeof(err)) != STRATA_OK) {
        fprintf(stderr, "strata-plan: %s\n", err);
        return 2;
    }
    if (o.help) {
        fputs(stb_plan_usage(), stdout);
        fputs("strata-plan train [options]: what a training step costs per parallel axis "
              "(strata-plan train -h)\n", stdout);
        fputs("strata-plan nccl [options]: the table Strata's NCCL tuner hands NCCL, and "
              "NCCL's picks (strata-plan nccl -h)\n", stdout);
        return 0;
    }
    if (sta_model_load(&model) != STRATA_OK)
        return 1;                                /* the profile's error is logged */
    if (o.profile != NULL && sta_profile_read(o.profile, &model) != STRATA_OK)
        return 1;
    stb_plan_model_apply(&o, &model);
    if (sta_model_check(&model) != STRATA_OK) {
        fprintf(stderr, "strata-plan: invalid model (alpha >= 0, beta and gamma > 0)\n");
        return 2;
    }
    sta_dims_t dims = stb_plan_dims(&o, &model);
    if (sta_select_build(&model, &dims, STA_ALGO_AUTO, &table) != STRATA_OK)
        return 1;
    printf("# strata-plan: predictions of Strata's alpha-beta model (docs/algorithms.md)\n");
    printf("# cluster  : %d node(s) x %d rank(s) = %d ranks, %d rail(s) per node, ranks %s\n",
           o.nodes, o.per_node, dims.nranks, o.rails,
           o.interleaved ? "interleaved" : "contiguous per node");
    print_tier(&o, "shm", &model.shm, &model, STA_FIELD_SHM_ALPHA, STA_FIELD_SHM_BETA);
    print_tier(&o, "net", &model.net, &model, STA_FIELD_NET_ALPHA, STA_FIELD_NET_BETA);
    printf("# gamma    : %.3f GB/s (%s)\n", model.gamma_gbps,
           source_of(&o, &model, STA_FIELD_GAMMA));
    printf("# wake-up  : %.3f us (%s), paid per wait: %d rank(s) on a host of %d core(s)%s\n",
           model.wake_us, source_of(&o, &model, STA_FIELD_WAKE), o.host_ranks, o.host_cores,
           o.host_cores > 0 ? "" : " (unknown: never)");
    printf("# yield    : %.3f us (%s), a shm round of one node whose ranks outnumber the cores\n",
           model.yield_us, source_of(&o, &model, STA_FIELD_YIELD));
    printf("# shm cache: beta %.3f GB/s (%s) while the working set fits %.0f B (%s)\n",
           model.cache.beta_gbps, source_of(&o, &model, STA_FIELD_SHM_CACHE_BETA),
           model.cache.bytes, source_of(&o, &model, STA_FIELD_SHM_CACHE_BYTES));
    if (dims.net_cpu)
        printf("# net cpu  : transport %s: the net's bytes on the host's cores, %.1f GB/s a "
               "stream with a core each side%s\n", o.transport, STA_NET_CPU_GBPS,
               dims.host_cores > 0 ? "" : " (host cores unknown: never charged)");
    if (dims.net_msg_min > 0)
        printf("# pipeline : ring messages kept out of [%zu, %zu) B (the transport's striping "
               "size: the cores bound the net)\n", dims.net_msg_min / 2, dims.net_msg_min);
    for (int c = 0; c < STA_COLL_COUNT; c++)
        if (o.all_colls || (sta_coll_t)c == o.coll)
            print_ranges(&table, (sta_coll_t)c);
    for (int c = 0; c < STA_COLL_COUNT; c++)
        if (o.all_colls || (sta_coll_t)c == o.coll)
            print_coll(&o, &table, (sta_coll_t)c);
    return 0;
}

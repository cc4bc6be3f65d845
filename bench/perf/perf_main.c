/*
 * strata-perf: nccl-tests' all_reduce_perf (and reduce_scatter, all_gather,
 * broadcast, reduce) over Strata's collective library, with the same flags,
 * header, columns, bus bandwidth factors and footer, so its output diffs line
 * by line against nccl-tests'. Two columns are added at the right of each row:
 * the algorithm that ran at that size (the library's record) and the α-β model's
 * predicted time. --model adds a table of every algorithm forced, predicted
 * vs measured, and the selection regret (bench/perf/perf_model.h).
 *
 * Rank, size and the rendezvous come from the environment, as
 * strata_comm_init() reads them (STRATA_RANK/NRANKS/ROOT_ADDR/NODE_ID,
 * mpirun, srun, torchrun), so the same binary runs under mpirun or srun, or
 * under strata-run on one machine; rank 0 also takes an inherited listening
 * socket from STRATA_ROOT_FD (strata-run passes one). Only rank 0 prints the
 * table; exit status 1 when a rank failed or a value was wrong.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/introspect.h"
#include "bench/perf/perf_exec.h"
#include "bench/perf/perf_fmt.h"
#include "bench/perf/perf_model.h"
#include "bench/perf/perf_opts.h"
#include "strata/strata.h"
#include "util/param.h"

/* What each rank tells rank 0 for its "#  Rank" line. */
typedef struct perf_desc {
    int32_t pid;
    int32_t node;
    int32_t local;
    char host[52];
} perf_desc_t;

static void perf_fail(strata_comm_t *comm, int rank, const char *what, strata_status_t status)
{
    fprintf(stderr, "strata-perf: rank %d: %s failed: %s (%s)\n", rank, what,
            strata_status_str(status), comm != NULL ? strata_comm_error(comm) : "");
}

/* "#  Rank" lines, gathered from every rank (collective). */
static strata_status_t perf_devices(strata_comm_t *comm, int rank, int nranks)
{
    perf_desc_t mine, *all = calloc((size_t)nranks, sizeof(perf_desc_t));
    strata_status_t status;

    if (all == NULL)
        return STRATA_ERR_NO_MEMORY;
    memset(&mine, 0, sizeof(mine));
    mine.pid = (int32_t)getpid();
    mine.node = strata_comm_node(comm);
    mine.local = strata_comm_local_rank(comm);
    if (gethostname(mine.host, sizeof(mine.host) - 1) != 0)
        strcpy(mine.host, "?");
    status = strata_allgather(&mine, all, sizeof(mine), STRATA_UINT8, comm);
    if (status == STRATA_OK && rank == 0)
        for (int r = 0; r < nranks; r++)
            stb_perf_device_print(stdout, r, all[r].pid, all[r].host, all[r].node, all[r].local,
                                  "host memory");
    free(all);
    return status;
}

/* Strata's own header lines: the layout, each tier's α, β and n*, and the selection. */
static void perf_tiers(strata_comm_t *comm, sta_coll_t coll)
{
    sta_model_t m;
    sta_dims_t d;
    sta_select_range_t ranges[STA_SELECT_MAX_RANGES];
    const sta_tier_t *tiers[2];
    const char *names[2] = {"shm", "net"};
    char line[1024];
    int at;

    stb_comm_model(comm, &m, &d);
    tiers[0] = &m.shm;
    tiers[1] = &m.net;
    printf("#\n# Strata: %d ranks on %d node(s) of %d, %d rail(s), transport %s, "
           "STRATA_ALGO %s\n", strata_comm_nranks(comm), strata_comm_nnodes(comm),
           strata_comm_local_size(comm), d.nrails, stb_comm_transport(comm),
           sta_algo_name(stb_comm_forced(comm)));
    for (int i = 0; i < 2; i++) {
        sta_field_t fa = i == 0 ? STA_FIELD_SHM_ALPHA : STA_FIELD_NET_ALPHA;
        sta_field_t fb = i == 0 ? STA_FIELD_SHM_BETA : STA_FIELD_NET_BETA;
        printf("# Strata tier %s: alpha %g us (%s), beta %g GB/s (%s), n* = alpha*beta = "
               "%.0f B\n", names[i], tiers[i]->alpha_us, stb_comm_source(comm, fa),
               tiers[i]->beta_gbps, stb_comm_source(comm, fb),
               sta_tier_crossover_bytes(tiers[i]));
    }
    printf("# Strata shm cache: beta %g GB/s (%s) while the working set fits %.0f B (%s)\n",
           m.cache.beta_gbps, stb_comm_source(comm, STA_FIELD_SHM_CACHE_BETA), m.cache.bytes,
           stb_comm_source(comm, STA_FIELD_SHM_CACHE_BYTES));
    printf("# Strata gamma (reduction): %g GB/s (%s)\n", m.gamma_gbps,
           stb_comm_source(comm, STA_FIELD_GAMMA));
    printf("# Strata wake-up: %g us (%s), paid per wait: %d rank(s) on a host of %d core(s)\n",
           m.wake_us, stb_comm_source(comm, STA_FIELD_WAKE), d.host_ranks, d.host_cores);
    printf("# Strata yield turn: %g us (%s), a shm round of one node whose ranks outnumber the"
           " cores\n", m.yield_us, stb_comm_source(comm, STA_FIELD_YIELD));
    int n = stb_comm_ranges(comm, coll, ranges, STA_SELECT_MAX_RANGES);
    at = snprintf(line, sizeof(line), "# Strata selection %s:", sta_coll_name(coll));
    for (int i = 0; i < n && at < (int)sizeof(line); i++) {
        size_t lo = i == 0 ? 0 : ranges[i - 1].upper + 1;
        if (ranges[i].upper == SIZE_MAX)
            at += snprintf(line + at, sizeof(line) - (size_t)at, " %s from %zu B",
                           sta_algo_name(ranges[i].algo), lo);
        else
            at += snprintf(line + at, sizeof(line) - (size_t)at, " %s %zu..%zu B,",
                           sta_algo_name(ranges[i].algo), lo, ranges[i].upper);
    }
    printf("%s\n", line);
    const char *unfit = stb_comm_fallback(comm, coll);
    if (unfit != NULL)
        printf("# Strata: STRATA_ALGO %s does not apply to %s here (%s): the model's choice "
               "runs\n", sta_algo_name(stb_comm_forced(comm)), sta_coll_name(coll), unfit);
}

/* One size, both placements: time, check, print. Adds to the footer's sums. */
static strata_status_t perf_size(stb_exec_t *x, size_t size, double *bw_sum, int *bw_n,
                                 long long *wrong_total)
{
    const stb_perf_opts_t *o = x->opts;
    stb_perf_geom_t g = stb_perf_geom(o->coll, size, x->esz, x->nranks);
    double factor = stb_perf_busbw_factor(o->coll, x->nranks);
    strata_status_t status = STRATA_OK;
    stb_perf_row_t row;
    char buf[512];

    memset(&row, 0, sizeof(row));
    row.bytes = g.bytes;
    row.count = g.count;
    row.type = strata_dtype_name(o->dtype);
    row.redop = stb_perf_coll_has_op(o->coll) ? strata_op_name(o->op) : "none";
    row.root = stb_perf_coll_has_root(o->coll) ? o->root : -1;
    row.checked = o->check > 0;
    for (int p = 0; p < 2 && status == STRATA_OK; p++) {
        status = stb_exec_time(x, &g, p, o->warmup, o->iters, &row.time_us[p]);
        if (status != STRATA_OK)
            break;
        double sec = row.time_us[p] / 1e6;
        row.algbw[p] = sec > 0 ? (double)g.bytes / 1e9 / sec : 0;
        row.busbw[p] = row.algbw[p] * factor;
        *bw_sum += row.busbw[p];
        (*bw_n)++;
        if (o->check > 0) {
            status = stb_exec_check(x, &g, p, &row.wrong[p]);
            *wrong_total += row.wrong[p];
        }
    }
    /* the algorithm the timed calls ran (the library's record), and the model's time for it */
    const sta_algo_t ran = x->timed_algo;
    row.algo = sta_algo_name(ran);
    row.model_us = stb_comm_predict_us(x->comm, o->coll, ran, g.bytes);
    if (status == STRATA_OK && x->rank == 0) {
        stb_perf_row_format(&row, buf, sizeof(buf));
        fputs(buf, stdout);
        fflush(stdout);
    }
    return status;
}

/* The --model table, after the nccl-tests table (collective). */
static strata_status_t perf_model(stb_exec_t *x, const size_t *sizes, size_t n)
{
    const stb_perf_opts_t *o = x->opts;
    stb_model_row_t *rows = calloc(n, sizeof(*rows));
    char what[256];
    strata_status_t status;

    if (rows == NULL)
        return STRATA_ERR_NO_MEMORY;
    status = stb_model_sweep(x, sizes, n, rows);
    if (status == STRATA_OK && x->rank == 0) {
        snprintf(what, sizeof(what), "%s %s %s, out of place, median of %d rounds of %d "
                 "iterations (-a %d)", sta_coll_name(o->coll), strata_dtype_name(o->dtype),
                 stb_perf_coll_has_op(o->coll) ? strata_op_name(o->op) : "", o->rounds,
                 o->iters, (int)o->average);
        stb_model_print(stdout, rows, n, what);
        fflush(stdout);
    }
    free(rows);
    return status;
}

static int perf_main(const stb_perf_opts_t *o, const size_t *sizes, size_t nsizes)
{
    strata_comm_config_t config;
    strata_comm_t *comm = NULL;
    strata_status_t status;
    stb_exec_t x;
    double bw_sum = 0;
    int bw_n = 0;
    long long wrong = 0;

    strata_comm_config_init(&config);   /* rank 0 takes STRATA_ROOT_FD from strata-run */
    if ((status = strata_comm_init_config(&config, &comm)) != STRATA_OK) {
        fprintf(stderr, "strata-perf: communicator init failed: %s (run it under strata-run, "
                "mpirun or srun, or set STRATA_RANK, STRATA_NRANKS and STRATA_ROOT_ADDR)\n",
                strata_status_str(status));
        return 1;
    }
    const int rank = strata_comm_rank(comm), nranks = strata_comm_nranks(comm);
    if (stb_perf_coll_has_root(o->coll) && o->root >= nranks) {
        if (rank == 0)
            fprintf(stderr, "strata-perf: root %d is not below the %d ranks\n", o->root, nranks);
        strata_comm_destroy(comm);
        return 2;
    }
    if ((status = stb_exec_init(&x, comm, o, sizes[nsizes - 1])) != STRATA_OK) {
        perf_fail(comm, rank, "allocating the buffers", status);
        strata_comm_destroy(comm);
        return 1;
    }
    if (rank == 0) {
        stb_perf_hdr_t hdr = {STRATA_VERSION_STRING, stb_perf_test_name(o->coll), o};
        stb_perf_header_print(stdout, &hdr);
    }
    status = perf_devices(comm, rank, nranks);
    if (status == STRATA_OK && rank == 0) {
        perf_tiers(comm, o->coll);
        stb_perf_columns_print(stdout, 1);
        fflush(stdout);
    }
    for (size_t i = 0; i < nsizes && status == STRATA_OK; i++)
        status = perf_size(&x, sizes[i], &bw_sum, &bw_n, &wrong);
    if (status == STRATA_OK && rank == 0) {
        stb_perf_footer_print(stdout, wrong, bw_n > 0 ? bw_sum / bw_n : 0,
                              stb_perf_test_name(o->coll));
        fflush(stdout);
    }
    if (status == STRATA_OK && o->model)
        status = perf_model(&x, sizes, nsizes);
    if (status != STRATA_OK)
        perf_fail(comm, rank, "the benchmark", status);
    stb_exec_fini(&x);
    strata_comm_destroy(comm);
    return status != STRATA_OK || wrong != 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    static size_t sizes[STB_PERF_MAX_SIZES];
    stb_perf_opts_t opts;
    char err[256];

    if (stb_perf_opts_parse(argc, argv, &opts, err, sizeof(err)) != STRATA_OK) {
        fprintf(stderr, "strata-perf: %s\n%s", err, stb_perf_usage());
        return 2;
    }
    if (opts.help) {
        fputs(stb_perf_usage(), stdout);
        return 0;
    }
    size_t nsizes = stb_perf_sweep(&opts, sizes, STB_PERF_MAX_SIZES);
    if (nsizes > STB_PERF_MAX_SIZES) {
        fprintf(stderr, "strata-perf: the sweep has %zu sizes, more than %d\n", nsizes,
                STB_PERF_MAX_SIZES);
        return 2;
    }
    return perf_main(&opts, sizes, nsizes);
}

/*
 * strata-collnet: the plugin's CollNet driven as NCCL's proxy drives it, next to the
 * collective library's own allreduce (hierarchical and ring) on the same ranks, and the
 * α-β model's bound. One rank per node: the CollNet runs the inter-node stage of NCCL's
 * CollNet Chain, where each node's head holds the node's partial sum.
 *
 *   strata-run -n 4 --nodes 4 --netns [--inter-rate 2gbit] -- \
 *       strata-collnet [-b 8] [-e 64M] [-f 4] [-n 10] [-w 2] [--rounds 5] [--call 2M]
 *                      [--depth 8] [--version 11] [--plugin SO] [-m collnet,hier,ring] [-c] [-v]
 *
 * Per size n (bytes of fp32 summed):
 *   collnet   n cut into NCCL-sized calls (--call, default 2 MiB: CollNet Chain's 8 subs of
 *             256 KiB), --depth of them in flight (NCCL_STEPS), test() oldest first and
 *             sched_yield() after a test that found nothing done, as the proxy's progress
 *             thread; the handles were gathered with the library's allgather
 *   hier      strata_allreduce with the hierarchical algorithm forced (stb_comm_force)
 *   ring      strata_allreduce with the ring forced
 *   bound     the α-β model's time for the cheaper of ring and recursive doubling over N
 *             nodes of one rank (sta_dims_one_per_node), with this comm's model (set
 *             STRATA_NET_ALPHA_US / STRATA_NET_BETA_GBPS to the link's figures)
 * Rounds are interleaved (collnet, hier, ring, then again), each a barrier and -n timed
 * calls after -w untimed ones; a round's time is the slowest rank's; rows print the median
 * round. busbw = 2 (N-1)/N x n / t, as nccl-tests. cn.cpu, hier.cpu, ring.cpu: the CPU time
 * (user + system) a rank used per call, the median round's, averaged over the ranks: on a
 * shared machine the time follows the CPU a method needs; .vcs and .ivcs: its voluntary
 * (sleeps) and involuntary (preemptions, yields that gave the core away) context switches
 * per call, likewise: how a method waits. -m runs only the methods named (the
 * others' columns print 0, their ratios inf or nan). -c checks one call of each per size; -v
 * shows the plugin's INFO lines (with STRATA_DEBUG=INFO: the CollNet's table at connect), -vv
 * its TRACE lines too (with STRATA_DEBUG=TRACE: the wait's decisions by the host's load).
 */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "algos/cost_model.h"
#include "tools/lib/tool_data.h"
#include "coll/introspect.h"
#include "strata/strata.h"
#include "tools/lib/plugin_collnet.h"
#include "tools/lib/tool_util.h"
#include "util/compiler.h"
#include "util/time.h"

#define CN_MAX_ROUNDS 64
#define CN_HANDLE_BYTES STB_PLUGIN_HANDLE_SIZE

typedef struct cn_opts {
    size_t min_bytes, max_bytes, call_bytes;
    int factor, iters, warmup, rounds, depth, version, check, verbose;
    unsigned methods;        /* bit m: method m runs (-m) */
    const char *plugin;
} cn_opts_t;

typedef struct cn_bench {
    cn_opts_t o;
    strata_comm_t *comm;
    int rank, nranks;
    stb_plugin_t *plugin;
    stb_collnet_t *cn;
    void *ccomm;
    float *send, *recv;
    void *send_mh, *recv_mh;
} cn_bench_t;

enum { M_COLLNET = 0, M_HIER, M_RING, M_COUNT };
static const char *const method_names[M_COUNT] = {"collnet", "hier", "ring"};

/* -m: a comma-separated list of method names into a bit set. */
static int cn_methods_parse(const char *list, unsigned *set)
{
    char buf[64];
    *set = 0;
    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        int m = 0;
        while (m < M_COUNT && strcmp(tok, method_names[m]) != 0)
            m++;
        if (m == M_COUNT)
            return -1;
        *set |= 1u << m;
    }
    return *set != 0 ? 0 : -1;
}

static void cn_usage(FILE *f)
{
    fprintf(f, "usage: strata-collnet [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]"
               " [--rounds R] [--call BYTES] [--depth D] [--version 11|12] [--plugin SO]"
               " [-m collnet,hier,ring] [-c] [-v]\n"
               "       (one rank per node, under strata-run or any launcher strata_comm_init"
               " reads)\n");
}

static int cn_parse(int argc, char **argv, cn_opts_t *o)
{
    static const struct option longs[] = {
        {"rounds", required_argument, NULL, 'R'}, {"call", required_argument, NULL, 'C'},
        {"depth", required_argument, NULL, 'D'}, {"version", required_argument, NULL, 'V'},
        {"plugin", required_argument, NULL, 'P'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    *o = (cn_opts_t){.min_bytes = 8, .max_bytes = (size_t)64 << 20, .call_bytes = (size_t)2 << 20,
                     .factor = 4, .iters = 10, .warmup = 2, .rounds = 5, .depth = 8,
                     .version = 11, .plugin = STRATA_PLUGIN_PATH, .methods = (1u << M_COUNT) - 1};
    while ((c = getopt_long(argc, argv, "b:e:f:n:w:m:cvh", longs, NULL)) != -1) {
        switch (c) {
        case 'b': bad |= stb_size_parse(optarg, &o->min_bytes) != STRATA_OK; break;
        case 'e': bad |= stb_size_parse(optarg, &o->max_bytes) != STRATA_OK; break;
        case 'C': bad |= stb_size_parse(optarg, &o->call_bytes) != STRATA_OK; break;
        case 'f': bad |= stb_int_parse(optarg, 2, 1024, &o->factor) != STRATA_OK; break;
        case 'n': bad |= stb_int_parse(optarg, 1, 1000000, &o->iters) != STRATA_OK; break;
        case 'w': bad |= stb_int_parse(optarg, 0, 1000000, &o->warmup) != STRATA_OK; break;
        case 'R': bad |= stb_int_parse(optarg, 1, CN_MAX_ROUNDS, &o->rounds) != STRATA_OK; break;
        case 'D': bad |= stb_int_parse(optarg, 1, 64, &o->depth) != STRATA_OK; break;
        case 'V': bad |= stb_int_parse(optarg, 11, 12, &o->version) != STRATA_OK; break;
        case 'P': o->plugin = optarg; break;
        case 'm': bad |= cn_methods_parse(optarg, &o->methods) != 0; break;
        case 'c': o->check = 1; break;
        case 'v': o->verbose++; break;
        case 'h': cn_usage(stdout); exit(0);
        default: bad = 1; break;
        }
    }
    if (bad || optind != argc || o->min_bytes < 4 || o->min_bytes > o->max_bytes ||
        o->call_bytes < 4) {
        cn_usage(stderr);
        return -1;
    }
    return 0;
}

/* The CollNet group: every rank's handle through the library's allgather, then connect. */
static strata_status_t cn_setup(cn_bench_t *b)
{
    uint8_t mine[CN_HANDLE_BYTES];
    uint8_t *all = calloc((size_t)b->nranks, CN_HANDLE_BYTES);
    void **handles = calloc((size_t)b->nranks, sizeof(void *));
    void *lcomm = NULL;
    strata_status_t status;
    uint64_t comm_id = 0x53434e42ull;    /* "SCNB": one group per run */

    if (all == NULL || handles == NULL)
        return STRATA_ERR_NO_MEMORY;
    if ((status = stb_plugin_open(b->o.plugin, comm_id, b->o.verbose, &b->plugin)) != STRATA_OK ||
        (status = stb_collnet_open(b->plugin, b->o.version, comm_id, &b->cn)) != STRATA_OK ||
        (status = stb_collnet_listen(b->cn, 0, mine, &lcomm)) != STRATA_OK)
        goto out;
    status = strata_allgather(mine, all, CN_HANDLE_BYTES, STRATA_UINT8, b->comm);
    if (status != STRATA_OK)
        goto out;
    for (int r = 0; r < b->nranks; r++)
        handles[r] = all + (size_t)r * CN_HANDLE_BYTES;
    status = stb_collnet_connect(b->cn, handles, b->nranks, b->rank, lcomm, &b->ccomm);
    if (status == STRATA_OK)
        stb_collnet_close_listen(b->cn, lcomm);
    if (status != STRATA_OK)
        goto out;
    size_t bytes = b->o.max_bytes;
    if ((status = stb_collnet_reg(b->cn, b->ccomm, b->send, bytes, &b->send_mh)) != STRATA_OK)
        goto out;
    status = stb_collnet_reg(b->cn, b->ccomm, b->recv, bytes, &b->recv_mh);
out:
    free(all);
    free(handles);
    return status;
}

/* One n-byte allreduce through the CollNet, in NCCL-sized calls, depth in flight. */
static strata_status_t cn_collnet_run(cn_bench_t *b, size_t bytes)
{
    enum { MAX_DEPTH = 64 };
    void *reqs[MAX_DEPTH];
    size_t call = b->o.call_bytes / sizeof(float) * sizeof(float);
    size_t ncalls = (bytes + call - 1) / call, posted = 0, done_calls = 0;
    int head = 0, inflight = 0;

    while (done_calls < ncalls) {
        while (posted < ncalls && inflight < b->o.depth) {
            size_t off = posted * call, len = STU_MIN(call, bytes - off);
            void *req = NULL;
            strata_status_t status = stb_collnet_iallreduce(
                b->cn, b->ccomm, (char *)b->send + off, (char *)b->recv + off, len / 4,
                STRATA_FP32, STRATA_SUM, b->send_mh, b->recv_mh, &req);
            if (status != STRATA_OK)
                return status;
            if (req == NULL)
                break;                                   /* back-pressure */
            reqs[(head + inflight) % MAX_DEPTH] = req;
            inflight++;
            posted++;
        }
        int done = 0;
        strata_status_t status = stb_collnet_test(b->cn, reqs[head], &done, NULL);
        if (status != STRATA_OK)
            return status;
        if (done) {
            head = (head + 1) % MAX_DEPTH;
            inflight--;
            done_calls++;
        } else {
            sched_yield();           /* as NCCL's proxy thread when a pass made no progress */
        }
    }
    return STRATA_OK;
}

static strata_status_t cn_method_run(cn_bench_t *b, int m, size_t bytes)
{
    if (m == M_COLLNET)
        return cn_collnet_run(b, bytes);
    return strata_allreduce(b->send, b->recv, bytes / 4, STRATA_FP32, STRATA_SUM, b->comm);
}

/* What a rank used: CPU time (user + system, every thread) in microseconds, and context
 * switches: voluntary (it slept: poll, futex, nanosleep) and involuntary (it was preempted,
 * or yielded the core to another). */
typedef struct cn_use {
    double cpu_us, vcs, ivcs;
} cn_use_t;

static cn_use_t cn_use_now(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return (cn_use_t){0};
    return (cn_use_t){.cpu_us = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
                                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec),
                      .vcs = (double)ru.ru_nvcsw, .ivcs = (double)ru.ru_nivcsw};
}

/*
 * warmup + a barrier + iters timed calls; *us_p: the slowest rank's time per call, *use_p:
 * the CPU time and context switches of a rank per call, averaged over the ranks (what the
 * method costs the cores, whatever else runs on them, and how it waits).
 */
static strata_status_t cn_time(cn_bench_t *b, int m, size_t bytes, double *us_p,
                               cn_use_t *use_p)
{
    strata_status_t status = STRATA_OK;

    if (m != M_COLLNET &&
        (status = stb_comm_force(b->comm, m == M_HIER ? STA_ALGO_HIERARCHICAL : STA_ALGO_RING))
            != STRATA_OK)
        return status;
    for (int i = 0; i < b->o.warmup && status == STRATA_OK; i++)
        status = cn_method_run(b, m, bytes);
    if (status == STRATA_OK)
        status = strata_barrier(b->comm);
    uint64_t t0 = stu_time_ns();
    cn_use_t u0 = cn_use_now();
    for (int i = 0; i < b->o.iters && status == STRATA_OK; i++)
        status = cn_method_run(b, m, bytes);
    double us = (double)(stu_time_ns() - t0) / 1e3 / b->o.iters;
    cn_use_t u1 = cn_use_now();
    double per = (double)b->o.iters * b->nranks;
    double use[3] = {(u1.cpu_us - u0.cpu_us) / per, (u1.vcs - u0.vcs) / per,
                     (u1.ivcs - u0.ivcs) / per}, sum[3];
    if (status == STRATA_OK)
        status = strata_allreduce(&us, us_p, 1, STRATA_FP64, STRATA_MAX, b->comm);
    if (status == STRATA_OK)
        status = strata_allreduce(use, sum, 3, STRATA_FP64, STRATA_SUM, b->comm);
    if (status == STRATA_OK)
        *use_p = (cn_use_t){.cpu_us = sum[0], .vcs = sum[1], .ivcs = sum[2]};
    return status;
}

/* One call of the method over the result oracle's values, checked against its reference. */
static strata_status_t cn_check(cn_bench_t *b, int m, size_t bytes, long long *wrong_p)
{
    stb_data_ref_t ref;
    size_t count = bytes / 4;

    stb_data_ref_build(&ref, STRATA_FP32, STRATA_SUM, b->nranks);
    stb_data_fill(b->send, count, STRATA_FP32, STRATA_SUM, b->rank, 0);
    strata_status_t status = cn_method_run(b, m, bytes);
    long long wrong = status == STRATA_OK ? (long long)stb_data_check_reduced(b->recv, count,
                                                                              &ref, 0, NULL) : 0;
    if (status == STRATA_OK)
        status = strata_allreduce(&wrong, wrong_p, 1, STRATA_INT64, STRATA_SUM, b->comm);
    return status;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cn_busbw(int P, size_t bytes, double us)
{
    return us > 0 ? 2.0 * (P - 1) / P * (double)bytes / (us * 1e3) : 0;
}

/* The model's best time over ring and recursive doubling, one rank per node. */
static double cn_bound_us(const cn_bench_t *b, size_t bytes, const char **algo_p)
{
    sta_model_t model;
    sta_dims_t dims, unused;
    double best = -1;

    stb_comm_model(b->comm, &model, &unused);
    sta_dims_one_per_node(b->nranks, &dims);
    for (int a = STA_ALGO_RING; a <= STA_ALGO_RECURSIVE; a++) {
        double us = sta_cost_us(&model, &dims, STA_COLL_ALLREDUCE, (sta_algo_t)a, bytes);
        if (us >= 0 && (best < 0 || us < best)) {
            best = us;
            *algo_p = sta_algo_name((sta_algo_t)a);
        }
    }
    return best;
}

static void cn_header(const cn_bench_t *b)
{
    sta_model_t model;
    sta_dims_t dims;

    stb_comm_model(b->comm, &model, &dims);
    printf("# strata-collnet: %d ranks on %d nodes, CollNet v%d of %s\n", b->nranks,
           strata_comm_nnodes(b->comm), b->o.version, b->o.plugin);
    printf("# calls of at most %zu B, %d in flight (NCCL's proxy); fp32 sum; -n %d -w %d;"
           " %d interleaved rounds, median of the slowest rank's time\n", b->o.call_bytes,
           b->o.depth, b->o.iters, b->o.warmup, b->o.rounds);
    printf("# model (bound): net alpha %g us (%s) beta %g GB/s (%s), gamma %g GB/s\n",
           model.net.alpha_us, stb_comm_source(b->comm, STA_FIELD_NET_ALPHA),
           model.net.beta_gbps, stb_comm_source(b->comm, STA_FIELD_NET_BETA), model.gamma_gbps);
    printf("# %12s %11s %8s %11s %8s %11s %8s %11s %8s %9s %7s %7s %8s %8s %8s %7s %7s %7s"
           " %7s %7s %7s\n", "size(B)",
           "collnet(us)", "busbw", "hier(us)", "busbw", "ring(us)", "busbw", "bound(us)",
           "busbw", "bound", "cn/bnd", "cn/hier", "cn.cpu", "hier.cpu", "ring.cpu",
           "cn.vcs", "hier.vcs", "ring.vcs", "cn.ivcs", "hr.ivcs", "rg.ivcs");
}

static int cn_sweep(cn_bench_t *b)
{
    int failed = 0;

    for (size_t n = b->o.min_bytes; n <= b->o.max_bytes && !failed; n *= (size_t)b->o.factor) {
        size_t bytes = n / 4 * 4;
        double t[M_COUNT][CN_MAX_ROUNDS], med[M_COUNT];
        double use[3][M_COUNT][CN_MAX_ROUNDS], med_use[3][M_COUNT];   /* cpu, vcs, ivcs */
        memset(t, 0, sizeof(t));
        memset(use, 0, sizeof(use));
        for (int r = 0; r < b->o.rounds && !failed; r++) {
            for (int m = 0; m < M_COUNT && !failed; m++) {
                cn_use_t u = {0};
                if (b->o.methods & (1u << m))
                    failed = cn_time(b, m, bytes, &t[m][r], &u) != STRATA_OK;
                use[0][m][r] = u.cpu_us;
                use[1][m][r] = u.vcs;
                use[2][m][r] = u.ivcs;
            }
        }
        for (int m = 0; m < M_COUNT && !failed; m++) {
            qsort(t[m], (size_t)b->o.rounds, sizeof(double), cmp_double);
            med[m] = t[m][b->o.rounds / 2];
            for (int k = 0; k < 3; k++) {
                qsort(use[k][m], (size_t)b->o.rounds, sizeof(double), cmp_double);
                med_use[k][m] = use[k][m][b->o.rounds / 2];
            }
            if (b->o.check && (b->o.methods & (1u << m))) {
                long long wrong = 0;
                failed = cn_check(b, m, bytes, &wrong) != STRATA_OK;
                if (!failed && wrong != 0) {
                    if (b->rank == 0)
                        fprintf(stderr, "strata-collnet: %s at %zu B: %lld wrong elements\n",
                                method_names[m], bytes, wrong);
                    failed = 1;
                }
            }
        }
        if (failed || b->rank != 0)
            continue;
        const char *algo = "?";
        double bound = cn_bound_us(b, bytes, &algo);
        printf("  %12zu %11.1f %8.3f %11.1f %8.3f %11.1f %8.3f %11.1f %8.3f %9s %7.2f %7.2f"
               " %8.0f %8.0f %8.0f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f\n",
               bytes, med[M_COLLNET], cn_busbw(b->nranks, bytes, med[M_COLLNET]), med[M_HIER],
               cn_busbw(b->nranks, bytes, med[M_HIER]), med[M_RING],
               cn_busbw(b->nranks, bytes, med[M_RING]), bound,
               cn_busbw(b->nranks, bytes, bound), algo, bound / med[M_COLLNET],
               med[M_HIER] / med[M_COLLNET], med_use[0][M_COLLNET], med_use[0][M_HIER],
               med_use[0][M_RING], med_use[1][M_COLLNET], med_use[1][M_HIER],
               med_use[1][M_RING], med_use[2][M_COLLNET], med_use[2][M_HIER],
               med_use[2][M_RING]);
        fflush(stdout);
    }
    return failed;
}

int main(int argc, char **argv)
{
    cn_bench_t b;
    strata_status_t status;

    memset(&b, 0, sizeof(b));
    stb_log_tag_set("strata-collnet");
    if (cn_parse(argc, argv, &b.o) != 0)
        return 2;
    if ((status = strata_comm_init(&b.comm)) != STRATA_OK) {
        stb_log_err("strata_comm_init: %s", strata_status_str(status));
        return 1;
    }
    b.rank = strata_comm_rank(b.comm);
    b.nranks = strata_comm_nranks(b.comm);
    if (strata_comm_nnodes(b.comm) != b.nranks)
        stb_log_err("warning: %d ranks on %d nodes; the CollNet is meant for one rank per node",
                    b.nranks, strata_comm_nnodes(b.comm));
    b.send = malloc(b.o.max_bytes);
    b.recv = malloc(b.o.max_bytes);
    int rc = 1;
    if (b.send != NULL && b.recv != NULL) {
        memset(b.send, 0, b.o.max_bytes);        /* touched before any timing */
        memset(b.recv, 0, b.o.max_bytes);
        if ((status = cn_setup(&b)) != STRATA_OK) {
            stb_log_err("CollNet setup: %s", strata_status_str(status));
        } else {
            if (b.rank == 0)
                cn_header(&b);
            rc = cn_sweep(&b);
        }
    }
    if (b.ccomm != NULL) {
        stb_collnet_dereg(b.cn, b.ccomm, b.send_mh);
        stb_collnet_dereg(b.cn, b.ccomm, b.recv_mh);
        stb_collnet_close_coll(b.cn, b.ccomm);
    }
    stb_collnet_close(b.cn);
    stb_plugin_close(b.plugin);
    strata_comm_destroy(b.comm);
    free(b.send);
    free(b.recv);
    return rc;
}

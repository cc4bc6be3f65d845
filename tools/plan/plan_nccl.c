/* strata-plan nccl: the tuner's table and NCCL's picks (tools/plan/plan_nccl.h). */
#include "tools/plan/plan_nccl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/plugin_loader.h"
#include "tools/lib/tool_util.h"

/* The commHash this tool's one "communicator" has: any fixed value does ("STRATAPN"). */
#define PLAN_NCCL_COMM_ID 0x53545241544150ull
/* The CSV covers sizes up to 2^40 bytes (1 TiB); the last range runs to SIZE_MAX. */
#define PLAN_NCCL_CSV_MAX_LOG2 40
/* Mbps (ncclNet's speed property) per GB/s. */
#define PLAN_NCCL_MBPS_PER_GBPS 8000.0

typedef struct plan_nccl {
    stb_plan_nccl_opts_t opts;
    stb_nccl_model_t model;
    stb_tuner_t *tuner;
    int active;                 /* the tuner kept a context */
} plan_nccl_t;

/* One evaluation as NCCL makes it: its table, the tuner's, and both picks (-1: none). */
typedef struct plan_eval {
    float nccl[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    float tuned[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    int na, np, ta, tp;
} plan_eval_t;

static strata_status_t plan_eval(plan_nccl_t *p, int func, size_t n, plan_eval_t *e)
{
    int nch = 0;

    stb_nccl_table(&p->model, func, n, 1, e->nccl);
    memcpy(e->tuned, e->nccl, sizeof(e->tuned));
    strata_status_t status = stb_tuner_coll_info(p->tuner, func, n, 1, &e->tuned[0][0], 0, &nch);
    if (status != STRATA_OK)
        return status;
    if (stb_nccl_pick(e->nccl, &e->na, &e->np) != 0)
        e->na = e->np = -1;
    if (stb_nccl_pick(e->tuned, &e->ta, &e->tp) != 0)
        e->ta = e->tp = -1;
    return STRATA_OK;
}

static void pick_str(int a, int p, const float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS],
                     char *buf, size_t len)
{
    if (a < 0)
        snprintf(buf, len, "(none)");
    else
        snprintf(buf, len, "%s/%s %.1f", nccl_tuner_algo_name(a), nccl_tuner_proto_name(p),
                 t[a][p]);
}

/* A column as wide as its "Algo/Proto" heading, and at least a 10-digit time. */
static int col_width(int a, int q)
{
    int w = (int)(strlen(nccl_tuner_algo_name(a)) + 1 + strlen(nccl_tuner_proto_name(q)));
    return w < 11 ? 11 : w;
}

static strata_status_t print_coll(plan_nccl_t *p, int func)
{
    const stb_plan_nccl_opts_t *o = &p->opts;
    int used[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {{0}};
    plan_eval_t e;

    /* The columns: every entry NCCL offers at some size of the sweep. */
    for (size_t n = o->min_bytes;; n *= o->factor) {
        stb_nccl_table(&p->model, func, n, 1, e.nccl);
        for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
            for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++)
                used[a][q] |= e.nccl[a][q] >= 0.0f;
        if (n > o->max_bytes / o->factor)
            break;
    }
    printf("#\n# %s: us per entry NCCL offers (* written by the tuner); NCCL's pick alone and "
           "with the tuner\n#%12s", nccl_tuner_func_name(func), "size(B)");
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++) {
            char h[40];
            snprintf(h, sizeof(h), "%s/%s", nccl_tuner_algo_name(a), nccl_tuner_proto_name(q));
            if (used[a][q])
                printf(" %*s", col_width(a, q), h);
        }
    }
    printf("  %-26s %s\n", "NCCL alone", "with the tuner");
    for (size_t n = o->min_bytes;; n *= o->factor) {
        char alone[64], tuned[64];
        strata_status_t status = plan_eval(p, func, n, &e);
        if (status != STRATA_OK)
            return status;
        printf(" %12zu", n);
        for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
            for (int q = 0; q < NCCL_NUM_PROTOCOLS; q++) {
                if (!used[a][q])
                    continue;
                if (e.tuned[a][q] < 0.0f)
                    printf(" %*s", col_width(a, q), "-");
                else
                    printf(" %*.1f%c", col_width(a, q) - 1, e.tuned[a][q],
                           e.tuned[a][q] != e.nccl[a][q] ? '*' : ' ');
            }
        }
        pick_str(e.na, e.np, e.nccl, alone, sizeof(alone));
        pick_str(e.ta, e.tp, e.tuned, tuned, sizeof(tuned));
        printf("  %-26s %s%s\n", alone, tuned, e.na != e.ta || e.np != e.tp ? " (changed)" : "");
        if (n > o->max_bytes / o->factor)
            break;
    }
    return STRATA_OK;
}

/* NCCL's example tuner spells collectives, algorithms and protocols in lower case. */
static void csv_name(const char *name, char *out, size_t len)
{
    static const char *const algo_csv[NCCL_NUM_ALGORITHMS] = {
        "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
    size_t i = 0;

    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        if (strcmp(name, nccl_tuner_algo_name(a)) == 0) {
            snprintf(out, len, "%s", algo_csv[a]);
            return;
        }
    }
    for (; name[i] != '\0' && i + 1 < len; i++)
        out[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    out[i] = '\0';
}

static void csv_row(FILE *f, const plan_nccl_t *p, int func, size_t lo, size_t hi, int a, int q)
{
    char c[32], al[32], pr[32];

    if (a < 0)
        return;
    csv_name(nccl_tuner_func_name(func), c, sizeof(c));
    csv_name(nccl_tuner_algo_name(a), al, sizeof(al));
    csv_name(nccl_tuner_proto_name(q), pr, sizeof(pr));
    fprintf(f, "%s,%zu,%zu,%s,%s,-1,%d,%d,-1,-1\n", c, lo, hi, al, pr, p->opts.nodes,
            p->opts.nodes * p->opts.per_node);
}

/* The tuned pick of func at n as one number (algo * 8 + proto, or -1). */
static int csv_pick(plan_nccl_t *p, int func, size_t n, strata_status_t *status)
{
    plan_eval_t e;
    *status = plan_eval(p, func, n, &e);
    return *status != STRATA_OK || e.ta < 0 ? -1 : e.ta * 8 + e.tp;
}

/* Ranges of equal picks over every size, boundaries found to the byte by bisection. */
static strata_status_t csv_coll(FILE *f, plan_nccl_t *p, int func)
{
    strata_status_t status = STRATA_OK;
    size_t start = 0, pos = 0;
    int cur = csv_pick(p, func, 0, &status);

    for (int e = 0; e <= PLAN_NCCL_CSV_MAX_LOG2 && status == STRATA_OK; e++) {
        size_t s = (size_t)1 << e;
        int at = csv_pick(p, func, s, &status);
        while (at != cur && status == STRATA_OK) {
            size_t lo = pos, hi = s;
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (csv_pick(p, func, mid, &status) == cur)
                    lo = mid;
                else
                    hi = mid;
            }
            csv_row(f, p, func, start, lo, cur / 8, cur % 8);
            start = pos = hi;
            cur = csv_pick(p, func, hi, &status);
            at = csv_pick(p, func, s, &status);
        }
        pos = s;
    }
    if (status == STRATA_OK)
        csv_row(f, p, func, start, SIZE_MAX, cur < 0 ? -1 : cur / 8, cur % 8);
    return status;
}

static strata_status_t write_csv(plan_nccl_t *p)
{
    const stb_plan_nccl_opts_t *o = &p->opts;
    FILE *f = strcmp(o->csv, "-") == 0 ? stdout : fopen(o->csv, "w");
    strata_status_t status = STRATA_OK;

    if (f == NULL) {
        stb_log_err("cannot write %s", o->csv);
        return STRATA_ERR_IO;
    }
    fprintf(f, "# NCCL example-tuner rules (NCCL_TUNER_CONFIG_FILE) from strata-plan nccl:\n"
               "# Strata's tuner on %d node(s) x %d GPU(s); "
               "coll,minBytes,maxBytes,algo,proto,channels,nNodes,nRanks,numPipeOps,regBuff\n",
            o->nodes, o->per_node);
    for (int c = 0; c < NCCL_NUM_FUNCTIONS && status == STRATA_OK; c++)
        if (o->all_colls || c == o->coll)
            status = csv_coll(f, p, c);
    if (f != stdout && fclose(f) != 0)
        status = STRATA_ERR_IO;
    return status;
}

static void print_head(const plan_nccl_t *p, const char *name, double nic, double lat)
{
    const stb_plan_nccl_opts_t *o = &p->opts;
    const stb_nccl_topo_t *t = &p->model.topo;
    const char *mode = getenv("STRATA_TUNER");

    printf("# strata-plan nccl: NCCL 2.28.9's cost table (emulated), handed to %s's "
           "ncclTunerPlugin_v%d in %s\n", name, o->tuner_version, o->plugin);
    printf("# cluster: %d node(s) x %d GPU(s), %d NIC(s) per node at %.3f GB/s, latency %.1f us; "
           "%d channel(s); %s; %s%s; LL128 %s; CollNet %s\n", o->nodes, o->per_node, o->rails,
           nic, lat, t->nchannels, o->pci ? "PCI" : "NVLink", o->amd ? "AMD" : "Intel",
           o->nvswitch ? ", NVSwitch" : "", t->ll128 ? "on" : "off", o->collnet ? "on" : "off");
    printf("# tuner: %s (STRATA_TUNER=%s); NCCL_ALGO=%s NCCL_PROTO=%s\n",
           p->active ? "active" : "opted out (NULL context): NCCL's table is used as is",
           mode != NULL ? mode : "1 (default)", getenv("NCCL_ALGO") ? getenv("NCCL_ALGO") : "-",
           getenv("NCCL_PROTO") ? getenv("NCCL_PROTO") : "-");
}

/* Loads the plugin and its tuner, builds NCCL's model, prints. */
static int plan_nccl_run(plan_nccl_t *p)
{
    const stb_plan_nccl_opts_t *o = &p->opts;
    ncclTunerConstants_v5_t constants;
    stb_plugin_props_t props;
    stb_plugin_t *plugin = NULL;
    strata_status_t status;
    char err[256];
    int rc = 1;

    if (stb_plugin_open(o->plugin, PLAN_NCCL_COMM_ID, 0, &plugin) != STRATA_OK)
        return 1;
    if (stb_plugin_props_get(plugin, 0, &props) != STRATA_OK ||
        stb_tuner_open(plugin, o->tuner_version, &p->tuner) != STRATA_OK)
        goto out_plugin;
    double nic = o->nic_gbps > 0 ? o->nic_gbps : props.speed_mbps / PLAN_NCCL_MBPS_PER_GBPS;
    double lat = o->net_latency_us >= 0 ? o->net_latency_us : props.latency_us;
    stb_nccl_topo_t topo;
    stb_plan_nccl_topo(o, nic, lat, &topo);
    stb_nccl_constants_default(&constants);
    /* NCCL: tuner init (which may edit the constants), then its own model from them. */
    status = stb_tuner_init(p->tuner, PLAN_NCCL_COMM_ID, (size_t)o->nodes * o->per_node,
                            (size_t)o->nodes, o->per_node, o->per_node, &constants, &p->active);
    if (status != STRATA_OK)
        goto out_tuner;
    if (stb_nccl_model_build(&topo, &constants, getenv("NCCL_ALGO"), getenv("NCCL_PROTO"),
                             &p->model, err, sizeof(err)) != STRATA_OK) {
        stb_log_err("NCCL_ALGO/NCCL_PROTO or the topology: %s", err);
        goto out_tuner;
    }
    print_head(p, stb_tuner_name(p->tuner), nic, lat);
    for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++)
        if ((o->all_colls || c == o->coll) && print_coll(p, c) != STRATA_OK)
            goto out_tuner;
    if (o->csv != NULL && write_csv(p) != STRATA_OK)
        goto out_tuner;
    rc = 0;
out_tuner:
    stb_tuner_close(p->tuner);
out_plugin:
    stb_plugin_close(plugin);
    return rc;
}

int stb_plan_nccl_main(int argc, char **argv)
{
    plan_nccl_t p;
    char err[256];

    memset(&p, 0, sizeof(p));
    stb_log_tag_set("strata-plan nccl");
    if (stb_plan_nccl_parse(argc, argv, &p.opts, err, sizeof(err)) != STRATA_OK) {
        fprintf(stderr, "strata-plan nccl: %s\n", err);
        return 2;
    }
    if (p.opts.help) {
        fputs(stb_plan_nccl_usage(), stdout);
        return 0;
    }
    stb_plan_nccl_env(&p.opts);
    return plan_nccl_run(&p);
}

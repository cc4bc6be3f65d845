/* strata-plan's command line and table rows (tools/plan/plan_table.h). */
#include "tools/plan/plan_table.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos/profile.h"
#include "tools/lib/tool_util.h"
#include "transport/tcp/tcp.h"
#include "bench/perf/perf_opts.h"
#include "util/param.h"

/* Command-line names of the model's fields, in sta_field_t order. */
static const char *const field_flags[STA_FIELD_COUNT] = {
    [STA_FIELD_SHM_ALPHA] = "--shm-alpha", [STA_FIELD_SHM_BETA] = "--shm-beta",
    [STA_FIELD_NET_ALPHA] = "--net-alpha", [STA_FIELD_NET_BETA] = "--net-beta",
    [STA_FIELD_GAMMA] = "--gamma", [STA_FIELD_WAKE] = "--wake",
    [STA_FIELD_SHM_CACHE_BETA] = "--shm-cache-beta", [STA_FIELD_SHM_CACHE_BYTES] = "--shm-cache",
    [STA_FIELD_YIELD] = "--yield",
};

void stb_plan_opts_default(stb_plan_opts_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->nodes = 2;
    opts->per_node = 2;
    opts->rails = 0;                 /* resolved after parsing: 1 */
    opts->coll = STA_COLL_ALLREDUCE;
    opts->min_bytes = STB_PLAN_DEFAULT_MIN;
    opts->max_bytes = STB_PLAN_DEFAULT_MAX;
    opts->factor = STB_PLAN_DEFAULT_FACTOR;
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        opts->value[f] = -1.0;
}

const char *stb_plan_usage(void)
{
    return "usage: strata-plan [options]\n"
           "Predicts collective times from Strata's alpha-beta model for a cluster of any size\n"
           "(docs/algorithms.md): every algorithm's time per size, the one Strata would pick,\n"
           "and the algbw/busbw nccl-tests would print for it.\n"
           "  -N, --nodes N       nodes (default 2)\n"
           "  -L, --per-node L    ranks per node, e.g. GPUs per node (default 2)\n"
           "  -R, --rails R       NICs per node in use, 1..L (default 1)\n"
           "  --interleaved       ranks not numbered node by node\n"
           "  --coll C            allreduce, reduce_scatter, allgather, broadcast, reduce, all\n"
           "  -b, -e, -f          smallest size, largest size, factor (8, 1G, 4; K/M/G suffixes)\n"
           "  --profile FILE      tier values from a profile file (format: docs/algorithms.md)\n"
           "  --shm-alpha US --shm-beta GBPS    the intra-node tier (NVLink, shared memory)\n"
           "  --net-alpha US --net-beta GBPS    the inter-node tier, per NIC\n"
           "  --gamma GBPS        reduction rate\n"
           "  --wake US           waking a blocked rank, paid where ranks outnumber cores\n"
           "  --yield US          a shm round of one node whose ranks outnumber the cores\n"
           "  --host-ranks N --host-cores C   ranks sharing a host's cores, and its cores\n"
           "  --shm-cache-beta GBPS --shm-cache SIZE   copies whose working set fits SIZE\n"
           "                      (the host's cache; 0: none) run at GBPS\n"
           "  --transport NAME    tcp, ib, ucx or loop (default STRATA_TRANSPORT, else tcp):\n"
           "                      over tcp the net's bytes move on the host's cores, as in the\n"
           "                      library, its CollNet and its NCCL tuner (--net-cpu: tcp)\n"
           "Values not given come from the profile, then STRATA_* variables, then the defaults.\n";
}

/* Writes "<what>: <why>" into err; returns 0 (a failed parse). */
static int fail(char *err, size_t errlen, const char *what, const char *why)
{
    stb_err_set(err, errlen, "%s: %s", what, why);
    return 0;
}

static int parse_int(const char *text, int lo, int hi, int *out)
{
    return stb_int_parse(text, lo, hi, out) == STRATA_OK;
}

static int parse_double(const char *text, int positive, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v < 0.0 ||
        (positive && v == 0.0))
        return 0;
    *out = v;
    return 1;
}

/* Splits "--name=value" or takes argv[*i + 1]; NULL when the value is missing. */
static const char *opt_value(int argc, char *const argv[], int *i, const char *arg,
                             size_t name_len)
{
    if (arg[name_len] == '=')
        return arg + name_len + 1;
    if (arg[name_len] != '\0' || *i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

/* Matches arg against a short flag (value attached or not) or a long one. */
static int opt_is(const char *arg, const char *shortf, const char *longf, size_t *name_len)
{
    if (shortf != NULL && strncmp(arg, shortf, 2) == 0) {
        *name_len = 2;
        return 1;
    }
    size_t n = strlen(longf);
    if (strncmp(arg, longf, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
        *name_len = n;
        return 1;
    }
    return 0;
}

/* Short flags take "-N4" as well as "-N 4". */
static const char *short_value(int argc, char *const argv[], int *i, const char *arg,
                               size_t name_len)
{
    if (name_len == 2 && arg[2] != '\0')
        return arg + 2;
    return opt_value(argc, argv, i, arg, name_len);
}

static int parse_one(int argc, char *const argv[], int *i, stb_plan_opts_t *o, char *err,
                     size_t errlen)
{
    const char *arg = argv[*i], *v;
    size_t len;

    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
        o->help = 1;
        return 1;
    }
    if (strcmp(arg, "--net-cpu") == 0) {   /* the tcp rule, by its effect's name */
        o->transport = "tcp";
        return 1;
    }
    if (opt_is(arg, NULL, "--transport", &len)) {
        o->transport = opt_value(argc, argv, i, arg, len);
        return o->transport != NULL && *o->transport != '\0'
                   ? 1 : fail(err, errlen, arg, "a transport name (tcp, ib, ucx, loop)");
    }
    if (strcmp(arg, "--interleaved") == 0) {
        o->interleaved = 1;
        return 1;
    }
    if (opt_is(arg, "-N", "--nodes", &len)) {
        v = short_value(argc, argv, i, arg, len);
        return v != NULL && parse_int(v, 1, STB_PLAN_MAX_NODES, &o->nodes)
                   ? 1 : fail(err, errlen, arg, "a node count from 1 to 1048576");
    }
    if (opt_is(arg, "-L", "--per-node", &len)) {
        v = short_value(argc, argv, i, arg, len);
        return v != NULL && parse_int(v, 1, STB_PLAN_MAX_PER_NODE, &o->per_node)
                   ? 1 : fail(err, errlen, arg, "ranks per node from 1 to 1024");
    }
    if (opt_is(arg, "-R", "--rails", &len)) {
        v = short_value(argc, argv, i, arg, len);
        return v != NULL && parse_int(v, 1, STB_PLAN_MAX_PER_NODE, &o->rails)
                   ? 1 : fail(err, errlen, arg, "a rail count from 1 to 1024");
    }
    if (opt_is(arg, NULL, "--host-ranks", &len) || opt_is(arg, NULL, "--host-cores", &len)) {
        int *dst = arg[7] == 'r' ? &o->host_ranks : &o->host_cores;
        v = opt_value(argc, argv, i, arg, len);
        return v != NULL && parse_int(v, 0, 1 << 20, dst)
                   ? 1 : fail(err, errlen, arg, "a count from 0 (unknown) to 1048576");
    }
    if (opt_is(arg, NULL, "--coll", &len)) {
        v = opt_value(argc, argv, i, arg, len);
        if (v != NULL && strcmp(v, "all") == 0) {
            o->all_colls = 1;
            return 1;
        }
        return v != NULL && stb_perf_coll_parse(v, &o->coll) == STRATA_OK
                   ? 1 : fail(err, errlen, arg, "allreduce, reduce_scatter, allgather, broadcast,"
                                           " reduce or all");
    }
    if (opt_is(arg, NULL, "--profile", &len)) {
        o->profile = opt_value(argc, argv, i, arg, len);
        return o->profile != NULL ? 1 : fail(err, errlen, arg, "a file name");
    }
    size_t *sizes[3] = {&o->min_bytes, &o->max_bytes, &o->factor};
    const char *sflags[3] = {"-b", "-e", "-f"}, *lflags[3] = {"--minbytes", "--maxbytes",
                                                             "--stepfactor"};
    for (int k = 0; k < 3; k++) {
        if (opt_is(arg, sflags[k], lflags[k], &len)) {
            v = short_value(argc, argv, i, arg, len);
            return v != NULL && stb_perf_size_parse(v, sizes[k]) == STRATA_OK
                       ? 1 : fail(err, errlen, arg, "a size such as 8, 64K, 1G");
        }
    }
    for (int f = 0; f < STA_FIELD_COUNT; f++) {
        if (opt_is(arg, NULL, field_flags[f], &len)) {
            int positive = !sta_field_may_be_zero((sta_field_t)f);
            v = opt_value(argc, argv, i, arg, len);
            if (f == STA_FIELD_SHM_CACHE_BYTES) {   /* a size: 8M as well as 8388608 */
                size_t bytes;
                if (v == NULL || stb_perf_size_parse(v, &bytes) != STRATA_OK)
                    return fail(err, errlen, arg, "a size such as 0, 8M, 32M");
                o->value[f] = (double)bytes;
                return 1;
            }
            return v != NULL && parse_double(v, positive, &o->value[f])
                       ? 1 : fail(err, errlen, arg, "a finite number (alpha >= 0 us, beta and"
                                               " gamma > 0 GB/s)");
        }
    }
    return fail(err, errlen, arg, "unknown option (-h for help)");
}

strata_status_t stb_plan_opts_parse(int argc, char *const argv[], stb_plan_opts_t *opts,
                                    char *err, size_t errlen)
{
    stb_plan_opts_default(opts);
    for (int i = 1; i < argc; i++)
        if (!parse_one(argc, argv, &i, opts, err, errlen))
            return STRATA_ERR_INVALID;
    if (opts->rails == 0)
        opts->rails = 1;
    if (opts->transport == NULL) {
        const char *env = stu_param_str(STU_PARAM_TRANSPORT);
        opts->transport = *env != '\0' && strcmp(env, "auto") != 0 ? env
                                                                     : STB_PLAN_DEFAULT_TRANSPORT;
    }
    if (opts->rails > opts->per_node) {
        fail(err, errlen, "--rails", "more rails than ranks per node");
        return STRATA_ERR_INVALID;
    }
    if (opts->min_bytes > opts->max_bytes || opts->factor < 2) {
        fail(err, errlen, "sizes", "need -b <= -e and -f >= 2");
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

sta_dims_t stb_plan_dims(const stb_plan_opts_t *opts, const sta_model_t *model)
{
    sta_dims_t d = {.nranks = opts->nodes * opts->per_node, .nnodes = opts->nodes,
                    .local_size = opts->per_node, .nrails = opts->rails,
                    .contiguous = !opts->interleaved};
    sta_dims_set_host(&d, opts->host_ranks, opts->host_cores, opts->transport);
    /* each rank's device is one NIC (a rail): tcp's devices of one member */
    if (model != NULL && d.net_cpu)
        d.net_msg_min = sta_cost_net_msg_min(model, &d, stt_tcp_stripe_bytes(1));
    return d;
}

void stb_plan_model_apply(const stb_plan_opts_t *opts, sta_model_t *model)
{
    for (int f = 0; f < STA_FIELD_COUNT; f++) {
        if (opts->value[f] >= 0.0) {
            *sta_model_field(model, (sta_field_t)f) = opts->value[f];
            model->source[f] = STA_SRC_PROFILE;   /* the highest precedence: it was asked for */
        }
    }
}

void stb_plan_row(const sta_select_t *table, sta_coll_t coll, size_t bytes, stb_plan_row_t *row)
{
    memset(row, 0, sizeof(*row));
    row->bytes = bytes;
    for (int a = 0; a < STA_ALGO_COUNT; a++)
        row->us[a] = sta_algo_selectable(&table->dims, coll, (sta_algo_t)a)
                         ? sta_cost_us(&table->model, &table->dims, coll, (sta_algo_t)a, bytes)
                         : STA_COST_NA;
    row->chosen = sta_select_lookup(table, coll, bytes);
    row->chosen_us = sta_cost_us(&table->model, &table->dims, coll, row->chosen, bytes);
    if (row->chosen_us > 0.0) {
        row->algbw_gbps = (double)bytes / (row->chosen_us * STA_BYTES_PER_US_PER_GBPS);
        row->busbw_gbps = row->algbw_gbps * stb_perf_busbw_factor(coll, table->dims.nranks);
    }
}

/* strata-perf's command line, size sweep, geometry and bus bandwidth factors. */
#include "bench/perf/perf_opts.h"
#include "tools/lib/tool_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What an option's value is. */
typedef enum opt_kind {
    OPT_SIZE,       /* bytes with K/M/G */
    OPT_INT,        /* a decimal integer >= 0 */
    OPT_DTYPE,
    OPT_OP,
    OPT_COLL,
    OPT_FLAG,       /* no value */
} opt_kind_t;

typedef enum opt_id {
    OPT_MINBYTES, OPT_MAXBYTES, OPT_STEPBYTES, OPT_STEPFACTOR, OPT_ITERS, OPT_WARMUP,
    OPT_CHECK, OPT_AVERAGE, OPT_DATATYPE, OPT_OPNAME, OPT_ROOT, OPT_COLLNAME, OPT_MODEL,
    OPT_ROUNDS, OPT_HELP,
} opt_id_t;

typedef struct opt_def {
    opt_id_t id;
    char shortname;             /* 0: long form only */
    const char *longname;       /* nccl-tests' long name where it has one */
    opt_kind_t kind;
} opt_def_t;

static const opt_def_t opt_table[] = {
    {OPT_MINBYTES, 'b', "minbytes", OPT_SIZE},
    {OPT_MAXBYTES, 'e', "maxbytes", OPT_SIZE},
    {OPT_STEPBYTES, 'i', "stepbytes", OPT_SIZE},
    {OPT_STEPFACTOR, 'f', "stepfactor", OPT_INT},
    {OPT_ITERS, 'n', "iters", OPT_INT},
    {OPT_WARMUP, 'w', "warmup_iters", OPT_INT},
    {OPT_CHECK, 'c', "check", OPT_INT},
    {OPT_AVERAGE, 'a', "average", OPT_INT},
    {OPT_DATATYPE, 'd', "datatype", OPT_DTYPE},
    {OPT_OPNAME, 'o', "op", OPT_OP},
    {OPT_ROOT, 'r', "root", OPT_INT},
    {OPT_COLLNAME, 0, "coll", OPT_COLL},
    {OPT_MODEL, 0, "model", OPT_FLAG},
    {OPT_ROUNDS, 0, "rounds", OPT_INT},
    {OPT_HELP, 'h', "help", OPT_FLAG},
};
#define OPT_COUNT (sizeof(opt_table) / sizeof(opt_table[0]))

static const struct {
    const char *name;
    strata_dtype_t dtype;
} dtype_names[] = {
    {"int8", STRATA_INT8}, {"uint8", STRATA_UINT8}, {"int32", STRATA_INT32},
    {"uint32", STRATA_UINT32}, {"int64", STRATA_INT64}, {"uint64", STRATA_UINT64},
    {"half", STRATA_FP16}, {"float", STRATA_FP32}, {"double", STRATA_FP64},
    {"bfloat16", STRATA_BF16}, {"f8e4m3", STRATA_FP8_E4M3}, {"f8e5m2", STRATA_FP8_E5M2},
    /* nccl-tests' aliases for the same types */
    {"char", STRATA_INT8}, {"int", STRATA_INT32}, {"fp16", STRATA_FP16},
    {"float16", STRATA_FP16}, {"fp32", STRATA_FP32}, {"float32", STRATA_FP32},
    {"fp64", STRATA_FP64}, {"float64", STRATA_FP64}, {"bf16", STRATA_BF16},
};

static const char *const coll_names[STA_COLL_COUNT][2] = {
    [STA_COLL_ALLREDUCE] = {"allreduce", "all_reduce"},
    [STA_COLL_REDUCE_SCATTER] = {"reduce_scatter", "reducescatter"},
    [STA_COLL_ALLGATHER] = {"allgather", "all_gather"},
    [STA_COLL_BROADCAST] = {"broadcast", "bcast"},
    [STA_COLL_REDUCE] = {"reduce", "reduce"},
};

static const char *const test_names[STA_COLL_COUNT] = {
    [STA_COLL_ALLREDUCE] = "all_reduce_perf",
    [STA_COLL_REDUCE_SCATTER] = "reduce_scatter_perf",
    [STA_COLL_ALLGATHER] = "all_gather_perf",
    [STA_COLL_BROADCAST] = "broadcast_perf",
    [STA_COLL_REDUCE] = "reduce_perf",
};

static const char usage_text[] =
    "usage: strata-perf [options]   (rank, size and rendezvous from the environment:\n"
    "       STRATA_RANK/NRANKS/ROOT_ADDR, mpirun, srun or torchrun; or run it under strata-run)\n"
    "  -b, --minbytes N       smallest size (default 32M; K/M/G suffixes)\n"
    "  -e, --maxbytes N       largest size (default 32M)\n"
    "  -i, --stepbytes N      increment when -f is 1 (default 1M)\n"
    "  -f, --stepfactor N     multiply the size by N each step (default 1: use -i)\n"
    "  -n, --iters N          timed iterations per size (default 20)\n"
    "  -w, --warmup_iters N   untimed iterations per size (default 1)\n"
    "  -c, --check N          check the results of N iterations per size (default 1; 0: off)\n"
    "  -a, --average N        time across ranks: 0 rank 0, 1 mean, 2 min, 3 max (default 1)\n"
    "  -d, --datatype T       float double half bfloat16 int8 uint8 int32 uint32 int64 uint64\n"
    "  -o, --op OP            sum prod min max avg (default sum)\n"
    "  -r, --root R           root of broadcast and reduce (default 0)\n"
    "      --coll C           allreduce reduce_scatter allgather broadcast reduce\n"
    "      --model            also time every algorithm forced and print each one's\n"
    "                         predicted and measured time and the selection regret\n"
    "      --rounds N         --model rounds, interleaved; medians are reported (default 3)\n"
    "  -h, --help             this text\n";

const char *stb_perf_usage(void)
{
    return usage_text;
}

strata_status_t stb_perf_size_parse(const char *text, size_t *bytes_p)
{
    char *end;
    unsigned shift = 0;

    if (text == NULL || *text < '0' || *text > '9')
        return STRATA_ERR_INVALID;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return STRATA_ERR_INVALID;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;            /* "64MB" reads as 64M, as nccl-tests' parser does */
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return STRATA_ERR_INVALID;
    *bytes_p = (size_t)v << shift;
    return STRATA_OK;
}

strata_status_t stb_perf_dtype_parse(const char *text, strata_dtype_t *dtype_p)
{
    for (size_t i = 0; text != NULL && i < sizeof(dtype_names) / sizeof(dtype_names[0]); i++)
        if (strcmp(text, dtype_names[i].name) == 0) {
            *dtype_p = dtype_names[i].dtype;
            return STRATA_OK;
        }
    return STRATA_ERR_INVALID;
}

strata_status_t stb_perf_op_parse(const char *text, strata_op_t *op_p)
{
    for (int op = 0; text != NULL && op < STRATA_OP_COUNT; op++)
        if (strcmp(text, strata_op_name((strata_op_t)op)) == 0) {
            *op_p = (strata_op_t)op;
            return STRATA_OK;
        }
    return STRATA_ERR_INVALID;
}

strata_status_t stb_perf_coll_parse(const char *text, sta_coll_t *coll_p)
{
    for (int c = 0; text != NULL && c < STA_COLL_COUNT; c++)
        if (strcasecmp(text, coll_names[c][0]) == 0 || strcasecmp(text, coll_names[c][1]) == 0) {
            *coll_p = (sta_coll_t)c;
            return STRATA_OK;
        }
    return STRATA_ERR_INVALID;
}

/* Stores one option's value; the option's name is only for the message. */
static strata_status_t opt_apply(const opt_def_t *def, const char *value, stb_perf_opts_t *o,
                                 char *err, size_t errlen)
{
    size_t bytes = 0;
    int v = 0;
    strata_status_t status = STRATA_OK;

    switch (def->kind) {
    case OPT_SIZE: status = stb_perf_size_parse(value, &bytes); break;
    case OPT_INT: status = stb_int_parse(value, 0, INT32_MAX, &v); break;
    case OPT_DTYPE: status = stb_perf_dtype_parse(value, &o->dtype); break;
    case OPT_OP: status = stb_perf_op_parse(value, &o->op); break;
    case OPT_COLL: status = stb_perf_coll_parse(value, &o->coll); break;
    case OPT_FLAG: break;
    }
    if (status != STRATA_OK)
        return stb_err_set(err, errlen, "--%s: bad value '%s'", def->longname, value);
    switch (def->id) {
    case OPT_MINBYTES: o->min_bytes = bytes; break;
    case OPT_MAXBYTES: o->max_bytes = bytes; break;
    case OPT_STEPBYTES: o->step_bytes = bytes; break;
    case OPT_STEPFACTOR: o->step_factor = (size_t)v; break;
    case OPT_ITERS: o->iters = v; break;
    case OPT_WARMUP: o->warmup = v; break;
    case OPT_CHECK: o->check = v; break;
    case OPT_AVERAGE: o->average = (stb_perf_avg_t)v; break;
    case OPT_ROOT: o->root = v; break;
    case OPT_MODEL: o->model = 1; break;
    case OPT_ROUNDS: o->rounds = v; break;
    case OPT_HELP: o->help = 1; break;
    default: break;
    }
    return STRATA_OK;
}

void stb_perf_opts_default(stb_perf_opts_t *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->min_bytes = STB_PERF_DEFAULT_BYTES;
    opts->max_bytes = STB_PERF_DEFAULT_BYTES;
    opts->step_bytes = STB_PERF_DEFAULT_STEP;
    opts->step_factor = 1;
    opts->iters = STB_PERF_DEFAULT_ITERS;
    opts->warmup = STB_PERF_DEFAULT_WARMUP;
    opts->check = 1;
    opts->average = STB_PERF_AVG_MEAN;
    opts->dtype = STRATA_FP32;
    opts->op = STRATA_SUM;
    opts->coll = STA_COLL_ALLREDUCE;
    opts->rounds = STB_PERF_DEFAULT_ROUNDS;
}

/* The definition argv[*i] names, and its value (attached or the next argument). */
static strata_status_t opt_next(int argc, char *const argv[], int *i, const opt_def_t **def_p,
                                const char **value_p, char *err, size_t errlen)
{
    const char *arg = argv[*i], *value = NULL;
    const opt_def_t *def = NULL;

    if (arg[0] == '-' && arg[1] == '-' && arg[2] != '\0') {
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        for (size_t k = 0; k < OPT_COUNT && def == NULL; k++)
            if (strlen(opt_table[k].longname) == len &&
                strncmp(opt_table[k].longname, name, len) == 0)
                def = &opt_table[k];
        if (def != NULL && eq != NULL) {
            if (def->kind == OPT_FLAG)
                return stb_err_set(err, errlen, "--%s takes no value", def->longname);
            value = eq + 1;
        }
    } else if (arg[0] == '-' && arg[1] != '\0' && arg[1] != '-') {
        for (size_t k = 0; k < OPT_COUNT && def == NULL; k++)
            if (opt_table[k].shortname == arg[1])
                def = &opt_table[k];
        if (def != NULL && arg[2] != '\0') {
            if (def->kind == OPT_FLAG)
                return stb_err_set(err, errlen, "-%c takes no value", arg[1]);
            value = arg + 2;
        }
    }
    if (def == NULL)
        return stb_err_set(err, errlen, "unknown option '%s' (see --help)", arg);
    if (def->kind != OPT_FLAG && value == NULL) {
        if (*i + 1 >= argc)
            return stb_err_set(err, errlen, "%s needs a value", arg);
        value = argv[++*i];
    }
    *def_p = def;
    *value_p = value;
    return STRATA_OK;
}

strata_status_t stb_perf_opts_parse(int argc, char *const argv[], stb_perf_opts_t *opts,
                                    char *err, size_t errlen)
{
    strata_status_t status;

    stb_perf_opts_default(opts);
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const opt_def_t *def = NULL;
        const char *value = NULL;
        if ((status = opt_next(argc, argv, &i, &def, &value, err, errlen)) != STRATA_OK ||
            (status = opt_apply(def, value, opts, err, errlen)) != STRATA_OK)
            return status;
    }
    if (opts->help)
        return STRATA_OK;
    if (opts->max_bytes < opts->min_bytes)
        return stb_err_set(err, errlen, "maxbytes %zu is below minbytes %zu", opts->max_bytes,
                        opts->min_bytes);
    if (opts->step_factor <= 1 && opts->step_bytes == 0 && opts->max_bytes > opts->min_bytes)
        return stb_err_set(err, errlen, "stepbytes 0 with stepfactor 1 would never end");
    if (opts->step_factor > 1 && opts->min_bytes == 0)
        return stb_err_set(err, errlen, "minbytes 0 with stepfactor %zu would never grow",
                        opts->step_factor);
    if (opts->iters < 1)
        return stb_err_set(err, errlen, "iters must be at least 1");
    if ((int)opts->average < 0 || opts->average > STB_PERF_AVG_MAX)
        return stb_err_set(err, errlen, "average must be 0, 1, 2 or 3");
    if (opts->rounds < 1)
        return stb_err_set(err, errlen, "rounds must be at least 1");
    return STRATA_OK;
}

size_t stb_perf_sweep(const stb_perf_opts_t *opts, size_t *sizes, size_t max_sizes)
{
    size_t n = 0, size = opts->min_bytes;

    for (;;) {
        if (n < max_sizes)
            sizes[n] = size;
        n++;
        size_t next;
        if (opts->step_factor > 1) {
            if (size == 0 || size > SIZE_MAX / opts->step_factor)
                break;
            next = size * opts->step_factor;
        } else {
            if (opts->step_bytes == 0 || size > SIZE_MAX - opts->step_bytes)
                break;
            next = size + opts->step_bytes;
        }
        if (next > opts->max_bytes)
            break;
        size = next;
    }
    return n;
}

stb_perf_geom_t stb_perf_geom(sta_coll_t coll, size_t size, size_t elem_size, int nranks)
{
    stb_perf_geom_t g = {0, 0, 0, 0};
    size_t count = elem_size > 0 ? size / elem_size : 0;
    size_t P = nranks > 0 ? (size_t)nranks : 1;

    switch (coll) {
    case STA_COLL_REDUCE_SCATTER:
        g.count = count / P;
        g.send_bytes = g.count * P * elem_size;
        g.recv_bytes = g.count * elem_size;
        break;
    case STA_COLL_ALLGATHER:
        g.count = count / P;
        g.send_bytes = g.count * elem_size;
        g.recv_bytes = g.count * P * elem_size;
        break;
    default:
        g.count = count;
        g.send_bytes = g.recv_bytes = count * elem_size;
        break;
    }
    g.bytes = g.send_bytes > g.recv_bytes ? g.send_bytes : g.recv_bytes;
    return g;
}

double stb_perf_busbw_factor(sta_coll_t coll, int nranks)
{
    double P = nranks > 0 ? nranks : 1;
    switch (coll) {
    case STA_COLL_ALLREDUCE: return 2.0 * (P - 1) / P;
    case STA_COLL_REDUCE_SCATTER:
    case STA_COLL_ALLGATHER: return (P - 1) / P;
    default: return 1.0;
    }
}

const char *stb_perf_test_name(sta_coll_t coll)
{
    return (unsigned)coll < STA_COLL_COUNT ? test_names[coll] : "?";
}

int stb_perf_coll_has_op(sta_coll_t coll)
{
    return coll == STA_COLL_ALLREDUCE || coll == STA_COLL_REDUCE_SCATTER ||
           coll == STA_COLL_REDUCE;
}

int stb_perf_coll_has_root(sta_coll_t coll)
{
    return coll == STA_COLL_BROADCAST || coll == STA_COLL_REDUCE;
}

/* strata-soak's command line and its sequence of calls (see soak_draw.h). */
#include "tools/soak/soak_draw.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/tool_util.h"

/* Most seconds a run may be given: a week, far past any soak anyone waits for. */
#define SOAK_MAX_SECONDS (7 * 24 * 3600)
/* Largest buffer: 1 GiB per buffer and slot is already more than a test machine has. */
#define SOAK_MAX_BYTES ((size_t)1 << 30)
#define SOAK_MAX_BATCH 100000

/* The draw's odds, as "1 in N" or weights (soak_draw.h says the same). */
#define SOAK_ZERO_IN 16
#define SOAK_INPLACE_IN 3
#define SOAK_FORCE_IN 2
#define SOAK_NB_IN 4
#define SOAK_BARRIER_WEIGHT 1
static const int coll_weight[STA_COLL_COUNT] = {
    [STA_COLL_ALLREDUCE] = 3, [STA_COLL_REDUCE_SCATTER] = 2, [STA_COLL_ALLGATHER] = 2,
    [STA_COLL_BROADCAST] = 2, [STA_COLL_REDUCE] = 2,
};

static const char usage_text[] =
    "usage: strata-soak [options]   (rank, size and rendezvous from the environment, as\n"
    "       strata-perf; on one machine: strata-run -n N [--nodes K] -- strata-soak ...)\n"
    "  Runs a pseudo-random sequence of collectives (every rank draws the same one from the\n"
    "  seed), checks every element of every result, and reports counts per collective and\n"
    "  algorithm, every wrong call with its replay command, and descriptors, memory and\n"
    "  shared-memory segments at the start and the end. Exit 1 on any wrong or failed call.\n"
    "  --seed N          the sequence (default 0: rank 0 draws one and prints it)\n"
    "  --calls N         run N calls (default: until --seconds)\n"
    "  --seconds S       run for S seconds (default 60 without --calls)\n"
    "  --first I         start at call I of the sequence (replay: --first I --calls 1)\n"
    "  --max-bytes B     largest buffer, K/M/G suffixes (default 4M)\n"
    "  --batch N         calls between two whole-job checks (default 32)\n"
    "  --progress S      rank 0 prints a progress line every S seconds (default 60; 0: off)\n"
    "  --inject-wrong I  corrupt the first checked result at or after call I on the last\n"
    "                    rank, to see the check catch it (for tests)\n"
    "  -v, --verbose     print every call\n"
    "  -h, --help        this text\n";

const char *stb_soak_usage(void)
{
    return usage_text;
}

static strata_status_t soak_u64_parse(const char *text, uint64_t *v_p)
{
    char *end;
    if (text == NULL || *text < '0' || *text > '9')
        return STRATA_ERR_INVALID;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || *end != '\0')
        return STRATA_ERR_INVALID;
    *v_p = (uint64_t)v;
    return STRATA_OK;
}

strata_status_t stb_soak_opts_parse(int argc, char *const argv[], stb_soak_opts_t *opts,
                                    char *err, size_t errlen)
{
    int seconds_set = 0;
    uint64_t u;

    memset(opts, 0, sizeof(*opts));
    opts->seconds = STB_SOAK_DEFAULT_SECONDS;
    opts->max_bytes = STB_SOAK_DEFAULT_MAX_BYTES;
    opts->batch = STB_SOAK_DEFAULT_BATCH;
    opts->progress_s = STB_SOAK_DEFAULT_PROGRESS_S;
    opts->inject_wrong = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1;   /* the option takes the next word */
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            opts->help = 1;
            used = 0;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opts->verbose = 1;
            used = 0;
        } else if (strcmp(a, "--seed") == 0) {
            if (soak_u64_parse(v, &opts->seed) != STRATA_OK)
                return stb_err_set(err, errlen, "--seed takes an unsigned integer");
        } else if (strcmp(a, "--calls") == 0) {
            if (soak_u64_parse(v, &opts->calls) != STRATA_OK || opts->calls == 0)
                return stb_err_set(err, errlen, "--calls takes an integer > 0");
        } else if (strcmp(a, "--first") == 0) {
            if (soak_u64_parse(v, &opts->first) != STRATA_OK || opts->first > UINT64_MAX / 2)
                return stb_err_set(err, errlen, "--first takes an integer >= 0");
        } else if (strcmp(a, "--inject-wrong") == 0) {
            if (soak_u64_parse(v, &u) != STRATA_OK || u > (uint64_t)INT64_MAX)
                return stb_err_set(err, errlen, "--inject-wrong takes a call index");
            opts->inject_wrong = (int64_t)u;
        } else if (strcmp(a, "--seconds") == 0) {
            if (stb_int_parse(v, 1, SOAK_MAX_SECONDS, &opts->seconds) != STRATA_OK)
                return stb_err_set(err, errlen, "--seconds takes 1..%d", SOAK_MAX_SECONDS);
            seconds_set = 1;
        } else if (strcmp(a, "--batch") == 0) {
            if (stb_int_parse(v, 1, SOAK_MAX_BATCH, &opts->batch) != STRATA_OK)
                return stb_err_set(err, errlen, "--batch takes 1..%d", SOAK_MAX_BATCH);
        } else if (strcmp(a, "--progress") == 0) {
            if (stb_int_parse(v, 0, SOAK_MAX_SECONDS, &opts->progress_s) != STRATA_OK)
                return stb_err_set(err, errlen, "--progress takes 0..%d", SOAK_MAX_SECONDS);
        } else if (strcmp(a, "--max-bytes") == 0) {
            if (v == NULL || stb_size_parse(v, &opts->max_bytes) != STRATA_OK ||
                opts->max_bytes == 0 || opts->max_bytes > SOAK_MAX_BYTES)
                return stb_err_set(err, errlen, "--max-bytes takes 1 .. 1G (K/M/G suffixes)");
        } else {
            return stb_err_set(err, errlen, "unknown option '%s' (--help lists them)", a);
        }
        i += used;
    }
    if (opts->calls > 0 && seconds_set)
        return stb_err_set(err, errlen, "--calls and --seconds exclude each other");
    return STRATA_OK;
}

/* splitmix64 (Steele, Lea, Flood 2014): the draw's stream, one per (seed, index). */
static uint64_t soak_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned soak_below(uint64_t *state, unsigned n)
{
    return n > 0 ? (unsigned)(soak_next(state) % n) : 0;
}

size_t stb_soak_buf_cap(size_t max_bytes, int nranks)
{
    size_t P = nranks > 0 ? (size_t)nranks : 1;
    return max_bytes + (STB_SOAK_MAX_EXTRA + STB_SOAK_MAX_OFFSET + 1) * STB_DATA_MAX_ELEM * P;
}

/* The count for a buffer of `bytes` (the whole buffer; per rank for RS and AG). */
static size_t soak_count(uint64_t *st, sta_coll_t coll, strata_dtype_t dtype, int nranks,
                         size_t max_bytes)
{
    size_t esz = strata_dtype_size(dtype);
    size_t per = coll == STA_COLL_REDUCE_SCATTER || coll == STA_COLL_ALLGATHER
                     ? (size_t)nranks : 1;
    if (soak_below(st, SOAK_ZERO_IN) == 0)
        return 0;
    /* log-uniform in [1, max_bytes]: as many small calls as large ones */
    double u = (double)(soak_next(st) >> 11) / (double)(1ull << 53);
    size_t bytes = (size_t)exp2(u * log2((double)max_bytes));
    size_t count = bytes / esz / per;
    switch (soak_below(st, 4)) {
    case 0: break;
    case 1: count |= 1; break;
    case 2: count += 1 + soak_below(st, STB_SOAK_MAX_EXTRA); break;
    default: count -= count > 0; break;
    }
    return count;
}

void stb_soak_draw(uint64_t seed, uint64_t index, const sta_dims_t *dims, size_t max_bytes,
                   stb_soak_draw_t *d)
{
    uint64_t st = seed ^ (index * 0xd1342543de82ef95ull);
    int total = SOAK_BARRIER_WEIGHT, pick;
    sta_algo_t fit[STA_ALGO_COUNT];
    int nfit = 0;

    memset(d, 0, sizeof(*d));
    soak_next(&st);   /* let the index's bits spread before the first draw */
    for (int c = 0; c < STA_COLL_COUNT; c++)
        total += coll_weight[c];
    pick = (int)soak_below(&st, (unsigned)total);
    d->force = STA_ALGO_AUTO;
    d->call.coll = STA_COLL_COUNT;
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        if (pick < coll_weight[c]) {
            d->call.coll = (sta_coll_t)c;
            break;
        }
        pick -= coll_weight[c];
    }
    if (d->call.coll == STA_COLL_COUNT) {
        d->barrier = 1;
        return;
    }
    d->call.dtype = (strata_dtype_t)soak_below(&st, STRATA_DTYPE_COUNT);
    d->call.op = (strata_op_t)soak_below(&st, STRATA_OP_COUNT);
    if (d->call.coll == STA_COLL_ALLGATHER || d->call.coll == STA_COLL_BROADCAST)
        d->call.op = STRATA_SUM;
    d->call.root = (int)soak_below(&st, (unsigned)dims->nranks);
    if (d->call.coll != STA_COLL_BROADCAST && d->call.coll != STA_COLL_REDUCE)
        d->call.root = 0;
    d->call.count = soak_count(&st, d->call.coll, d->call.dtype, dims->nranks, max_bytes);
    d->call.in_place = soak_below(&st, SOAK_INPLACE_IN) == 0;
    if (soak_below(&st, SOAK_FORCE_IN) == 0) {
        for (int a = 0; a < STA_ALGO_COUNT; a++)
            if (sta_algo_selectable(dims, d->call.coll, (sta_algo_t)a))
                fit[nfit++] = (sta_algo_t)a;
        if (nfit > 0)
            d->force = fit[soak_below(&st, (unsigned)nfit)];
    }
    d->nonblocking = soak_below(&st, SOAK_NB_IN) == 0;
    d->send_off = soak_below(&st, 2) ? 1 + soak_below(&st, STB_SOAK_MAX_OFFSET) : 0;
    d->recv_off = soak_below(&st, 2) ? 1 + soak_below(&st, STB_SOAK_MAX_OFFSET) : 0;
}

void stb_soak_draw_str(const stb_soak_draw_t *d, char *buf, size_t len)
{
    const stb_call_t *c = &d->call;
    if (d->barrier) {
        snprintf(buf, len, "barrier");
        return;
    }
    int n = snprintf(buf, len, "%s %s", sta_coll_name(c->coll), strata_dtype_name(c->dtype));
    if (c->coll != STA_COLL_ALLGATHER && c->coll != STA_COLL_BROADCAST && n >= 0 &&
        (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " %s", strata_op_name(c->op));
    if (n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " count %zu", c->count);
    if ((c->coll == STA_COLL_BROADCAST || c->coll == STA_COLL_REDUCE) && n >= 0 &&
        (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " root %d", c->root);
    if (n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "%s %s%s%s off %u/%u",
                 c->in_place ? " in-place" : "", d->force == STA_ALGO_AUTO ? "auto" : "forced ",
                 d->force == STA_ALGO_AUTO ? "" : sta_algo_name(d->force),
                 d->nonblocking ? " nb" : "", d->send_off, d->recv_off);
}

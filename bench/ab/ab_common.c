/*
 * Shared pieces of the A/B peer benchmarks: options, sweep, check data and the
 * nccl-tests output layout. See ab_common.h for the terms.
 */
#include "ab_common.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* nccl-tests' default sweep is one size, 32 MiB; ours steps by 2 from 8 B up to it. */
#define AB_DEFAULT_MAX_BYTES (32u << 20)
#define AB_DEFAULT_ITERS 20
#define AB_DEFAULT_WARMUP 5
/* A whole sweep to 256 MiB at 4 ranks on 2 cores takes about two minutes; leave room. */
#define AB_DEFAULT_TIMEOUT_S 900
/* Field widths of the nccl-tests layout: time, then the bandwidths and #wrong. */
#define AB_W_TIME 7
#define AB_W_BW 6

static double footer_busbw_sum;
static long footer_rows;
static long footer_wrong;
static const char *timeout_program = "bench";

static int parse_bytes(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    switch (*end) {
    case 'G': case 'g': v <<= 30; end++; break;
    case 'M': case 'm': v <<= 20; end++; break;
    case 'K': case 'k': v <<= 10; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static void print_usage(const char *prog, unsigned accepted, const char *extra)
{
    fprintf(stderr,
            "usage: %s [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
            "       [-d float|double|int32|int64] [-o sum|prod|min|max] [-T SECONDS]%s%s%s\n"
            "  sizes take K, M, G suffixes; the output follows nccl-tests' layout\n%s",
            prog, (accepted & AB_OPT_NP) ? " [--np N]" : "",
            (accepted & AB_OPT_ALGO) ? " [-A ALGO]" : "",
            (accepted & AB_OPT_LAUNCHED) ? " [--store DIR] [--iface NAME]" : "",
            extra ? extra : "");
}

int ab_opts_parse(int argc, char **argv, unsigned accepted, const char *extra_usage,
                  ab_opts_t *o)
{
    static const struct option longs[] = {
        {"np", required_argument, NULL, 'N'},
        {"store", required_argument, NULL, 'S'},
        {"iface", required_argument, NULL, 'I'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, bad = 0;

    memset(o, 0, sizeof(*o));
    o->min_bytes = 8;
    o->max_bytes = AB_DEFAULT_MAX_BYTES;
    o->step_bytes = 1u << 20;
    o->step_factor = 2;
    o->iters = AB_DEFAULT_ITERS;
    o->warmup = AB_DEFAULT_WARMUP;
    o->check = 1;
    o->dtype = AB_FLOAT;
    o->op = AB_SUM;
    o->timeout_s = AB_DEFAULT_TIMEOUT_S;

    while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:c:d:o:T:A:h", longs, NULL)) != -1) {
        switch (c) {
        case 'b': bad |= parse_bytes(optarg, &o->min_bytes); break;
        case 'e': bad |= parse_bytes(optarg, &o->max_bytes); break;
        case 'i': bad |= parse_bytes(optarg, &o->step_bytes); break;
        case 'f': {
            int f;
            bad |= parse_int(optarg, 1, 1 << 20, &f);
            o->step_factor = f;
            break;
        }
        case 'n': bad |= parse_int(optarg, 1, 1 << 30, &o->iters); break;
        case 'w': bad |= parse_int(optarg, 0, 1 << 30, &o->warmup); break;
        case 'c': bad |= parse_int(optarg, 0, 1, &o->check); break;
        case 'T': bad |= parse_int(optarg, 1, 1 << 24, &o->timeout_s); break;
        case 'd':
            if (strcmp(optarg, "float") == 0) o->dtype = AB_FLOAT;
            else if (strcmp(optarg, "double") == 0) o->dtype = AB_DOUBLE;
            else if (strcmp(optarg, "int32") == 0) o->dtype = AB_INT32;
            else if (strcmp(optarg, "int64") == 0) o->dtype = AB_INT64;
            else bad = -1;
            break;
        case 'o':
            if (strcmp(optarg, "sum") == 0) o->op = AB_SUM;
            else if (strcmp(optarg, "prod") == 0) o->op = AB_PROD;
            else if (strcmp(optarg, "min") == 0) o->op = AB_MIN;
            else if (strcmp(optarg, "max") == 0) o->op = AB_MAX;
            else bad = -1;
            break;
        case 'N':
            if (!(accepted & AB_OPT_NP)) bad = -1;
            else bad |= parse_int(optarg, 1, 64, &o->nranks);
            break;
        case 'A':
            if (!(accepted & AB_OPT_ALGO)) bad = -1;
            else o->algo = optarg;
            break;
        case 'S':
            if (!(accepted & AB_OPT_LAUNCHED) || *optarg == '\0') bad = -1;
            else o->store = optarg;
            break;
        case 'I':
            if (!(accepted & AB_OPT_LAUNCHED) || *optarg == '\0') bad = -1;
            else o->iface = optarg;
            break;
        case 'h':
            print_usage(argv[0], accepted, extra_usage);
            return 1;
        default:
            bad = -1;
            break;
        }
        if (bad) {
            fprintf(stderr, "%s: bad or unexpected option near '%s'\n", argv[0],
                    argv[optind - 1 < argc ? optind - 1 : argc - 1]);
            break;
        }
    }
    if (!bad && optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        bad = -1;
    }
    if (!bad && (o->min_bytes == 0 || o->max_bytes < o->min_bytes ||
                 (o->step_factor <= 1 && o->step_bytes == 0))) {
        fprintf(stderr, "%s: need 0 < -b <= -e, and -f > 1 or -i > 0\n", argv[0]);
        bad = -1;
    }
    if (bad) {
        print_usage(argv[0], accepted, extra_usage);
        return -1;
    }
    return 0;
}

size_t ab_dtype_size(ab_dtype_t t)
{
    return t == AB_DOUBLE || t == AB_INT64 ? 8 : 4;
}

const char *ab_dtype_name(ab_dtype_t t)
{
    static const char *const names[] = {"float", "double", "int32", "int64"};
    return names[t];
}

const char *ab_op_name(ab_op_t op)
{
    static const char *const names[] = {"sum", "prod", "min", "max"};
    return names[op];
}

size_t ab_size_first(const ab_opts_t *o)
{
    return o->min_bytes;
}

size_t ab_size_next(const ab_opts_t *o, size_t size)
{
    size_t next = o->step_factor > 1 ? (size_t)((double)size * o->step_factor)
                                     : size + o->step_bytes;
    return next > o->max_bytes || next <= size ? 0 : next;
}

/*
 * Inputs are small integers so every reduction is exact: sums stay within
 * +-8 * 64; products are +-2^k with at most 8 factors of 2 (one rank in 8
 * contributes a 2 for a given element), so int32 and float hold them too.
 */
static double input_value(size_t i, int rank, ab_op_t op)
{
    if (op == AB_PROD) {
        if ((i + (size_t)rank) % 8 == 0)
            return 2;
        return (i * 3 + (size_t)rank) % 5 == 0 ? -1 : 1;
    }
    return (double)((i * 7 + (size_t)rank * 13) % 17) - 8;
}

void ab_fill(void *buf, size_t count, ab_dtype_t t, ab_op_t op, int rank)
{
    for (size_t i = 0; i < count; i++) {
        double v = input_value(i, rank, op);
        switch (t) {
        case AB_FLOAT: ((float *)buf)[i] = (float)v; break;
        case AB_DOUBLE: ((double *)buf)[i] = v; break;
        case AB_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case AB_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
        }
    }
}

size_t ab_check(const void *buf, size_t count, ab_dtype_t t, ab_op_t op, int nranks)
{
    size_t wrong = 0;

    for (size_t i = 0; i < count; i++) {
        double want = input_value(i, 0, op), got = 0;
        for (int r = 1; r < nranks; r++) {
            double v = input_value(i, r, op);
            switch (op) {
            case AB_SUM: want += v; break;
            case AB_PROD: want *= v; break;
            case AB_MIN: want = v < want ? v : want; break;
            case AB_MAX: want = v > want ? v : want; break;
            }
        }
        switch (t) {
        case AB_FLOAT: got = ((const float *)buf)[i]; break;
        case AB_DOUBLE: got = ((const double *)buf)[i]; break;
        case AB_INT32: got = ((const int32_t *)buf)[i]; break;
        case AB_INT64: got = (double)((const int64_t *)buf)[i]; break;
        }
        wrong += got != want;
    }
    return wrong;
}

/* As many decimals as fit in `width` characters: small times keep their digits. */
static const char *fmt_fit(char *out, size_t cap, double v, int width)
{
    int digits = v >= 1 ? (int)floor(log10(v)) + 1 : 1;
    int decimals = width - digits - 1;

    if (decimals < 0)
        decimals = 0;
    snprintf(out, cap, "%.*f", decimals, v);
    return out;
}

void ab_print_header(const ab_opts_t *o, const char *program, const char *system, int nranks)
{
    char step[64];

    if (o->step_factor > 1)
        snprintf(step, sizeof(step), "%g(factor)", o->step_factor);
    else
        snprintf(step, sizeof(step), "%zu(bytes)", o->step_bytes);
    printf("# strata bench/ab %s: allreduce over %s\n", program, system);
    printf("# nranks %d minBytes %zu maxBytes %zu step: %s warmup iters: %d iters: %d "
           "validation: %d\n#\n",
           nranks, o->min_bytes, o->max_bytes, step, o->warmup, o->iters, o->check);
    printf("# Using devices\n");
}

void ab_print_rank(int rank, long pid, const char *host)
{
    printf("#  Rank %2d Pid %6ld on %10s host memory\n", rank, pid, host);
}

void ab_print_titles(void)
{
    printf("#\n");
    printf("# %70s %30s\n", "out-of-place", "in-place");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
           "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
           "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
           "");
    fflush(stdout);
}

static void print_block(size_t size, int nranks, double us, long wrong)
{
    char t[32], a[32], b[32], w[32];
    double algbw = us > 0 ? (double)size / (us * 1e3) : 0;
    double busbw = algbw * 2.0 * (nranks - 1) / nranks;

    if (wrong < 0)
        snprintf(w, sizeof(w), "N/A");
    else
        snprintf(w, sizeof(w), "%ld", wrong);
    printf("  %7s  %6s  %6s  %6s", fmt_fit(t, sizeof(t), us, AB_W_TIME),
           fmt_fit(a, sizeof(a), algbw, AB_W_BW), fmt_fit(b, sizeof(b), busbw, AB_W_BW), w);
    footer_busbw_sum += busbw;
    footer_rows++;
    if (wrong > 0)
        footer_wrong += wrong;
}

void ab_print_row(const ab_opts_t *o, size_t size, int nranks, double oop_us, long oop_wrong,
                  double ip_us, long ip_wrong)
{
    printf("%12zu  %12zu  %8s  %6s  %6d", size, size / ab_dtype_size(o->dtype),
           ab_dtype_name(o->dtype), ab_op_name(o->op), -1);
    print_block(size, nranks, oop_us, oop_wrong);
    print_block(size, nranks, ip_us, ip_wrong);
    printf("\n");
    fflush(stdout);
}

int ab_print_footer(void)
{
    printf("# Out of bounds values : %ld %s\n", footer_wrong, footer_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n",
           footer_rows ? footer_busbw_sum / (double)footer_rows : 0.0);
    fflush(stdout);
    return footer_wrong ? 1 : 0;
}

double ab_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig)
{
    static const char msg[] = ": timeout (-T) passed, exiting\n";
    (void)sig;
    if (write(STDERR_FILENO, timeout_program, strlen(timeout_program)) < 0 ||
        write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* Nothing more to do: exiting is the point. */
    }
    _exit(3);
}

void ab_arm_timeout(const ab_opts_t *o, const char *program)
{
    struct sigaction sa;

    timeout_program = program;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)o->timeout_s);
}

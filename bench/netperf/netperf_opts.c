/* strata-netperf: command line, run parameters, iteration scaling, process helpers. */
#include "bench/netperf/netperf.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/lib/tool_netns.h"
#include "tools/lib/tool_util.h"
#include "tools/run/run_opts.h"
#include "transport/base/netif.h"
#include "util/compiler.h"
#include "util/time.h"

/*
 * Bytes one measurement may move (iterations x size) before its iterations
 * are scaled down: at the 1-4 GB/s loopback TCP streams on a 2-core machine
 * (loaded or quiet), each scaled size costs well under a second per path, so a
 * default sweep stays short enough to run as a check.
 */
#define NP_BYTES_BUDGET (256.0 * 1024 * 1024)
/* Fewest timed iterations after scaling: enough for a median that means something. */
#define NP_MIN_ITERS 10
/*
 * Streamed messages per -n: a stream of 1000 small messages lasts a few
 * milliseconds, too short to rise above the machine's scheduling noise.
 */
#define NP_STREAM_MULT 10
#define NP_DEFAULT_ITERS 1000
#define NP_DEFAULT_WARMUP 50
#define NP_DEFAULT_WINDOW 16
#define NP_DEFAULT_MIN_BYTES 8
#define NP_DEFAULT_MAX_BYTES (64u * 1024 * 1024)
#define NP_DEFAULT_TIMEOUT_S 30
/* A --listen server waits this long for its client (a person starting the other side). */
#define NP_DEFAULT_ACCEPT_TIMEOUT_S 120
#define NP_MAX_ITERS 1000000

enum {
    OPT_PLUGIN = 256,
    OPT_RAW,
    OPT_RAW_ONLY,
    OPT_RAW_SPIN,
    OPT_RAW_PAIR,
    OPT_SPIN,
    OPT_LISTEN,
    OPT_CONNECT,
    OPT_ACCEPT_TIMEOUT,
    OPT_CSV,
    OPT_RUNS,
    OPT_NETNS_RAILS,
    OPT_RAIL_RATE,
    OPT_RAIL_DOWN,
    OPT_BIND,
};

static const struct option np_long_opts[] = {
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"iters", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'},
    {"window", required_argument, NULL, 'W'},
    {"check", required_argument, NULL, 'c'},
    {"dev", required_argument, NULL, 'd'},
    {"timeout", required_argument, NULL, 'T'},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"raw", no_argument, NULL, OPT_RAW},
    {"raw-only", no_argument, NULL, OPT_RAW_ONLY},
    {"raw-spin", no_argument, NULL, OPT_RAW_SPIN},
    {"raw-pair", no_argument, NULL, OPT_RAW_PAIR},
    {"spin", no_argument, NULL, OPT_SPIN},
    {"listen", optional_argument, NULL, OPT_LISTEN},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"accept-timeout", required_argument, NULL, OPT_ACCEPT_TIMEOUT},
    {"bind", required_argument, NULL, OPT_BIND},
    {"csv", no_argument, NULL, OPT_CSV},
    {"runs", required_argument, NULL, OPT_RUNS},
    {"netns-rails", required_argument, NULL, OPT_NETNS_RAILS},
    {"rail-rate", required_argument, NULL, OPT_RAIL_RATE},
    {"rail-down", required_argument, NULL, OPT_RAIL_DOWN},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void np_usage(FILE *out)
{
    fprintf(
        out,
        "usage: strata-netperf [options]                 both ends on this host (fork)\n"
        "       strata-netperf --listen [PORT] [options] server of a two-host run\n"
        "       strata-netperf --connect HOST:PORT [options]  client of a two-host run\n"
        "\n"
        "Point-to-point latency and bandwidth through the NCCL net plugin API\n"
        "(ncclNetPlugin_v11), optionally next to a raw TCP socket on the same path.\n"
        "The client's sweep options apply to both ends of a two-host run.\n"
        "\n"
        "  -b, --minbytes SIZE    smallest message (default 8); K/M/G suffixes\n"
        "  -e, --maxbytes SIZE    largest message (default 64M)\n"
        "  -f, --stepfactor N     size multiplier between rows (default 2)\n"
        "  -n, --iters N          timed round trips per size, and 10 N streamed messages\n"
        "                         (default %d; fewer for large sizes, at least %d)\n"
        "  -w, --warmup N         untimed ones before them (default %d, scaled likewise)\n"
        "  -W, --window N         streaming messages in flight, 1..%d (default %d)\n"
        "  -c, --check 0|1        check the data of the first message of each size (default 1)\n"
        "  -d, --dev N            plugin device (default 0)\n"
        "  -T, --timeout SEC      bound on every wait (default %d)\n"
        "      --plugin PATH      plugin library (default %s)\n"
        "      --raw              also measure a plain blocking TCP socket, side by side\n"
        "      --raw-only         measure only the raw socket (no plugin)\n"
        "      --raw-spin         raw receives busy-poll instead of sleeping in recv()\n"
        "      --raw-pair         one raw connection per direction (the plugin's layout)\n"
        "      --spin             plugin tests busy-poll without sched_yield() between them\n"
        "      --listen [PORT]    serve a two-host run; port 0 (default) lets the kernel pick\n"
        "      --bind IF|ADDR     where --listen listens: an interface's address, or an address\n"
        "                         (0.0.0.0 or :: for every one); default: the first interface\n"
        "                         the tcp transport would use (STRATA_SOCKET_IFNAME)\n"
        "      --connect HOST:PORT  run against a --listen server\n"
        "      --accept-timeout SEC  how long --listen waits for its client; connections that\n"
        "                         are not a strata-netperf client are closed meanwhile (default %d)\n"
        "      --runs N           repeat the sweep N times (1..%d) and report per-size medians\n"
        "      --netns-rails N    run between two emulated nodes (namespaces) joined by N rails\n"
        "                         (1..4, one veth each: veth0, veth1, ...; needs root)\n"
        "      --rail-rate R      shape every rail with tbf at R (tc syntax: 1gbit, 500mbit)\n"
        "      --rail-down R@MS   take rail R down in the server's node MS ms after the start\n"
        "                         (failover of a virtual NIC: STRATA_NET_FUSE=all)\n"
        "      --csv              CSV rows (lines starting with '#' are comments)\n"
        "  -v, --verbose          plugin INFO logs and progress on stderr\n"
        "  -h, --help             this text\n"
        "\n"
        "Transport choice is the plugin's: STRATA_TRANSPORT, STRATA_SOCKET_NSOCKS, ...\n",
        NP_DEFAULT_ITERS, NP_MIN_ITERS, NP_DEFAULT_WARMUP, STB_P2P_MAX_WINDOW,
        NP_DEFAULT_WINDOW, NP_DEFAULT_TIMEOUT_S, STRATA_PLUGIN_PATH,
        NP_DEFAULT_ACCEPT_TIMEOUT_S, STB_NP_MAX_RUNS);
}

/* Parses a decimal integer in [lo, hi]; logs and returns -1 when it is not one. */
static int np_int_parse(const char *opt, const char *text, long lo, long hi, int *value_p)
{
    if (stb_int_parse(text, lo, hi, value_p) != STRATA_OK) {
        stb_log_err("%s: '%s' is not an integer in %ld..%ld", opt, text, lo, hi);
        return -1;
    }
    return 0;
}

static int np_size_opt(const char *opt, const char *text, size_t *value_p)
{
    if (stb_size_parse(text, value_p) != STRATA_OK) {
        stb_log_err("%s: '%s' is not a size (bytes, with an optional K, M or G)", opt, text);
        return -1;
    }
    return 0;
}

static void np_ctx_init(stb_np_ctx_t *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->cfg.min_bytes = NP_DEFAULT_MIN_BYTES;
    ctx->cfg.max_bytes = NP_DEFAULT_MAX_BYTES;
    ctx->cfg.factor = 2;
    ctx->cfg.iters = NP_DEFAULT_ITERS;
    ctx->cfg.warmup = NP_DEFAULT_WARMUP;
    ctx->cfg.window = NP_DEFAULT_WINDOW;
    ctx->cfg.check = 1;
    ctx->cfg.runs = 1;
    ctx->rail_down = -1;
    /* Any value will do as long as both ends use it; the client's is sent to the server. */
    ctx->cfg.comm_id = ((uint64_t)getpid() << 32) ^ stu_time_ns();
    ctx->cfg.timeout_ms = NP_DEFAULT_TIMEOUT_S * 1000;
    ctx->accept_timeout_ms = NP_DEFAULT_ACCEPT_TIMEOUT_S * 1000;
    ctx->plugin_path = STRATA_PLUGIN_PATH;
    ctx->boot.fd = -1;
    ctx->raw.fd = -1;
    ctx->raw.rfd = -1;
}

/* Checks the combination of options; -1 after logging what is wrong. */
static int np_opts_validate(stb_np_ctx_t *ctx)
{
    stb_np_config_t *cfg = &ctx->cfg;
    size_t nsizes = 0;

    if (cfg->min_bytes < 1 || cfg->max_bytes < cfg->min_bytes) {
        stb_log_err("want 1 <= -b (%zu) <= -e (%zu)", cfg->min_bytes, cfg->max_bytes);
        return -1;
    }
    /* test() reports sizes as int. */
    if (cfg->max_bytes > INT_MAX) {
        stb_log_err("-e %zu is above the %d bytes the plugin API can report", cfg->max_bytes,
                    INT_MAX);
        return -1;
    }
    for (size_t s = cfg->min_bytes; s <= cfg->max_bytes; s *= cfg->factor) {
        nsizes++;
        if (s > cfg->max_bytes / cfg->factor)
            break;
    }
    if (nsizes > STB_NP_MAX_SIZES) {
        stb_log_err("the sweep has %zu sizes; at most %d", nsizes, STB_NP_MAX_SIZES);
        return -1;
    }
    if (ctx->listen && ctx->connect != NULL) {
        stb_log_err("--listen and --connect exclude each other");
        return -1;
    }
    if (ctx->bind != NULL && !ctx->listen) {
        stb_log_err("--bind goes with --listen");
        return -1;
    }
    uint64_t bps;
    if (ctx->netns_rails > 0 && (ctx->listen || ctx->connect != NULL || cfg->raw)) {
        stb_log_err("--netns-rails is a local run of the plugin: no --listen, --connect, --raw");
        return -1;
    }
    if (ctx->rail_down >= ctx->netns_rails && ctx->rail_down >= 0) {
        stb_log_err("--rail-down %d: the run has %d rail(s) (--netns-rails)", ctx->rail_down,
                    ctx->netns_rails);
        return STRATA_ERR_INVALID;
    }
    if (ctx->rail_rate != NULL &&
        (ctx->netns_rails == 0 || stb_run_rate_parse(ctx->rail_rate, &bps) != STRATA_OK)) {
        stb_log_err("--rail-rate '%s': a tc rate (1gbit, 500mbit) with --netns-rails",
                    ctx->rail_rate);
        return -1;
    }
    return 0;
}

/* --listen takes an optional port: "--listen=PORT", or "--listen PORT" when PORT is numeric. */
static int np_listen_opt(stb_np_ctx_t *ctx, int argc, char **argv)
{
    const char *port = optarg;

    ctx->listen = 1;
    if (port == NULL && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
        port = argv[optind++];
    ctx->listen_port = 0;
    return port == NULL ? 0 : np_int_parse("--listen", port, 0, 65535, &ctx->listen_port);
}

int stb_np_opts_parse(stb_np_ctx_t *ctx, int argc, char **argv)
{
    stb_np_config_t *cfg = &ctx->cfg;
    int c, factor, secs, bad = 0;

    np_ctx_init(ctx);
    static const char short_opts[] = "b:e:f:n:w:W:c:d:T:vh";

    while (!bad && (c = getopt_long(argc, argv, short_opts, np_long_opts, NULL)) != -1) {
        switch (c) {
        case 'b': bad = np_size_opt("-b", optarg, &cfg->min_bytes); break;
        case 'e': bad = np_size_opt("-e", optarg, &cfg->max_bytes); break;
        case 'f':
            bad = np_int_parse("-f", optarg, 2, 1024, &factor);
            cfg->factor = (unsigned)factor;
            break;
        case 'n': bad = np_int_parse("-n", optarg, 1, NP_MAX_ITERS, &cfg->iters); break;
        case 'w': bad = np_int_parse("-w", optarg, 0, NP_MAX_ITERS, &cfg->warmup); break;
        case 'W': bad = np_int_parse("-W", optarg, 1, STB_P2P_MAX_WINDOW, &cfg->window); break;
        case 'c': bad = np_int_parse("-c", optarg, 0, 1, &cfg->check); break;
        case 'd': bad = np_int_parse("-d", optarg, 0, INT_MAX, &ctx->dev); break;
        case 'T':
            bad = np_int_parse("-T", optarg, 1, 86400, &secs);
            cfg->timeout_ms = secs * 1000;
            break;
        case OPT_PLUGIN: ctx->plugin_path = optarg; break;
        case OPT_RAW: cfg->raw = 1; break;
        case OPT_RAW_ONLY: cfg->raw = cfg->raw_only = 1; break;
        case OPT_RAW_SPIN: cfg->raw_spin = 1; break;
        case OPT_RAW_PAIR: cfg->raw_pair = 1; break;
        case OPT_SPIN: cfg->spin = 1; break;
        case OPT_LISTEN: bad = np_listen_opt(ctx, argc, argv); break;
        case OPT_CONNECT: ctx->connect = optarg; break;
        case OPT_BIND: ctx->bind = optarg; break;
        case OPT_ACCEPT_TIMEOUT:
            bad = np_int_parse("--accept-timeout", optarg, 1, 86400, &secs);
            ctx->accept_timeout_ms = secs * 1000;
            break;
        case OPT_CSV: cfg->csv = 1; break;
        case OPT_RUNS:
            bad = np_int_parse("--runs", optarg, 1, STB_NP_MAX_RUNS, &cfg->runs);
            break;
        case OPT_NETNS_RAILS:
            bad = np_int_parse("--netns-rails", optarg, 1, STB_NETNS_MAX_RAILS,
                               &ctx->netns_rails);
            break;
        case OPT_RAIL_RATE: ctx->rail_rate = optarg; break;
        case OPT_RAIL_DOWN: {
            char tail = 0;
            if (sscanf(optarg, "%d@%d%c", &ctx->rail_down, &ctx->rail_down_ms, &tail) != 2 ||
                ctx->rail_down < 0 || ctx->rail_down >= STB_NETNS_MAX_RAILS ||
                ctx->rail_down_ms < 0) {
                stb_log_err("--rail-down '%s': RAIL@MS, a rail index and milliseconds", optarg);
                bad = 1;
            }
            break;
        }
        case 'v': stb_log_verbose = 1; break;
        case 'h': np_usage(stdout); return 0;
        default: bad = 1; break;
        }
    }
    if (!bad && optind < argc) {
        stb_log_err("unexpected argument '%s'", argv[optind]);
        bad = 1;
    }
    if (bad || np_opts_validate(ctx) != 0) {
        fprintf(stderr, "try 'strata-netperf --help'\n");
        return 2;
    }
    return -1;
}

void stb_np_config_pack(const stb_np_config_t *cfg, uint64_t wire[STB_NP_CONFIG_WORDS])
{
    const uint64_t v[STB_NP_CONFIG_WORDS] = {
        cfg->min_bytes, cfg->max_bytes, cfg->factor, (uint64_t)cfg->iters,
        (uint64_t)cfg->warmup, (uint64_t)cfg->window, (uint64_t)cfg->check,
        (uint64_t)cfg->raw, (uint64_t)cfg->raw_only, (uint64_t)cfg->raw_spin,
        (uint64_t)cfg->spin, (uint64_t)cfg->timeout_ms, (uint64_t)cfg->csv,
        (uint64_t)cfg->runs, (uint64_t)cfg->raw_pair, cfg->comm_id,
    };
    for (int i = 0; i < STB_NP_CONFIG_WORDS; i++)
        wire[i] = htobe64(v[i]);
}

void stb_np_config_unpack(const uint64_t wire[STB_NP_CONFIG_WORDS], stb_np_config_t *cfg)
{
    uint64_t v[STB_NP_CONFIG_WORDS];

    for (int i = 0; i < STB_NP_CONFIG_WORDS; i++)
        v[i] = be64toh(wire[i]);
    cfg->min_bytes = (size_t)v[0];
    cfg->max_bytes = (size_t)v[1];
    cfg->factor = (unsigned)v[2];
    cfg->iters = (int)v[3];
    cfg->warmup = (int)v[4];
    cfg->window = (int)v[5];
    cfg->check = (int)v[6];
    cfg->raw = (int)v[7];
    cfg->raw_only = (int)v[8];
    cfg->raw_spin = (int)v[9];
    cfg->spin = (int)v[10];
    cfg->timeout_ms = (int)v[11];
    cfg->csv = (int)v[12];
    cfg->runs = (int)v[13];
    cfg->raw_pair = (int)v[14];
    cfg->comm_id = v[15];
    if (cfg->runs < 1 || cfg->runs > STB_NP_MAX_RUNS)
        cfg->runs = 1;
}

/* n scaled so that n x size stays within the byte budget, but not below least (or n). */
static int np_scaled(int n, size_t size, int least)
{
    double bytes = (double)size * n;

    if (bytes <= NP_BYTES_BUDGET)
        return n;
    int scaled = (int)(n * (NP_BYTES_BUDGET / bytes));
    return STU_MAX(scaled, STU_MIN(n, least));
}

void stb_np_iters_scale(const stb_np_config_t *cfg, size_t size, int *iters_p, int *warmup_p,
                        int *count_p)
{
    *iters_p = np_scaled(cfg->iters, size, NP_MIN_ITERS);
    *warmup_p = np_scaled(cfg->warmup, size, 1);
    *count_p = np_scaled(cfg->iters * NP_STREAM_MULT, size, NP_MIN_ITERS);
}

/* The first address of interface `name`, IPv4 before IPv6; 0 when found. */
static int np_if_addr(const char *name, char *host, size_t len)
{
    struct ifaddrs *ifs, *ifa;
    int found = -1;

    if (getifaddrs(&ifs) != 0)
        return -1;
    for (int pass = 0; pass < 2 && found != 0; pass++) {
        int family = pass == 0 ? AF_INET : AF_INET6;
        for (ifa = ifs; ifa != NULL && found != 0; ifa = ifa->ifa_next) {
            if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != family ||
                strcmp(ifa->ifa_name, name) != 0 || !(ifa->ifa_flags & IFF_UP))
                continue;
            socklen_t salen = family == AF_INET ? sizeof(struct sockaddr_in)
                                                : sizeof(struct sockaddr_in6);
            if (family == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr))
                continue;
            if (getnameinfo(ifa->ifa_addr, salen, host, (socklen_t)len, NULL, 0,
                            NI_NUMERICHOST) == 0)
                found = 0;
        }
    }
    freeifaddrs(ifs);
    return found;
}

strata_status_t stb_np_listen_host(const stb_np_ctx_t *ctx, char *host, size_t len, char *how,
                                   size_t howlen)
{
    stt_netif_t ifs[STT_NETIF_MAX];
    int n = 0;

    if (ctx->bind != NULL && np_if_addr(ctx->bind, host, len) == 0) {
        snprintf(how, howlen, "interface %s", ctx->bind);
        return STRATA_OK;
    }
    if (ctx->bind != NULL) {
        snprintf(host, len, "%s", ctx->bind);
        snprintf(how, howlen, "--bind");
        return STRATA_OK;
    }
    if (stt_netif_discover("strata-netperf", ifs, STT_NETIF_MAX, &n) != STRATA_OK || n == 0) {
        stb_log_err(
            "--listen: no interface to listen on (see STRATA_SOCKET_IFNAME, or --bind)");
        return STRATA_ERR_NOT_FOUND;
    }
    if (getnameinfo(&ifs[0].addr.sa, stt_netif_addr_len(&ifs[0].addr), host, (socklen_t)len,
                    NULL, 0, NI_NUMERICHOST) != 0) {
        stb_log_err("--listen: the address of %s cannot be printed", ifs[0].name);
        return STRATA_ERR_INVALID;
    }
    snprintf(how, howlen, "interface %s, the tcp transport's first", ifs[0].name);
    return STRATA_OK;
}

void stb_np_raw_host_pick(stb_np_ctx_t *ctx)
{
    stb_np_raw_addr_t *addr = &ctx->raw_addr;
    stu_addr_t local;

    if (ctx->plugin != NULL && np_if_addr(ctx->props.name, addr->host, sizeof(addr->host)) == 0) {
        snprintf(addr->how, sizeof(addr->how), "address of interface %s, the plugin's device",
                 ctx->props.name);
        return;
    }
    if (!ctx->local && stu_sock_addr(ctx->boot.fd, 0, &local) == STRATA_OK) {
        stu_addr_host(&local, addr->host, sizeof(addr->host));
        snprintf(addr->how, sizeof(addr->how), "the address the bootstrap reached");
        return;
    }
    snprintf(addr->host, sizeof(addr->host), "127.0.0.1");
    snprintf(addr->how, sizeof(addr->how), "loopback");
}

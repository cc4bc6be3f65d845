/*
 * strata-netperf's shared state, split across bench/netperf/netperf_main.c (process
 * layout, setup, the sweep), bench/netperf/netperf_opts.c (command line, run
 * parameters, iteration scaling) and bench/netperf/netperf_report.c (output).
 */
#ifndef STB_NETPERF_H
#define STB_NETPERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/lib/tool_boot.h"
#include "bench/netperf/netperf_p2p.h"
#include "tools/lib/plugin_loader.h"
#include "bench/netperf/netperf_raw.h"
#include "strata/status.h"

#define STB_NP_MAX_SIZES 64
#define STB_NP_MAX_RUNS 15
/* The acks at the end of streaming phases need a few bytes even with -e 1. */
#define STB_NP_MIN_BUFFER 64
#define STB_NP_CONFIG_WORDS 16
#define STB_NP_HOW_LEN 128

/* Run parameters: the client's, sent to the server at start. */
typedef struct stb_np_config {
    size_t min_bytes;
    size_t max_bytes;
    unsigned factor;
    int iters;          /* -n: timed round trips / streamed messages, before scaling */
    int warmup;         /* -w, before scaling */
    int window;         /* -W */
    int check;          /* -c */
    int raw;            /* --raw or --raw-only: measure the raw socket */
    int raw_only;       /* --raw-only: no plugin at all */
    int raw_spin;       /* --raw-spin: raw receives poll instead of sleeping */
    int raw_pair;       /* --raw-pair: one raw connection per direction, as the plugin has */
    int spin;           /* --spin: no yield between plugin tests */
    int timeout_ms;     /* --timeout */
    int csv;            /* --csv (client side only) */
    int runs;           /* --runs: whole sweeps, reported as per-size medians */
    uint64_t comm_id;   /* init's commId: one value for both ends, like NCCL's commHash */
} stb_np_config_t;

/* One row of the table: one message size. */
typedef struct stb_np_row {
    size_t size;
    int iters;          /* timed round trips */
    int count;          /* timed streamed messages */
    double lat_us;
    double bw_gbs;
    double raw_lat_us;
    double raw_bw_gbs;
    double lat_x;       /* plugin / raw, 0 without both */
    double bw_x;
    uint64_t wrong;     /* bytes received wrong through the plugin, both sides */
    uint64_t raw_wrong;
} stb_np_row_t;

/* What each side tells the other about itself. */
typedef struct stb_np_peer_info {
    char host[64];
    char dev_name[64];
    int32_t speed_mbps;
    int32_t unused;
} stb_np_peer_info_t;

/* Where the server's raw socket listens, and why there. */
typedef struct stb_np_raw_addr {
    char host[STU_ADDR_TEXT_LEN];
    char how[STB_NP_HOW_LEN];
    int32_t port;       /* 0: the server failed to listen */
    int32_t unused;
} stb_np_raw_addr_t;

typedef struct stb_np_ctx {
    stb_np_config_t cfg;
    /* Options that stay local to each side. */
    const char *plugin_path;
    int dev;
    int listen;
    int listen_port;
    const char *bind;   /* --bind: interface name or address for --listen; NULL: default */
    int accept_timeout_ms;
    const char *connect;
    int netns_rails;    /* --netns-rails: 0, or a local run between two emulated nodes with
                           this many rails (tools/lib/tool_netns.h) */
    const char *rail_rate;  /* --rail-rate: tbf rate of every rail, tc syntax; NULL: none */
    int rail_down;          /* --rail-down R@MS: the rail taken down in the server's node, -1 */
    int rail_down_ms;       /* ... this long after the two sides started */
    int local;          /* forked pair on one host */
    int client;
    int greeted;        /* the hello is done (a --listen server checks it before the run) */
    /* State of a run. */
    stb_boot_t boot;
    stb_plugin_t *plugin;
    int ndev;
    stb_plugin_props_t props;
    stb_p2p_t p2p;
    int p2p_open;
    stb_raw_t raw;
    stb_np_raw_addr_t raw_addr;
    stb_np_peer_info_t peer;
    void *sbuf;
    void *rbuf;
    size_t buf_bytes;
    double *rtt_us;
    uint64_t start_ns;
    stb_np_row_t runs[STB_NP_MAX_RUNS][STB_NP_MAX_SIZES];
    stb_np_row_t rows[STB_NP_MAX_SIZES];   /* what is reported: the medians over runs */
    size_t nrows;
} stb_np_ctx_t;

/*
 * Parses the command line into ctx (which it initialises first). Returns -1
 * to go on and run, or an exit code (0 after --help, 2 after a usage error).
 */
int stb_np_opts_parse(stb_np_ctx_t *ctx, int argc, char **argv);

/* The run parameters on the wire: fixed-width, big endian. */
void stb_np_config_pack(const stb_np_config_t *cfg, uint64_t wire[STB_NP_CONFIG_WORDS]);
void stb_np_config_unpack(const uint64_t wire[STB_NP_CONFIG_WORDS], stb_np_config_t *cfg);

/*
 * Iterations for one size: -n and -w as given while size * n stays within
 * the byte budget, fewer above it (never below STB_NP_MIN_ITERS timed ones),
 * so a default sweep fits the time target. Both sides compute the same.
 */
void stb_np_iters_scale(const stb_np_config_t *cfg, size_t size, int *iters_p, int *warmup_p,
                        int *count_p);

/*
 * Server side: the address the raw socket listens on, the plugin device's
 * own interface when one has its name, else loopback (local) or the address
 * the client reached over the bootstrap (two hosts). Fills ctx->raw_addr.
 */
void stb_np_raw_host_pick(stb_np_ctx_t *ctx);

/*
 * Where --listen listens (numeric host into host, and why into how): --bind as an
 * interface's name (its address) or as an address; without --bind the first interface
 * the tcp transport selects (STRATA_SOCKET_IFNAME), never every interface.
 */
strata_status_t stb_np_listen_host(const stb_np_ctx_t *ctx, char *host, size_t len, char *how,
                                   size_t howlen);

/*
 * Folds runs[0..nruns-1][i] into rows[i]: the median of every measured
 * column, and of the per-run ratios (each run pairs plugin and raw measured
 * moments apart, so its ratio is steadier than a ratio of medians); wrong
 * bytes add up.
 */
void stb_np_rows_median(stb_np_ctx_t *ctx, int nruns);

/* Client output (text or CSV), flushed line by line. */
void stb_np_report_header(const stb_np_ctx_t *ctx);
void stb_np_report_columns(const stb_np_ctx_t *ctx);
void stb_np_report_row(const stb_np_ctx_t *ctx, const stb_np_row_t *row);
void stb_np_report_footer(const stb_np_ctx_t *ctx);

#endif /* STB_NETPERF_H */

/*
 * strata-netperf: point-to-point latency and bandwidth through the NCCL net
 * plugin API, between two processes; Strata's ib_write_lat/ib_write_bw.
 *
 * Terms, per message size n:
 *   latency    one way, the median of ping-pong round trips / 2 (us)
 *   bandwidth  n * count / time of `count` messages streamed with a window of
 *              W in flight, ended by a small ack (GB/s = 10^9 B/s)
 *   raw        the same two measurements over plain blocking TCP on the same
 *              path (--raw: one connection; --raw-pair: one per direction, as
 *              the plugin has), interleaved size by size with the plugin's so
 *              machine noise hits both alike
 *   fit        t(n) = alpha + n / beta on the one-way latencies (bench_fit.h),
 *              n* = alpha * beta
 *
 * Layout: the client (the parent of a local run, or --connect) initiates the
 * ping-pong, sends the stream, and prints; the server (the forked child, or
 * --listen) echoes and receives. The client's run parameters are sent to the
 * server, so only the client's command line matters for them.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/lib/tool_boot.h"
#include "tools/lib/tool_fit.h"
#include "tools/lib/tool_netns.h"
#include "tools/lib/tool_proc.h"
#include "bench/netperf/netperf_p2p.h"
#include "tools/lib/plugin_loader.h"
#include "bench/netperf/netperf_raw.h"
#include "tools/lib/tool_util.h"
#include "bench/netperf/netperf.h"
#include "tools/run/run_opts.h"
#include "util/compiler.h"
#include "util/time.h"

/* Bootstrap protocol version; bump when stb_np_config_t or the phase order changes. */
#define NP_PROTO_VERSION 1
/* A client sends its hello right after connecting; a connection silent this long is not one. */
#define NP_HELLO_TIMEOUT_MS 5000

static strata_status_t np_config_exchange(stb_np_ctx_t *np)
{
    uint64_t wire[STB_NP_CONFIG_WORDS];

    if (np->client) {
        stb_np_config_pack(&np->cfg, wire);
        return stb_boot_send(&np->boot, wire, sizeof(wire));
    }
    strata_status_t status = stb_boot_recv(&np->boot, wire, sizeof(wire));
    if (status == STRATA_OK)
        stb_np_config_unpack(wire, &np->cfg);
    return status;
}

static strata_status_t np_plugin_setup(stb_np_ctx_t *np)
{
    int ndev = 0;
    strata_status_t status;

    status = stb_plugin_open(np->plugin_path, np->cfg.comm_id, stb_log_verbose, &np->plugin);
    if (status != STRATA_OK)
        return status;
    status = stb_plugin_check(stb_plugin_devices(np->plugin, &ndev), "devices");
    if (status != STRATA_OK)
        return status;
    if (np->dev < 0 || np->dev >= ndev) {
        stb_log_err("device %d does not exist: the plugin reports %d device%s", np->dev, ndev,
                    ndev == 1 ? "" : "s");
        return STRATA_ERR_NOT_FOUND;
    }
    np->ndev = ndev;
    status = stb_plugin_check(stb_plugin_props(np->plugin, np->dev, &np->props),
                              "getProperties");
    if (status != STRATA_OK)
        return status;
    if (np->props.max_p2p_bytes != 0 && np->cfg.max_bytes > np->props.max_p2p_bytes) {
        stb_log_err("-e %zu exceeds the device's maxP2pBytes %zu", np->cfg.max_bytes,
                    np->props.max_p2p_bytes);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

/* Swaps device descriptions so the client can print both ends. */
static strata_status_t np_peer_info_exchange(stb_np_ctx_t *np)
{
    stb_np_peer_info_t mine = {0};

    snprintf(mine.dev_name, sizeof(mine.dev_name), "%s",
             np->plugin != NULL ? np->props.name : "-");
    mine.speed_mbps = np->plugin != NULL ? np->props.speed_mbps : 0;
    if (gethostname(mine.host, sizeof(mine.host)) != 0)
        snprintf(mine.host, sizeof(mine.host), "?");
    mine.host[sizeof(mine.host) - 1] = '\0';
    strata_status_t status = stb_boot_exchange(&np->boot, &mine, &np->peer, sizeof(mine));
    np->peer.dev_name[sizeof(np->peer.dev_name) - 1] = '\0';
    np->peer.host[sizeof(np->peer.host) - 1] = '\0';
    return status;
}

/* Server: listen for the raw socket on the measured path and tell the client where. */
static strata_status_t np_raw_setup(stb_np_ctx_t *np)
{
    stb_np_raw_addr_t *addr = &np->raw_addr;
    strata_status_t status;
    int lfd = -1;

    if (np->client) {
        status = stb_boot_recv(&np->boot, addr, sizeof(*addr));
        addr->host[sizeof(addr->host) - 1] = '\0';
        addr->how[sizeof(addr->how) - 1] = '\0';
        if (status == STRATA_OK && addr->port == 0) {
            stb_log_err("the server could not open the raw socket");
            status = STRATA_ERR_REMOTE;
        }
        if (status == STRATA_OK)
            status = stb_raw_connect(&np->raw, addr->host, addr->port, np->cfg.raw_pair,
                                     np->cfg.raw_spin, np->cfg.timeout_ms);
        return status;
    }
    stb_np_raw_host_pick(np);
    status = stb_raw_listen(addr->host, &lfd, &addr->port);
    if (status != STRATA_OK)
        addr->port = 0;
    /* Sent even after a failure: port 0 tells the client not to wait for a connection. */
    strata_status_t sent = stb_boot_send(&np->boot, addr, sizeof(*addr));
    if (status == STRATA_OK)
        status = sent;
    if (status == STRATA_OK)
        status = stb_raw_accept(&np->raw, lfd, np->cfg.raw_pair, np->cfg.raw_spin,
                                np->cfg.timeout_ms);
    if (lfd >= 0)
        close(lfd);
    return status;
}

static strata_status_t np_buffers_alloc(stb_np_ctx_t *np)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = STU_MAX(np->cfg.max_bytes, (size_t)STB_NP_MIN_BUFFER);

    np->buf_bytes = (bytes + page - 1) / page * page;
    np->sbuf = aligned_alloc(page, np->buf_bytes);
    np->rbuf = aligned_alloc(page, np->buf_bytes);
    if (np->sbuf == NULL || np->rbuf == NULL) {
        stb_log_err("cannot allocate 2 x %zu bytes of message buffers", np->buf_bytes);
        return STRATA_ERR_NO_MEMORY;
    }
    /* Touch every page now: first-touch faults would otherwise land in the timed loops. */
    memset(np->sbuf, 0xa5, np->buf_bytes);
    memset(np->rbuf, 0x5a, np->buf_bytes);
    return STRATA_OK;
}

/* Everything before the sweep. Each step ends in a sync, so both sides fail together. */
static strata_status_t np_setup(stb_np_ctx_t *np)
{
    strata_status_t status =
        np->greeted ? STRATA_OK : stb_boot_hello(&np->boot, "strata-netperf", NP_PROTO_VERSION);

    if (status == STRATA_OK)
        status = np_config_exchange(np);
    if (status != STRATA_OK)
        return status;
    if (!np->cfg.raw_only)
        status = stb_boot_sync(&np->boot, np_plugin_setup(np));
    if (status == STRATA_OK)
        status = np_peer_info_exchange(np);
    if (status == STRATA_OK && !np->cfg.raw_only) {
        status = stb_p2p_open(&np->p2p, np->plugin, &np->boot, np->dev, np->cfg.timeout_ms,
                              np->cfg.spin);
        np->p2p_open = status == STRATA_OK;
        status = stb_boot_sync(&np->boot, status);
    }
    if (status == STRATA_OK && np->cfg.raw)
        status = stb_boot_sync(&np->boot, np_raw_setup(np));
    if (status != STRATA_OK)
        return status;
    status = np_buffers_alloc(np);
    if (status == STRATA_OK && np->p2p_open)
        status = stb_p2p_reg(&np->p2p, np->sbuf, np->rbuf, np->buf_bytes);
    return stb_boot_sync(&np->boot, status);
}

static void np_teardown(stb_np_ctx_t *np)
{
    if (np->p2p_open)
        stb_p2p_close(&np->p2p);
    stb_plugin_close(np->plugin);
    np->plugin = NULL;
    stb_raw_close(&np->raw);
    free(np->sbuf);
    free(np->rbuf);
    np->sbuf = np->rbuf = NULL;
}

/*
 * Ends a phase on both sides: a failing side first closes the raw socket (a
 * peer blocked in recv() wakes at once) and then reports through the sync.
 */
static strata_status_t np_phase_end(stb_np_ctx_t *np, strata_status_t status)
{
    if (status != STRATA_OK)
        stb_raw_close(&np->raw);
    return stb_boot_sync(&np->boot, status);
}

/* Runs the four measurements of one size; the client fills row. */
static strata_status_t np_size_run(stb_np_ctx_t *np, size_t size, stb_np_row_t *row)
{
    int iters, warmup, count;
    int client = np->client, check = np->cfg.check;
    double elapsed = 0.0;
    uint64_t wrong[2] = {0, 0}, peer_wrong[2] = {0, 0};
    strata_status_t status = STRATA_OK;

    stb_np_iters_scale(&np->cfg, size, &iters, &warmup, &count);
    memset(row, 0, sizeof(*row));
    row->size = size;
    row->iters = iters;
    row->count = count;

    if (!np->cfg.raw_only) {
        status = stb_p2p_pingpong(&np->p2p, client, size, warmup, iters, check, np->rtt_us,
                                  &wrong[0]);
        if (status == STRATA_OK && client)
            row->lat_us = stb_median(np->rtt_us, (size_t)iters) / 2.0;
        status = np_phase_end(np, status);
    }
    if (status == STRATA_OK && np->cfg.raw) {
        status = stb_raw_pingpong(&np->raw, client, np->sbuf, np->rbuf, size, warmup, iters,
                                  check, np->rtt_us, &wrong[1]);
        if (status == STRATA_OK && client)
            row->raw_lat_us = stb_median(np->rtt_us, (size_t)iters) / 2.0;
        status = np_phase_end(np, status);
    }
    if (status == STRATA_OK && !np->cfg.raw_only) {
        status = stb_p2p_stream(&np->p2p, client, size, np->cfg.window, warmup, count, check,
                                &elapsed, &wrong[0]);
        if (status == STRATA_OK && client)
            row->bw_gbs = (double)size * count / (elapsed * 1e3);
        status = np_phase_end(np, status);
    }
    if (status == STRATA_OK && np->cfg.raw) {
        status = stb_raw_stream(&np->raw, client, np->sbuf, np->rbuf, size, warmup, count,
                                check, &elapsed, &wrong[1]);
        if (status == STRATA_OK && client)
            row->raw_bw_gbs = (double)size * count / (elapsed * 1e3);
        status = np_phase_end(np, status);
    }
    if (status == STRATA_OK)
        status = stb_boot_exchange(&np->boot, wrong, peer_wrong, sizeof(wrong));
    row->wrong = wrong[0] + peer_wrong[0];
    row->raw_wrong = wrong[1] + peer_wrong[1];
    if (row->raw_lat_us > 0.0 && row->lat_us > 0.0)
        row->lat_x = row->lat_us / row->raw_lat_us;
    if (row->raw_bw_gbs > 0.0 && row->bw_gbs > 0.0)
        row->bw_x = row->bw_gbs / row->raw_bw_gbs;
    return status;
}

/* One whole sweep into np->runs[run]; a single run prints its rows as they come. */
static strata_status_t np_sweep_once(stb_np_ctx_t *np, int run)
{
    strata_status_t status = STRATA_OK;
    uint64_t t0 = stu_time_ns();
    size_t i = 0;

    for (size_t size = np->cfg.min_bytes; size <= np->cfg.max_bytes && status == STRATA_OK;
         size *= np->cfg.factor, i++) {
        status = np_size_run(np, size, &np->runs[run][i]);
        if (status == STRATA_OK && np->client && np->cfg.runs == 1)
            stb_np_report_row(np, &np->runs[run][i]);
        if (size > np->cfg.max_bytes / np->cfg.factor) {
            i++;
            break;
        }
    }
    np->nrows = i;
    if (status == STRATA_OK && np->client && np->cfg.runs > 1) {
        printf("# run %d of %d done in %.1f s\n", run + 1, np->cfg.runs,
               (double)(stu_time_ns() - t0) * 1e-9);
        fflush(stdout);
    }
    return status;
}

static strata_status_t np_sweep(stb_np_ctx_t *np)
{
    strata_status_t status = STRATA_OK;

    np->rtt_us = calloc((size_t)STU_MAX(np->cfg.iters, 1), sizeof(*np->rtt_us));
    if (np->rtt_us == NULL) {
        stb_log_err("cannot allocate %d round-trip samples", np->cfg.iters);
        return STRATA_ERR_NO_MEMORY;
    }
    if (np->client)
        stb_np_report_header(np);
    if (np->client && np->cfg.runs == 1)
        stb_np_report_columns(np);
    for (int run = 0; run < np->cfg.runs && status == STRATA_OK; run++)
        status = np_sweep_once(np, run);
    if (status == STRATA_OK && np->client) {
        stb_np_rows_median(np, np->cfg.runs);
        if (np->cfg.runs > 1)
            stb_np_report_columns(np);
        if (np->cfg.runs > 1)
            for (size_t i = 0; i < np->nrows; i++)
                stb_np_report_row(np, &np->rows[i]);
        stb_np_report_footer(np);
    }
    free(np->rtt_us);
    np->rtt_us = NULL;
    return status;
}

/* One side of a run, over an open bootstrap; closes it. */
static strata_status_t np_side_run(stb_np_ctx_t *np)
{
    strata_status_t status;

    np->start_ns = stu_time_ns();
    status = np_setup(np);

    if (status == STRATA_OK)
        status = np_sweep(np);
    /* Stop together: nobody closes a comm while the peer may still be draining it. */
    if (status == STRATA_OK)
        status = stb_boot_sync(&np->boot, STRATA_OK);
    np_teardown(np);
    stb_boot_close(&np->boot);
    fflush(stdout);
    return status;
}

/* The server side of a local run, in the child. */
static int np_server_child(void *arg)
{
    stb_np_ctx_t *np = arg;

    stb_log_tag_set("strata-netperf server");
    np->client = 0;
    np->local = 1;
    stb_boot_from_fd(&np->boot, np->boot.fd, np->cfg.timeout_ms, "client");
    return np_side_run(np) == STRATA_OK ? 0 : 1;
}

/* Local mode: fork a server child, run the client here, reap the child within the timeout. */
static int np_run_local(stb_np_ctx_t *np)
{
    int fds[2], ws = 0;
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        stb_log_err("socketpair: %s", strerror(errno));
        return 1;
    }
    np->boot.fd = fds[1];
    stb_spawn_t s = {.fn = np_server_child, .arg = np, .close_fds = &fds[0], .nclose = 1};
    strata_status_t status = stb_proc_spawn(&s, &pid);
    close(fds[1]);
    if (status != STRATA_OK) {
        close(fds[0]);
        return 1;
    }
    np->client = 1;
    np->local = 1;
    stb_boot_from_fd(&np->boot, fds[0], np->cfg.timeout_ms, "server");
    status = np_side_run(np);
    strata_status_t reaped = stb_proc_wait(pid, stu_deadline_ms(np->cfg.timeout_ms), &ws);
    if (reaped == STRATA_ERR_TIMEOUT) {
        stb_log_err("the server process %d did not exit within %d ms; killed it", (int)pid,
                    np->cfg.timeout_ms);
    } else if (reaped == STRATA_OK && stb_proc_exit_code(ws) != 0) {
        char why[96];
        stb_proc_status_str(ws, why, sizeof(why));
        stb_log_err("the server process %s", why);
    }
    return reaped == STRATA_OK && stb_proc_exit_code(ws) == 0 && status == STRATA_OK ? 0 : 1;
}

/* The client side of a --netns-rails run, in the child in node 1. */
static int np_client_child(void *arg)
{
    stb_np_ctx_t *np = arg;

    np->client = 1;
    np->local = 1;
    stb_boot_from_fd(&np->boot, np->boot.fd, np->cfg.timeout_ms, "server");
    return np_side_run(np) == STRATA_OK ? 0 : 1;
}

/* Every rail of both nodes shaped with tbf at --rail-rate (burst as strata-run's). */
static strata_status_t np_netns_shape(stb_np_ctx_t *np, stb_netns_t *ns)
{
    char spec[128];
    uint64_t bps = 0;
    strata_status_t status = STRATA_OK;

    if (np->rail_rate == NULL)
        return STRATA_OK;
    stb_run_rate_parse(np->rail_rate, &bps);   /* checked with the options */
    snprintf(spec, sizeof(spec), "tbf rate %s burst %zu latency 50ms", np->rail_rate,
             stb_run_tbf_burst(bps));
    for (int node = 0; node < 2 && status == STRATA_OK; node++)
        for (int r = 0; r < np->netns_rails && status == STRATA_OK; r++)
            status = stb_netns_shape_rail(ns, node, r, spec);
    return status;
}

/*
 * --netns-rails: server in emulated node 0, client in node 1, each node with one
 * interface per rail; the bootstrap is a socketpair, which crosses namespaces.
 */
static int np_run_netns(stb_np_ctx_t *np)
{
    stb_netns_t ns;
    int fds[2], ws[2] = {0, 0}, ok = 1;
    pid_t pids[2] = {0, 0};
    strata_status_t status = stb_netns_create_rails(&ns, 2, np->netns_rails, 0);

    if (status == STRATA_OK)
        status = np_netns_shape(np, &ns);
    if (status != STRATA_OK ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        stb_log_err("--netns-rails: cannot set up the emulated nodes");
        stb_netns_destroy(&ns);
        return 1;
    }
    printf("# strata-netperf: two emulated nodes, %d rail(s) each%s%s\n", np->netns_rails,
           np->rail_rate ? ", every rail shaped with tbf at " : "",
           np->rail_rate ? np->rail_rate : "");
    for (int side = 0; side < 2 && ok; side++) {
        stb_netns_place_t place = {.ns = &ns, .node = side, .cwd = NULL};
        np->boot.fd = fds[side];
        stb_spawn_t s = {.fn = side ? np_client_child : np_server_child, .arg = np,
                         .setup = stb_netns_setup, .setup_arg = &place,
                         .close_fds = &fds[1 - side], .nclose = 1};
        ok = stb_proc_spawn(&s, &pids[side]) == STRATA_OK;
    }
    close(fds[0]);
    close(fds[1]);
    if (ok && np->rail_down >= 0) {
        /* the failover measurement: the server's (receiver's) end of a rail goes away */
        usleep((useconds_t)np->rail_down_ms * 1000u);
        printf("# rail %d down in the server's node after %d ms\n", np->rail_down,
               np->rail_down_ms);
        fflush(stdout);
        if (stb_netns_rail_link(&ns, 0, np->rail_down, 0) != STRATA_OK)
            stb_log_err("--rail-down: cannot take rail %d down", np->rail_down);
    }
    for (int side = 0; side < 2; side++) {
        if (pids[side] > 0 &&
            stb_proc_wait(pids[side], stu_deadline_ms(np->cfg.timeout_ms), &ws[side]) !=
                STRATA_OK)
            ok = 0;
        if (pids[side] > 0 && stb_proc_exit_code(ws[side]) != 0)
            ok = 0;
    }
    stb_netns_destroy(&ns);
    return ok ? 0 : 1;
}

/*
 * Waits for the client: a connection that does not answer the hello as a strata-netperf
 * client within NP_HELLO_TIMEOUT_MS (a stranger, a scanner, another tool) is closed, and the
 * server goes on waiting until --accept-timeout.
 */
static strata_status_t np_listen_client(stb_np_ctx_t *np, int lfd)
{
    uint64_t deadline = stu_deadline_ms(np->accept_timeout_ms);

    for (;;) {
        int left = stu_deadline_left_ms(deadline);
        if (left <= 0) {
            stb_log_err("no strata-netperf client within --accept-timeout %d s",
                        np->accept_timeout_ms / 1000);
            return STRATA_ERR_TIMEOUT;
        }
        strata_status_t status = stb_boot_accept(&np->boot, lfd, left);
        if (status != STRATA_OK)
            return status;
        int timeout_ms = np->boot.timeout_ms;
        np->boot.timeout_ms = STU_MIN(timeout_ms, NP_HELLO_TIMEOUT_MS);
        status = stb_boot_hello(&np->boot, "strata-netperf", NP_PROTO_VERSION);
        np->boot.timeout_ms = timeout_ms;
        if (status == STRATA_OK)
            return STRATA_OK;
        printf("# strata-netperf: %s is not a strata-netperf client (%s); closed, still "
               "listening\n",
               np->boot.peer, strata_status_str(status));
        fflush(stdout);
        stb_boot_close(&np->boot);
    }
}

static int np_run_listen(stb_np_ctx_t *np)
{
    char host[STU_ADDR_TEXT_LEN], how[STB_NP_HOW_LEN];
    int lfd, port;

    stb_log_tag_set("strata-netperf server");
    if (stb_np_listen_host(np, host, sizeof(host), how, sizeof(how)) != STRATA_OK ||
        stb_boot_listen(host, np->listen_port, &lfd, &port) != STRATA_OK)
        return 1;
    printf("# strata-netperf: listening on %s port %d (%s); on the other host run: "
           "strata-netperf --connect %s%s%s:%d\n",
           host, port, how, strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
           port);
    fflush(stdout);
    strata_status_t status = np_listen_client(np, lfd);
    close(lfd);
    if (status != STRATA_OK)
        return 1;
    np->client = 0;
    np->greeted = 1;
    printf("# strata-netperf: client %s connected\n", np->boot.peer);
    fflush(stdout);
    status = np_side_run(np);
    printf("# strata-netperf: %s\n", status == STRATA_OK ? "done" : "failed");
    return status == STRATA_OK ? 0 : 1;
}

static int np_run_connect(stb_np_ctx_t *np)
{
    if (stb_boot_connect(&np->boot, np->connect, np->cfg.timeout_ms) != STRATA_OK)
        return 1;
    np->client = 1;
    return np_side_run(np) == STRATA_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    static stb_np_ctx_t np;

    stb_log_tag_set("strata-netperf");
    /* Sends on a socket the peer closed must fail with EPIPE, not kill the process. */
    signal(SIGPIPE, SIG_IGN);
    int rc = stb_np_opts_parse(&np, argc, argv);
    if (rc >= 0)
        return rc;
    if (np.listen)
        return np_run_listen(&np);
    if (np.connect != NULL)
        return np_run_connect(&np);
    if (np.netns_rails > 0)
        return np_run_netns(&np);
    return np_run_local(&np);
}

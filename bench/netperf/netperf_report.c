/*
 * strata-netperf output: a '#' header (nccl-tests style) describing the
 * plugin, device, environment and run; one row per size; a '#' footer with
 * the alpha-beta fits and the plugin/raw ratios. --csv swaps the aligned rows
 * for comma-separated ones and keeps the '#' lines as comments.
 */
#include "bench/netperf/netperf.h"

#include <stdio.h>
#include <string.h>

#include "tools/lib/tool_fit.h"
#include "tools/lib/tool_util.h"
#include "util/build_info.h"
#include "util/time.h"

extern char **environ;

/* Sizes the ratio summary looks at: the targets' "large" and "small" messages. */
#define NP_LARGE_BYTES (4u * 1024 * 1024)
#define NP_SMALL_BYTES 1024u

/* A number in `width` columns with about four significant digits. */
static const char *np_num(char *buf, size_t len, int width, double v)
{
    int prec = v >= 1000.0 ? 0 : v >= 100.0 ? 1 : v >= 10.0 ? 2 : v >= 1.0 ? 3 : 4;

    snprintf(buf, len, "%*.*f", width, prec, v);
    return buf;
}

static void np_ptr_support_format(int mask, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s", (mask & 1) ? "host," : "", (mask & 2) ? "cuda," : "",
             (mask & 4) ? "dmabuf," : "", mask == 0 ? "none," : "");
    buf[strlen(buf) - 1] = '\0';
}

static void np_header_env(void)
{
    int any = 0;

    printf("# env       :");
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "STRATA_", 7) == 0 || strncmp(*e, "NCCL_", 5) == 0) {
            printf(" %s", *e);
            any = 1;
        }
    }
    printf("%s\n", any ? "" : " (no STRATA_* or NCCL_* variable set: plugin defaults)");
}

static void np_header_plugin(const stb_np_ctx_t *ctx)
{
    const stb_plugin_props_t *p = &ctx->props;
    char ptrs[32], maxp2p[32];

    np_ptr_support_format(p->ptr_support, ptrs, sizeof(ptrs));
    stb_size_format(p->max_p2p_bytes, maxp2p, sizeof(maxp2p));
    printf("# plugin    : %s (\"%s\", %s, commId 0x%016llx)\n", ctx->plugin_path,
           stb_plugin_name(ctx->plugin), stb_plugin_symbol(ctx->plugin),
           (unsigned long long)ctx->cfg.comm_id);
    printf("# device    : %d of %d, \"%s\": speed %d Mbps, latency %.2f us, maxRecvs %d, "
           "maxComms %d, ptrSupport %s, regIsGlobal %d, maxP2pBytes %s, pci %s\n",
           ctx->dev, ctx->ndev, p->name, p->speed_mbps, (double)p->latency_us, p->max_recvs,
           p->max_comms, ptrs, p->reg_is_global, maxp2p, p->pci_path[0] ? p->pci_path : "-");
    printf("# polling   : %s\n", ctx->cfg.spin
           ? "test() of the oldest request in a busy loop (--spin)"
           : "test() of the oldest request, sched_yield() when it made no progress "
             "(as NCCL's proxy thread)");
}

void stb_np_rows_median(stb_np_ctx_t *ctx, int nruns)
{
    double v[STB_NP_MAX_RUNS];

    for (size_t i = 0; i < ctx->nrows; i++) {
        stb_np_row_t *out = &ctx->rows[i];
        *out = ctx->runs[0][i];
        for (int r = 1; r < nruns; r++) {
            out->wrong += ctx->runs[r][i].wrong;
            out->raw_wrong += ctx->runs[r][i].raw_wrong;
        }
#define NP_MEDIAN_OF(field)                                                   \
        do {                                                                  \
            for (int r = 0; r < nruns; r++)                                   \
                v[r] = ctx->runs[r][i].field;                                 \
            out->field = stb_median(v, (size_t)nruns);                        \
        } while (0)
        NP_MEDIAN_OF(lat_us);
        NP_MEDIAN_OF(bw_gbs);
        NP_MEDIAN_OF(raw_lat_us);
        NP_MEDIAN_OF(raw_bw_gbs);
        NP_MEDIAN_OF(lat_x);
        NP_MEDIAN_OF(bw_x);
#undef NP_MEDIAN_OF
    }
}

void stb_np_report_header(const stb_np_ctx_t *ctx)
{
    const stb_np_config_t *cfg = &ctx->cfg;
    char minb[32], maxb[32], scaled[32];
    int iters, warmup, count;
    size_t above = 0;

    printf("# strata-netperf %s: point-to-point latency and bandwidth through the NCCL net "
           "plugin API\n", stu_build_info()->version);
    if (!cfg->raw_only)
        np_header_plugin(ctx);
    np_header_env();
    if (ctx->local && ctx->netns_rails > 0)
        printf("# layout    : two emulated nodes (namespaces), %d rail(s)%s%s, device \"%s\"\n",
               ctx->netns_rails, ctx->rail_rate ? " shaped with tbf at " : "",
               ctx->rail_rate ? ctx->rail_rate : "", ctx->props.name);
    else if (ctx->local)
        printf("# layout    : one host, client and forked server (loopback)\n");
    else
        printf("# layout    : two hosts, server %s (host \"%s\", device \"%s\", %d Mbps)\n",
               ctx->boot.peer, ctx->peer.host, ctx->peer.dev_name, ctx->peer.speed_mbps);
    if (cfg->raw)
        printf("# raw       : %s to %s:%d (%s), blocking, TCP_NODELAY, kernel buffer sizes, "
               "receives %s\n", cfg->raw_pair
               ? "two TCP connections, one per direction (--raw-pair)"
               : "one TCP connection for both directions", ctx->raw_addr.host,
               ctx->raw_addr.port, ctx->raw_addr.how,
               cfg->raw_spin ? "busy-poll (--raw-spin)" : "sleep in recv()");
    for (size_t s = cfg->min_bytes; s <= cfg->max_bytes; s *= cfg->factor) {
        stb_np_iters_scale(cfg, s, &iters, &warmup, &count);
        if (iters < cfg->iters && above == 0)
            above = s;
        if (s > cfg->max_bytes / cfg->factor)
            break;
    }
    stb_size_format(cfg->min_bytes, minb, sizeof(minb));
    stb_size_format(cfg->max_bytes, maxb, sizeof(maxb));
    if (above != 0)
        stb_size_format(above, scaled, sizeof(scaled));
    printf("# sweep     : %s .. %s B, factor %u; iters %d, warmup %d%s%s%s; window %d; "
           "check %s; timeout %d s; runs %d%s\n", minb, maxb, cfg->factor, cfg->iters,
           cfg->warmup, above != 0 ? " (fewer from " : "", above != 0 ? scaled : "",
           above != 0 ? ")" : "", cfg->window, cfg->check ? "on" : "off",
           cfg->timeout_ms / 1000, cfg->runs,
           cfg->runs > 1 ? " (rows: per-size medians; x: median of per-run ratios)" : "");
    printf("# columns   : iters = timed round trips, lat = their median / 2 (us); msgs = "
           "timed streamed messages, bw = their bytes / time (GB/s = 10^9 B/s)%s\n",
           cfg->raw && !cfg->raw_only ? "; x = plugin / raw" : "");
    fflush(stdout);
}

void stb_np_report_columns(const stb_np_ctx_t *ctx)
{
    const stb_np_config_t *cfg = &ctx->cfg;

    if (cfg->csv) {
        printf("size,iters,count,lat_us,bw_gbs,raw_lat_us,raw_bw_gbs,lat_x,bw_x,wrong,raw_wrong\n");
    } else {
        printf("#\n# %10s %6s %6s", "size(B)", "iters", "msgs");
        if (cfg->raw_only)
            printf(" %10s %10s", "raw lat", "raw bw");
        else
            printf(" %10s %10s", "lat(us)", "bw(GB/s)");
        if (cfg->raw && !cfg->raw_only)
            printf(" %11s %11s %7s %7s", "raw lat", "raw bw", "lat x", "bw x");
        printf(" %7s\n", "#wrong");
    }
    fflush(stdout);
}

void stb_np_report_row(const stb_np_ctx_t *ctx, const stb_np_row_t *row)
{
    const stb_np_config_t *cfg = &ctx->cfg;
    int plugin = !cfg->raw_only, both = cfg->raw && plugin;
    double lat_x = row->lat_x, bw_x = row->bw_x;
    unsigned long long wrong = (unsigned long long)(row->wrong + row->raw_wrong);
    char a[32], b[32], c[32], d[32];

    if (cfg->csv) {
        printf("%zu,%d,%d,", row->size, row->iters, row->count);
        if (plugin)
            printf("%.3f,%.5f,", row->lat_us, row->bw_gbs);
        else
            printf(",,");
        if (cfg->raw)
            printf("%.3f,%.5f,", row->raw_lat_us, row->raw_bw_gbs);
        else
            printf(",,");
        if (both)
            printf("%.4f,%.4f,", lat_x, bw_x);
        else
            printf(",,");
        if (cfg->check)
            printf("%llu,%llu\n", (unsigned long long)row->wrong,
                   (unsigned long long)row->raw_wrong);
        else
            printf(",\n");
        fflush(stdout);
        return;
    }
    printf("  %10zu %6d %6d", row->size, row->iters, row->count);
    if (plugin)
        printf(" %s %s", np_num(a, sizeof(a), 10, row->lat_us),
               np_num(b, sizeof(b), 10, row->bw_gbs));
    if (cfg->raw)
        printf(" %s %s", np_num(c, sizeof(c), plugin ? 11 : 10, row->raw_lat_us),
               np_num(d, sizeof(d), plugin ? 11 : 10, row->raw_bw_gbs));
    if (both)
        printf(" %7.2f %7.2f", lat_x, bw_x);
    if (cfg->check)
        printf(" %7llu\n", wrong);
    else
        printf(" %7s\n", "N/A");
    fflush(stdout);
}

/* Fits one column of one-way latencies and prints the result line. */
static void np_footer_fit(const stb_np_ctx_t *ctx, const char *what, int raw)
{
    double sizes[STB_NP_MAX_SIZES], times[STB_NP_MAX_SIZES];
    size_t n = 0;
    stb_fit_t fit;

    for (size_t i = 0; i < ctx->nrows; i++) {
        sizes[n] = (double)ctx->rows[i].size;
        times[n] = raw ? ctx->rows[i].raw_lat_us : ctx->rows[i].lat_us;
        n++;
    }
    if (stb_fit_alpha_beta(sizes, times, n, &fit) != STRATA_OK) {
        printf("# fit %-6s: needs two or more sizes with positive latencies\n", what);
        return;
    }
    if (ctx->cfg.csv) {
        printf("# fit,%s,alpha_us,%.4f,beta_gbs,%.5f,nstar_bytes,%.0f,rms_rel_err,%.4f\n", what,
               fit.alpha_us, fit.beta_gbs, fit.nstar_bytes, fit.rms_rel_err);
        return;
    }
    char nstar[32] = "n/a";
    if (fit.nstar_bytes > 0.0)
        snprintf(nstar, sizeof(nstar), "%.0f B", fit.nstar_bytes);
    printf("#   %-6s : alpha %9.3f us   beta %8.4f GB/s   n* = alpha*beta = %12s   "
           "(rms residual %.1f %%)%s\n", what, fit.alpha_us, fit.beta_gbs, nstar,
           fit.rms_rel_err * 100.0,
           fit.alpha_us > 0.0 && fit.beta_gbs > 0.0 ? ""
                                                     : "  [unphysical: sweep small sizes too]");
}

/* Median plugin/raw ratio over the rows in [lo, hi] bytes; 0 when none. */
static double np_ratio_median(const stb_np_ctx_t *ctx, int bw, size_t lo, size_t hi, size_t *n_p)
{
    double v[STB_NP_MAX_SIZES];
    size_t n = 0;

    for (size_t i = 0; i < ctx->nrows; i++) {
        const stb_np_row_t *r = &ctx->rows[i];
        double x = bw ? r->bw_x : r->lat_x;
        if (r->size < lo || r->size > hi || x <= 0.0)
            continue;
        v[n++] = x;
    }
    *n_p = n;
    return stb_median(v, n);
}

void stb_np_report_footer(const stb_np_ctx_t *ctx)
{
    const stb_np_config_t *cfg = &ctx->cfg;
    uint64_t wrong = 0;
    size_t nlat, nbw;

    printf("#\n# fit of t(n) = alpha + n/beta to the one-way latencies (least squares on "
           "relative error, %zu sizes):\n", ctx->nrows);
    if (!cfg->raw_only)
        np_footer_fit(ctx, "plugin", 0);
    if (cfg->raw)
        np_footer_fit(ctx, "raw", 1);
    if (cfg->raw && !cfg->raw_only) {
        double lat_x = np_ratio_median(ctx, 0, 0, NP_SMALL_BYTES, &nlat);
        double bw_x = np_ratio_median(ctx, 1, NP_LARGE_BYTES, SIZE_MAX, &nbw);
        char lat_s[16] = "n/a", bw_s[16] = "n/a";
        if (nlat > 0)
            snprintf(lat_s, sizeof(lat_s), "%.2f", lat_x);
        if (nbw > 0)
            snprintf(bw_s, sizeof(bw_s), "%.2f", bw_x);
        printf("# plugin/raw: latency x %s (median over %zu sizes <= 1K), bandwidth x %s "
               "(median over %zu sizes >= 4M)\n", lat_s, nlat, bw_s, nbw);
    }
    for (size_t i = 0; i < ctx->nrows; i++)
        wrong += ctx->rows[i].wrong + ctx->rows[i].raw_wrong;
    if (cfg->check)
        printf("# out of bounds values : %llu %s\n", (unsigned long long)wrong,
               wrong == 0 ? "OK" : "FAILED");
    else
        printf("# out of bounds values : not checked (-c 0)\n");
    printf("# elapsed   : %.1f s\n", (double)(stu_time_ns() - ctx->start_ns) * 1e-9);
    fflush(stdout);
}

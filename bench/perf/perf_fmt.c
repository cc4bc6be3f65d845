/* strata-perf's output in nccl-tests' layout (see perf_fmt.h). */
#include "bench/perf/perf_fmt.h"

#include <math.h>
#include <string.h>

void stb_perf_float_str(double value, int width, char *buf, size_t len)
{
    /* Digits before the decimal point (a value below 1 counts as none). */
    int digits = 0;
    for (double p = 1; value >= p && digits < 400; p *= 10)
        digits++;
    if (digits < width - 2)
        snprintf(buf, len, "%*.2f", width, value);
    else if (digits < width - 1)
        snprintf(buf, len, "%*.1f", width, value);
    else if (digits < width + 1)
        snprintf(buf, len, "%*.0f", width, value);
    else if (width >= 7)
        snprintf(buf, len, "%*.1e", width, value);
    else
        snprintf(buf, len, "%*.0e", width, value);
}

int stb_perf_row_format(const stb_perf_row_t *row, char *buf, size_t len)
{
    char root[16], t[2][32], a[2][32], b[2][32], w[2][32], extra[64] = "";
    int n;

    snprintf(root, sizeof(root), "%6d", row->root);
    for (int p = 0; p < 2; p++) {
        stb_perf_float_str(row->time_us[p], 7, t[p], sizeof(t[p]));
        stb_perf_float_str(row->algbw[p], 6, a[p], sizeof(a[p]));
        stb_perf_float_str(row->busbw[p], 6, b[p], sizeof(b[p]));
        if (row->checked)
            snprintf(w[p], sizeof(w[p]), "%6g", (double)row->wrong[p]);
        else
            snprintf(w[p], sizeof(w[p]), "   N/A");
    }
    if (row->algo != NULL) {
        char m[32];
        if (row->model_us >= 0)
            stb_perf_float_str(row->model_us, 9, m, sizeof(m));
        else
            snprintf(m, sizeof(m), "%9s", "-");
        snprintf(extra, sizeof(extra), "  %12s  %9s", row->algo, m);
    }
    n = snprintf(buf, len,
                 "%12zu  %12zu  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n",
                 row->bytes, row->count, row->type, row->redop, root, t[0], a[0], b[0], w[0],
                 t[1], a[1], b[1], w[1], extra);
    return n;
}

void stb_perf_header_print(FILE *out, const stb_perf_hdr_t *hdr)
{
    const stb_perf_opts_t *o = hdr->opts;
    int factor = o->step_factor > 1;

    /* nccl-tests prints its version and NCCL's; the version word is ours, and the NCCL
     * numbers are 0: no NCCL is involved. */
    fprintf(out, "# nccl-tests version strata-perf-%s nccl-headers=0 nccl-library=0\n",
            hdr->version);
    fprintf(out, "# Collective test starting: %s\n", hdr->test);
    fprintf(out, "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d "
            "iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n",
            o->min_bytes, o->max_bytes, factor ? o->step_factor : o->step_bytes,
            factor ? "factor" : "bytes", o->warmup, o->iters, o->check > 0);
    fprintf(out, "#\n");
    fprintf(out, "# Using devices\n");
}

void stb_perf_device_print(FILE *out, int rank, int pid, const char *host, int node,
                           int local_rank, const char *what)
{
    fprintf(out, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [node %d local %d] %s\n",
            rank, 0, pid, host, local_rank, node, local_rank, what);
}

void stb_perf_columns_print(FILE *out, int extra)
{
    fprintf(out, "#\n");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
            "in-place          %s\n", "", "", "", "", "", extra ? "         strata" : "");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s ",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
            "time", "algbw", "busbw", "#wrong");
    if (extra)
        fprintf(out, " %12s  %9s", "algo", "model");
    fprintf(out, "\n");
    fprintf(out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s ",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
            "(GB/s)", "");
    if (extra)
        fprintf(out, " %12s  %9s", "", "(us)");
    fprintf(out, "\n");
}

void stb_perf_footer_print(FILE *out, long long wrong, double avg_busbw, const char *test)
{
    fprintf(out, "# %-20s : %lld %s\n", "Out of bounds values", wrong, wrong ? "FAILED" : "OK");
    fprintf(out, "# %-20s : %g \n", "Avg bus bandwidth", avg_busbw);
    fprintf(out, "#\n");
    fprintf(out, "# Collective test concluded: %s\n", test);
}

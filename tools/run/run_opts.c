/* strata-run's command line and the pure helpers beside it (see run_opts.h). */
#include "tools/run/run_opts.h"
#include "tools/lib/tool_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The GSO segment a veth may hand tbf in one piece: a bucket smaller than that drops it. */
#define RUN_BURST_MIN ((size_t)64 * 1024)
/* Traffic the bucket holds, in seconds of the rate: 1 ms, above the timer's granularity. */
#define RUN_BURST_SECONDS 1e-3

static const char usage_text[] =
    "usage: strata-run -n N [--nodes K] [--netns [--rails R] [--inter-rate RATE]\n"
    "                  [--rail-down R@MS[:K]]] [--bind core|none] [--timeout S] [-v] \\\n"
    "                  -- program [args...]\n"
    "  Forks N ranks of program on this machine with the environment Strata reads\n"
    "  (STRATA_RANK, STRATA_NRANKS, STRATA_ROOT_ADDR, STRATA_NODE_ID, and STRATA_ROOT_FD for\n"
    "  rank 0: a rendezvous socket bound on port 0), prefixes their stderr with the rank,\n"
    "  and exits with the first failing rank's status; a dead rank stops the others.\n"
    "  -n N              ranks (1..256)\n"
    "  --nodes K         emulated nodes; ranks go to nodes in contiguous blocks (default 1)\n"
    "  --netns           each node in its own network and mount namespace, with its own\n"
    "                    address (198.51.100.k+1) on a veth to a bridge, and its own\n"
    "                    /dev/shm; needs root\n"
    "  --rails R         R links (rails) per node, 1..4: veth0 .. veth<R-1>, each on its own\n"
    "                    bridge and subnet, as a host with one NIC per rail (default 1); with\n"
    "                    STRATA_NET_FUSE=all the tcp transport fuses them into one device\n"
    "  --inter-rate R    shape every node's link (every rail) with tbf at R (tc syntax:\n"
    "                    2gbit, 500mbit)\n"
    "  --rail-down R@MS[:K]  take rail R's link down in node K (default 0) MS ms after the\n"
    "                    ranks were started, as a NIC port that loses its link\n"
    "  --bind core|none  pin rank i to core i mod the cores (default: core when ranks fit\n"
    "                    the cores, as mpirun does; none when they outnumber them)\n"
    "  --timeout S       kill everything after S seconds (default 900)\n"
    "  -v                print what is set up and torn down\n"
    "  A program named without a '/' is looked up next to strata-run first, then in PATH.\n";

const char *stb_run_usage(void)
{
    return usage_text;
}

strata_status_t stb_run_rate_parse(const char *text, uint64_t *bps_p)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}};
    char *end;

    if (text == NULL || *text < '0' || *text > '9')
        return STRATA_ERR_INVALID;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || !(v > 0))
        return STRATA_ERR_INVALID;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcasecmp(end, units[i].unit) == 0) {
            double bps = v * units[i].mult;
            if (bps < 1 || bps > 1e15)
                return STRATA_ERR_INVALID;
            *bps_p = (uint64_t)bps;
            return STRATA_OK;
        }
    return STRATA_ERR_INVALID;
}

size_t stb_run_tbf_burst(uint64_t bps)
{
    double bytes = (double)bps / 8 * RUN_BURST_SECONDS;
    return bytes < (double)RUN_BURST_MIN ? RUN_BURST_MIN : (size_t)bytes;
}

int stb_run_node_of(int rank, int nranks, int nodes)
{
    if (nranks <= 0 || nodes <= 1)
        return 0;
    return (int)((long)rank * nodes / nranks);
}

strata_status_t stb_run_opts_parse(int argc, char *const argv[], stb_run_opts_t *opts,
                                   char *err, size_t errlen)
{
    memset(opts, 0, sizeof(*opts));
    opts->nodes = 1;
    opts->rails = 1;
    opts->rail_down = -1;
    opts->timeout_s = STB_RUN_DEFAULT_TIMEOUT_S;
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            opts->help = 1;
            return STRATA_OK;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opts->verbose = 1;
        } else if (strcmp(a, "--netns") == 0) {
            opts->netns = 1;
        } else if (strcmp(a, "-n") == 0 || strcmp(a, "--np") == 0) {
            if (stb_int_parse(v, 1, STB_RUN_MAX_RANKS, &opts->nranks) != STRATA_OK)
                return stb_err_set(err, errlen, "%s: a rank count 1..%d, not '%s'", a,
                                STB_RUN_MAX_RANKS, v ? v : "");
            i++;
        } else if (strcmp(a, "--nodes") == 0) {
            if (stb_int_parse(v, 1, STB_RUN_MAX_NODES, &opts->nodes) != STRATA_OK)
                return stb_err_set(err, errlen, "--nodes: 1..%d, not '%s'", STB_RUN_MAX_NODES,
                                v ? v : "");
            i++;
        } else if (strcmp(a, "--rails") == 0) {
            if (stb_int_parse(v, 1, STB_RUN_MAX_RAILS, &opts->rails) != STRATA_OK)
                return stb_err_set(err, errlen, "--rails: 1..%d, not '%s'", STB_RUN_MAX_RAILS,
                                v ? v : "");
            i++;
        } else if (strcmp(a, "--rail-down") == 0) {
            char tail;
            int n = v == NULL ? 0 : sscanf(v, "%d@%d:%d%c", &opts->rail_down,
                                           &opts->rail_down_ms, &opts->rail_down_node, &tail);
            if ((n != 2 && n != 3) || opts->rail_down < 0 || opts->rail_down_ms < 0 ||
                opts->rail_down_node < 0 || (n == 2 && strchr(v, ':') != NULL))
                return stb_err_set(err, errlen, "--rail-down: R@MS or R@MS:NODE (rail, "
                                "milliseconds, node), not '%s'", v ? v : "");
            i++;
        } else if (strcmp(a, "--inter-rate") == 0) {
            if (stb_run_rate_parse(v, &opts->rate_bps) != STRATA_OK)
                return stb_err_set(err, errlen, "--inter-rate: a tc rate such as 2gbit or "
                                "500mbit, not '%s'", v ? v : "");
            opts->inter_rate = v;
            i++;
        } else if (strcmp(a, "--bind") == 0) {
            if (v == NULL || (strcmp(v, "core") != 0 && strcmp(v, "none") != 0))
                return stb_err_set(err, errlen, "--bind: core or none, not '%s'", v ? v : "");
            opts->bind = strcmp(v, "core") == 0 ? STB_RUN_BIND_CORE : STB_RUN_BIND_NONE;
            i++;
        } else if (strcmp(a, "--timeout") == 0) {
            if (stb_int_parse(v, 1, 86400, &opts->timeout_s) != STRATA_OK)
                return stb_err_set(err, errlen, "--timeout: seconds 1..86400, not '%s'",
                                v ? v : "");
            i++;
        } else if (a[0] == '-') {
            return stb_err_set(err, errlen, "unknown option '%s' (see --help)", a);
        } else {
            break;    /* the program, without "--" */
        }
    }
    if (i >= argc)
        return stb_err_set(err, errlen, "no program to run (strata-run -n N -- program ...)");
    opts->prog_index = i;
    if (opts->nranks == 0)
        return stb_err_set(err, errlen, "-n N is required");
    if (opts->nodes > opts->nranks)
        return stb_err_set(err, errlen, "%d nodes for %d ranks: every node needs a rank",
                        opts->nodes, opts->nranks);
    if ((opts->rails > 1 || opts->rail_down >= 0) && !opts->netns)
        return stb_err_set(err, errlen, "--rails and --rail-down act on the namespaces' links:"
                        " add --netns");
    if (opts->rail_down >= opts->rails)
        return stb_err_set(err, errlen, "--rail-down %d: the nodes have %d rail(s) (--rails)",
                        opts->rail_down, opts->rails);
    if (opts->rail_down >= 0 && opts->rail_down_node >= opts->nodes)
        return stb_err_set(err, errlen, "--rail-down: node %d of %d", opts->rail_down_node,
                        opts->nodes);
    if (opts->inter_rate != NULL && !opts->netns)
        return stb_err_set(err, errlen, "--inter-rate shapes the namespaces' links: add --netns");
    return STRATA_OK;
}

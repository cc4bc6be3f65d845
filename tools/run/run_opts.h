/*
 * strata-run's pure parts: its command line, the inter-node rate and the tbf
 * burst derived from it, and which emulated node a rank lives on. No I/O,
 * no global state; thread-safe.
 */
#ifndef STB_RUN_OPTS_H
#define STB_RUN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STB_RUN_MAX_RANKS 256
/* Node i has address 198.51.100.(i+1) (TEST-NET-2, RFC 5737), so at most 253 nodes; 64 is
 * far more than two cores can run. */
#define STB_RUN_MAX_NODES 64
/* Default wall-clock bound on a whole run, seconds: the collective library's own timeout
 * (STRATA_TIMEOUT, 120 s) fires well before it. */
#define STB_RUN_DEFAULT_TIMEOUT_S 900

/* Rails per emulated node: the node emulator's subnets (tools/lib/tool_netns.h). */
#define STB_RUN_MAX_RAILS 4

/* Exit status when --netns cannot be had (not root, no namespaces): scripts fall back. */
#define STB_RUN_EXIT_NO_NETNS 3

enum { STB_RUN_BIND_AUTO = 0, STB_RUN_BIND_CORE, STB_RUN_BIND_NONE };

typedef struct stb_run_opts {
    int nranks;                 /* -n */
    int nodes;                  /* --nodes, default 1 */
    int netns;                  /* --netns */
    int rails;                  /* --rails: links (rails) per node, 1..STB_RUN_MAX_RAILS */
    int rail_down;              /* --rail-down R@MS[:NODE]: rail R, -1: none */
    int rail_down_ms;           /* ... MS ms after the ranks were started */
    int rail_down_node;         /* ... in node NODE (default 0) */
    const char *inter_rate;     /* --inter-rate as given ("2gbit"), NULL: not shaped */
    uint64_t rate_bps;          /* the same in bit/s */
    int bind;                   /* --bind: STB_RUN_BIND_AUTO (0), _CORE or _NONE */
    int timeout_s;              /* --timeout */
    int verbose;                /* -v */
    int help;
    int prog_index;             /* argv index of the program to run (after "--") */
} stb_run_opts_t;

/*
 * strata-run [-n N] [--nodes K] [--netns [--rails R] [--inter-rate RATE] [--rail-down R@MS[:K]]]
 *            [--timeout S] [-v] -- prog args
 * STRATA_ERR_INVALID with a reason in err for anything unknown or inconsistent.
 */
strata_status_t stb_run_opts_parse(int argc, char *const argv[], stb_run_opts_t *opts,
                                   char *err, size_t errlen);

const char *stb_run_usage(void);

/* tc's rate syntax: a number and bit, kbit, mbit, gbit or tbit (decimal multiples). */
strata_status_t stb_run_rate_parse(const char *text, uint64_t *bps_p);

/*
 * tbf's bucket for a rate: one millisecond of traffic, and never less than one 64 KiB GSO
 * segment (docs/machines.md: 512 kb is exact at 10 Gbit/s where 32 kb reaches only half).
 */
size_t stb_run_tbf_burst(uint64_t bps);

/* Emulated node of a rank: contiguous blocks, as even as the division allows. */
int stb_run_node_of(int rank, int nranks, int nodes);

#endif /* STB_RUN_OPTS_H */

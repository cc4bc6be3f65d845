/*
 * strata-plan's pure parts: its command line and one row of its table, the
 * α-β model's prediction for every algorithm of a collective at one size on
 * a cluster described by its shape (nodes, ranks per node, rails) and its two
 * tiers. No I/O, no global state: unit-tested in tests/unit/test_plan.c.
 *
 * The cluster need not exist: the same model that picks Strata's algorithms
 * at init (algos/cost_model.c, algos/select.c) predicts 1024 nodes as well as
 * the 2 emulated ones of the demo, which is what a planner is for.
 */
#ifndef STB_PLAN_H
#define STB_PLAN_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "algos/select.h"
#include "strata/status.h"

#define STB_PLAN_DEFAULT_MIN ((size_t)8)
#define STB_PLAN_DEFAULT_MAX ((size_t)1 << 30)
#define STB_PLAN_DEFAULT_FACTOR ((size_t)4)
/* The library's transport where no RDMA device is found (transport/registry.c's order). */
#define STB_PLAN_DEFAULT_TRANSPORT "tcp"
/* Bounds of the shape; their product (2^30 ranks) fits the model's int rank counts. */
#define STB_PLAN_MAX_NODES (1 << 20)
#define STB_PLAN_MAX_PER_NODE 1024

typedef struct stb_plan_opts {
    int nodes;                  /* -N, --nodes */
    int per_node;               /* -L, --per-node: ranks per node */
    int rails;                  /* -R, --rails: NICs per node in use (default: min(L, 1)) */
    int interleaved;            /* --interleaved: rank order is not node-major */
    const char *transport;      /* --transport NAME (STRATA_TRANSPORT, else tcp): the net
                                   transport, whose bytes move on the host's cores if tcp */
    int host_ranks, host_cores; /* --host-ranks, --host-cores: 0 unknown (no wake-ups) */
    int all_colls;              /* --coll all */
    sta_coll_t coll;            /* --coll */
    size_t min_bytes, max_bytes, factor;   /* -b -e -f */
    const char *profile;        /* --profile FILE */
    /* tier values from the command line; < 0: not given */
    double value[STA_FIELD_COUNT];
    int help;
} stb_plan_opts_t;

/* One size: each algorithm's predicted µs (< 0: does not apply or not selectable), the one
 * the selection table picks, and the bandwidths nccl-tests would print for that time. */
typedef struct stb_plan_row {
    size_t bytes;
    double us[STA_ALGO_COUNT];
    sta_algo_t chosen;
    double chosen_us;
    double algbw_gbps, busbw_gbps;
} stb_plan_row_t;

void stb_plan_opts_default(stb_plan_opts_t *opts);

/*
 * Parses argv[1..argc): -N/--nodes, -L/--per-node, -R/--rails, --interleaved, --transport, --coll
 * NAME|all, -b/-e/-f (sizes with K/M/G), --profile FILE, --shm-alpha, --shm-beta,
 * --net-alpha, --net-beta, --gamma, --wake, --yield (µs and GB/s), --shm-cache-beta (GB/s),
 * --shm-cache (a size), --host-ranks, --host-cores, -h. STRATA_ERR_INVALID with a one-line
 * reason in err for anything unknown, malformed or inconsistent (R > L, min > max, ...).
 */
strata_status_t stb_plan_opts_parse(int argc, char *const argv[], stb_plan_opts_t *opts,
                                    char *err, size_t errlen);

const char *stb_plan_usage(void);

/* The dims the options describe (P = N·L, uniform nodes), with the two-tier pipeline's
 * smallest ring message as the library would set it on such a cluster (the tcp transport's
 * striping size where the model says the cores bound the net, sta_cost_net_msg_min; 0 for a
 * NULL model or another transport). */
sta_dims_t stb_plan_dims(const stb_plan_opts_t *opts, const sta_model_t *model);

/* Overrides model's fields with the values given on the command line (source "env"'s
 * precedence does not matter here: the planner builds its model once). */
void stb_plan_model_apply(const stb_plan_opts_t *opts, sta_model_t *model);

/* The row of coll at bytes, from the model and the table built from it. */
void stb_plan_row(const sta_select_t *table, sta_coll_t coll, size_t bytes, stb_plan_row_t *row);

#endif /* STB_PLAN_H */

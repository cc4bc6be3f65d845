/*
 * A tiny launcher for multi-process collective tests: forks nranks children,
 * gives each a communicator (rank 0 inherits an already listening socket on
 * 127.0.0.1:0, so no port is fixed), runs a function in each, and reaps them
 * all within a wall-clock bound, killing stragglers. Ranks are placed into
 * emulated nodes through the node id ("node<k>"), contiguously or round-robin.
 */
#ifndef STS_RANKS_H
#define STS_RANKS_H

#include <stdint.h>

#include "strata/strata.h"

#define STS_RANKS_MAX_ENV 8

typedef struct sts_ranks_opts {
    int nranks;
    int nodes;               /* emulated nodes (>= 1) */
    int interleave;          /* 1: node = rank % nodes; 0: contiguous blocks */
    int timeout_ms;          /* the communicator's STRATA_TIMEOUT */
    int wall_s;              /* every child is killed after this */
    int expect_init_fail;    /* 1: the children skip init failure reporting */
    int absent_rank;         /* this rank exits at once without joining (0: none; use rank+1) */
    const char *env[STS_RANKS_MAX_ENV];   /* "NAME=value" set in every child */
    const char *env_rank0[2];             /* "NAME=value" set in rank 0 only */
    const int *node_of;      /* if not NULL: the node of each rank, overriding the above */
    /* if not NULL: called with rank 0's rendezvous address once it listens, before any
     * rank starts (a test's strangers connect there first) */
    void (*on_listen)(const char *root_addr, void *hook_arg);
    void *hook_arg;
    /* fault injection in init (0: none; use rank+1): late_rank sleeps late_ms before its
     * init; init_kill_rank is killed (SIGALRM's default action) init_kill_ms into its
     * init, its planned death time (stu_time_ns) written to *init_kill_at if not NULL */
    int late_rank, late_ms;
    int init_kill_rank, init_kill_ms;
    uint64_t *init_kill_at;  /* shared memory (MAP_SHARED) the test reads */
    /* if not NULL (shared memory, nranks entries each): when a rank's init fails, its
     * stu_time_ns() and status; and the late rank, instead of sleeping late_ms, waits
     * until late_until_failed ranks' inits have failed (late_ms at most), then writes
     * the time its own init starts to *late_started_at */
    uint64_t *init_failed_at;
    int32_t *init_status;
    int late_until_failed;
    uint64_t *late_started_at;
    int late_timeout_ms;     /* the late rank's STRATA_TIMEOUT (0: timeout_ms) */
    /* 1: each rank counts its descriptors before init and after destroy (or a failed
     * init); more after than before makes its exit code STS_RANKS_FD_LEAK */
    int check_fds;
} sts_ranks_opts_t;

/* Runs in each child; returns 0 on success, anything else is a failure. */
typedef int (*sts_rank_fn)(strata_comm_t *comm, int rank, void *arg);

/*
 * Returns the number of ranks that failed (exit code != 0, killed, or timed
 * out); each failure is printed. exit_codes (may be NULL) gets each rank's
 * exit code (128 + signal when killed, 124 when it ran past wall_s).
 */
int sts_ranks_run(const sts_ranks_opts_t *opts, sts_rank_fn fn, void *arg, int *exit_codes);

/* A collective as a bit of the masks below (1 << sta_coll_t, algos/cost_model.h). */
#define STS_COLL_BIT(c) (1u << (c))

/*
 * In a rank: checks what the collectives of comm ran (coll/introspect.h)
 * against STRATA_ALGO's value `forced` ("auto", "ring", ...). Every
 * collective in `used` must have run. With an algorithm forced, each one in
 * `fallback` must report that the forced algorithm does not apply and never
 * have run it, and each other one must have run the forced algorithm every
 * time. With "auto", none may report a fallback. Returns 0, or 1 with what
 * differs on stderr.
 */
int sts_ranks_check_algos(strata_comm_t *comm, const char *forced, unsigned used,
                          unsigned fallback);

/* A child's exit code when strata_comm_init failed. */
#define STS_RANKS_INIT_FAILED 99
/* A child's exit code when check_fds found descriptors left after destroy or failed init. */
#define STS_RANKS_FD_LEAK 98

/* Makes the calling rank die (SIGALRM's default action, which no library catches) ms
 * milliseconds from now; returns when that will be (stu_time_ns). */
uint64_t sts_ranks_die_in(int ms);

#endif /* STS_RANKS_H */

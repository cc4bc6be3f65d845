/* Forking launcher for multi-process collective tests. */
#define _GNU_SOURCE
#include "sts_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tools/lib/tool_proc.h"
#include "util/sock.h"
#include "util/time.h"

#define RANKS_MAX 64
#define RANKS_BACKLOG 1024        /* every rank's bootstrap connection, with room */
#define RANKS_NAP_MS 2            /* poll period while reaping */

typedef struct ranks_child {
    const sts_ranks_opts_t *o;
    int rank, lfd;
    const char *addr;
    sts_rank_fn fn;
    void *arg;
} ranks_child_t;

/* One rank, in its forked child (tools/lib/tool_proc.h: it never outlives the test). */
static int ranks_child(void *arg)
{
    const ranks_child_t *c = arg;
    const sts_ranks_opts_t *o = c->o;
    const int rank = c->rank;
    char node[32], timeout[32];
    strata_comm_t *comm = NULL;
    strata_comm_config_t cfg;

    if (o->absent_rank == rank + 1)
        return 0;
    for (int i = 0; i < STS_RANKS_MAX_ENV && o->env[i] != NULL; i++)
        putenv((char *)o->env[i]);
    for (int i = 0; i < 2 && rank == 0 && o->env_rank0[i] != NULL; i++)
        putenv((char *)o->env_rank0[i]);
    int nodes = o->nodes > 0 ? o->nodes : 1;
    int n = o->node_of != NULL ? o->node_of[rank]
            : o->interleave    ? rank % nodes
                               : rank * nodes / o->nranks;
    snprintf(node, sizeof(node), "node%d", n);
    snprintf(timeout, sizeof(timeout), "%d", o->timeout_ms > 0 ? o->timeout_ms : 60000);
    setenv("STRATA_TIMEOUT", timeout, 1);
    strata_comm_config_init(&cfg);
    cfg.rank = rank;
    cfg.nranks = o->nranks;
    cfg.node_id = node;
    cfg.root_addr = c->addr;
    if (rank == 0)
        cfg.root_fd = c->lfd;
    else
        close(c->lfd);
    strata_status_t status = strata_comm_init_config(&cfg, &comm);
    if (status != STRATA_OK) {
        if (!o->expect_init_fail)
            fprintf(stderr, "rank %d: strata_comm_init: %s\n", rank, strata_status_str(status));
        return STS_RANKS_INIT_FAILED;
    }
    int rc = c->fn(comm, rank, c->arg);
    strata_comm_destroy(comm);
    return rc;
}

int sts_ranks_run(const sts_ranks_opts_t *o, sts_rank_fn fn, void *arg, int *exit_codes)
{
    pid_t pids[RANKS_MAX];
    int codes[RANKS_MAX];
    char addr[STU_ADDR_TEXT_LEN];
    stu_addr_t loopback, bound;
    int lfd, failed = 0;

    if (o->nranks < 1 || o->nranks > RANKS_MAX)
        return o->nranks;
    if (stu_addr_parse("127.0.0.1:0", &loopback) != STRATA_OK ||
        stu_sock_listen(&loopback, RANKS_BACKLOG, &lfd, &bound) != STRATA_OK) {
        fprintf(stderr, "sts_ranks: cannot listen on 127.0.0.1\n");
        return o->nranks;
    }
    stu_addr_format(&bound, addr, sizeof(addr));
    int left = o->nranks;
    for (int r = 0; r < o->nranks; r++) {
        ranks_child_t c = {.o = o, .rank = r, .lfd = lfd, .addr = addr, .fn = fn, .arg = arg};
        stb_spawn_t s = {.fn = ranks_child, .arg = &c};
        codes[r] = -1;
        if (stb_proc_spawn(&s, &pids[r]) != STRATA_OK) {
            codes[r] = 127;
            left--;
        }
    }
    close(lfd);
    const uint64_t wall = stu_deadline_ms(1000ll * (o->wall_s > 0 ? o->wall_s : 120));
    while (left > 0) {
        int progressed = 0;
        for (int r = 0; r < o->nranks; r++) {
            int st;
            if (codes[r] == -1 && stb_proc_reap(pids[r], &st) == 1) {
                codes[r] = stb_proc_exit_code(st);
                left--;
                progressed = 1;
            }
        }
        if (left > 0 && stu_deadline_passed(wall)) {
            for (int r = 0; r < o->nranks; r++) {
                if (codes[r] == -1) {
                    stb_proc_kill(pids[r], NULL);
                    codes[r] = 124;
                    left--;
                }
            }
        } else if (!progressed) {
            stu_sleep_ms(RANKS_NAP_MS);
        }
    }
    for (int r = 0; r < o->nranks; r++) {
        if (exit_codes != NULL)
            exit_codes[r] = codes[r];
        if (codes[r] != 0) {
            failed++;
            fprintf(stderr, "sts_ranks: rank %d of %d exited with %d%s\n", r, o->nranks,
                    codes[r], codes[r] == 124 ? " (killed: past the wall-clock bound)" : "");
        }
    }
    return failed;
}

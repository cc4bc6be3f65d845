/* Forking launcher for multi-process collective tests. */
#define _GNU_SOURCE
#include "sts_ranks.h"

#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/introspect.h"
#include "sts_util.h"
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

/* The late rank's wait before its init: late_ms, or until enough other inits failed. */
static void ranks_hold_back(const sts_ranks_opts_t *o)
{
    uint64_t until = stu_deadline_ms(o->late_ms);

    while (o->init_failed_at != NULL && o->late_until_failed > 0 && !stu_deadline_passed(until)) {
        int failed = 0;
        for (int r = 0; r < o->nranks; r++)
            failed += __atomic_load_n(&o->init_failed_at[r], __ATOMIC_ACQUIRE) != 0;
        if (failed >= o->late_until_failed)
            break;
        poll(NULL, 0, RANKS_NAP_MS);
    }
    if (o->init_failed_at == NULL || o->late_until_failed == 0)
        poll(NULL, 0, o->late_ms);
    if (o->late_started_at != NULL)
        *o->late_started_at = stu_time_ns();
}

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
    int timeout_ms = o->late_rank == rank + 1 && o->late_timeout_ms > 0 ? o->late_timeout_ms
                     : o->timeout_ms > 0                                  ? o->timeout_ms
                                                                          : 60000;
    snprintf(timeout, sizeof(timeout), "%d", timeout_ms);
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
    if (o->late_rank == rank + 1)
        ranks_hold_back(o);
    if (o->init_kill_rank == rank + 1) {
        uint64_t at = sts_ranks_die_in(o->init_kill_ms);
        if (o->init_kill_at != NULL)
            *o->init_kill_at = at;
    }
    int fds = o->check_fds ? sts_fd_count() : 0;
    strata_status_t status = strata_comm_init_config(&cfg, &comm);
    int rc = STS_RANKS_INIT_FAILED;
    if (status != STRATA_OK && o->init_failed_at != NULL) {
        o->init_status[rank] = status;
        __atomic_store_n(&o->init_failed_at[rank], stu_time_ns(), __ATOMIC_RELEASE);
    }
    if (status != STRATA_OK) {
        if (!o->expect_init_fail)
            fprintf(stderr, "rank %d: strata_comm_init: %s\n", rank, strata_status_str(status));
    } else {
        rc = c->fn(comm, rank, c->arg);
        strata_comm_destroy(comm);
    }
    /* (rank 0's root_fd, counted before, is the communicator's and closed with it) */
    if (o->check_fds && sts_fd_count() > fds) {
        fprintf(stderr, "rank %d: %d descriptors before init, %d after %s\n", rank, fds,
                sts_fd_count(), status == STRATA_OK ? "destroy" : "the failed init");
        rc = rc == 0 || rc == STS_RANKS_INIT_FAILED ? STS_RANKS_FD_LEAK : rc;
    }
    return rc;
}

uint64_t sts_ranks_die_in(int ms)
{
    struct sigaction sa = {.sa_handler = SIG_DFL};
    struct itimerval it = {.it_value = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000}};
    uint64_t at = stu_time_ns() + (uint64_t)ms * 1000000ull;

    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &it, NULL);
    return at;
}

/*
 * Reaps the ranks that have ended, and only those: the caller may have other children (a
 * test's strangers) that it waits for itself. One waitid peeks at whichever child ended
 * first (one system call per poll however many ranks, which an emulated guest notices);
 * when that child is not a rank, each rank is asked by pid. Returns how many it reaped.
 */
static int ranks_reap(const pid_t *pids, int *codes, int n)
{
    siginfo_t info = {0};
    int st, reaped = 0, ours = 0;

    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0)
        return 0;
    for (int r = 0; r < n; r++)
        ours |= codes[r] == -1 && pids[r] == info.si_pid;
    for (int r = 0; r < n; r++) {
        if (codes[r] != -1 || (ours && pids[r] != info.si_pid))
            continue;
        if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
            codes[r] = stb_proc_exit_code(st);
            reaped++;
        }
    }
    return reaped;
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
    if (o->on_listen != NULL)
        o->on_listen(addr, o->hook_arg);
    fflush(stdout);
    fflush(stderr);
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
        int progressed = ranks_reap(pids, codes, o->nranks);
        left -= progressed;
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

int sts_ranks_check_algos(strata_comm_t *comm, const char *forced, unsigned used,
                          unsigned fallback)
{
    const int rank = strata_comm_rank(comm);
    sta_algo_t want;
    int bad = 0;

    if (sta_algo_parse(forced, &want) != STRATA_OK || stb_comm_forced(comm) != want) {
        fprintf(stderr, "rank %d: STRATA_ALGO %s, the communicator says %s\n", rank, forced,
                sta_algo_name(stb_comm_forced(comm)));
        return 1;
    }
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        const sta_coll_t coll = (sta_coll_t)c;
        const char *why = stb_comm_fallback(comm, coll);
        const int falls = (fallback & STS_COLL_BIT(c)) != 0;
        uint64_t total = 0;
        for (int a = 0; a < STA_ALGO_COUNT; a++)
            total += stb_comm_algo_runs(comm, coll, (sta_algo_t)a);
        if ((used & STS_COLL_BIT(c)) && total == 0) {
            fprintf(stderr, "rank %d: %s never ran\n", rank, sta_coll_name(coll));
            bad = 1;
        }
        if (want == STA_ALGO_AUTO || total == 0) {
            /* nothing forced: no fallback; nothing ran: only the reason can be checked */
            if ((want == STA_ALGO_AUTO && why != NULL) || (total == 0 && falls && why == NULL)) {
                fprintf(stderr, "rank %d: %s: fallback reason '%s' with STRATA_ALGO %s\n",
                        rank, sta_coll_name(coll), why ? why : "none", forced);
                bad = 1;
            }
            continue;
        }
        const uint64_t forced_runs = stb_comm_algo_runs(comm, coll, want);
        const sta_algo_t last = stb_comm_last_algo(comm, coll);
        if (falls && (why == NULL || forced_runs != 0 || last == want)) {
            fprintf(stderr, "rank %d: %s should fall back from %s: reason %s, %llu of %llu "
                    "calls ran it, the last ran %s\n", rank, sta_coll_name(coll), forced,
                    why ? why : "none", (unsigned long long)forced_runs,
                    (unsigned long long)total, sta_algo_name(last));
            bad = 1;
        } else if (!falls && (why != NULL || forced_runs != total || last != want)) {
            fprintf(stderr, "rank %d: %s should run %s: fallback %s, %llu of %llu calls ran "
                    "it, the last ran %s\n", rank, sta_coll_name(coll), forced,
                    why ? why : "none", (unsigned long long)forced_runs,
                    (unsigned long long)total, sta_algo_name(last));
            bad = 1;
        }
    }
    return bad;
}

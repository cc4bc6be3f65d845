/* Forking launcher for multi-process collective tests. */
#define _GNU_SOURCE
#include "sts_ranks.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RANKS_MAX 64

static int ranks_listen(char *addr, size_t len)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        close(fd);
        return -1;
    }
    snprintf(addr, len, "127.0.0.1:%d", ntohs(sa.sin_port));
    return fd;
}

static void ranks_child(const sts_ranks_opts_t *o, int rank, int lfd, const char *addr,
                        sts_rank_fn fn, void *arg)
{
    char node[32], timeout[32];
    strata_comm_t *comm = NULL;
    strata_comm_config_t cfg;

    prctl(PR_SET_PDEATHSIG, SIGKILL);   /* never outlive the test */
    if (o->absent_rank == rank + 1)
        _exit(0);
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
    cfg.root_addr = addr;
    if (rank == 0) {
        cfg.root_fd = lfd;
    } else {
        close(lfd);
    }
    strata_status_t status = strata_comm_init_config(&cfg, &comm);
    if (status != STRATA_OK) {
        if (!o->expect_init_fail)
            fprintf(stderr, "rank %d: strata_comm_init: %s\n", rank, strata_status_str(status));
        _exit(STS_RANKS_INIT_FAILED);
    }
    int rc = fn(comm, rank, arg);
    strata_comm_destroy(comm);
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
}

int sts_ranks_run(const sts_ranks_opts_t *o, sts_rank_fn fn, void *arg, int *exit_codes)
{
    pid_t pids[RANKS_MAX];
    int codes[RANKS_MAX];
    char addr[64];
    int failed = 0;

    if (o->nranks < 1 || o->nranks > RANKS_MAX)
        return o->nranks;
    int lfd = ranks_listen(addr, sizeof(addr));
    if (lfd < 0) {
        fprintf(stderr, "sts_ranks: cannot listen on 127.0.0.1: %s\n", strerror(errno));
        return o->nranks;
    }
    if (o->on_listen != NULL)
        o->on_listen(addr, o->hook_arg);
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < o->nranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            ranks_child(o, r, lfd, addr, fn, arg);
        codes[r] = -1;
        if (pids[r] < 0)
            codes[r] = 127;
    }
    close(lfd);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int wall = o->wall_s > 0 ? o->wall_s : 120;
    int left = o->nranks;
    for (int r = 0; r < o->nranks; r++)
        left -= codes[r] != -1;
    while (left > 0) {
        int st, reaped = 0;
        /* its own children only: the caller may have others (a test's strangers) */
        for (int r = 0; r < o->nranks; r++) {
            if (codes[r] == -1 && waitpid(pids[r], &st, WNOHANG) == pids[r]) {
                codes[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                left--;
                reaped = 1;
            }
        }
        if (reaped)
            continue;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= wall) {
            for (int r = 0; r < o->nranks; r++) {
                if (codes[r] == -1) {
                    kill(pids[r], SIGKILL);
                    waitpid(pids[r], NULL, 0);
                    codes[r] = 124;
                    left--;
                }
            }
            break;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
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

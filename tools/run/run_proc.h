/*
 * strata-run's ranks: the run's job secret, forking a rank with the environment
 * Strata reads, and relaying its stderr line by line with a "[rank N] " prefix.
 *
 * Single-threaded (strata-run's main loop).
 */
#ifndef STB_RUN_PROC_H
#define STB_RUN_PROC_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "tools/lib/tool_netns.h"
#include "tools/lib/tool_proc.h"
#include "tools/run/run_opts.h"

/* A longer stderr line is relayed in pieces of this size. */
#define STB_RANK_LINE 4096

typedef struct stb_rank {
    pid_t pid;                  /* 0: not started */
    int node;
    int err_fd;                 /* read end of its stderr; -1 after EOF */
    int done;                   /* reaped */
    int wstatus;                /* waitpid's status once done */
    size_t len;
    char line[STB_RANK_LINE];
} stb_rank_t;

/* What every rank is started with. */
typedef struct stb_launch {
    const stb_run_opts_t *opts;
    char *const *argv;          /* the program's argv, NULL-terminated */
    char prog[PATH_MAX];        /* argv[0] resolved */
    char root_addr[64];         /* "host:port" of the rendezvous socket */
    int root_fd;                /* listening; passed to rank 0 only */
    int secret_fd;              /* the run's job secret (stb_job_secret_make); every rank */
    const stb_netns_t *ns;      /* NULL without --netns */
    char cwd[PATH_MAX];
} stb_launch_t;

/*
 * A program named without '/' is looked for next to this executable first (so
 * "strata-run -- strata-perf" finds build/bin/strata-perf), then in PATH.
 * STRATA_ERR_NOT_FOUND when neither has it.
 */
strata_status_t stb_prog_resolve(const char *name, char *path, size_t len);

/*
 * A new random job secret for one run (32 bytes from getrandom, as 64 hex digits) in an
 * anonymous file: nothing on disk, nothing in the environment; the ranks inherit the
 * descriptor (STRATA_JOB_SECRET_FD) and nobody else can read it.
 */
strata_status_t stb_job_secret_make(int *fd_p);

/*
 * Forks rank `rank` (tools/lib/tool_proc.h: it never outlives strata-run) into its node's
 * namespaces with --netns, stderr into a pipe, STRATA_RANK / NRANKS / ROOT_ADDR /
 * NODE_ID (= "node<k>") / JOB_SECRET_FD set, STRATA_ROOT_FD for rank 0 only. r->pid and
 * r->err_fd are set.
 */
strata_status_t stb_rank_spawn(const stb_launch_t *l, int rank, stb_rank_t *r);

/* Relays what r's stderr has ready; at EOF flushes a partial line and closes err_fd. */
void stb_rank_relay(stb_rank_t *r, int rank);

#endif /* STB_RUN_PROC_H */

/*
 * The one process spawner of the tools, benchmarks and tests: fork a child
 * that either execs a program or runs a function, and reap it with a bound.
 *
 * Every child, whatever it runs:
 *   - dies with its parent (PR_SET_PDEATHSIG = SIGKILL; a parent that died
 *     before the signal was armed makes the child exit at once), so nothing
 *     outlives a tool or a test binary killed by its timeout;
 *   - starts with an empty signal mask and the default action for SIGINT,
 *     SIGTERM, SIGHUP, SIGCHLD, SIGPIPE and the crash signals (a test
 *     runner's crash handler must not turn a crashing child into a second
 *     copy of the run; a tool's handlers are not the program's); a function
 *     child keeps the ones its parent ignores (SIGPIPE in a server);
 *   - gets stdout and stderr redirected when asked, then runs setup (enter
 *     namespaces, set the environment, bind a core), then execs or runs fn.
 * The parent's stdio is flushed before each fork (or buffered output would be
 * printed twice). Exit status 126: setup failed (or the parent was already
 * gone); 127: exec failed (the shells' convention). Between fork and exec the
 * child uses only async-signal-safe calls, except in setup, whose author
 * knows the parent (single-threaded callers only may allocate there).
 *
 * Thread safety: no state; the caller owns its children.
 */
#ifndef STB_PROC_H
#define STB_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strata/status.h"

#define STB_PROC_EXIT_SETUP 126   /* setup failed, or the parent died before the fork ended */
#define STB_PROC_EXIT_EXEC 127    /* exec failed: no such program */
#define STB_PROC_DEVNULL (-2)     /* as stdout_fd / stderr_fd: /dev/null */
#define STB_PROC_MAX_KEEP 4

typedef struct stb_spawn {
    char *const *argv;          /* program and arguments, NULL-terminated; NULL: run fn */
    const char *path;           /* the program to exec; NULL: argv[0] */
    int search_path;            /* 1: the program is looked up in PATH (execvp) */
    int (*fn)(void *arg);       /* without argv: runs in the child; its return is the status */
    void *arg;
    /* In the child before exec or fn: non-zero exits with STB_PROC_EXIT_SETUP. May be NULL. */
    int (*setup)(void *setup_arg);
    void *setup_arg;
    int stdout_fd;              /* > 0: dup'ed onto stdout; STB_PROC_DEVNULL; 0: inherited */
    int stderr_fd;              /* likewise for stderr */
    int keep[STB_PROC_MAX_KEEP];  /* descriptors that survive exec (close-on-exec cleared) */
    int nkeep;
    /* Parent-side descriptors the child closes first (a sibling's control socket, whose
     * EOF it must not hide). */
    const int *close_fds;
    int nclose;
} stb_spawn_t;

/* Forks the child; *pid_p gets its pid. STRATA_ERR_IO (logged) when fork fails. */
strata_status_t stb_proc_spawn(const stb_spawn_t *spawn, pid_t *pid_p);

/*
 * Reaps pid if it has ended, without waiting: 1 (and *wstatus_p, may be NULL),
 * 0 while it runs, -1 when pid is not a child of this process.
 */
int stb_proc_reap(pid_t pid, int *wstatus_p);

/*
 * Reaps whichever child of this process has ended, without waiting (one
 * system call, however many children): 1 with *pid_p and *wstatus_p set, 0
 * when none has, -1 when there is no child at all.
 */
int stb_proc_reap_any(pid_t *pid_p, int *wstatus_p);

/*
 * Waits for pid until the deadline (util/time.h) and reaps it. Past the
 * deadline it is killed (SIGKILL) and reaped, and the result is
 * STRATA_ERR_TIMEOUT; STRATA_ERR_INVALID when pid is not our child.
 */
strata_status_t stb_proc_wait(pid_t pid, uint64_t deadline_ns, int *wstatus_p);

/* SIGKILL and reap now (*wstatus_p may be NULL). Harmless on a pid already reaped. */
void stb_proc_kill(pid_t pid, int *wstatus_p);

/* A wait status as a shell's exit code: the status, or 128 + the signal. */
int stb_proc_exit_code(int wstatus);

/* "exited with status 3", "was killed by signal 9 (Killed)". */
void stb_proc_status_str(int wstatus, char *buf, size_t len);

#endif /* STB_PROC_H */

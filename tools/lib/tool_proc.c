/* The process spawner (see tool_proc.h). */
#define _GNU_SOURCE 1
#include "tools/lib/tool_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/lib/tool_util.h"
#include "util/time.h"

/* Poll period while waiting for a child to end: short next to any bound a caller sets. */
#define PROC_NAP_MS 2

/* Signals whose handlers a child must not inherit (see tool_proc.h). */
static const int proc_default_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGSEGV,
                                           SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGABRT};

/* Points fd onto target (STB_PROC_DEVNULL: /dev/null); 0 leaves it. -1 on failure. */
static int proc_redirect(int fd, int target)
{
    if (fd == 0)
        return 0;
    if (fd == STB_PROC_DEVNULL) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, target) < 0)
            return -1;
        close(null);
        return 0;
    }
    return dup2(fd, target) < 0 ? -1 : 0;
}

static void proc_child(const stb_spawn_t *s, pid_t parent)
{
    sigset_t none;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(STB_PROC_EXIT_SETUP);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (size_t i = 0; i < sizeof(proc_default_signals) / sizeof(proc_default_signals[0]); i++) {
        struct sigaction old;
        /* a function's ignored signals stay ignored (a server that must see EPIPE) */
        if (s->argv != NULL || (sigaction(proc_default_signals[i], NULL, &old) == 0 &&
                                old.sa_handler != SIG_IGN))
            signal(proc_default_signals[i], SIG_DFL);
    }
    for (int i = 0; i < s->nclose; i++)
        if (s->close_fds[i] >= 0)
            close(s->close_fds[i]);
    if (proc_redirect(s->stdout_fd, STDOUT_FILENO) != 0 ||
        proc_redirect(s->stderr_fd, STDERR_FILENO) != 0)
        _exit(STB_PROC_EXIT_SETUP);
    if (s->setup != NULL && s->setup(s->setup_arg) != 0)
        _exit(STB_PROC_EXIT_SETUP);
    if (s->argv == NULL) {
        int rc = s->fn(s->arg);
        fflush(NULL);
        _exit(rc & 0xff);
    }
    for (int i = 0; i < s->nkeep; i++)
        if (fcntl(s->keep[i], F_SETFD, 0) != 0)
            _exit(STB_PROC_EXIT_SETUP);
    const char *path = s->path != NULL ? s->path : s->argv[0];
    if (s->search_path)
        execvp(path, s->argv);
    else
        execv(path, s->argv);
    _exit(STB_PROC_EXIT_EXEC);
}

strata_status_t stb_proc_spawn(const stb_spawn_t *spawn, pid_t *pid_p)
{
    pid_t parent = getpid();

    if ((spawn->argv == NULL) == (spawn->fn == NULL) || spawn->nkeep > STB_PROC_MAX_KEEP) {
        stb_log_err("spawn: give a program or a function, and at most %d kept descriptors",
                    STB_PROC_MAX_KEEP);
        return STRATA_ERR_INVALID;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        stb_log_err("fork: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    if (pid == 0)
        proc_child(spawn, parent);
    *pid_p = pid;
    return STRATA_OK;
}

int stb_proc_reap(pid_t pid, int *wstatus_p)
{
    int ws = 0;
    pid_t r;

    do {
        r = waitpid(pid, &ws, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return -1;
    if (r == 0)
        return 0;
    if (wstatus_p != NULL)
        *wstatus_p = ws;
    return 1;
}

int stb_proc_reap_any(pid_t *pid_p, int *wstatus_p)
{
    int ws = 0;
    pid_t r;

    do {
        r = waitpid(-1, &ws, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r <= 0)
        return r < 0 ? -1 : 0;
    *pid_p = r;
    *wstatus_p = ws;
    return 1;
}

void stb_proc_kill(pid_t pid, int *wstatus_p)
{
    int ws = 0;

    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    if (wstatus_p != NULL)
        *wstatus_p = ws;
}

strata_status_t stb_proc_wait(pid_t pid, uint64_t deadline_ns, int *wstatus_p)
{
    for (;;) {
        int r = stb_proc_reap(pid, wstatus_p);
        if (r > 0)
            return STRATA_OK;
        if (r < 0)
            return STRATA_ERR_INVALID;
        if (stu_deadline_passed(deadline_ns)) {
            stb_proc_kill(pid, wstatus_p);
            return STRATA_ERR_TIMEOUT;
        }
        stu_sleep_ms(PROC_NAP_MS);
    }
}

int stb_proc_exit_code(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 255;
}

void stb_proc_status_str(int wstatus, char *buf, size_t len)
{
    if (WIFEXITED(wstatus))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else
        snprintf(buf, len, "ended with wait status %#x", wstatus);
}

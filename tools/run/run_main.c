/*
 * strata-run: a local launcher for Strata programs.
 *
 *   strata-run -n 4 --nodes 2 [--netns [--rails 2] [--inter-rate 2gbit] [--rail-down 1@2000]]
 *              -- strata-perf -b 8 -e 64M -f 4
 *
 * Binds the rendezvous socket on port 0 (no fixed port), makes a random job
 * secret for the run (an anonymous file the ranks inherit, STRATA_JOB_SECRET_FD),
 * forks the ranks with the environment strata_comm_init() reads, emulates nodes (STRATA_NODE_ID,
 * and with --netns a network and mount namespace per node, see
 * tools/lib/tool_netns.h), relays each rank's stderr with a "[rank N] "
 * prefix, and waits. The first rank to fail makes it stop the others (SIGTERM,
 * then SIGKILL after a grace period) and exit with that rank's status (128 +
 * signal when killed); SIGINT, SIGTERM, SIGHUP and --timeout do the same.
 *
 * Everything it creates goes away on every path through one cleanup that
 * runs once: ranks are killed and reaped, namespace keepers too (the
 * namespaces, veths, qdiscs and the nodes' /dev/shm vanish with them), and
 * the socket and the secret are closed. The ranks' shared memory has no name
 * (util/shm.h), so nothing of theirs outlives them. Ranks and keepers carry
 * PR_SET_PDEATHSIG, so a `kill -9` of strata-run still takes them (and the
 * namespaces) with it.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/lib/tool_netns.h"
#include "tools/lib/tool_proc.h"
#include "tools/lib/tool_util.h"
#include "tools/run/run_opts.h"
#include "tools/run/run_proc.h"
#include "util/sock.h"
#include "util/time.h"

/* How long ranks get between SIGTERM and SIGKILL. */
#define RUN_GRACE_MS 3000
/* Poll period of the main loop: bounds how late a death or a signal is noticed. */
#define RUN_POLL_MS 100
/* After a rank fails, how long other failures are collected before the cause is named and
 * the rest are stopped (a killed rank's peers can fail before it is reapable). */
#define RUN_SETTLE_MS 2000
/* After the last rank is reaped, how long its stderr may still be drained. */
#define RUN_DRAIN_MS 1000

typedef struct run {
    stb_run_opts_t opts;
    stb_launch_t launch;
    stb_netns_t ns;
    stb_rank_t ranks[STB_RUN_MAX_RANKS];
    int started;                /* ranks forked so far */
    int failed_rank;            /* the failure's cause once named, -1 */
    int cause;                  /* candidate cause while settling, -1 */
    uint64_t settle_at;         /* end of the settling window; 0: no failure yet */
    int exit_code;
    uint64_t kill_at;           /* SIGKILL deadline once stopping; 0: not stopping */
    uint64_t rail_down_at;      /* --rail-down's moment (checked each poll); 0: none or done */
    int cleaned;
} run_t;

static volatile sig_atomic_t run_signal;
static int run_wake[2] = {-1, -1};

static void run_on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGCHLD && run_signal == 0)
        run_signal = sig;
    if (run_wake[1] >= 0 && write(run_wake[1], "x", 1) < 0) {
        /* the pipe is full: the loop will wake anyway */
    }
    errno = saved;
}

static strata_status_t run_signals_install(void)
{
    struct sigaction sa;
    if (pipe2(run_wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return STRATA_ERR_IO;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = run_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return STRATA_ERR_IO;
    signal(SIGPIPE, SIG_IGN);
    return STRATA_OK;
}

/* Sends sig to every rank still running. */
static void run_kill_all(run_t *run, int sig)
{
    for (int r = 0; r < run->started; r++)
        if (run->ranks[r].pid > 0 && !run->ranks[r].done)
            kill(run->ranks[r].pid, sig);
}

/* Starts stopping everything (once); the exit code is the cause's. */
static void run_stop(run_t *run, int exit_code)
{
    if (run->kill_at != 0)
        return;
    run->exit_code = exit_code;
    run_kill_all(run, SIGTERM);
    run->kill_at = stu_deadline_ms(RUN_GRACE_MS);
}

/*
 * Reaps whatever ended: ranks, and keepers (a keeper's death fails the run). A failed rank
 * opens a short settling window before anything is stopped: a rank killed by a signal closes
 * its sockets before it becomes reapable, so its peers may fail and be reaped first. When
 * the window closes, a rank killed by a signal (nothing here has signalled any rank yet) is
 * the cause; otherwise the first rank that failed.
 */
static void run_reap(run_t *run)
{
    int wstatus;
    pid_t pid;
    char why[96];

    while (stb_proc_reap_any(&pid, &wstatus) == 1) {
        if (stb_netns_is_keeper(&run->ns, pid)) {
            stb_netns_keeper_gone(&run->ns, pid);
            if (run->kill_at == 0) {
                fprintf(stderr, "strata-run: a namespace keeper (pid %d) died; stopping\n",
                        (int)pid);
                run_stop(run, 1);
            }
            continue;
        }
        for (int r = 0; r < run->started; r++) {
            stb_rank_t *k = &run->ranks[r];
            if (k->pid != pid)
                continue;
            k->done = 1;
            k->wstatus = wstatus;
            if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
                continue;
            if (run->cause < 0 ||
                (WIFSIGNALED(wstatus) && !WIFSIGNALED(run->ranks[run->cause].wstatus)))
                run->cause = r;
            if (run->settle_at == 0)
                run->settle_at = stu_deadline_ms(RUN_SETTLE_MS);
        }
    }
    int alive = 0;
    for (int r = 0; r < run->started; r++)
        alive += !run->ranks[r].done;
    if (run->cause < 0 || run->failed_rank >= 0 || run->kill_at != 0 ||
        (alive > 0 && stu_time_ns() < run->settle_at))
        return;
    stb_rank_t *k = &run->ranks[run->cause];
    stb_proc_status_str(k->wstatus, why, sizeof(why));
    fprintf(stderr, "strata-run: rank %d (pid %d, node %d) %s; stopping the other ranks\n",
            run->cause, (int)k->pid, k->node, why);
    run->failed_rank = run->cause;
    run_stop(run, stb_proc_exit_code(k->wstatus));
}

/* Kills (SIGKILL) and reaps every rank still running. */
static void run_reap_rest(run_t *run)
{
    for (int r = 0; r < run->started; r++) {
        stb_rank_t *k = &run->ranks[r];
        if (!k->done && k->pid > 0)
            stb_proc_kill(k->pid, &k->wstatus);
        k->done = 1;
    }
}

/* --rail-down: the link of a rail in a node goes away once its moment has come. */
static void run_rail_down(run_t *run, uint64_t now)
{
    if (run->rail_down_at == 0 || now < run->rail_down_at)
        return;
    run->rail_down_at = 0;
    fprintf(stderr, "strata-run: rail %d down in node %d after %d ms\n", run->opts.rail_down,
            run->opts.rail_down_node, run->opts.rail_down_ms);
    if (stb_netns_rail_link(&run->ns, run->opts.rail_down_node, run->opts.rail_down, 0) !=
        STRATA_OK)
        fprintf(stderr, "strata-run: --rail-down: cannot take rail %d of node %d down\n",
                run->opts.rail_down, run->opts.rail_down_node);
}

/* Waits for the ranks, relaying their stderr, until all are reaped (every wait bounded). */
static void run_supervise(run_t *run)
{
    const uint64_t deadline = stu_deadline_ms(1000ll * run->opts.timeout_s);
    struct pollfd pfd[STB_RUN_MAX_RANKS + 1];
    uint64_t drain_until = 0;

    for (;;) {
        int n = 0, alive = 0, open = 0;
        pfd[n++] = (struct pollfd){run_wake[0], POLLIN, 0};
        for (int r = 0; r < run->started; r++) {
            alive += !run->ranks[r].done;
            if (run->ranks[r].err_fd >= 0) {
                pfd[n++] = (struct pollfd){run->ranks[r].err_fd, POLLIN, 0};
                open++;
            }
        }
        uint64_t now = stu_time_ns();
        if (alive == 0) {
            if (drain_until == 0)
                drain_until = stu_deadline_ms(RUN_DRAIN_MS);
            if (open == 0 || now > drain_until)
                break;
        }
        if (poll(pfd, (nfds_t)n, RUN_POLL_MS) < 0 && errno != EINTR)
            break;
        char sink[64];
        while (read(run_wake[0], sink, sizeof(sink)) > 0)
            ;
        for (int r = 0; r < run->started; r++)
            stb_rank_relay(&run->ranks[r], r);
        run_reap(run);
        now = stu_time_ns();
        if (run_signal != 0 && run->kill_at == 0) {
            fprintf(stderr, "strata-run: %s; stopping the ranks\n", strsignal(run_signal));
            run_stop(run, 128 + run_signal);
        }
        run_rail_down(run, now);
        if (now > deadline && run->kill_at == 0) {
            fprintf(stderr, "strata-run: --timeout %d s expired; stopping the ranks\n",
                    run->opts.timeout_s);
            run_stop(run, 124);
        }
        if (run->kill_at != 0 && now > run->kill_at)
            run_kill_all(run, SIGKILL);
    }
    /* anything not yet ended is killed; ranks never outlive strata-run */
    run_reap_rest(run);
}

/* The one cleanup: every path out of main goes through it, once. */
static void run_cleanup(run_t *run)
{
    if (run->cleaned)
        return;
    run->cleaned = 1;
    run_reap_rest(run);
    for (int r = 0; r < run->started; r++) {
        if (run->ranks[r].err_fd >= 0)
            close(run->ranks[r].err_fd);
        run->ranks[r].err_fd = -1;
    }
    stb_netns_destroy(&run->ns);
    if (run->launch.root_fd >= 0)
        close(run->launch.root_fd);
    run->launch.root_fd = -1;
    if (run->launch.secret_fd >= 0)
        close(run->launch.secret_fd);
    run->launch.secret_fd = -1;
    if (run->opts.verbose)
        fprintf(stderr, "strata-run: cleaned up, exit status %d\n", run->exit_code);
}

_Static_assert(STB_RUN_MAX_NODES <= STB_NETNS_MAX_NODES, "--nodes beyond the emulator's nodes");

/* The nodes' namespaces with --rails links each and, with --inter-rate, a token bucket
 * on every link. */
static strata_status_t run_netns_create(run_t *run)
{
    char spec[128];
    strata_status_t status = stb_netns_create_rails(&run->ns, run->opts.nodes, run->opts.rails,
                                                    run->opts.verbose);

    if (status != STRATA_OK || run->opts.inter_rate == NULL || run->opts.rate_bps == 0)
        return status;
    snprintf(spec, sizeof(spec), "tbf rate %s burst %zu latency 50ms", run->opts.inter_rate,
             stb_run_tbf_burst(run->opts.rate_bps));
    for (int k = 0; k < run->opts.nodes && status == STRATA_OK; k++)
        for (int r = 0; r < run->opts.rails && status == STRATA_OK; r++)
            status = stb_netns_shape_rail(&run->ns, k, r, spec);
    return status;
}

/* The rendezvous socket, the namespaces if asked for, and the ranks. */
static int run_start(run_t *run, char **argv)
{
    stb_launch_t *l = &run->launch;
    strata_status_t status;

    l->opts = &run->opts;
    l->argv = &argv[run->opts.prog_index];
    l->root_fd = -1;
    l->secret_fd = -1;
    if (stb_prog_resolve(argv[run->opts.prog_index], l->prog, sizeof(l->prog)) != STRATA_OK) {
        fprintf(stderr, "strata-run: %s: not found next to strata-run nor in PATH\n",
                argv[run->opts.prog_index]);
        return 127;
    }
    if (getcwd(l->cwd, sizeof(l->cwd)) == NULL)
        snprintf(l->cwd, sizeof(l->cwd), "/");
    if (run->opts.netns) {
        status = run_netns_create(run);
        if (status == STRATA_ERR_UNSUPPORTED) {
            fprintf(stderr, "strata-run: --netns is not available here; leave it out to "
                    "emulate nodes with STRATA_NODE_ID only\n");
            return STB_RUN_EXIT_NO_NETNS;
        }
        if (status != STRATA_OK)
            return 1;
        l->ns = &run->ns;
        status = stb_netns_listen(&run->ns, 0, &l->root_fd, l->root_addr, sizeof(l->root_addr));
    } else {
        stu_addr_t a, bound;
        status = stu_addr_parse("127.0.0.1:0", &a);
        if (status == STRATA_OK)
            status = stu_sock_listen(&a, SOMAXCONN, &l->root_fd, &bound);
        if (status == STRATA_OK)
            stu_addr_format(&bound, l->root_addr, sizeof(l->root_addr));
    }
    if (status != STRATA_OK) {
        fprintf(stderr, "strata-run: rendezvous socket: %s\n", strata_status_str(status));
        return 1;
    }
    if (stb_job_secret_make(&l->secret_fd) != STRATA_OK)
        return 1;
    if (run->opts.verbose)
        fprintf(stderr, "strata-run: %d ranks on %d node(s)%s, rendezvous %s, program %s\n",
                run->opts.nranks, run->opts.nodes, run->opts.netns ? " (namespaces)" : "",
                l->root_addr, l->prog);
    for (int r = 0; r < run->opts.nranks; r++) {
        if (stb_rank_spawn(l, r, &run->ranks[r]) != STRATA_OK)
            return 1;
        run->started++;
        if (run_signal != 0)
            return 128 + run_signal;
    }
    if (run->opts.rail_down >= 0)
        run->rail_down_at = stu_deadline_ms(run->opts.rail_down_ms);
    return 0;
}

int main(int argc, char **argv)
{
    static run_t run;
    char err[256];

    run.failed_rank = -1;
    run.cause = -1;
    run.launch.root_fd = -1;
    stb_log_tag_set("strata-run");
    run.launch.secret_fd = -1;
    stb_netns_init(&run.ns);
    if (stb_run_opts_parse(argc, argv, &run.opts, err, sizeof(err)) != STRATA_OK) {
        fprintf(stderr, "strata-run: %s\n%s", err, stb_run_usage());
        return 2;
    }
    if (run.opts.help) {
        fputs(stb_run_usage(), stdout);
        return 0;
    }
    if (run_signals_install() != STRATA_OK) {
        fprintf(stderr, "strata-run: installing signal handlers: %s\n", strerror(errno));
        return 1;
    }
    run.exit_code = run_start(&run, argv);
    if (run.exit_code == 0 || run.started > 0) {
        if (run.exit_code != 0)
            run_stop(&run, run.exit_code);
        run_supervise(&run);
    }
    run_cleanup(&run);
    return run.exit_code;
}

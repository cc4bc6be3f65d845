/*
 * strata-run + strata-perf end to end: the nccl-tests output's shape (header,
 * one row per size, footer, #wrong 0) and exit status, every collective and a
 * few type/op pairs checked by strata-perf itself, STRATA_ALGO forced (the
 * algorithm that ran, and a fallback named), the namespace variant,
 * strata-collnet's method choice (-m), and that nothing is left behind
 * (processes, namespaces, /dev/shm) after a rank is killed or strata-run is
 * told to stop. Namespace tests skip when not root
 * or where namespaces are unavailable. No timing assertions.
 */
#define _GNU_SOURCE 1
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sts_cmocka.h"
#include "tools/lib/tool_netns.h"
#include "tools/lib/tool_proc.h"
#include "util/time.h"

#define RUN_BIN STRATA_BUILD_DIR "/bin/strata-run"
#define PERF_BIN STRATA_BUILD_DIR "/bin/strata-perf"
#define PLAN_BIN STRATA_BUILD_DIR "/bin/strata-plan"
#define DOCTOR_BIN STRATA_BUILD_DIR "/bin/strata-doctor"
#define COLLNET_BIN STRATA_BUILD_DIR "/bin/strata-collnet"
/* Generous bounds for a 2-core shared machine; a hang fails the test, never blocks it. */
#define RUN_WALL_MS 240000
#define EXIT_NO_NETNS 3       /* strata-run's STB_RUN_EXIT_NO_NETNS */

/* A child with its stdout and stderr captured. */
typedef struct proc {
    pid_t pid;
    int fd[2];                /* stdout, stderr; -1 at EOF */
    char *buf[2];
    size_t len[2], cap[2];
    int status;               /* exit code, 128 + signal */
} proc_t;

static void proc_start(proc_t *p, char *const argv[])
{
    int out[2], err[2];
    memset(p, 0, sizeof(*p));
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(err, O_CLOEXEC), 0);
    stb_spawn_t s = {.argv = argv, .stdout_fd = out[1], .stderr_fd = err[1]};
    assert_ok(stb_proc_spawn(&s, &p->pid));
    close(out[1]);
    close(err[1]);
    p->fd[0] = out[0];
    p->fd[1] = err[0];
}

/* Reads what the child wrote for up to ms; returns 1 while either stream is open. */
static int proc_pump(proc_t *p, int ms)
{
    struct pollfd pfd[2];
    int n = 0, map[2];
    for (int i = 0; i < 2; i++)
        if (p->fd[i] >= 0) {
            pfd[n] = (struct pollfd){p->fd[i], POLLIN, 0};
            map[n++] = i;
        }
    if (n == 0)
        return 0;
    if (poll(pfd, (nfds_t)n, ms) <= 0)
        return 1;
    for (int k = 0; k < n; k++) {
        int i = map[k];
        if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        if (p->cap[i] - p->len[i] < 4097) {
            p->cap[i] = p->cap[i] ? 2 * p->cap[i] : 65536;
            p->buf[i] = realloc(p->buf[i], p->cap[i]);
            assert_non_null(p->buf[i]);
        }
        ssize_t r = read(p->fd[i], p->buf[i] + p->len[i], 4096);
        if (r > 0) {
            p->len[i] += (size_t)r;
            p->buf[i][p->len[i]] = '\0';
        } else if (r == 0 || errno != EINTR) {
            close(p->fd[i]);
            p->fd[i] = -1;
        }
    }
    return 1;
}

/* Drains both streams and reaps the child; kills it past RUN_WALL_MS. Returns its status. */
static int proc_finish(proc_t *p)
{
    uint64_t deadline = stu_deadline_ms(RUN_WALL_MS);
    int ws = 0;
    while (proc_pump(p, 100) && !stu_deadline_passed(deadline))
        ;
    p->status = stb_proc_wait(p->pid, deadline, &ws) == STRATA_OK ? stb_proc_exit_code(ws) : -1;
    for (int i = 0; i < 2; i++) {
        if (p->fd[i] >= 0)
            close(p->fd[i]);
        p->fd[i] = -1;
        if (p->buf[i] == NULL)
            p->buf[i] = calloc(1, 1);
    }
    if (p->status != 0)
        fprintf(stderr, "---- exit %d; stderr:\n%s----\n", p->status, p->buf[1]);
    return p->status;
}

static void proc_free(proc_t *p)
{
    free(p->buf[0]);
    free(p->buf[1]);
}

/* Checks the nccl-tests layout of out; returns the number of data rows. */
static int check_table(const char *out, const char *test, int nranks, int nsizes)
{
    char concluded[128];
    int rows = 0, devices = 0;

    assert_non_null(strstr(out, "# nccl-tests version strata-perf-"));
    snprintf(concluded, sizeof(concluded), "# Collective test starting: %s\n", test);
    assert_non_null(strstr(out, concluded));
    assert_non_null(strstr(out, "# nThread 1 nGpus 1 minBytes "));
    assert_non_null(strstr(out, "# Using devices\n"));
    assert_non_null(strstr(out, "#       size         count      type   redop    root     time"));
    assert_non_null(strstr(out, "# Out of bounds values : 0 OK\n"));
    assert_non_null(strstr(out, "# Avg bus bandwidth    : "));
    snprintf(concluded, sizeof(concluded), "# Collective test concluded: %s\n", test);
    assert_non_null(strstr(out, concluded));
    char *copy = strdup(out), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "#  Rank ", 8) == 0)
            devices++;
        if (line[0] == '#')
            continue;
        char f[16][32];
        int n = sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s "
                       "%31s %31s %31s", f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8],
                       f[9], f[10], f[11], f[12], f[13], f[14]);
        assert_int_equal(n, 15);              /* 13 nccl-tests columns + algo + model */
        assert_string_equal(f[8], "0");       /* #wrong, out of place */
        assert_string_equal(f[12], "0");      /* #wrong, in place */
        rows++;
    }
    free(copy);
    assert_int_equal(devices, nranks);
    if (nsizes > 0)
        assert_int_equal(rows, nsizes);
    return rows;
}

static void test_plain_three_ranks(void **state)
{
    (void)state;
    char *argv[] = {RUN_BIN, "-n", "3", "--nodes", "1", "--", PERF_BIN, "-b", "8", "-e", "64K",
                    "-f", "4", "-c", "1", NULL};
    proc_t p;
    proc_start(&p, argv);
    assert_int_equal(proc_finish(&p), 0);
    check_table(p.buf[0], "all_reduce_perf", 3, 7);    /* 8 .. 32K, times 4 */
    proc_free(&p);
}

/* Data rows whose algo column (the algorithm the library recorded as run) is algo. */
static int rows_that_ran(const char *out, const char *algo)
{
    char *copy = strdup(out), *save = NULL;
    int n = 0;

    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char f[15][32];
        if (line[0] != '#' &&
            sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %31s", f[13]) == 1)
            n += strcmp(f[13], algo) == 0;
    }
    free(copy);
    return n;
}

/*
 * STRATA_ALGO through strata-run: a forced algorithm that applies is the one every row ran;
 * one that does not (leader for a broadcast) is named in the header, warned about once per
 * rank, and never runs.
 */
/* strata-perf --coll coll (4 sizes) under strata-run with STRATA_ALGO=algo; checks the table. */
static void run_forced(proc_t *p, const char *algo, const char *coll, const char *test)
{
    char *argv[] = {RUN_BIN, "-n", "4", "--nodes", "2", "--", PERF_BIN, "--coll", (char *)coll,
                    "-b", "64", "-e", "64K", "-f", "8", "-n", "2", "-c", "1", NULL};

    setenv("STRATA_ALGO", algo, 1);
    proc_start(p, argv);
    unsetenv("STRATA_ALGO");
    assert_int_equal(proc_finish(p), 0);
    assert_int_equal(check_table(p->buf[0], test, 4, 4), 4);
}

/*
 * STRATA_ALGO through strata-run: a forced algorithm that applies is the one every row ran;
 * one that does not (leader for a broadcast) is named in the header, warned about once per
 * rank, and never runs.
 */
static void test_forced_algorithm(void **state)
{
    (void)state;
    proc_t p;

    run_forced(&p, "recursive", "allgather", "all_gather_perf");
    assert_int_equal(rows_that_ran(p.buf[0], "recursive"), 4);
    assert_null(strstr(p.buf[0], "does not apply"));
    assert_null(strstr(p.buf[1], "does not apply"));
    proc_free(&p);

    run_forced(&p, "leader", "broadcast", "broadcast_perf");
    assert_int_equal(rows_that_ran(p.buf[0], "leader"), 0);
    assert_non_null(strstr(p.buf[0], "# Strata: STRATA_ALGO leader does not apply to broadcast "
                                     "here (leader is an allreduce algorithm only)"));
    /* the warning: once per rank for broadcast (strata-perf also runs an allgather) */
    int warned = 0;
    for (const char *at = p.buf[1]; (at = strstr(at, "does not apply to broadcast")) != NULL;
         at++)
        warned++;
    assert_int_equal(warned, 4);
    proc_free(&p);
}

static void test_every_collective(void **state)
{
    (void)state;
    static const char *const colls[][2] = {
        {"reduce_scatter", "reduce_scatter_perf"}, {"allgather", "all_gather_perf"},
        {"broadcast", "broadcast_perf"}, {"reduce", "reduce_perf"},
    };
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        char *argv[] = {RUN_BIN, "-n", "4", "--nodes", "2", "--", PERF_BIN, "--coll",
                        (char *)colls[i][0], "-r", "3", "-b", "64", "-e", "1M", "-f", "16",
                        "-n", "2", "-c", "2", NULL};
        proc_t p;
        proc_start(&p, argv);
        assert_int_equal(proc_finish(&p), 0);
        check_table(p.buf[0], colls[i][1], 4, 4);
        proc_free(&p);
    }
}

/* The text after "selection <coll> :" (any spaces before the colon) up to the line's end. */
static char *selection_of(const char *out, const char *coll)
{
    char key[64];
    snprintf(key, sizeof(key), "selection %s", coll);
    const char *at = out;
    for (;;) {
        at = strstr(at, key);
        if (at == NULL)
            return NULL;
        at += strlen(key);
        while (*at == ' ')
            at++;
        if (*at == ':')
            break;                      /* not "reduce" inside "reduce_scatter" */
    }
    at++;
    while (*at == ' ')
        at++;
    return strndup(at, strcspn(at, "\n"));
}

/*
 * strata-plan predicts what the library would do: for the shape strata-run makes (2 nodes
 * of 2, the 4 ranks on this host's cores), its selection table for each collective is the one
 * strata-perf's ranks built.
 */
static void test_plan_matches_the_library(void **state)
{
    (void)state;
    static const char *const colls[] = {"allreduce", "reduce_scatter", "allgather",
                                        "broadcast", "reduce"};
    proc_t plan;
    char cores[16];
    snprintf(cores, sizeof(cores), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    char *pargv[] = {PLAN_BIN, "-N", "2", "-L", "2", "--coll", "all", "-b", "8", "-e", "1M",
                     "--host-ranks", "4", "--host-cores", cores, "--net-cpu", NULL};
    proc_start(&plan, pargv);
    assert_int_equal(proc_finish(&plan), 0);
    assert_non_null(strstr(plan.buf[0], "# cluster  : 2 node(s) x 2 rank(s) = 4 ranks"));
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
        char *argv[] = {RUN_BIN, "-n", "4", "--nodes", "2", "--", PERF_BIN, "--coll",
                        (char *)colls[i], "-b", "8", "-e", "8", "-n", "1", "-w", "0", NULL};
        proc_t p;
        proc_start(&p, argv);
        assert_int_equal(proc_finish(&p), 0);
        char *want = selection_of(p.buf[0], colls[i]), *got = selection_of(plan.buf[0], colls[i]);
        assert_non_null(want);
        assert_non_null(got);
        if (strcmp(want, got) != 0)
            fail_msg("%s: strata-perf selected \"%s\", strata-plan predicts \"%s\"", colls[i],
                     want, got);
        free(want);
        free(got);
        proc_free(&p);
    }
    /* a bad shape is refused with exit status 2 and a reason */
    char *bad[] = {PLAN_BIN, "-L", "2", "-R", "4", NULL};
    proc_t b;
    proc_start(&b, bad);
    assert_int_equal(proc_finish(&b), 2);
    assert_non_null(strstr(b.buf[1], "--rails"));
    proc_free(&b);
    proc_free(&plan);
}

/*
 * strata-doctor on this host: whatever sysfs holds (no RDMA on the CI machine: a warning,
 * not a failure), the plugin loads and moves 1 MiB through a connection to itself on every
 * device. A sysfs root without devices and a missing plugin give the expected verdicts.
 */
static void test_doctor(void **state)
{
    (void)state;
    char *argv[] = {DOCTOR_BIN, NULL};
    proc_t p;
    proc_start(&p, argv);
    assert_int_equal(proc_finish(&p), 0);
    assert_non_null(strstr(p.buf[0], "[ ok ] plugin device 0: "));
    assert_non_null(strstr(p.buf[0], "1 MiB through a connection to itself, intact"));
    assert_non_null(strstr(p.buf[0], " 0 failure(s)"));
    proc_free(&p);

    char *none[] = {DOCTOR_BIN, "--sysfs", "/nonexistent", "--plugin", "/nonexistent.so", NULL};
    proc_start(&p, none);
    assert_int_equal(proc_finish(&p), 1);
    assert_non_null(strstr(p.buf[0], "[warn] RDMA devices: none"));
    assert_non_null(strstr(p.buf[0], "[FAIL] plugin: /nonexistent.so did not load"));
    proc_free(&p);

    char *bad[] = {DOCTOR_BIN, "--bogus", NULL};
    proc_start(&p, bad);
    assert_int_equal(proc_finish(&p), 2);
    proc_free(&p);
}

static void test_types_and_ops(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"half", "prod"}, {"bfloat16", "sum"}, {"int8", "avg"}, {"uint8", "min"},
        {"int64", "max"}, {"uint32", "sum"}, {"double", "avg"}, {"float", "prod"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *argv[] = {RUN_BIN, "-n", "4", "--nodes", "2", "--", PERF_BIN, "-d",
                        (char *)cases[i][0], "-o", (char *)cases[i][1], "-b", "1", "-e", "300K",
                        "-f", "7", "-n", "1", "-w", "0", NULL};
        proc_t p;
        proc_start(&p, argv);
        assert_int_equal(proc_finish(&p), 0);
        check_table(p.buf[0], "all_reduce_perf", 4, 0);
        proc_free(&p);
    }
}

static void test_failing_rank_fails_the_run(void **state)
{
    (void)state;
    /* a bad flag: every rank exits 2 before init; strata-run reports the first and exits 2 */
    char *argv[] = {RUN_BIN, "-n", "2", "--", PERF_BIN, "-d", "float8", NULL};
    proc_t p;
    proc_start(&p, argv);
    assert_int_equal(proc_finish(&p), 2);
    assert_non_null(strstr(p.buf[1], "[rank "));              /* stderr is prefixed */
    assert_non_null(strstr(p.buf[1], "strata-perf: --datatype: bad value 'float8'"));
    proc_free(&p);
    char *missing[] = {RUN_BIN, "-n", "2", "--", "no-such-program-strata", NULL};
    proc_start(&p, missing);
    assert_int_equal(proc_finish(&p), 127);
    proc_free(&p);
}

/*
 * strata-collnet -m: only the methods named run (the others' time columns print 0), and the
 * CollNet's results are checked (-c); a name that is not a method is a usage error (exit 2).
 */
static void test_collnet_methods(void **state)
{
    (void)state;
    char *argv[] = {RUN_BIN, "-n", "2", "--nodes", "2", "--", COLLNET_BIN, "-b", "64K", "-e",
                    "64K", "-n", "1", "-w", "0", "--rounds", "1", "-m", "collnet", "-c", NULL};
    proc_t p;
    proc_start(&p, argv);
    assert_int_equal(proc_finish(&p), 0);
    int rows = 0;
    char *copy = strdup(p.buf[0]), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        double size, cn, cn_bw, hier, hier_bw, ring;
        if (line[0] == '#')
            continue;
        assert_int_equal(sscanf(line, "%lf %lf %lf %lf %lf %lf", &size, &cn, &cn_bw, &hier,
                                &hier_bw, &ring), 6);
        assert_true(size == 65536 && cn > 0);
        assert_true(hier == 0 && ring == 0);        /* not run */
        rows++;
    }
    free(copy);
    assert_int_equal(rows, 1);
    proc_free(&p);
    char *bad[] = {RUN_BIN, "-n", "1", "--", COLLNET_BIN, "-m", "collnet,nccl", NULL};
    proc_start(&p, bad);
    assert_int_equal(proc_finish(&p), 2);
    assert_non_null(strstr(p.buf[1], "usage: strata-collnet"));
    proc_free(&p);
}

/* --------------------------------------------------------------- leftovers */

static int have_root(void)
{
    return geteuid() == 0;
}

/* Names under /dev/shm starting with strata-, newline-separated, sorted by readdir. */
static char *shm_names(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "strata-", 7) == 0)
            fprintf(f, "%s\n", e->d_name);
    if (d != NULL)
        closedir(d);
    fclose(f);
    return text;
}

/* The children of ppid whose command is comm, into pids (up to max); returns how many. */
static int children_named(pid_t ppid, const char *comm, pid_t *pids, int max)
{
    DIR *proc = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (proc != NULL && (e = readdir(proc)) != NULL && n < max) {
        char path[300], buf[512], name[64];
        int pp = 0;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(buf, sizeof(buf), f) != NULL &&
            sscanf(buf, "%*d (%63[^)]) %*c %d", name, &pp) == 2 && pp == ppid &&
            strcmp(name, comm) == 0)
            pids[n++] = atoi(e->d_name);
        fclose(f);
    }
    if (proc != NULL)
        closedir(proc);
    return n;
}

/* Runs a long strata-perf under strata-run, hits it with `how`, checks nothing is left. */
static void stop_midway(int netns, int how)
{
    char *argv_ns[] = {RUN_BIN, "-v", "-n", "4", "--nodes", "2", "--netns", "--inter-rate",
                       "2gbit", "--", PERF_BIN, "-b", "4M", "-e", "4M", "-n", "1000000",
                       "-c", "0", NULL};
    char *argv_plain[] = {RUN_BIN, "-v", "-n", "4", "--nodes", "2", "--", PERF_BIN, "-b", "4M",
                          "-e", "4M", "-n", "1000000", "-c", "0", NULL};
    char *shm_before = shm_names();
    pid_t ranks[8];
    int n = 0;
    proc_t p;

    proc_start(&p, netns ? argv_ns : argv_plain);
    /* the ranks are up once the table's header is out (rank 0 prints after init) */
    uint64_t deadline = stu_deadline_ms(60000);
    while (!stu_deadline_passed(deadline) &&
           (p.buf[0] == NULL || strstr(p.buf[0], "#        (B)") == NULL) && proc_pump(&p, 100))
        ;
    if (p.buf[0] == NULL || strstr(p.buf[0], "#        (B)") == NULL) {
        int st = proc_finish(&p);
        proc_free(&p);
        free(shm_before);
        if (netns && st == EXIT_NO_NETNS)
            skip();                        /* no namespaces here */
        fail_msg("strata-run ended (status %d) before the table started", st);
    }
    n = children_named(p.pid, "strata-perf", ranks, 8);
    assert_int_equal(n, 4);
    if (how == SIGKILL)
        kill(ranks[2], SIGKILL);           /* one rank dies */
    else
        kill(p.pid, how);                  /* strata-run is told to stop */
    int status = proc_finish(&p);
    assert_int_equal(status, 128 + how);
    if (how == SIGKILL)
        assert_non_null(strstr(p.buf[1], "was killed by signal 9"));
    for (int i = 0; i < n; i++)
        assert_true(kill(ranks[i], 0) != 0 && errno == ESRCH);
    if (netns) {
        /* every namespace strata-run announced is gone: no process, no descriptor */
        uint64_t ino[16];
        int k = 0;
        for (char *s = p.buf[1]; k < 16 && (s = strstr(s, "netns net:[")) != NULL; s++)
            ino[k++] = strtoull(s + 11, NULL, 10);
        assert_int_equal(k, 3);            /* 2 nodes and the hub */
        assert_int_equal(stb_netns_count_held(ino, k), 0);
        assert_non_null(strstr(p.buf[1], "keeper"));
    }
    char *shm_after = shm_names();
    assert_string_equal(shm_before, shm_after);
    free(shm_before);
    free(shm_after);
    proc_free(&p);
}

static void test_killed_rank_plain(void **state)
{
    (void)state;
    stop_midway(0, SIGKILL);
}

static void test_sigterm_plain(void **state)
{
    (void)state;
    stop_midway(0, SIGTERM);
}

static void test_netns_shape(void **state)
{
    (void)state;
    if (!have_root())
        skip();
    char *argv[] = {RUN_BIN, "-n", "4", "--nodes", "2", "--netns", "--inter-rate", "2gbit", "--",
                    PERF_BIN, "-b", "8", "-e", "64K", "-f", "4", "-c", "1", NULL};
    proc_t p;
    proc_start(&p, argv);
    int status = proc_finish(&p);
    if (status == EXIT_NO_NETNS) {
        proc_free(&p);
        skip();
    }
    assert_int_equal(status, 0);
    check_table(p.buf[0], "all_reduce_perf", 4, 7);
    assert_non_null(strstr(p.buf[0], "# Strata: 4 ranks on 2 node(s) of 2"));
    proc_free(&p);
}

/* --rails 2 with STRATA_NET_FUSE=all: each rank's collectives run over the virtual NIC of
 * its node's two links (the transport says so at INFO), with every result right. */
static void test_netns_two_rails_fused(void **state)
{
    (void)state;
    if (!have_root())
        skip();
    char *argv[] = {RUN_BIN, "-n", "2", "--nodes", "2", "--netns", "--rails", "2", "--",
                    PERF_BIN, "-b", "64K", "-e", "4M", "-f", "4", "-c", "1", NULL};
    proc_t p;
    setenv("STRATA_NET_FUSE", "all", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_DEBUG", "INFO", 1);
    proc_start(&p, argv);
    int status = proc_finish(&p);
    unsetenv("STRATA_NET_FUSE");
    unsetenv("STRATA_SOCKET_FAMILY");
    unsetenv("STRATA_DEBUG");
    if (status == EXIT_NO_NETNS) {
        proc_free(&p);
        skip();
    }
    assert_int_equal(status, 0);
    check_table(p.buf[0], "all_reduce_perf", 2, 4);     /* 64K .. 4M, times 4 */
    assert_non_null(strstr(p.buf[1], "[rank 0] "));
    assert_non_null(strstr(p.buf[1], "STRATA_NET_FUSE=all: device 0 is veth0+veth1"));
    proc_free(&p);
}

static void test_killed_rank_netns(void **state)
{
    (void)state;
    if (!have_root())
        skip();
    FILE *f = popen("ip netns list 2>/dev/null", "r");
    char before[4096] = "", after[4096] = "";
    if (f != NULL) {
        size_t r = fread(before, 1, sizeof(before) - 1, f);
        before[r] = '\0';
        pclose(f);
    }
    stop_midway(1, SIGKILL);
    f = popen("ip netns list 2>/dev/null", "r");
    if (f != NULL) {
        size_t r = fread(after, 1, sizeof(after) - 1, f);
        after[r] = '\0';
        pclose(f);
    }
    assert_string_equal(before, after);
}

static void test_sigint_netns(void **state)
{
    (void)state;
    if (!have_root())
        skip();
    stop_midway(1, SIGINT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_three_ranks),
        cmocka_unit_test(test_every_collective),
        cmocka_unit_test(test_forced_algorithm),
        cmocka_unit_test(test_plan_matches_the_library),
        cmocka_unit_test(test_doctor),
        cmocka_unit_test(test_types_and_ops),
        cmocka_unit_test(test_failing_rank_fails_the_run),
        cmocka_unit_test(test_collnet_methods),
        cmocka_unit_test(test_killed_rank_plain),
        cmocka_unit_test(test_sigterm_plain),
        cmocka_unit_test(test_netns_shape),
        cmocka_unit_test(test_netns_two_rails_fused),
        cmocka_unit_test(test_killed_rank_netns),
        cmocka_unit_test(test_sigint_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Strangers at the collective library's rendezvous. Each case starts stranger
 * processes that reach rank 0's address before any rank does, then the ranks:
 *   - strangers claiming ranks (a well-formed hello without the job secret, a
 *     hello of the old protocol, garbage) take no rank: init succeeds, the
 *     allreduce is right, every claimer was told "not this job's secret";
 *   - 100 silent connections do not stall init (served at once, a second
 *     each, not one after another for the join timeout);
 *   - a hello with the right magic and another rank count fails only that
 *     connection: a stranger's, and a misconfigured rank's of this job (which
 *     fails at once with STRATA_ERR_MISMATCH) while the job's ranks go on;
 *   - a rank with another secret fails at once with STRATA_ERR_AUTH;
 *   - a stranger posing as rank 0 cannot make a rank join it (STRATA_ERR_AUTH);
 *   - a run across hosts without a secret, a short secret, a secret file open
 *     to others: STRATA_ERR_INVALID before anything is sent.
 * The bounds are generous (a loaded 2-core machine); none measures speed.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/boot_wire.h"
#include "tools/lib/tool_data.h"
#include "sts_ranks.h"
#include "sts_util.h"
#include "util/time.h"

#define MAX_STRANGERS 16
#define STRANGER_LIFE_S 120 /* strangers hold their sockets until killed, at most this */
#define SILENT_SOCKETS 100  /* more than rank 0 serves at once (STC_BOOT_PENDING_MAX) */

typedef enum {
    ST_CLAIM,        /* a well-formed hello for a rank, signed with a random key */
    ST_WRONG_NRANKS, /* the right magic and version, another rank count, no secret */
    ST_OLD_HELLO,    /* the 16-byte hello of protocol 1 */
    ST_GARBAGE,      /* 4 KiB of random bytes */
    ST_SILENT,       /* SILENT_SOCKETS connections that never send */
} stranger_kind_t;

static pid_t strangers[MAX_STRANGERS];
static int nstrangers;

/* In a forked child: the parent's descriptors (rank 0's listening socket among them) go. */
static void child_fds_close(void)
{
    for (int fd = 3; fd < 1000; fd++)
        close(fd);
}

/* The write end of the pipe a stranger reports "connected" on (in the stranger). */
static int st_ready_fd = -1;

static void st_ready(void)
{
    if (st_ready_fd >= 0) {
        (void)write(st_ready_fd, "c", 1);
        close(st_ready_fd);
        st_ready_fd = -1;
    }
}

static int st_connect(const char *root_addr)
{
    char host[64];
    int port;
    if (sscanf(root_addr, "%63[^:]:%d", host, &port) != 2)
        return -1;
    return sts_tcp_connect(host, port);
}

static int st_read(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, STRANGER_LIFE_S * 1000) <= 0)
            return -1;
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Waits for rank 0 to close the connection; 0 when it did. */
static int st_wait_closed(int fd)
{
    char b[256];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, STRANGER_LIFE_S * 1000) <= 0)
            return 1;
        ssize_t n = read(fd, b, sizeof(b));
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 0;
        if (n < 0)
            return 1;
    }
}

/*
 * The stranger's life; its exit code: 0 when rank 0 refused it as it should (told "not
 * this job's secret", or closed it: the join may end before its hello is judged), 1 when
 * it was answered anything else or left hanging.
 */
static int stranger_main(stranger_kind_t kind, const char *root_addr, int rank, int nranks)
{
    uint8_t challenge[STC_BOOT_CHALLENGE_BYTES], hello[STC_BOOT_HELLO_BYTES];
    uint8_t welcome[STC_BOOT_WELCOME_BYTES], key[STC_BOOT_KEY_BYTES];

    if (kind == ST_SILENT) {
        int fds[SILENT_SOCKETS];
        for (int i = 0; i < SILENT_SOCKETS; i++)
            fds[i] = st_connect(root_addr);
        st_ready();
        for (int i = 0; i < SILENT_SOCKETS; i++)
            if (fds[i] < 0 || st_wait_closed(fds[i]) != 0)
                return 1;
        return 0;
    }
    int fd = st_connect(root_addr);
    st_ready();
    if (fd < 0)
        return 1;
    if (kind == ST_GARBAGE || kind == ST_OLD_HELLO) {
        uint8_t junk[4096];
        size_t len = sizeof(junk);
        if (getrandom(junk, sizeof(junk), 0) != (ssize_t)sizeof(junk))
            return 1;
        if (kind == ST_OLD_HELLO) {
            const uint64_t magic = 0x5354424f4f543031ull; /* protocol 1's "STBOOT01" */
            int32_t ids[2] = {rank, nranks};
            memcpy(junk, &magic, 8);
            memcpy(junk + 8, ids, 8);
            len = 16;
        }
        if (write(fd, junk, len) != (ssize_t)len && errno != ECONNRESET && errno != EPIPE)
            return 1;
        return st_wait_closed(fd);
    }
    if (st_read(fd, challenge, sizeof(challenge)) != 0)
        return 1;
    stc_boot_hello_t h = {.rank = rank,
                          .nranks = kind == ST_WRONG_NRANKS ? nranks + 5 : nranks};
    if (getrandom(h.nonce, sizeof(h.nonce), 0) != (ssize_t)sizeof(h.nonce) ||
        getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
        return 1;
    stc_boot_hello_encode(key, challenge, &h, hello);
    if (write(fd, hello, sizeof(hello)) != (ssize_t)sizeof(hello))
        return 0; /* closed already */
    if (st_read(fd, welcome, sizeof(welcome)) != 0)
        return 0; /* closed unanswered: the ranks had all joined */
    /* refused with "not this job's secret", unsigned: nothing computed from the key */
    uint8_t zero[STC_BOOT_MAC_BYTES] = {0};
    stc_boot_welcome_t w;
    int authentic = 1;
    const char *why = NULL;
    if (stc_boot_welcome_check(key, hello, welcome, &w, &authentic, &why) != STRATA_OK ||
        w.verdict != STC_BOOT_BAD_MAC || authentic ||
        memcmp(welcome + 32, zero, sizeof(zero)) != 0)
        return 1;
    return st_wait_closed(fd);
}

/* Starts a stranger and returns once its connections are in rank 0's queue. */
static void stranger_spawn(stranger_kind_t kind, const char *root_addr, int rank, int nranks)
{
    int p[2];
    char c;
    assert_true(nstrangers < MAX_STRANGERS);
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int ready = dup2(p[1], 1000);
        child_fds_close();
        st_ready_fd = ready;
        alarm(STRANGER_LIFE_S);
        _exit(stranger_main(kind, root_addr, rank, nranks));
    }
    close(p[1]);
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    assert_int_equal(poll(&pf, 1, STRANGER_LIFE_S * 1000), 1);
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    strangers[nstrangers++] = pid;
}

/* Every stranger's exit code must be 0 (refused); none may still run. */
static void strangers_check(void)
{
    for (int i = 0; i < nstrangers; i++) {
        int st = 0;
        uint64_t deadline = sts_deadline(60);
        pid_t p;
        while ((p = waitpid(strangers[i], &st, WNOHANG)) == 0 && !stu_deadline_passed(deadline))
            usleep(10000);
        if (p == 0) {
            kill(strangers[i], SIGKILL);
            waitpid(strangers[i], &st, 0);
            fail_msg("stranger %d was never closed by rank 0", i);
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("stranger %d was not refused (status %#x)", i, st);
    }
    nstrangers = 0;
}

/* The ranks' work: a checked allreduce over every rank. */
static int rank_allreduce(strata_comm_t *comm, int rank, void *arg)
{
    const size_t n = 4099;
    const int P = strata_comm_nranks(comm);
    int32_t *buf = malloc(n * sizeof(int32_t));
    stb_data_fill(buf, n, STRATA_INT32, STRATA_SUM, rank, 0);
    strata_status_t st = strata_allreduce(buf, buf, n, STRATA_INT32, STRATA_SUM, comm);
    size_t wrong =
        st == STRATA_OK ? stb_data_check(buf, n, STRATA_INT32, STRATA_SUM, P, 0, "auth") : 1;
    free(buf);
    return wrong != 0;
}

static void claimers_start(const char *root_addr, void *arg)
{
    int nranks = *(int *)arg;
    for (int r = 1; r < nranks; r++)
        stranger_spawn(ST_CLAIM, root_addr, r, nranks);
    stranger_spawn(ST_OLD_HELLO, root_addr, 2, nranks);
    stranger_spawn(ST_GARBAGE, root_addr, 0, 0);
    stranger_spawn(ST_WRONG_NRANKS, root_addr, 1, nranks);
}

static void test_strangers_take_no_rank(void **state)
{
    int nranks = 3, codes[3];
    sts_ranks_opts_t o = {.nranks = nranks,
                          .nodes = 1,
                          .timeout_ms = 60000,
                          .wall_s = 120,
                          .env = {"STRATA_SOCKET_IFNAME==lo"},
                          .on_listen = claimers_start,
                          .hook_arg = &nranks};
    assert_int_equal(sts_ranks_run(&o, rank_allreduce, NULL, codes), 0);
    strangers_check();
}

static void silent_start(const char *root_addr, void *arg)
{
    stranger_spawn(ST_SILENT, root_addr, 0, 0);
}

/*
 * 100 silent connections ahead of the ranks. STRATA_TIMEOUT is 30 s: served one after
 * another for even a second each they would need 100 s; at once, init needs a few.
 */
static void test_silent_sockets_do_not_stall_init(void **state)
{
    int codes[3];
    sts_ranks_opts_t o = {.nranks = 3,
                          .nodes = 1,
                          .timeout_ms = 30000,
                          .wall_s = 120,
                          .env = {"STRATA_SOCKET_IFNAME==lo"},
                          .on_listen = silent_start};
    assert_int_equal(sts_ranks_run(&o, rank_allreduce, NULL, codes), 0);
    strangers_check();
}

/*
 * Init of rank `rank` of nranks at root_addr on node "node0", with secret (NULL: from the
 * environment, here the user's own); -status as an exit code, or 100 for OK.
 */
static int init_as(const char *root_addr, int rank, int nranks, int timeout_ms,
                   const char *secret, strata_comm_t **comm_p)
{
    strata_comm_config_t cfg;
    strata_comm_config_init(&cfg);
    cfg.rank = rank;
    cfg.nranks = nranks;
    cfg.node_id = "node0";
    cfg.root_addr = root_addr;
    cfg.timeout_ms = timeout_ms;
    cfg.job_secret = secret;
    cfg.job_secret_len = secret != NULL ? strlen(secret) : 0;
    strata_status_t st = strata_comm_init_config(&cfg, comm_p);
    return st == STRATA_OK ? 100 : -st;
}

static pid_t late_rank;

/*
 * Rank 2 of the job comes late: first a process of this job (it holds the secret) started
 * with 5 ranks claims rank 1 and must be refused with STRATA_ERR_MISMATCH while rank 0
 * still waits for rank 2; then rank 2 joins and the job runs. Exit 0 when both held.
 */
static void late_rank_start(const char *root_addr, void *arg)
{
    stranger_spawn(ST_WRONG_NRANKS, root_addr, 2, 3);
    fflush(NULL);
    late_rank = fork();
    assert_true(late_rank >= 0);
    if (late_rank != 0)
        return;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    child_fds_close();
    pid_t misfit = fork();
    if (misfit == 0) {
        strata_comm_t *comm = NULL;
        _exit(init_as(root_addr, 1, 5, 60000, NULL, &comm));
    }
    int st = 0;
    if (misfit < 0 || waitpid(misfit, &st, 0) != misfit || !WIFEXITED(st) ||
        WEXITSTATUS(st) != -STRATA_ERR_MISMATCH) {
        fprintf(stderr, "the misfit ended with status %#x, not STRATA_ERR_MISMATCH\n", st);
        _exit(1);
    }
    strata_comm_t *comm = NULL;
    if (init_as(root_addr, 2, 3, 60000, NULL, &comm) != 100)
        _exit(2);
    int rc = rank_allreduce(comm, 2, NULL);
    strata_comm_destroy(comm);
    _exit(rc == 0 ? 0 : 3);
}

static void test_wrong_rank_count_fails_only_itself(void **state)
{
    int codes[3], st = 0;
    sts_ranks_opts_t o = {.nranks = 3,
                          .nodes = 1,
                          .timeout_ms = 60000,
                          .wall_s = 120,
                          .absent_rank = 2 + 1,
                          .env = {"STRATA_SOCKET_IFNAME==lo"},
                          .on_listen = late_rank_start};
    sts_ranks_run(&o, rank_allreduce, NULL, codes);
    assert_int_equal(waitpid(late_rank, &st, 0), late_rank);
    assert_int_equal(codes[0], 0);
    assert_int_equal(codes[1], 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    strangers_check();
}

/* Rank 1 of a 2-rank job played by this test's child, with the given secret. */
static pid_t rank1_start(const char *root_addr, const char *secret)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        child_fds_close();
        strata_comm_t *comm = NULL;
        _exit(init_as(root_addr, 1, 2, 60000, secret, &comm));
    }
    return pid;
}

static pid_t other_secret_rank;

static void other_secret_start(const char *root_addr, void *arg)
{
    other_secret_rank = rank1_start(root_addr, "a-different-secret-of-this-job");
}

/* Rank 0 holds one secret, rank 1 another: rank 1 fails at once with STRATA_ERR_AUTH. */
static void test_other_secret_is_refused(void **state)
{
    int codes[2], st = 0;
    sts_ranks_opts_t o = {.nranks = 2,
                          .nodes = 1,
                          .timeout_ms = 4000,
                          .wall_s = 60,
                          .expect_init_fail = 1,
                          .absent_rank = 1 + 1,
                          .env = {"STRATA_SOCKET_IFNAME==lo"},
                          .on_listen = other_secret_start};
    sts_ranks_run(&o, rank_allreduce, NULL, codes);
    assert_int_equal(codes[0], STS_RANKS_INIT_FAILED); /* rank 1 never joined */
    assert_int_equal(waitpid(other_secret_rank, &st, 0), other_secret_rank);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), -STRATA_ERR_AUTH);
}

/*
 * This test plays rank 0 of a 2-rank job on a loopback port: rank 1 (a child, 60 s timeout)
 * connects, gets a challenge and sends its HELLO into hello. Returns the connection.
 */
static int fake_root_hello(int *lfd_p, pid_t *pid_p, uint8_t hello[STC_BOOT_HELLO_BYTES])
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    char addr[64];
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));

    *pid_p = rank1_start(addr, NULL);
    int fd = accept(lfd, NULL, NULL);
    assert_true(fd >= 0);
    uint8_t nonce[STC_BOOT_NONCE_BYTES] = {1, 2, 3}, challenge[STC_BOOT_CHALLENGE_BYTES];
    stc_boot_challenge_encode(nonce, challenge);
    assert_int_equal(write(fd, challenge, sizeof(challenge)), (ssize_t)sizeof(challenge));
    assert_int_equal(st_read(fd, hello, STC_BOOT_HELLO_BYTES), 0);
    *lfd_p = lfd;
    return fd;
}

/* A stranger listening where a rank looks for rank 0, answering "joined" without the key. */
static void test_fake_root_is_refused(void **state)
{
    uint8_t hello[STC_BOOT_HELLO_BYTES], welcome[STC_BOOT_WELCOME_BYTES];
    uint8_t key[STC_BOOT_KEY_BYTES];
    pid_t pid;
    int lfd, fd = fake_root_hello(&lfd, &pid, hello);
    assert_int_equal(getrandom(key, sizeof(key), 0), (ssize_t)sizeof(key));
    stc_boot_welcome_t w = {.verdict = STC_BOOT_OK, .nranks = 2};
    stc_boot_welcome_encode(key, hello, &w, welcome);
    assert_int_equal(write(fd, welcome, sizeof(welcome)), (ssize_t)sizeof(welcome));
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(fd);
    close(lfd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), -STRATA_ERR_AUTH);
}

/*
 * Rank 0 dies while a rank waits for its WELCOME: the connection and the listener close. The
 * rank connects again, is refused, and fails with STRATA_ERR_REMOTE within BOOT_REJOIN_NS
 * (coll/bootstrap.c), not at its 60 s timeout with STRATA_ERR_TIMEOUT.
 */
static void test_root_dies_before_welcome(void **state)
{
    uint8_t hello[STC_BOOT_HELLO_BYTES];
    pid_t pid;
    int lfd, fd = fake_root_hello(&lfd, &pid, hello);
    uint64_t died = stu_time_ns();
    close(fd);
    close(lfd);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    printf("matrix  %-22s rank 1  init failed %.3f s after the death\n",
           "bootstrap, root mid-join", (double)(stu_time_ns() - died) / 1e9);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), -STRATA_ERR_REMOTE);
}

/* Init of rank 1 of 2 at root_addr in a child, with env set; its status. */
static strata_status_t init_status(const char *root_addr, const char *env_name,
                                   const char *env_value)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("STRATA_JOB_SECRET");
        unsetenv("STRATA_JOB_SECRET_FILE");
        unsetenv("STRATA_JOB_SECRET_FD");
        if (env_name != NULL)
            setenv(env_name, env_value, 1);
        strata_comm_t *comm = NULL;
        _exit(init_as(root_addr, 1, 2, 2000, NULL, &comm));
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return (strata_status_t)-WEXITSTATUS(st);
}

static void test_secret_required_and_checked(void **state)
{
    /* 192.0.2.1 (TEST-NET-1): another host, never reached: refused before any connect */
    assert_int_equal(init_status("192.0.2.1:9", NULL, NULL), STRATA_ERR_INVALID);
    assert_int_equal(init_status("192.0.2.1:9", "STRATA_JOB_SECRET", "short"),
                     STRATA_ERR_INVALID);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/strata-secret-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "0123456789abcdef0123\n", 21), 21);
    close(fd);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(init_status("192.0.2.1:9", "STRATA_JOB_SECRET_FILE", path),
                     STRATA_ERR_INVALID);
    assert_int_equal(init_status("192.0.2.1:9", "STRATA_JOB_SECRET_FILE", "/dev/zero"),
                     STRATA_ERR_INVALID);
    assert_int_equal(init_status("192.0.2.1:9", "STRATA_JOB_SECRET_FD", "-5"),
                     STRATA_ERR_INVALID);
    /* the same file closed to others is taken: init goes on and times out reaching no one */
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(init_status("127.0.0.1:1", "STRATA_JOB_SECRET_FILE", path),
                     STRATA_ERR_TIMEOUT);
    unlink(path);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strangers_take_no_rank),
        cmocka_unit_test(test_silent_sockets_do_not_stall_init),
        cmocka_unit_test(test_wrong_rank_count_fails_only_itself),
        cmocka_unit_test(test_other_secret_is_refused),
        cmocka_unit_test(test_fake_root_is_refused),
        cmocka_unit_test(test_root_dies_before_welcome),
        cmocka_unit_test(test_secret_required_and_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

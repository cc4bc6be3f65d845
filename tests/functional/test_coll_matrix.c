/*
 * The collective library's fault matrix: one rank killed (SIGKILL-like: SIGALRM's default
 * action, which nothing catches) in each phase a job goes through, and every other rank
 * must fail with an error, never hang and never report success, within STRATA_TIMEOUT
 * (20 s here, far more than any case needs: the error comes from the transport seeing the
 * connection die, or from the node's liveness check of its local ranks). After each case
 * nothing is left: every rank's process is reaped (the launcher kills one that outlives
 * its wall bound, and the case then fails), each survivor has no more descriptors after
 * destroy (or its failed init) than before init, and the node's shared memory is a memfd
 * that dies with its last mapping (util/shm.h; nothing to look for in /dev/shm).
 *
 * Each case prints a `matrix` line per survivor: the seconds from the victim's death to
 * that survivor's error, and the error's text. Printed, never asserted (no timing
 * assertions); docs/reliability.md records a run. The transport is STRATA_TRANSPORT's
 * (tcp here; make test runs it again over ucx, make test-rdma over ib).
 *
 *   phase                 ranks x nodes  algorithm      victim
 *   bootstrap             4 x 2          -              rank 1, 2 s into its init (joined,
 *                                                       waiting), while rank 3 is held back
 *                                                       until the others' inits failed: they
 *                                                       must fail without it (naming rank 1)
 *   bootstrap, root       4 x 2          -              rank 0, the same way
 *   ring, mid-step        4 x 4          ring           rank 2, 0.3 s into 8 MiB allreduces
 *   shm (one node)        3 x 1          auto (shm)     rank 2, same
 *   hierarchical          4 x 2          hierarchical   rank 2, same (any phase)
 *   hierarchical, between 4 x 2          hierarchical   rank 3 dies before its 3rd
 *                                                       allreduce: rank 2 (its node) is
 *                                                       left in the shm phase, ranks 0, 1
 *                                                       in the net phase
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "strata/strata.h"
#include "sts_cmocka.h"
#include "sts_ranks.h"
#include "util/time.h"

#define MX_RANKS 4
#define MX_TIMEOUT_MS 20000       /* STRATA_TIMEOUT: every error must come before it */
#define MX_WALL_S 90              /* the launcher kills a rank still running after this */
#define MX_KILL_MS 300            /* the victim's death, into its collectives */
#define MX_BYTES (8u << 20)       /* per allreduce: long enough to be mid-transfer */
#define MX_ERR_LEN 200
#define MX_BOOT_KILL_MS 2000      /* into init: every rank but 3 has joined (a TCG guest too) */
#define MX_LATE_MAX_MS 60000      /* rank 3's hold-back when the others never fail */
#define MX_LATE_TIMEOUT_MS 3000   /* rank 3's own STRATA_TIMEOUT: rank 0 is gone by then */
#define MX_LOG_MAX (1 << 20)      /* the ranks' stderr, captured */

/* Shared with the ranks (MAP_SHARED before they fork). */
typedef struct mx_shared {
    uint64_t died_at;                 /* the victim's death (stu_time_ns) */
    uint64_t failed_at[MX_RANKS];     /* each survivor's error */
    char why[MX_RANKS][MX_ERR_LEN];
    uint64_t init_failed_at[MX_RANKS];
    int32_t init_status[MX_RANKS];
    uint64_t late_started_at;
} mx_shared_t;

static mx_shared_t *mx;

typedef struct mx_case {
    const char *phase;
    int victim;
    int die_before;                   /* > 0: the victim dies before its n-th allreduce */
} mx_case_t;

/* Every rank loops on allreduces until one fails; the victim dies on its way. */
static int mx_rank(strata_comm_t *comm, int rank, void *arg)
{
    const mx_case_t *c = arg;
    float *buf = calloc(MX_BYTES / sizeof(float), sizeof(float));

    if (buf == NULL)
        return 10;
    if (rank == c->victim && c->die_before == 0)
        mx->died_at = sts_ranks_die_in(MX_KILL_MS);
    for (int i = 1; i < 1000000; i++) {
        if (rank == c->victim && i == c->die_before) {
            mx->died_at = stu_time_ns();
            raise(SIGKILL);
        }
        strata_status_t st = strata_allreduce(buf, buf, MX_BYTES / sizeof(float), STRATA_FP32,
                                              STRATA_SUM, comm);
        if (st != STRATA_OK) {
            mx->failed_at[rank] = stu_time_ns();
            snprintf(mx->why[rank], MX_ERR_LEN, "%s: %s", strata_status_str(st),
                     strata_comm_error(comm));
            free(buf);
            /* the error is sticky: the next collective fails at once too */
            return strata_barrier(comm) == STRATA_OK ? 11 : 0;
        }
    }
    free(buf);
    return 12;                        /* never saw the death */
}

static void mx_report(const char *phase, int nranks, int victim)
{
    for (int r = 0; r < nranks; r++) {
        if (r == victim)
            continue;
        double s = mx->failed_at[r] > mx->died_at && mx->died_at != 0
                       ? (double)(mx->failed_at[r] - mx->died_at) / 1e9 : 0.0;
        printf("matrix  %-22s rank %d  error %.3f s after the death: %.160s\n", phase, r, s,
               mx->why[r]);
    }
    fflush(stdout);
}

static void mx_run(const mx_case_t *c, int nranks, int nodes, const char *algo_env)
{
    int codes[MX_RANKS];
    sts_ranks_opts_t o = {.nranks = nranks, .nodes = nodes, .timeout_ms = MX_TIMEOUT_MS,
                          .wall_s = MX_WALL_S, .check_fds = 1,
                          .env = {"STRATA_SOCKET_IFNAME==lo", algo_env}};

    memset(mx, 0, sizeof(*mx));
    sts_ranks_run(&o, mx_rank, (void *)c, codes);
    mx_report(c->phase, nranks, c->victim);
    for (int r = 0; r < nranks; r++) {
        if (r == c->victim)
            assert_int_equal(codes[r], 128 + (c->die_before ? SIGKILL : SIGALRM));
        else
            assert_int_equal(codes[r], 0);
    }
}

/*
 * The victim dies MX_BOOT_KILL_MS into its init, joined and waiting for rank 3, which is
 * held back until both other ranks' inits failed: they must fail without it, with
 * STRATA_ERR_REMOTE, and say which rank died. Rank 3 then starts and fails too (rank 0 is
 * gone: its timeout). The ranks' stderr is captured to look for the messages.
 */
static void mx_boot_case(const char *phase, int victim, const char *needle0,
                         const char *needle_other)
{
    int codes[MX_RANKS], saved = dup(2), log = memfd_create("mx-log", 0);
    sts_ranks_opts_t o = {.nranks = 4, .nodes = 2, .timeout_ms = MX_TIMEOUT_MS,
                          .wall_s = MX_WALL_S, .check_fds = 1, .expect_init_fail = 1,
                          .late_rank = 3 + 1, .late_ms = MX_LATE_MAX_MS,
                          .late_timeout_ms = MX_LATE_TIMEOUT_MS, .late_until_failed = 2,
                          .init_failed_at = mx->init_failed_at, .init_status = mx->init_status,
                          .late_started_at = &mx->late_started_at,
                          .init_kill_rank = victim + 1, .init_kill_ms = MX_BOOT_KILL_MS,
                          .init_kill_at = &mx->died_at,
                          .env = {"STRATA_SOCKET_IFNAME==lo"}};
    static char text[MX_LOG_MAX];

    assert_true(saved >= 0 && log >= 0);
    memset(mx, 0, sizeof(*mx));
    fflush(stderr);
    dup2(log, 2);
    sts_ranks_run(&o, mx_rank, &(mx_case_t){.victim = -1}, codes);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(log, text, sizeof(text) - 1, 0);
    close(log);
    text[n > 0 ? n : 0] = '\0';
    fputs(text, stderr);
    for (int r = 0; r < 3; r++) {
        if (r == victim)
            continue;
        double s = (double)(mx->init_failed_at[r] - mx->died_at) / 1e9;
        printf("matrix  %-22s rank %d  init failed %.3f s after the death: %s, rank 3 still "
               "held back\n", phase, r, mx->init_failed_at[r] > mx->died_at ? s : 0.0,
               strata_status_str(mx->init_status[r]));
    }
    fflush(stdout);
    assert_int_equal(codes[victim], 128 + SIGALRM);
    for (int r = 0; r < 4; r++)
        if (r != victim)
            assert_int_equal(codes[r], STS_RANKS_INIT_FAILED);
    for (int r = 0; r < 3; r++) {
        if (r == victim)
            continue;
        /* failed for the death, before rank 3 even started its init */
        assert_int_equal(mx->init_status[r], STRATA_ERR_REMOTE);
        assert_true(mx->init_failed_at[r] != 0 && mx->late_started_at != 0);
        assert_true(mx->init_failed_at[r] <= mx->late_started_at);
    }
    assert_non_null(strstr(text, needle0));
    assert_non_null(strstr(text, needle_other));
}

static void test_bootstrap(void **state)
{
    mx_boot_case("bootstrap", 1, "rank 1 joined and then closed its connection",
                 "rank 2: rank 0 ended the join because rank 1 joined and then closed");
}

/* The root dies while joined ranks wait for its barrier's answer: each fails at once. */
static void test_bootstrap_root(void **state)
{
    /* which survivor reads the dead root's socket first (and so logs it) is a race; each
     * one's STRATA_ERR_REMOTE before rank 3 started is asserted per rank */
    mx_boot_case("bootstrap, root", 0, "lost the root", "rendezvous at");
}

static void test_ring(void **state)
{
    mx_run(&(mx_case_t){.phase = "ring, mid-step", .victim = 2}, 4, 4, "STRATA_ALGO=ring");
}

static void test_shm(void **state)
{
    mx_run(&(mx_case_t){.phase = "shm (one node)", .victim = 2}, 3, 1, NULL);
}

static void test_hierarchical(void **state)
{
    mx_run(&(mx_case_t){.phase = "hierarchical", .victim = 2}, 4, 2,
           "STRATA_ALGO=hierarchical");
}

static void test_hierarchical_between(void **state)
{
    mx_run(&(mx_case_t){.phase = "hierarchical, between", .victim = 3, .die_before = 3}, 4, 2,
           "STRATA_ALGO=hierarchical");
}

int main(void)
{
    mx = mmap(NULL, sizeof(*mx), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mx == MAP_FAILED)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bootstrap),
        cmocka_unit_test(test_bootstrap_root),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_shm),
        cmocka_unit_test(test_hierarchical),
        cmocka_unit_test(test_hierarchical_between),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Failure behaviour of the collective library: a rank killed in the middle of
 * a collective makes every other rank's collective fail within the timeout; a
 * rank that never joins fails init within the timeout; mismatched counts are
 * reported, not hung on; invalid arguments get STRATA_ERR_INVALID and leave
 * the communicator usable.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algos/cost_model.h"
#include "strata/strata.h"
#include "sts_cmocka.h"
#include "sts_ranks.h"
#include "util/time.h"

#define VICTIM 2

/* Every rank loops on large allreduces; the victim SIGKILLs itself from a timer. */
static int rank_killed(strata_comm_t *comm, int rank, void *arg)
{
    const size_t n = (8u << 20) / sizeof(float);
    float *buf = calloc(n, sizeof(float));

    if (rank == VICTIM)
        sts_ranks_die_in(300);
    uint64_t t0 = stu_time_ns();
    for (int i = 0; i < 100000; i++) {
        strata_status_t st = strata_allreduce(buf, buf, n, STRATA_FP32, STRATA_SUM, comm);
        if (st != STRATA_OK) {
            fprintf(stderr, "rank %d: failed as expected after the peer died: %s (%s), %.1f s\n",
                    rank, strata_status_str(st), strata_comm_error(comm),
                    (double)(stu_time_ns() - t0) / 1e9);
            /* sticky: the next call fails at once too */
            free(buf);
            return strata_barrier(comm) == STRATA_OK ? 2 : 0;
        }
    }
    free(buf);
    return 3;   /* never saw the death */
}

static void test_rank_killed_mid_collective(void **state)
{
    int codes[4];
    sts_ranks_opts_t o = {.nranks = 4, .nodes = 2, .timeout_ms = 20000, .wall_s = 120,
                          .env = {"STRATA_SOCKET_IFNAME==lo"}};
    sts_ranks_run(&o, rank_killed, NULL, codes);
    for (int r = 0; r < 4; r++) {
        if (r == VICTIM)
            assert_int_equal(codes[r], 128 + SIGALRM);
        else
            assert_int_equal(codes[r], 0);
    }
}

static int rank_never_called(strata_comm_t *comm, int rank, void *arg)
{
    return 5;   /* init must not succeed without the absent rank */
}

static void test_rank_never_joins(void **state)
{
    int codes[3];
    sts_ranks_opts_t o = {.nranks = 3, .nodes = 1, .timeout_ms = 3000, .wall_s = 60,
                          .expect_init_fail = 1, .absent_rank = 2 + 1,
                          .env = {"STRATA_SOCKET_IFNAME==lo"}};
    sts_ranks_run(&o, rank_never_called, NULL, codes);
    assert_int_equal(codes[0], STS_RANKS_INIT_FAILED);
    assert_int_equal(codes[1], STS_RANKS_INIT_FAILED);
    assert_int_equal(codes[2], 0);
}

/* Rank 0 passes a different count: everyone gets an error, nobody hangs past the timeout. */
static int rank_mismatch(strata_comm_t *comm, int rank, void *arg)
{
    const size_t n = rank == 0 ? 1000 : 2000;
    int32_t *buf = calloc(2000, sizeof(int32_t));
    strata_status_t st = strata_allreduce(buf, buf, n, STRATA_INT32, STRATA_SUM, comm);
    free(buf);
    if (st == STRATA_OK)
        return 1;
    fprintf(stderr, "rank %d: mismatch reported: %s (%s)\n", rank, strata_status_str(st),
            strata_comm_error(comm));
    /* the forced algorithm is the one that found the mismatch */
    return sts_ranks_check_algos(comm, arg, STS_COLL_BIT(STA_COLL_ALLREDUCE), 0);
}

static void test_mismatched_counts(void **state)
{
    static const char *const algos[][2] = {{"STRATA_ALGO=ring", "ring"},
                                           {"STRATA_ALGO=recursive", "recursive"}};
    for (int a = 0; a < 2; a++) {
        sts_ranks_opts_t o = {.nranks = 2, .nodes = 2, .timeout_ms = 5000, .wall_s = 60,
                              .env = {algos[a][0], "STRATA_SOCKET_IFNAME==lo"}};
        assert_int_equal(sts_ranks_run(&o, rank_mismatch, (void *)algos[a][1], NULL), 0);
    }
}

static int rank_invalid(strata_comm_t *comm, int rank, void *arg)
{
    int32_t buf[4] = {1, 2, 3, 4};
    int bad = 0;
    bad |= strata_allreduce(NULL, buf, 4, STRATA_INT32, STRATA_SUM, comm) != STRATA_ERR_INVALID;
    bad |= strata_allreduce(buf, buf, 4, (strata_dtype_t)99, STRATA_SUM, comm) !=
           STRATA_ERR_INVALID;
    bad |= strata_allreduce(buf, buf, 4, STRATA_INT32, (strata_op_t)-3, comm) !=
           STRATA_ERR_INVALID;
    bad |= strata_broadcast(buf, buf, 4, STRATA_INT32, 7, comm) != STRATA_ERR_INVALID;
    bad |= strata_reduce(buf, buf, 4, STRATA_INT32, STRATA_SUM, -2, comm) != STRATA_ERR_INVALID;
    bad |= strata_broadcast(buf, buf, 4, STRATA_INT32, -1, comm) != STRATA_ERR_INVALID;
    bad |= strata_reduce(buf, buf, 4, STRATA_INT32, STRATA_SUM, -1, comm) != STRATA_ERR_INVALID;
    bad |= strata_allreduce(buf, buf, 4, STRATA_INT32, STRATA_SUM, NULL) != STRATA_ERR_INVALID;
    bad |= strata_iallreduce(buf, buf, 4, STRATA_INT32, STRATA_SUM, comm, NULL) !=
           STRATA_ERR_INVALID;
    /* the communicator still works */
    bad |= strata_allreduce(buf, buf, 4, STRATA_INT32, STRATA_SUM, comm) != STRATA_OK;
    bad |= buf[3] != 4 * strata_comm_nranks(comm);
    return bad;
}

static void test_invalid_arguments(void **state)
{
    sts_ranks_opts_t o = {.nranks = 2, .nodes = 1, .timeout_ms = 20000, .wall_s = 60,
                          .env = {"STRATA_SOCKET_IFNAME==lo"}};
    assert_int_equal(sts_ranks_run(&o, rank_invalid, NULL, NULL), 0);
}

/* Ranks whose settings would make them pick different algorithms refuse to start. */
static void test_disagreeing_settings(void **state)
{
    int codes[3];
    sts_ranks_opts_t o = {.nranks = 3, .nodes = 1, .timeout_ms = 20000, .wall_s = 60,
                          .expect_init_fail = 1, .env = {"STRATA_SOCKET_IFNAME==lo"},
                          .env_rank0 = {"STRATA_ALGO=ring"}};
    sts_ranks_run(&o, rank_never_called, NULL, codes);
    for (int r = 0; r < 3; r++)
        assert_int_equal(codes[r], STS_RANKS_INIT_FAILED);
}

/* A shared-memory chunk out of range is an init error, not a crash. */
static void test_bad_shm_chunk(void **state)
{
    int codes[2];
    sts_ranks_opts_t o = {.nranks = 2, .nodes = 1, .timeout_ms = 20000, .wall_s = 60,
                          .expect_init_fail = 1,
                          .env = {"STRATA_SOCKET_IFNAME==lo", "STRATA_SHM_CHUNK=-1"}};
    sts_ranks_run(&o, rank_never_called, NULL, codes);
    assert_int_equal(codes[0], STS_RANKS_INIT_FAILED);
    assert_int_equal(codes[1], STS_RANKS_INIT_FAILED);
}

static void test_init_without_environment(void **state)
{
    strata_comm_t *comm = NULL;
    strata_comm_config_t cfg;
    strata_comm_config_init(&cfg);
    unsetenv("STRATA_RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("RANK");
    assert_status(strata_comm_init_config(&cfg, &comm), STRATA_ERR_INVALID);
    assert_null(comm);
    cfg.rank = 3;
    cfg.nranks = 2;
    assert_status(strata_comm_init_config(&cfg, &comm), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_killed_mid_collective),
        cmocka_unit_test(test_rank_never_joins),
        cmocka_unit_test(test_mismatched_counts),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_disagreeing_settings),
        cmocka_unit_test(test_bad_shm_chunk),
        cmocka_unit_test(test_init_without_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

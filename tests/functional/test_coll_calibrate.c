/*
 * STRATA_CALIBRATE=1 across processes: every rank ends init with the same model (its tiers,
 * the shm tier's cache, ω and ω_y, gathered and compared), with the values calibration
 * measured marked "calibrated" where it measures them (the shm tier and its cache where a
 * node's ranks fit its host's cores, ω_y on one node whose ranks outnumber them; the net
 * between two nodes), and the collectives right on the tables built from it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algos/profile.h"
#include "coll/introspect.h"
#include "strata/strata.h"
#include "sts_ranks.h"

static const sta_field_t fields[] = {
    STA_FIELD_SHM_ALPHA, STA_FIELD_SHM_BETA, STA_FIELD_SHM_CACHE_BETA,
    STA_FIELD_SHM_CACHE_BYTES, STA_FIELD_NET_ALPHA, STA_FIELD_NET_BETA, STA_FIELD_WAKE,
    STA_FIELD_YIELD,
};
#define NFIELDS ((int)(sizeof(fields) / sizeof(fields[0])))
#define MAX_RANKS 4

/* 0 unless field came from calibration. */
static int calibrated(strata_comm_t *comm, sta_field_t field)
{
    return strcmp(stb_comm_source(comm, field), "calibrated") == 0;
}

static int rank_check(strata_comm_t *comm, int rank, void *arg)
{
    const int P = strata_comm_nranks(comm);
    sta_model_t m;
    sta_dims_t d;
    double mine[NFIELDS], all[MAX_RANKS * NFIELDS];
    int32_t in[257], out[257];
    int wrong = 0;
    (void)arg;

    stb_comm_model(comm, &m, &d);
    for (int f = 0; f < NFIELDS; f++)
        mine[f] = *sta_model_field(&m, fields[f]);
    if (P > MAX_RANKS ||
        strata_allgather(mine, all, NFIELDS, STRATA_FP64, comm) != STRATA_OK) {
        fprintf(stderr, "rank %d: allgather of the model failed\n", rank);
        return 1;
    }
    for (int r = 0; r < P; r++)
        for (int f = 0; f < NFIELDS; f++)
            if (memcmp(&all[r * NFIELDS + f], &mine[f], sizeof(double)) != 0) {
                fprintf(stderr, "rank %d: field %d is %.17g here, %.17g on rank %d\n", rank,
                        f, mine[f], all[r * NFIELDS + f], r);
                wrong++;
            }
    /* node 0's ranks fit the host's cores: the shm tier and its cache were measured */
    int shm_measured = d.local_size > 1 && d.host_cores > 0 && d.host_ranks <= d.host_cores;
    const sta_field_t shm_fields[] = {STA_FIELD_SHM_ALPHA, STA_FIELD_SHM_BETA,
                                      STA_FIELD_SHM_CACHE_BETA, STA_FIELD_SHM_CACHE_BYTES};
    for (int f = 0; f < 4; f++) {
        double v = *sta_model_field(&m, shm_fields[f]);
        if (calibrated(comm, shm_fields[f]) != shm_measured || !isfinite(v) || v < 0.0) {
            fprintf(stderr, "rank %d: shm field %d = %g from %s (measured expected: %d)\n",
                    rank, f, v, stb_comm_source(comm, shm_fields[f]), shm_measured);
            wrong++;
        }
    }
    /* one node whose ranks outnumber the cores: ω_y measured, and only there */
    int yield_measured = d.nnodes == 1 && d.local_size > 1 && d.host_cores > 0 &&
                         d.host_ranks > d.host_cores;
    if (calibrated(comm, STA_FIELD_YIELD) != yield_measured || !isfinite(m.yield_us) ||
        m.yield_us < 0.0) {
        fprintf(stderr, "rank %d: ω_y = %g from %s (measured expected: %d)\n", rank,
                m.yield_us, stb_comm_source(comm, STA_FIELD_YIELD), yield_measured);
        wrong++;
    }
    if (d.nnodes > 1 && (!calibrated(comm, STA_FIELD_NET_ALPHA) ||
                         !calibrated(comm, STA_FIELD_NET_BETA))) {
        fprintf(stderr, "rank %d: the net between two nodes was not calibrated\n", rank);
        wrong++;
    }
    /* the tables work: an allreduce and an allgather come out right */
    for (int i = 0; i < 257; i++)
        in[i] = rank + i;
    if (strata_allreduce(in, out, 257, STRATA_INT32, STRATA_SUM, comm) != STRATA_OK)
        return 1;
    for (int i = 0; i < 257; i++)
        wrong += out[i] != P * i + P * (P - 1) / 2;
    return wrong != 0;
}

static void run(int nranks, int nodes)
{
    sts_ranks_opts_t o = {.nranks = nranks, .nodes = nodes, .timeout_ms = 60000, .wall_s = 240,
                          .env = {"STRATA_SOCKET_IFNAME==lo", "STRATA_CALIBRATE=1"}};
    assert_int_equal(sts_ranks_run(&o, rank_check, NULL, NULL), 0);
}

/* One node of 2: the shm tier and its cache calibrated where 2 ranks fit the cores. */
static void test_calibrated_model_agrees_one_node_of_two(void **s)
{
    (void)s;
    run(2, 1);
}

/* Two nodes of 2: the net calibrated, ω where the ranks outnumber the cores. */
static void test_calibrated_model_agrees_two_nodes_of_two(void **s)
{
    (void)s;
    run(4, 2);
}

/* One node of 4: the shm tier measured only where 4 ranks fit the host's cores, ω_y only
 * where they outnumber them. */
static void test_calibrated_model_agrees_one_node_of_four(void **s)
{
    (void)s;
    run(4, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calibrated_model_agrees_one_node_of_two),
        cmocka_unit_test(test_calibrated_model_agrees_two_nodes_of_two),
        cmocka_unit_test(test_calibrated_model_agrees_one_node_of_four),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The collective library over a fused tcp device (STRATA_NET_FUSE=all) between two
 * emulated nodes with two rails each (tools/lib/tool_netns.h: veth0 on rail 0, veth1
 * on rail 1), one rank per node, so every byte of every allreduce crosses the virtual
 * NIC:
 *
 *   - a stream of allreduces (float sums of 1 MiB, 300000, 65536 and 4099 elements, the
 *     data shifted each round) runs with every result checked; both rails carry traffic
 *     before the cut (the interfaces' counters), so the library really uses both members;
 *   - the parent takes rail 1 down (ip link set veth1 down, in node 0), or rail 0 (veth0,
 *     in node 1: the member of every connection's lead socket), while the stream runs;
 *     every allreduce still completes with the right result (the transport fails the
 *     member over within STRATA_SOCKET_USER_TIMEOUT), the ranks run a fixed number of
 *     rounds after both saw the cut, and the job ends well (comm destroyed, exit 0).
 *
 * The ranks agree on when to stop with an allreduce of a flag (MIN of "saw the cut"),
 * so both run the same collectives. Each cut runs twice: with the library's own choice of
 * algorithm per size (the 4 MiB allreduce goes to the pipelined two-tier one, hier_pipe.c,
 * the others to the ring and recursive doubling), and with STRATA_ALGO=hierarchical, which
 * gives every size to the pipelined two-tier allreduce, cut into chunks of
 * RAILS_HIER_CHUNK so that two chunks' rings can be in flight when the rail dies: a failover
 * then needs each end to answer the other's frames on a comm it may have nothing posted on
 * (the library progresses its comms while it waits, sta_ctx_progress_idle). Needs root
 * (namespaces); skips otherwise. Nothing outlives a test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata/strata.h"
#include "sts_cmocka.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "tools/lib/tool_data.h"
#include "tools/lib/tool_netns.h"
#include "util/sock.h"
#include "util/time.h"

#define RAILS 2
#define RAILS_NODES 2
#define RAILS_WAIT_MS 240000
#define RAILS_BACKLOG 8
#define RAILS_READY_AFTER 3        /* rounds before the rank says READY */
#define RAILS_AFTER 8              /* rounds after both ranks saw the cut */
#define RAILS_MAX_ROUNDS 100000    /* a bound; the wall-clock deadline comes first */
#define RAILS_USER_TIMEOUT_MS "3000"
/* STRATA_HIER_CHUNK of the hierarchical cases: 4 chunks for the 4 MiB allreduce, 2 for the
 * 1.2 MB one, with 512 KiB per ring step: striped over both members (smaller steps travel
 * whole, and a lone one on an idle connection takes the lead's member only). */
#define RAILS_HIER_CHUNK "1048576"

/* Elements of each allreduce of a round: striped, rotated and small messages. */
static const size_t rails_counts[] = {1u << 20, 300000, 65536, 4099};
#define RAILS_NCOUNTS (sizeof(rails_counts) / sizeof(rails_counts[0]))

typedef struct rails_arg {
    int rank;
    int cut_rail;
    const char *algo;          /* STRATA_ALGO; NULL: the library's choice */
} rails_arg_t;

/* One round: every count, data shifted by round; 0 when every result is right. */
static int rails_round(strata_comm_t *comm, int rank, int round, float *buf)
{
    const int P = strata_comm_nranks(comm);

    for (size_t i = 0; i < RAILS_NCOUNTS; i++) {
        size_t n = rails_counts[i], first = (size_t)round * 7u + i;
        stb_data_fill(buf, n, STRATA_FP32, STRATA_SUM, rank, first);
        strata_status_t st = strata_allreduce(buf, buf, n, STRATA_FP32, STRATA_SUM, comm);
        if (st != STRATA_OK) {
            fprintf(stderr, "rank %d: round %d allreduce of %zu: %s (%s)\n", rank, round, n,
                    strata_status_str(st), strata_comm_error(comm));
            return 1;
        }
        if (stb_data_check(buf, n, STRATA_FP32, STRATA_SUM, P, first, "rails allreduce"))
            return 1;
    }
    return 0;
}

/* Runs inside node `rank`. Rank 0 binds the rendezvous on rail 0 and tells the parent. */
static int rails_rank_main(void *varg, int ctl)
{
    const rails_arg_t *a = varg;
    char root[STU_ADDR_TEXT_LEN] = "", node[32];
    const uint64_t deadline = stu_deadline_ms(RAILS_WAIT_MS);
    strata_comm_config_t cfg;
    strata_comm_t *comm = NULL;
    int lfd = -1;

    int bad = sts_root_child(ctl, a->rank, a->rank, RAILS_BACKLOG, deadline, root,
                             sizeof(root), &lfd);
    if (bad != 0)
        return bad;
    snprintf(node, sizeof(node), "node%d", a->rank);
    setenv("STRATA_TRANSPORT", "tcp", 1);
    setenv("STRATA_NET_FUSE", "all", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_USER_TIMEOUT", RAILS_USER_TIMEOUT_MS, 1);
    unsetenv("STRATA_SOCKET_IFNAME");
    setenv("STRATA_TIMEOUT", "120000", 1);
    unsetenv("STRATA_ALGO");
    unsetenv("STRATA_HIER_CHUNK");
    if (a->algo != NULL) {
        setenv("STRATA_ALGO", a->algo, 1);
        setenv("STRATA_HIER_CHUNK", RAILS_HIER_CHUNK, 1);
    }
    strata_comm_config_init(&cfg);
    cfg.rank = a->rank;
    cfg.nranks = RAILS_NODES;
    cfg.node_id = node;
    cfg.root_addr = root;
    cfg.root_fd = lfd;
    if (strata_comm_init_config(&cfg, &comm) != STRATA_OK)
        return 13;
    float *buf = malloc(rails_counts[0] * sizeof(float));
    unsigned long long start[RAILS] = {0}, ready[RAILS] = {0};
    int rc = buf == NULL || sts_rail_if_bytes(0, RAILS, start) != 0 ? 14 : 0;
    int round = 0, after = -1, saw = 0;
    for (; rc == 0 && round < RAILS_MAX_ROUNDS && !stu_deadline_passed(deadline); round++) {
        if (rails_round(comm, a->rank, round, buf) != 0) {
            rc = 1;
            break;
        }
        if (round + 1 == RAILS_READY_AFTER) {
            /* both members carried this rank's traffic (a quarter each at least) */
            if (sts_rail_if_bytes(0, RAILS, ready) != 0 ||
                ready[a->cut_rail] - start[a->cut_rail] < (ready[0] + ready[1] - start[0] -
                                                          start[1]) / 4) {
                fprintf(stderr, "rank %d: rail %d sent %llu of %llu bytes before the cut\n",
                        a->rank, a->cut_rail, ready[a->cut_rail] - start[a->cut_rail],
                        ready[0] + ready[1] - start[0] - start[1]);
                rc = 15;
                break;
            }
            if (sts_ctl_send(ctl, STS_CTL_READY, NULL, 0) != 0) {
                rc = 16;
                break;
            }
        }
        /* GO from the parent: the rail is down. The ranks count from the round both knew. */
        if (!saw && sts_ctl_pending(ctl) > 0) {
            if (sts_ctl_expect(ctl, STS_CTL_GO, NULL, 0, deadline) != 0) {
                rc = 17;
                break;
            }
            saw = 1;
        }
        int32_t both = saw;
        if (strata_allreduce(&both, &both, 1, STRATA_INT32, STRATA_MIN, comm) != STRATA_OK) {
            rc = 18;
            break;
        }
        if (both && after < 0)
            after = 0;
        if (after >= 0 && ++after >= RAILS_AFTER)
            break;
    }
    if (rc == 0 && after < RAILS_AFTER)
        rc = 19;                     /* the deadline came first */
    fprintf(stderr, "rank %d: %d rounds of %zu allreduces, %d after the cut\n", a->rank,
            round + 1, RAILS_NCOUNTS, after);
    free(buf);
    strata_comm_destroy(comm);
    return rc;
}

static void rails_run(int cut_node, int cut_rail, const char *algo)
{
    stb_netns_t net;
    rails_arg_t args[RAILS_NODES];
    sts_peer_t peers[RAILS_NODES];
    const uint64_t deadline = stu_deadline_ms(RAILS_WAIT_MS);

    if (stb_netns_create_rails(&net, RAILS_NODES, RAILS, 0) != STRATA_OK) {
        stb_netns_destroy(&net);
        skip();   /* no namespaces here (not root, or no kernel support) */
    }
    sts_job_secret_export();
    for (int r = 0; r < RAILS_NODES; r++) {
        args[r] = (rails_arg_t){r, cut_rail, algo};
        assert_int_equal(sts_peer_fork(&peers[r], &net, r, rails_rank_main, &args[r]), 0);
    }
    assert_int_equal(sts_root_relay(peers, RAILS_NODES, deadline), 0);
    int ready = 0;
    for (int r = 0; r < RAILS_NODES; r++)
        ready += sts_ctl_expect(peers[r].fd, STS_CTL_READY, NULL, 0, deadline) == 0;
    if (ready == RAILS_NODES) {
        assert_ok(stb_netns_rail_link(&net, cut_node, cut_rail, 0));
        for (int r = 0; r < RAILS_NODES; r++)
            assert_int_equal(sts_ctl_send(peers[r].fd, STS_CTL_GO, NULL, 0), 0);
    }
    int failed = sts_root_wait_all(peers, RAILS_NODES, deadline);
    stb_netns_destroy(&net);
    unsetenv("STRATA_JOB_SECRET");
    assert_int_equal(ready, RAILS_NODES);
    assert_int_equal(failed, 0);
}

static void test_allreduce_survives_rail1_down(void **state)
{
    (void)state;
    rails_run(0, 1, NULL);
}

/* Rail 0, whose member carries the lead socket of every connection, and the rendezvous. */
static void test_allreduce_survives_rail0_down(void **state)
{
    (void)state;
    rails_run(1, 0, NULL);
}

static void test_hier_allreduce_survives_rail1_down(void **state)
{
    (void)state;
    rails_run(0, 1, "hierarchical");
}

static void test_hier_allreduce_survives_rail0_down(void **state)
{
    (void)state;
    rails_run(1, 0, "hierarchical");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce_survives_rail1_down),
        cmocka_unit_test(test_allreduce_survives_rail0_down),
        cmocka_unit_test(test_hier_allreduce_survives_rail1_down),
        cmocka_unit_test(test_hier_allreduce_survives_rail0_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The collective library across emulated nodes that have their own network
 * namespace and address (tools/lib/tool_netns.h): ranks of one node share a
 * namespace and its shared memory, nodes talk TCP over veth (optionally shaped
 * with tbf), and the rendezvous is rank 0's address in node 0's namespace.
 * Skips when network namespaces cannot be made (not root, no support).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algos/cost_model.h"
#include "strata/strata.h"
#include "sts_cmocka.h"
#include "sts_proc.h"
#include "sts_ranks.h"
#include "sts_util.h"
#include "tools/lib/tool_data.h"
#include "util/sock.h"
#include "util/time.h"

#define NS_PER_NODE 2
#define NS_WAIT_MS 240000
#define NS_BACKLOG 64             /* every rank's bootstrap connection */

typedef struct ns_rank_arg {
    int rank, nranks, node;
    const char *algo;
    const char *chunk;   /* STRATA_HIER_CHUNK, or NULL for the model's */
    size_t max_count;    /* the largest allreduce to run; 0: all sizes */
    int odd_stripe_rank; /* this rank (> 0) alone sets STRATA_SOCKET_STRIPE_MIN=128K, and
                            every rank's init must fail with STRATA_ERR_MISMATCH; 0: none */
} ns_rank_arg_t;

static int ns_allreduce_sizes(strata_comm_t *comm, int rank, size_t max_count)
{
    static const size_t sizes[] = {0, 1, 4099, 1 << 20};
    const int P = strata_comm_nranks(comm);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        if (max_count > 0 && n > max_count)
            break;
        for (int t = 0; t < STRATA_DTYPE_COUNT; t += 3) {
            size_t esz = strata_dtype_size((strata_dtype_t)t);
            char *buf = malloc(n * esz + 1);
            stb_data_fill(buf, n, (strata_dtype_t)t, STRATA_SUM, rank, 0);
            strata_status_t st = strata_allreduce(buf, buf, n, (strata_dtype_t)t, STRATA_SUM,
                                                  comm);
            size_t wrong = st == STRATA_OK ? stb_data_check(buf, n, (strata_dtype_t)t, STRATA_SUM,
                                                            P, 0, "netns allreduce")
                                           : 1;
            free(buf);
            if (st != STRATA_OK)
                fprintf(stderr, "rank %d: allreduce n=%zu: %s (%s)\n", rank, n,
                        strata_status_str(st), strata_comm_error(comm));
            if (wrong)
                return 1;
        }
    }
    return 0;
}

/* Runs inside the node's namespace. Rank 0 binds the rendezvous and tells the parent. */
static int ns_rank_main(void *varg, int ctl)
{
    ns_rank_arg_t *a = varg;
    char root[STU_ADDR_TEXT_LEN] = "", node[32], algo[64];
    strata_comm_config_t cfg;
    strata_comm_t *comm = NULL;
    int lfd = -1;

    int bad = sts_root_child(ctl, a->node, a->rank, NS_BACKLOG, stu_deadline_ms(NS_WAIT_MS),
                             root, sizeof(root), &lfd);
    if (bad != 0)
        return bad;
    snprintf(node, sizeof(node), "node%d", a->node);
    snprintf(algo, sizeof(algo), "%s", a->algo);
    setenv("STRATA_ALGO", algo, 1);
    setenv("STRATA_SOCKET_IFNAME", "=" STB_NETNS_IFNAME, 1);
    setenv("STRATA_TIMEOUT", "120000", 1);
    if (a->chunk != NULL)
        setenv("STRATA_HIER_CHUNK", a->chunk, 1);
    if (a->odd_stripe_rank > 0) {
        /* a link faster than any host's cores stream: the rule applies on every machine */
        setenv("STRATA_NET_BETA_GBPS", "100", 1);
        if (a->rank == a->odd_stripe_rank)
            setenv("STRATA_SOCKET_STRIPE_MIN", "128K", 1);
    }
    strata_comm_config_init(&cfg);
    cfg.rank = a->rank;
    cfg.nranks = a->nranks;
    cfg.node_id = node;
    cfg.root_addr = root;
    cfg.root_fd = lfd;
    strata_status_t st = strata_comm_init_config(&cfg, &comm);
    if (a->odd_stripe_rank > 0) {
        if (st == STRATA_OK)
            strata_comm_destroy(comm);
        if (st != STRATA_ERR_MISMATCH)
            fprintf(stderr, "rank %d: init with one rank's other stripe size: %s, not "
                    "STRATA_ERR_MISMATCH\n", a->rank, strata_status_str(st));
        return st == STRATA_ERR_MISMATCH ? 0 : 15;
    }
    if (st != STRATA_OK) {
        fprintf(stderr, "rank %d: init: %s\n", a->rank, strata_status_str(st));
        return 13;
    }
    int rc = strata_comm_nnodes(comm) != a->nranks / NS_PER_NODE ? 14
             : ns_allreduce_sizes(comm, a->rank, a->max_count) != 0              ? 1
             /* every forced algorithm applies to allreduce on these equal nodes */
             : sts_ranks_check_algos(comm, a->algo, STS_COLL_BIT(STA_COLL_ALLREDUCE), 0);
    strata_comm_destroy(comm);
    return rc;
}

static void ns_run_args(int nodes, const char *algo, const char *qdisc, const char *chunk,
                        size_t max_count, int odd_stripe_rank)
{
    stb_netns_t net;
    ns_rank_arg_t args[16];
    sts_peer_t peers[16];
    const int P = nodes * NS_PER_NODE;

    if (stb_netns_create(&net, nodes, 0) != STRATA_OK) {
        stb_netns_destroy(&net);
        skip();   /* no namespaces here (not root, or no kernel support) */
    }
    sts_job_secret_export(); /* ranks across "hosts" need one, as under mpirun */
    for (int n = 0; qdisc != NULL && n < nodes; n++)
        assert_ok(stb_netns_shape(&net, n, qdisc));
    for (int r = 0; r < P; r++) {
        args[r] = (ns_rank_arg_t){r, P, r / NS_PER_NODE, algo, chunk, max_count,
                                  odd_stripe_rank};
        assert_int_equal(sts_peer_fork(&peers[r], &net, args[r].node, ns_rank_main, &args[r]),
                         0);
    }
    const uint64_t deadline = stu_deadline_ms(NS_WAIT_MS);
    assert_int_equal(sts_root_relay(peers, P, deadline), 0);
    int failed = sts_root_wait_all(peers, P, deadline);
    stb_netns_destroy(&net);
    unsetenv("STRATA_JOB_SECRET");
    assert_int_equal(failed, 0);
}

static void ns_run_chunk(int nodes, const char *algo, const char *qdisc, const char *chunk,
                         size_t max_count)
{
    ns_run_args(nodes, algo, qdisc, chunk, max_count, 0);
}

static void ns_run(int nodes, const char *algo, const char *qdisc)
{
    ns_run_chunk(nodes, algo, qdisc, NULL, 0);
}

static void test_two_nodes_hierarchical(void **state) { ns_run(2, "hierarchical", NULL); }

/*
 * The pipeline's chunks follow the transport's stripe size where the cores bound the net
 * (sta_dims_t.net_msg_min): one rank with another STRATA_SOCKET_STRIPE_MIN would cut other
 * shm rounds than its node's, so every rank's init fails with STRATA_ERR_MISMATCH instead.
 */
static void test_two_nodes_stripe_mismatch_fails_init(void **state)
{
    ns_run_args(2, "auto", NULL, NULL, 0, 3);
}

/*
 * The pipelined two-tier allreduce (algos/hier_pipe.c) at its chunk boundaries: a chunk of
 * 4100 bytes divides no size of ns_allreduce_sizes and no element size but 1, 2 and 4
 * (doubles: 512 elements a chunk, the last one short); 1 element is a single, partial
 * chunk; 2^20 elements are hundreds of chunks, far more than the two rings in flight and the
 * shm segment's two slot halves. 3 nodes make each chunk's ring 4 steps, so the next chunk's
 * ring waits for the last one's posts. A chunk of one element gives every local rank but
 * one an empty block of every chunk (up to 4099 elements: a chunk costs a few round trips).
 */
static void test_two_nodes_hier_chunk_boundaries(void **state)
{
    ns_run_chunk(2, "hierarchical", NULL, "4100", 0);
}
static void test_two_nodes_leader_chunk_boundaries(void **state)
{
    ns_run_chunk(2, "leader", NULL, "4100", 0);
}
static void test_three_nodes_hier_chunks(void **state)
{
    ns_run_chunk(3, "hierarchical", NULL, "65536", 0);
}
static void test_two_nodes_hier_one_element_chunks(void **state)
{
    ns_run_chunk(2, "hierarchical", NULL, "1", 4099);   /* 4099 chunks at most */
}
static void test_two_nodes_auto_shaped(void **state)
{
    ns_run(2, "auto", "tbf rate 1gbit burst 32kb latency 50ms");
}
static void test_three_nodes_ring(void **state) { ns_run(3, "ring", NULL); }
static void test_four_nodes_recursive(void **state) { ns_run(4, "recursive", NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_nodes_hierarchical),
        cmocka_unit_test(test_two_nodes_stripe_mismatch_fails_init),
        cmocka_unit_test(test_two_nodes_hier_chunk_boundaries),
        cmocka_unit_test(test_two_nodes_leader_chunk_boundaries),
        cmocka_unit_test(test_three_nodes_hier_chunks),
        cmocka_unit_test(test_two_nodes_hier_one_element_chunks),
        cmocka_unit_test(test_two_nodes_auto_shaped),
        cmocka_unit_test(test_three_nodes_ring),
        cmocka_unit_test(test_four_nodes_recursive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

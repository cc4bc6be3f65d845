/*
 * The collective library across emulated nodes that have their own network
 * namespace and address (tests/support/netns.h): ranks of one node share a
 * namespace and its shared memory, nodes talk TCP over veth (optionally shaped
 * with tbf), and the rendezvous is rank 0's address in node 0's namespace.
 * Skips when network namespaces cannot be made (not root, no support).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll_check.h"
#include "netns.h"
#include "sts_util.h"

#define NS_PER_NODE 2
#define NS_WAIT_MS 240000

typedef struct ns_rank_arg {
    sts_netns_t *net;
    int rank, nranks, node;
    const char *algo;
} ns_rank_arg_t;

static int ns_allreduce_sizes(strata_comm_t *comm, int rank)
{
    static const size_t sizes[] = {0, 1, 4099, 1 << 20};
    const int P = strata_comm_nranks(comm);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        for (int t = 0; t < STRATA_DTYPE_COUNT; t += 3) {
            size_t esz = strata_dtype_size((strata_dtype_t)t);
            char *buf = malloc(n * esz + 1);
            cc_fill(buf, n, (strata_dtype_t)t, STRATA_SUM, rank, 0);
            strata_status_t st = strata_allreduce(buf, buf, n, (strata_dtype_t)t, STRATA_SUM,
                                                  comm);
            size_t wrong = st == STRATA_OK ? cc_check(buf, n, (strata_dtype_t)t, STRATA_SUM, P,
                                                      0, "netns allreduce") : 1;
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
    char addr[64], root[80], node[32], algo[64];
    strata_comm_config_t cfg;
    strata_comm_t *comm = NULL;
    int lfd = -1;

    sts_netns_addr(a->net, a->node, addr, sizeof(addr));
    if (a->rank == 0) {
        struct sockaddr_in sa = {.sin_family = AF_INET};
        socklen_t sl = sizeof(sa);
        inet_pton(AF_INET, addr, &sa.sin_addr);
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            listen(lfd, 64) != 0 || getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
            return 10;
        snprintf(root, sizeof(root), "%s:%d", addr, ntohs(sa.sin_port));
        if (sts_netns_msg_send(ctl, root, sizeof(root), NS_WAIT_MS) != STRATA_OK)
            return 11;
    } else if (sts_netns_msg_recv(ctl, root, sizeof(root), NS_WAIT_MS) != STRATA_OK) {
        return 12;
    }
    snprintf(node, sizeof(node), "node%d", a->node);
    snprintf(algo, sizeof(algo), "%s", a->algo);
    setenv("STRATA_ALGO", algo, 1);
    setenv("STRATA_SOCKET_IFNAME", "=" STS_NETNS_IFNAME, 1);
    setenv("STRATA_TIMEOUT", "120000", 1);
    strata_comm_config_init(&cfg);
    cfg.rank = a->rank;
    cfg.nranks = a->nranks;
    cfg.node_id = node;
    cfg.root_addr = root;
    cfg.root_fd = lfd;
    strata_status_t st = strata_comm_init_config(&cfg, &comm);
    if (st != STRATA_OK) {
        fprintf(stderr, "rank %d: init: %s\n", a->rank, strata_status_str(st));
        return 13;
    }
    int rc = strata_comm_nnodes(comm) == a->nranks / NS_PER_NODE ? ns_allreduce_sizes(comm, a->rank)
                                                                 : 14;
    strata_comm_destroy(comm);
    return rc;
}

static void ns_run(int nodes, const char *algo, const char *qdisc)
{
    sts_netns_t *net = NULL;
    ns_rank_arg_t args[16];
    pid_t pids[16];
    int ctls[16];
    const int P = nodes * NS_PER_NODE;

    if (sts_netns_create(nodes, STS_NETNS_AUTO, &net) != STRATA_OK)
        skip();   /* no namespaces here (not root, or no kernel support) */
    sts_job_secret_export(); /* ranks across "hosts" need one, as under mpirun */
    if (qdisc != NULL)
        for (int n = 0; n < nodes; n++)
            assert_int_equal(sts_netns_shape(net, n, qdisc), STRATA_OK);
    for (int r = 0; r < P; r++) {
        args[r] = (ns_rank_arg_t){net, r, P, r / NS_PER_NODE, algo};
        assert_int_equal(sts_netns_spawn(net, args[r].node, ns_rank_main, &args[r], &pids[r],
                                         &ctls[r]), STRATA_OK);
    }
    char root[80];
    assert_int_equal(sts_netns_msg_recv(ctls[0], root, sizeof(root), NS_WAIT_MS), STRATA_OK);
    for (int r = 1; r < P; r++)
        assert_int_equal(sts_netns_msg_send(ctls[r], root, sizeof(root), NS_WAIT_MS),
                         STRATA_OK);
    int failed = 0;
    for (int r = 0; r < P; r++) {
        int ws = 0;
        if (sts_netns_wait(net, pids[r], NS_WAIT_MS, &ws) != STRATA_OK || !sts_netns_exit_ok(ws)) {
            fprintf(stderr, "rank %d: exit status %d\n", r,
                    WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
            failed++;
        }
    }
    sts_netns_destroy(net);
    unsetenv("STRATA_JOB_SECRET");
    assert_int_equal(failed, 0);
}

static void test_two_nodes_hierarchical(void **state) { ns_run(2, "hierarchical", NULL); }
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
        cmocka_unit_test(test_two_nodes_auto_shaped),
        cmocka_unit_test(test_three_nodes_ring),
        cmocka_unit_test(test_four_nodes_recursive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

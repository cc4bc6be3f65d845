/*
 * Emulated nodes for multi-node tests: N network namespaces joined by veth
 * links, each node with one interface and its own address, and forked
 * children running inside them. Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)
 * and iproute2 (`ip`, and `tc` for shaping).
 *
 * Topology (all names are private to their namespace, none is global):
 *
 *   STS_NETNS_PAIR    2 nodes, one veth between them.
 *   STS_NETNS_BRIDGE  N nodes, each linked by a veth to bridge "br0" in a hub
 *                     namespace of its own (a switch).
 *   STS_NETNS_AUTO    PAIR for 2 nodes, BRIDGE beyond.
 *
 *   node i: interface STS_NETNS_IFNAME ("veth0"), address 198.51.100.(i+1)/24
 *   (TEST-NET-2, RFC 5737: never routed), lo up. The hub's ports are n0, n1...
 *
 * Nothing is left behind, whatever happens: the namespaces are anonymous
 * (never bind-mounted under /run/netns) and live only as long as a file
 * descriptor of this process or a process inside them refers to them. Every
 * child is killed when this process dies (PR_SET_PDEATHSIG), so a test that
 * crashes or is killed by its timeout takes the namespaces and their
 * interfaces with it; the root namespace is never touched. Two test runs never
 * clash, since nothing has a global name. sts_netns_destroy() does the same
 * cleanup on purpose: kill and reap the children, close the descriptors.
 *
 * Children: sts_netns_spawn forks a child that enters a node's namespace and
 * runs fn(arg, ctl); its return value is the exit status. ctl is one end of a
 * socketpair whose other end the parent gets, for handles and results (see
 * sts_netns_msg_*). A child must not use cmocka's asserts (they would unwind
 * into the parent's test runner copy); it reports failure through its exit
 * status and stderr. The parent's stdio is flushed before each fork, and the
 * child's crash signals are reset to their defaults (a crash ends the child).
 * A child that forks again must reap or kill its own children: only direct
 * children die with the parent.
 *
 * Shaping: sts_netns_shape installs a root qdisc on both ends of a node's
 * link (both directions), e.g. "tbf rate 1gbit burst 32kb latency 50ms"
 * (netem is not in the CI kernel; see docs/machines.md for which qdiscs
 * are exact).
 *
 * Threads: an sts_netns_t is used by one thread. Creation briefly moves the
 * calling thread into each new namespace (unshare) and back.
 */
#ifndef STS_NETNS_H
#define STS_NETNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strata/status.h"

#define STS_NETNS_MAX_NODES 32
#define STS_NETNS_MAX_KIDS 64
#define STS_NETNS_IFNAME "veth0"
#define STS_NETNS_SUBNET "198.51.100"    /* TEST-NET-2; node i is .(i+1) */
#define STS_NETNS_PREFIX_LEN 24

typedef enum sts_netns_topo {
    STS_NETNS_AUTO = 0,
    STS_NETNS_PAIR,
    STS_NETNS_BRIDGE,
} sts_netns_topo_t;

typedef struct sts_netns_kid {
    pid_t pid;                /* 0: free */
    int ctl;                  /* parent's end of the control socketpair */
    int node;
} sts_netns_kid_t;

typedef struct sts_netns {
    int nodes;
    sts_netns_topo_t topo;
    int hub_fd;                              /* bridge namespace, -1 for a pair */
    int node_fd[STS_NETNS_MAX_NODES];        /* node namespaces (O_CLOEXEC) */
    uint64_t ns_ids[STS_NETNS_MAX_NODES + 1]; /* inode numbers, for leftover checks */
    int nids;
    sts_netns_kid_t kids[STS_NETNS_MAX_KIDS];
} sts_netns_t;

/*
 * Creates nodes (2..STS_NETNS_MAX_NODES) namespaces in topology topo.
 * STRATA_ERR_UNSUPPORTED when this process may not create namespaces or
 * interfaces (not root, no iproute2): a test skips then. Anything else that
 * fails is STRATA_ERR_IO (logged on stderr) and leaves nothing behind.
 */
strata_status_t sts_netns_create(int nodes, sts_netns_topo_t topo, sts_netns_t **net_p);

/* Kills (SIGKILL) and reaps every child still running, closes everything, frees. NULL ok. */
void sts_netns_destroy(sts_netns_t *net);

/* "198.51.100.3" for node 2. */
void sts_netns_addr(const sts_netns_t *net, int node, char *buf, size_t len);

/*
 * Runs a program (argv[0] looked up in PATH, NULL-terminated argv) inside the
 * node's namespace and waits for it; its stdout is discarded, its stderr kept.
 * node -1 is the hub of a bridge topology. OK when it exited 0.
 */
strata_status_t sts_netns_run(sts_netns_t *net, int node, const char *const *argv);

/*
 * Installs (replaces) qdisc, a tc qdisc spec after "root" such as
 * "tbf rate 1gbit burst 32kb latency 50ms", on both ends of node's link;
 * NULL removes the shaping. For a pair, node 0 and node 1 name the same link.
 */
strata_status_t sts_netns_shape(sts_netns_t *net, int node, const char *qdisc);

/*
 * Forks a child into node's namespace running fn(arg, ctl); *pid_p and
 * *ctl_p get its pid and the parent's end of its control channel (owned by
 * net: closed when the child is reaped). Either output may be NULL.
 */
strata_status_t sts_netns_spawn(sts_netns_t *net, int node, int (*fn)(void *arg, int ctl),
                                void *arg, pid_t *pid_p, int *ctl_p);

/*
 * Waits up to timeout_ms for child pid to end and reaps it; past the
 * deadline kills it (SIGKILL), reaps it and returns STRATA_ERR_TIMEOUT.
 * *wstatus_p (may be NULL) gets waitpid's status.
 */
strata_status_t sts_netns_wait(sts_netns_t *net, pid_t pid, int timeout_ms, int *wstatus_p);

/* True when the child exited normally with status 0. */
bool sts_netns_exit_ok(int wstatus);

/* Whole-buffer I/O on a control channel, bounded by timeout_ms. OK, or TIMEOUT/IO/REMOTE. */
strata_status_t sts_netns_msg_send(int fd, const void *buf, size_t len, int timeout_ms);
strata_status_t sts_netns_msg_recv(int fd, void *buf, size_t len, int timeout_ms);

/*
 * How many of the given namespaces something still holds: a process inside
 * one, or an open descriptor to one, found by scanning /proc. 0 after
 * sts_netns_destroy means nothing was left behind (copy net->ns_ids first).
 */
int sts_netns_count_held(const uint64_t *ns_ids, int n);

#endif /* STS_NETNS_H */

/*
 * Emulated nodes, the one emulator of strata-run --netns and the tests'
 * multi-node fixtures: each node a network and a mount namespace of its own,
 * every node linked by a veth to a bridge in a hub namespace (a switch).
 *
 *   hub:     bridge br0, ports n0, n1, ... (one veth end per node)
 *   node k:  lo, veth0 = 198.51.100.(k+1)/24 (TEST-NET-2, RFC 5737: never
 *            routed), a private tmpfs on /dev/shm (the node's shared memory)
 *   shaping: a root qdisc on both ends of a node's link (both directions)
 *
 * With rails (stb_netns_create_rails), each rail r > 0 is a second network of
 * its own: bridge br<r> in the hub, port n<k>r<r>, and in node k veth<r> =
 * <rail r's subnet>.(k+1)/24, so a node has one interface per rail, as a host
 * with several NICs on a rail-optimised fabric. Subnets: rail 0 198.51.100,
 * rail 1 203.0.113 (TEST-NET-3, RFC 5737), rails 2 and 3 198.18.0 and 198.19.0
 * (RFC 2544's benchmarking range); none is ever routed.
 *
 * Each namespace is held by a "keeper" child that does nothing but hold it:
 * the namespaces are anonymous (never in /run/netns) and exist only while a
 * keeper, a process inside, or a descriptor refers to them. Keepers die with
 * their parent (PR_SET_PDEATHSIG), so even `kill -9` of the creator takes
 * the namespaces, their interfaces, qdiscs and /dev/shm contents with it, and
 * two runs never clash (nothing has a global name); the root namespace is
 * never changed. stb_netns_destroy() does the same on purpose. Interfaces
 * and qdiscs are set up by running iproute2 in a child that enters the
 * namespace, so the creator never leaves its own.
 *
 * Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2 (`ip`, `tc`; which
 * qdiscs the CI kernel has and how exact they are: docs/machines.md). One
 * thread uses an stb_netns_t; children enter a node with stb_netns_enter.
 */
#ifndef STB_NETNS_H
#define STB_NETNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "strata/status.h"

/* Node i has address 198.51.100.(i+1), so at most 253; 64 is far more than two cores run. */
#define STB_NETNS_MAX_NODES 64
#define STB_NETNS_SUBNET "198.51.100"
#define STB_NETNS_PREFIX_LEN 24
#define STB_NETNS_IFNAME "veth0"
#define STB_NETNS_HUB (-1)            /* the hub, where a node number is asked for */
#define STB_NETNS_MAX_RAILS 4         /* one subnet each (above) */

typedef struct stb_netns {
    int nodes;
    int rails;                                  /* 1 unless made by stb_netns_create_rails */
    int verbose;                                /* log each command and keeper */
    pid_t keeper[STB_NETNS_MAX_NODES + 1];      /* [nodes] is the hub's; 0: none */
    int net_fd[STB_NETNS_MAX_NODES + 1];        /* O_CLOEXEC; -1: none */
    int mnt_fd[STB_NETNS_MAX_NODES];
    uint64_t net_ino[STB_NETNS_MAX_NODES + 1];  /* namespace ids, for leftover checks */
} stb_netns_t;

/* Marks every slot empty, so stb_netns_destroy is safe on a failed or skipped create. */
void stb_netns_init(stb_netns_t *ns);

/*
 * Creates nodes (1..STB_NETNS_MAX_NODES) nodes and the hub, and links them.
 * STRATA_ERR_UNSUPPORTED when this process may not create namespaces (not
 * root, a container without the capability, no iproute2): a test skips then;
 * STRATA_ERR_IO when a command failed. Both are logged. On any error the
 * caller still calls stb_netns_destroy.
 */
strata_status_t stb_netns_create(stb_netns_t *ns, int nodes, int verbose);

/*
 * The same with rails (1..STB_NETNS_MAX_RAILS) links per node, one per rail,
 * each on its own bridge and subnet (above). Same errors.
 */
strata_status_t stb_netns_create_rails(stb_netns_t *ns, int nodes, int rails, int verbose);

/* Kills and reaps the keepers, closes the descriptors. Idempotent. */
void stb_netns_destroy(stb_netns_t *ns);

/* How many namespaces the emulator holds (nodes and the hub), and their ids. */
int stb_netns_ids(const stb_netns_t *ns, uint64_t *ids, int max);

/*
 * How many of the namespaces ids[0..n) something still holds: a process
 * inside, or an open descriptor, found by scanning /proc. 0 after
 * stb_netns_destroy means nothing was left behind.
 */
int stb_netns_count_held(const uint64_t *ids, int n);

/* Whether pid is one of the keepers (for a caller that reaps every child in one place). */
int stb_netns_is_keeper(const stb_netns_t *ns, pid_t pid);

/* Forgets a keeper the caller has reaped (it died: the emulation is broken). */
void stb_netns_keeper_gone(stb_netns_t *ns, pid_t pid);

/* "198.51.100.(node+1)". */
void stb_netns_addr(int node, char *buf, size_t len);
/* Node's address on rail (0: stb_netns_addr's), e.g. "203.0.113.(node+1)" on rail 1. */
void stb_netns_rail_addr(int node, int rail, char *buf, size_t len);
/* Node's interface on rail: "veth<rail>" into buf. */
void stb_netns_rail_ifname(int rail, char *buf, size_t len);

/*
 * Runs argv (argv[0] looked up in PATH) in node's network namespace
 * (STB_NETNS_HUB: the hub's) and waits for it; its stdout is discarded.
 * OK when it exits 0, STRATA_ERR_INVALID for a bad node, else STRATA_ERR_IO.
 */
strata_status_t stb_netns_run(const stb_netns_t *ns, int node, char *const argv[]);

/*
 * Installs (replaces) a root qdisc on both ends of node's link, e.g.
 * "tbf rate 1gbit burst 32kb latency 50ms"; NULL removes the shaping.
 */
strata_status_t stb_netns_shape(const stb_netns_t *ns, int node, const char *qdisc);
/* The same for node's link on one rail (stb_netns_shape is rail 0). */
strata_status_t stb_netns_shape_rail(const stb_netns_t *ns, int node, int rail,
                                     const char *qdisc);

/*
 * Sets node's interface on rail down (up false) or up again, as a NIC port that
 * loses its link: `ip link set veth<rail> down|up` inside the node.
 */
strata_status_t stb_netns_rail_link(const stb_netns_t *ns, int node, int rail, int up);

/* A TCP socket listening on node's address, port 0, created inside its namespace. */
strata_status_t stb_netns_listen(const stb_netns_t *ns, int node, int *fd_p, char *addr,
                                 size_t len);

/*
 * In a freshly forked child (single-threaded): moves into node's network and
 * mount namespaces, then to the working directory cwd (NULL: "/"; setns to a
 * mount namespace resets it). Logs on stderr on failure. A suitable
 * stb_spawn_t setup with the stb_netns_place_t below.
 */
strata_status_t stb_netns_enter(const stb_netns_t *ns, int node, const char *cwd);

typedef struct stb_netns_place {
    const stb_netns_t *ns;
    int node;
    const char *cwd;
} stb_netns_place_t;

/* stb_netns_enter for a stb_spawn_t's setup: arg is a stb_netns_place_t; 0 or -1. */
int stb_netns_setup(void *place);

#endif /* STB_NETNS_H */

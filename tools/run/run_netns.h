/*
 * strata-run --netns: emulated nodes, each a network namespace and a mount
 * namespace of its own, joined by a bridge.
 *
 *   hub namespace:   bridge br0, ports n0, n1, ... (one veth end per node)
 *   node k:          lo, veth0 = 198.51.100.(k+1)/24 (TEST-NET-2, RFC 5737),
 *                    a private tmpfs on /dev/shm (the node's shared memory)
 *   --inter-rate:    tbf on both ends of every node's veth (both directions)
 *
 * Each namespace is held by a "keeper" child that does nothing but hold it:
 * the namespaces are anonymous (never in /run/netns) and exist only while a
 * keeper, a rank inside, or a descriptor refers to them. Keepers die with
 * strata-run (PR_SET_PDEATHSIG), so even `kill -9` of strata-run takes the
 * namespaces, their interfaces, qdiscs and /dev/shm contents with it; the
 * root namespace is never changed. stb_netns_destroy() does the same on
 * purpose: kill, reap, close.
 *
 * Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2. Single-threaded
 * callers only (setns of a mount namespace requires it).
 */
#ifndef STB_RUN_NETNS_H
#define STB_RUN_NETNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/run/run_opts.h"
#include "strata/status.h"

#define STB_NETNS_SUBNET "198.51.100"
#define STB_NETNS_PREFIX_LEN 24
#define STB_NETNS_IFNAME "veth0"

typedef struct stb_netns {
    int nodes;
    int verbose;
    pid_t keeper[STB_RUN_MAX_NODES + 1];   /* [nodes] is the hub; 0: none */
    int net_fd[STB_RUN_MAX_NODES + 1];     /* O_CLOEXEC; -1: none */
    int mnt_fd[STB_RUN_MAX_NODES];
    uint64_t net_ino[STB_RUN_MAX_NODES + 1];
} stb_netns_t;

/* Marks every slot empty, so stb_netns_destroy is safe on a failed or skipped create. */
void stb_netns_init(stb_netns_t *ns);

/*
 * Creates nodes namespaces and the hub, links and (rate_bps > 0) shapes them.
 * STRATA_ERR_UNSUPPORTED when this process may not create namespaces (not root, a
 * container without the capability), STRATA_ERR_IO when a command failed; both logged
 * on stderr. On error the caller still calls stb_netns_destroy.
 */
strata_status_t stb_netns_create(stb_netns_t *ns, int nodes, const char *rate, uint64_t rate_bps,
                                 int verbose);

/* Kills and reaps the keepers, closes the descriptors. Idempotent. */
void stb_netns_destroy(stb_netns_t *ns);

/* Whether pid is one of the keepers (strata-run reaps every child in one place). */
int stb_netns_is_keeper(const stb_netns_t *ns, pid_t pid);

/* Forgets a keeper strata-run has reaped (it died: the run fails). */
void stb_netns_keeper_gone(stb_netns_t *ns, pid_t pid);

/* "198.51.100.(node+1)". */
void stb_netns_addr(int node, char *buf, size_t len);

/* A TCP socket listening on node's address, port 0, created inside its namespace. */
strata_status_t stb_netns_listen(const stb_netns_t *ns, int node, int *fd_p, char *addr,
                                 size_t len);

/*
 * In a freshly forked child: moves into node's network and mount namespaces and back to the
 * working directory cwd (setns to a mount namespace resets it). Logs on stderr on failure.
 */
strata_status_t stb_netns_enter(const stb_netns_t *ns, int node, const char *cwd);

#endif /* STB_RUN_NETNS_H */

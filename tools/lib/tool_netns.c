/* Emulated nodes in namespaces (see tool_netns.h). */
#define _GNU_SOURCE 1   /* setns, unshare */
#include "tools/lib/tool_netns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/lib/tool_proc.h"
#include "tools/lib/tool_util.h"
#include "util/sock.h"
#include "util/time.h"

/* An ip or tc command slower than this is stuck (they take milliseconds). */
#define NETNS_CMD_TIMEOUT_MS 20000
/* A keeper reports its namespaces within this. */
#define NETNS_READY_TIMEOUT_MS 10000
/* How long a killed keeper may take to be reaped. */
#define NETNS_REAP_TIMEOUT_MS 20000
#define NETNS_MAX_ARGS 32

void stb_netns_init(stb_netns_t *ns)
{
    memset(ns, 0, sizeof(*ns));
    for (int i = 0; i <= STB_NETNS_MAX_NODES; i++) {
        ns->net_fd[i] = -1;
        if (i < STB_NETNS_MAX_NODES)
            ns->mnt_fd[i] = -1;
    }
}

/* Rail r's /24, first three octets (tool_netns.h). */
static const char *const netns_rail_subnet[STB_NETNS_MAX_RAILS] = {
    STB_NETNS_SUBNET, "203.0.113", "198.18.0", "198.19.0",
};

void stb_netns_rail_addr(int node, int rail, char *buf, size_t len)
{
    if (rail < 0 || rail >= STB_NETNS_MAX_RAILS)
        rail = 0;
    snprintf(buf, len, "%s.%d", netns_rail_subnet[rail], node + 1);
}

void stb_netns_addr(int node, char *buf, size_t len)
{
    stb_netns_rail_addr(node, 0, buf, len);
}

void stb_netns_rail_ifname(int rail, char *buf, size_t len)
{
    snprintf(buf, len, "veth%d", rail);
}

/* The hub's port of node k on rail r: n<k> on rail 0 (as ever), n<k>r<r> on the others. */
static void netns_port_name(int k, int rail, char *buf, size_t len)
{
    if (rail == 0)
        snprintf(buf, len, "n%d", k);
    else
        snprintf(buf, len, "n%dr%d", k, rail);
}

/* The slot of a node (STB_NETNS_HUB: the hub's), or -1 when there is none. */
static int netns_slot(const stb_netns_t *ns, int node)
{
    if (node == STB_NETNS_HUB)
        return ns->keeper[ns->nodes] > 0 ? ns->nodes : -1;
    return node >= 0 && node < ns->nodes ? node : -1;
}

static int netns_cmd_setup(void *fd)
{
    if (setns(*(const int *)fd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "netns: setns: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* Runs argv inside namespace slot; OK when it exits 0. */
static strata_status_t netns_cmd(const stb_netns_t *ns, int slot, char *const argv[])
{
    char line[512] = "";
    int ws = 0;
    pid_t pid;

    for (int i = 0, at = 0; argv[i] != NULL && at < (int)sizeof(line) - 1; i++)
        at += snprintf(line + at, sizeof(line) - (size_t)at, "%s%s", i ? " " : "", argv[i]);
    if (ns->verbose)
        stb_log_err("%s %d: %s", slot == ns->nodes ? "hub" : "node", slot, line);
    stb_spawn_t s = {.argv = argv, .search_path = 1, .setup = netns_cmd_setup,
                     .setup_arg = (void *)&ns->net_fd[slot], .stdout_fd = STB_PROC_DEVNULL};
    strata_status_t status = stb_proc_spawn(&s, &pid);
    if (status != STRATA_OK)
        return status;
    status = stb_proc_wait(pid, stu_deadline_ms(NETNS_CMD_TIMEOUT_MS), &ws);
    if (status == STRATA_OK && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
        return STRATA_OK;
    if (status == STRATA_OK && WIFEXITED(ws) && WEXITSTATUS(ws) == STB_PROC_EXIT_EXEC) {
        stb_log_err("%s: not found (install iproute2)", argv[0]);
        return STRATA_ERR_UNSUPPORTED;
    }
    stb_log_err("'%s' failed in namespace %d (%s)", line, slot,
                status == STRATA_ERR_TIMEOUT ? "timed out" : "non-zero exit");
    return STRATA_ERR_IO;
}

typedef struct keeper_arg {
    int hub;
    int ready_fd;
} keeper_arg_t;

/* The keeper: makes its namespaces, says so, and holds them until killed. */
static int netns_keeper(void *arg)
{
    const keeper_arg_t *k = arg;
    int32_t code = 0;

    if (unshare(CLONE_NEWNET | (k->hub ? 0 : CLONE_NEWNS)) != 0)
        code = errno;
    /* private propagation first, or the tmpfs below would appear in the root namespace */
    else if (!k->hub && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        code = errno;
    else if (!k->hub && mount("strata-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                              "mode=1777") != 0)
        code = errno;
    /* A sysfs of this network namespace, as `ip netns exec` mounts: /sys/class/net then lists
     * the node's interfaces, which is where UCX (and anything else reading sysfs) looks for
     * devices; the root's sysfs would show the root's interfaces instead. */
    else if (!k->hub && mount("strata-sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                              NULL) != 0)
        code = errno;
    if (write(k->ready_fd, &code, sizeof(code)) != (ssize_t)sizeof(code) || code != 0)
        return 1;
    close(k->ready_fd);
    for (;;)
        pause();
}

/* Forks the keeper of slot and opens its namespaces. */
static strata_status_t netns_keeper_start(stb_netns_t *ns, int slot)
{
    const int hub = slot == ns->nodes;
    int pipefd[2];
    int32_t code = -1;
    char path[64];
    struct stat st;
    pid_t pid;

    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return STRATA_ERR_IO;
    keeper_arg_t k = {.hub = hub, .ready_fd = pipefd[1]};
    stb_spawn_t s = {.fn = netns_keeper, .arg = &k, .stdout_fd = STB_PROC_DEVNULL,
                     .stderr_fd = STB_PROC_DEVNULL, .close_fds = &pipefd[0], .nclose = 1};
    strata_status_t status = stb_proc_spawn(&s, &pid);
    close(pipefd[1]);
    if (status != STRATA_OK) {
        close(pipefd[0]);
        return status;
    }
    ns->keeper[slot] = pid;
    if (stu_fd_wait(pipefd[0], POLLIN, stu_deadline_ms(NETNS_READY_TIMEOUT_MS)) != STRATA_OK ||
        read(pipefd[0], &code, sizeof(code)) != (ssize_t)sizeof(code))
        code = -1;
    close(pipefd[0]);
    if (code != 0) {
        if (code == EPERM || code == EACCES || code == EINVAL || code == ENOSYS)
            stb_log_err("cannot create namespaces: %s (needs root, CAP_SYS_ADMIN and "
                        "CAP_NET_ADMIN)", strerror(code));
        else
            stb_log_err("namespace keeper %d failed: %s", slot,
                        code > 0 ? strerror(code) : "no answer");
        return code > 0 ? STRATA_ERR_UNSUPPORTED : STRATA_ERR_IO;
    }
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
    ns->net_fd[slot] = open(path, O_RDONLY | O_CLOEXEC);
    if (ns->net_fd[slot] < 0 || fstat(ns->net_fd[slot], &st) != 0)
        return STRATA_ERR_IO;
    ns->net_ino[slot] = (uint64_t)st.st_ino;
    if (!hub) {
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
        if ((ns->mnt_fd[slot] = open(path, O_RDONLY | O_CLOEXEC)) < 0)
            return STRATA_ERR_IO;
    }
    if (ns->verbose)
        stb_log_err("%s %d: keeper pid %d, netns net:[%llu]", hub ? "hub" : "node", slot,
                    (int)pid, (unsigned long long)ns->net_ino[slot]);
    return STRATA_OK;
}

/* Node k's link to the hub on rail r, and its address there. */
static strata_status_t netns_link(stb_netns_t *ns, int k, int rail)
{
    const int hub = ns->nodes;
    char port[32], hubns[64], cidr[32], addr[24], ifname[16], bridge[16];
    strata_status_t st;

    netns_port_name(k, rail, port, sizeof(port));
    stb_netns_rail_ifname(rail, ifname, sizeof(ifname));
    snprintf(bridge, sizeof(bridge), "br%d", rail);
    snprintf(hubns, sizeof(hubns), "/proc/%d/ns/net", (int)ns->keeper[hub]);
    stb_netns_rail_addr(k, rail, addr, sizeof(addr));
    snprintf(cidr, sizeof(cidr), "%s/%d", addr, STB_NETNS_PREFIX_LEN);
    char *add[] = {"ip", "link", "add", ifname, "type", "veth", "peer", "name", port,
                   "netns", hubns, NULL};
    char *master[] = {"ip", "link", "set", port, "master", bridge, "up", NULL};
    char *lo[] = {"ip", "link", "set", "lo", "up", NULL};
    char *ip[] = {"ip", "addr", "add", cidr, "dev", ifname, NULL};
    char *up[] = {"ip", "link", "set", ifname, "up", NULL};
    if ((st = netns_cmd(ns, k, add)) != STRATA_OK ||
        (st = netns_cmd(ns, hub, master)) != STRATA_OK ||
        (rail == 0 && (st = netns_cmd(ns, k, lo)) != STRATA_OK) ||
        (st = netns_cmd(ns, k, ip)) != STRATA_OK)
        return st;
    return netns_cmd(ns, k, up);
}

strata_status_t stb_netns_create(stb_netns_t *ns, int nodes, int verbose)
{
    return stb_netns_create_rails(ns, nodes, 1, verbose);
}

strata_status_t stb_netns_create_rails(stb_netns_t *ns, int nodes, int rails, int verbose)
{
    strata_status_t status;

    stb_netns_init(ns);
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer starts its background thread again in every forked child, and the
     * kernel refuses setns(CLONE_NEWNS) to a multi-threaded process (EINVAL): a node could
     * be made but never entered. Callers skip (the TSan pass, docs/reliability.md). */
    stb_log_err("netns: not under ThreadSanitizer (its forked children are multi-threaded,"
                " and setns(CLONE_NEWNS) refuses them)");
    return STRATA_ERR_UNSUPPORTED;
#endif
    if (nodes < 1 || nodes > STB_NETNS_MAX_NODES || rails < 1 || rails > STB_NETNS_MAX_RAILS) {
        stb_log_err("netns: %d nodes (1..%d), %d rails (1..%d)", nodes, STB_NETNS_MAX_NODES,
                    rails, STB_NETNS_MAX_RAILS);
        return STRATA_ERR_INVALID;
    }
    ns->nodes = nodes;
    ns->rails = rails;
    ns->verbose = verbose;
    if (geteuid() != 0) {
        stb_log_err("emulated nodes need root (network and mount namespaces, veth, tc)");
        return STRATA_ERR_UNSUPPORTED;
    }
    for (int slot = nodes; slot >= 0; slot--)     /* the hub first: the nodes link to it */
        if ((status = netns_keeper_start(ns, slot)) != STRATA_OK)
            return status;
    for (int r = 0; r < rails; r++) {
        char br[16];
        snprintf(br, sizeof(br), "br%d", r);
        char *bridge[] = {"ip", "link", "add", br, "type", "bridge", NULL};
        char *bridge_up[] = {"ip", "link", "set", br, "up", NULL};
        if ((status = netns_cmd(ns, nodes, bridge)) != STRATA_OK ||
            (status = netns_cmd(ns, nodes, bridge_up)) != STRATA_OK)
            return status;
        for (int k = 0; k < nodes; k++)
            if ((status = netns_link(ns, k, r)) != STRATA_OK)
                return status;
    }
    return STRATA_OK;
}

int stb_netns_is_keeper(const stb_netns_t *ns, pid_t pid)
{
    for (int i = 0; i <= ns->nodes && i <= STB_NETNS_MAX_NODES; i++)
        if (ns->keeper[i] == pid && pid > 0)
            return 1;
    return 0;
}

void stb_netns_keeper_gone(stb_netns_t *ns, pid_t pid)
{
    for (int i = 0; i <= ns->nodes && i <= STB_NETNS_MAX_NODES; i++)
        if (ns->keeper[i] == pid)
            ns->keeper[i] = 0;
}

void stb_netns_destroy(stb_netns_t *ns)
{
    for (int i = 0; i <= STB_NETNS_MAX_NODES; i++) {
        if (ns->keeper[i] > 0) {
            stb_proc_kill(ns->keeper[i], NULL);
            if (ns->verbose)
                stb_log_err("%s %d: keeper %d stopped", i == ns->nodes ? "hub" : "node", i,
                            (int)ns->keeper[i]);
            ns->keeper[i] = 0;
        }
        if (ns->net_fd[i] >= 0)
            close(ns->net_fd[i]);
        ns->net_fd[i] = -1;
        if (i < STB_NETNS_MAX_NODES && ns->mnt_fd[i] >= 0)
            close(ns->mnt_fd[i]);
        if (i < STB_NETNS_MAX_NODES)
            ns->mnt_fd[i] = -1;
    }
}

int stb_netns_ids(const stb_netns_t *ns, uint64_t *ids, int max)
{
    int n = 0;

    for (int i = 0; i <= ns->nodes && i <= STB_NETNS_MAX_NODES; i++)
        if (ns->net_ino[i] != 0 && n < max)
            ids[n++] = ns->net_ino[i];
    return n;
}

strata_status_t stb_netns_run(const stb_netns_t *ns, int node, char *const argv[])
{
    int slot = netns_slot(ns, node);

    if (slot < 0 || argv == NULL || argv[0] == NULL) {
        stb_log_err("netns run: no node %d", node);
        return STRATA_ERR_INVALID;
    }
    return netns_cmd(ns, slot, argv);
}

/* `tc qdisc replace dev IF root <spec words>`, or `tc qdisc del dev IF root`, in one end. */
static strata_status_t netns_shape_end(const stb_netns_t *ns, int slot, const char *ifname,
                                       const char *qdisc)
{
    char *argv[NETNS_MAX_ARGS], spec[256];
    int n = 0;

    argv[n++] = "tc";
    argv[n++] = "qdisc";
    argv[n++] = qdisc != NULL ? "replace" : "del";
    argv[n++] = "dev";
    argv[n++] = (char *)ifname;
    argv[n++] = "root";
    if (qdisc != NULL && (size_t)snprintf(spec, sizeof(spec), "%s", qdisc) >= sizeof(spec)) {
        stb_log_err("netns shape: qdisc spec longer than %zu bytes", sizeof(spec) - 1);
        return STRATA_ERR_INVALID;
    }
    char *save = NULL;
    for (char *w = qdisc != NULL ? strtok_r(spec, " \t", &save) : NULL; w != NULL;
         w = strtok_r(NULL, " \t", &save)) {
        if (n == NETNS_MAX_ARGS - 1) {
            stb_log_err("netns shape: too many words in '%s'", qdisc);
            return STRATA_ERR_INVALID;
        }
        argv[n++] = w;
    }
    argv[n] = NULL;
    return netns_cmd(ns, slot, argv);
}

strata_status_t stb_netns_shape(const stb_netns_t *ns, int node, const char *qdisc)
{
    return stb_netns_shape_rail(ns, node, 0, qdisc);
}

strata_status_t stb_netns_shape_rail(const stb_netns_t *ns, int node, int rail,
                                     const char *qdisc)
{
    char port[32], ifname[16];
    strata_status_t status;

    if (node < 0 || node >= ns->nodes || rail < 0 || rail >= ns->rails) {
        stb_log_err("netns shape: no node %d rail %d", node, rail);
        return STRATA_ERR_INVALID;
    }
    /* both ends: the node's egress (veth<r>) and its ingress (the hub's port egress) */
    netns_port_name(node, rail, port, sizeof(port));
    stb_netns_rail_ifname(rail, ifname, sizeof(ifname));
    if ((status = netns_shape_end(ns, node, ifname, qdisc)) != STRATA_OK)
        return status;
    return netns_shape_end(ns, ns->nodes, port, qdisc);
}

strata_status_t stb_netns_rail_link(const stb_netns_t *ns, int node, int rail, int up)
{
    char ifname[16];

    if (node < 0 || node >= ns->nodes || rail < 0 || rail >= ns->rails) {
        stb_log_err("netns link: no node %d rail %d", node, rail);
        return STRATA_ERR_INVALID;
    }
    stb_netns_rail_ifname(rail, ifname, sizeof(ifname));
    char *argv[] = {"ip", "link", "set", ifname, up ? "up" : "down", NULL};
    return netns_cmd(ns, node, argv);
}

strata_status_t stb_netns_listen(const stb_netns_t *ns, int node, int *fd_p, char *addr,
                                 size_t len)
{
    char text[64];
    stu_addr_t a, bound;
    strata_status_t status;
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

    if (self < 0)
        return STRATA_ERR_IO;
    if (node < 0 || node >= ns->nodes) {
        stb_log_err("netns listen: no node %d", node);
        close(self);
        return STRATA_ERR_INVALID;
    }
    stb_netns_addr(node, text, sizeof(text));
    if ((status = stu_addr_make(text, 0, &a)) != STRATA_OK) {
        close(self);
        return status;
    }
    if (setns(ns->net_fd[node], CLONE_NEWNET) != 0) {
        stb_log_err("setns into node %d: %s", node, strerror(errno));
        close(self);
        return STRATA_ERR_IO;
    }
    status = stu_sock_listen(&a, SOMAXCONN, fd_p, &bound);
    if (setns(self, CLONE_NEWNET) != 0) {
        /* every later command would run in the wrong namespace: stop here */
        stb_log_err("setns back to the original namespace: %s; aborting", strerror(errno));
        abort();
    }
    close(self);
    if (status == STRATA_OK)
        stu_addr_format(&bound, addr, len);
    return status;
}

strata_status_t stb_netns_enter(const stb_netns_t *ns, int node, const char *cwd)
{
    if (node < 0 || node >= ns->nodes || setns(ns->net_fd[node], CLONE_NEWNET) != 0 ||
        setns(ns->mnt_fd[node], CLONE_NEWNS) != 0) {
        fprintf(stderr, "netns: entering node %d's namespaces: %s\n", node, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (chdir(cwd != NULL ? cwd : "/") != 0) {
        fprintf(stderr, "netns: chdir %s in node %d: %s\n", cwd, node, strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

int stb_netns_setup(void *place)
{
    const stb_netns_place_t *p = place;
    return stb_netns_enter(p->ns, p->node, p->cwd) == STRATA_OK ? 0 : -1;
}

/* "net:[4026532281]" -> 4026532281; 0 when the link is something else. */
static uint64_t netns_link_id(const char *path)
{
    char target[64];
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    unsigned long long id = 0;

    if (n <= 0)
        return 0;
    target[n] = '\0';
    if (sscanf(target, "net:[%llu]", &id) != 1)
        return 0;
    return id;
}

/* Marks in held[] the ids that path (a /proc link) names. */
static void netns_mark(const char *path, const uint64_t *ids, int n, bool *held)
{
    uint64_t id = netns_link_id(path);

    for (int i = 0; id != 0 && i < n; i++)
        held[i] |= id == ids[i];
}

int stb_netns_count_held(const uint64_t *ids, int n)
{
    bool held[STB_NETNS_MAX_NODES + 1] = {false};
    struct dirent *e;
    char path[2 * sizeof(e->d_name) + 16];   /* /proc/<pid>/fd/<fd> */
    int count = 0;

    if (n < 0 || n > STB_NETNS_MAX_NODES + 1)
        return -1;
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        return -1;
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/ns/net", e->d_name);
        netns_mark(path, ids, n, held);
        snprintf(path, sizeof(path), "/proc/%s/fd", e->d_name);
        DIR *fds = opendir(path);
        if (fds == NULL)
            continue;                           /* the process just ended */
        for (struct dirent *f; (f = readdir(fds)) != NULL;) {
            if (f->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "/proc/%s/fd/%s", e->d_name, f->d_name);
            netns_mark(path, ids, n, held);
        }
        closedir(fds);
    }
    closedir(proc);
    for (int i = 0; i < n; i++)
        count += held[i];
    return count;
}

/*
 * Emulated nodes in namespaces (see run_netns.h). iproute2 does the
 * configuration: a forked child enters the target namespace and execs `ip` or
 * `tc`, so strata-run itself leaves its namespace only for the instant it
 * creates the rendezvous socket inside node 0.
 */
#define _GNU_SOURCE 1   /* setns, unshare */
#include "tools/run/run_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/sock.h"
#include "util/time.h"

/* An ip or tc command slower than this is stuck (they take milliseconds). */
#define NETNS_CMD_TIMEOUT_MS 20000
/* A keeper reports its namespaces within this. */
#define NETNS_READY_TIMEOUT_MS 10000
/* Poll period while waiting for a child. */
#define NETNS_POLL_NS 2000000L

static void netns_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void netns_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "strata-run: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

void stb_netns_init(stb_netns_t *ns)
{
    memset(ns, 0, sizeof(*ns));
    for (int i = 0; i <= STB_RUN_MAX_NODES; i++) {
        ns->net_fd[i] = -1;
        if (i < STB_RUN_MAX_NODES)
            ns->mnt_fd[i] = -1;
    }
}

void stb_netns_addr(int node, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%d", STB_NETNS_SUBNET, node + 1);
}

/* Waits up to timeout_ms for pid; kills it past that. Returns waitpid's status or -1. */
static int netns_wait(pid_t pid, int timeout_ms)
{
    uint64_t deadline = stu_time_ns() + (uint64_t)timeout_ms * 1000000ull;
    int wstatus;
    for (;;) {
        pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid)
            return wstatus;
        if (r < 0 && errno != EINTR)
            return -1;
        if (stu_time_ns() > deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        struct timespec ts = {0, NETNS_POLL_NS};
        nanosleep(&ts, NULL);
    }
}

/* Runs argv (NULL-terminated) inside namespace slot; OK when it exits 0. */
static strata_status_t netns_cmd(const stb_netns_t *ns, int slot, char *const argv[])
{
    if (ns->verbose) {
        char line[512];
        int at = 0;
        for (int i = 0; argv[i] != NULL && at < (int)sizeof(line); i++)
            at += snprintf(line + at, sizeof(line) - (size_t)at, " %s", argv[i]);
        netns_log("%s %d:%s", slot == ns->nodes ? "hub" : "node", slot, line);
    }
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        netns_log("fork: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        if (setns(ns->net_fd[slot], CLONE_NEWNET) != 0) {
            netns_log("setns: %s", strerror(errno));
            _exit(126);
        }
        execvp(argv[0], argv);
        netns_log("%s: %s (install iproute2)", argv[0], strerror(errno));
        _exit(127);
    }
    int wstatus = netns_wait(pid, NETNS_CMD_TIMEOUT_MS);
    if (wstatus < 0 || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        netns_log("'%s %s %s ...' failed in namespace %d", argv[0], argv[1],
                  argv[2] ? argv[2] : "", slot);
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

/* The keeper: makes its namespaces, says so, and holds them until killed. */
static void netns_keeper(int hub, int ready_fd, pid_t parent)
{
    int32_t code = 0;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);      /* strata-run died before the death signal was armed */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (unshare(CLONE_NEWNET | (hub ? 0 : CLONE_NEWNS)) != 0)
        code = errno;
    /* private propagation first, or the tmpfs below would appear in the root namespace */
    else if (!hub && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        code = errno;
    else if (!hub && mount("strata-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                           "mode=1777") != 0)
        code = errno;
    if (write(ready_fd, &code, sizeof(code)) != (ssize_t)sizeof(code))
        _exit(1);
    close(ready_fd);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
    }
    if (code != 0)
        _exit(1);
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

    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return STRATA_ERR_IO;
    fflush(NULL);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return STRATA_ERR_IO;
    }
    if (pid == 0) {
        close(pipefd[0]);
        netns_keeper(hub, pipefd[1], parent);
    }
    ns->keeper[slot] = pid;
    close(pipefd[1]);
    struct pollfd pfd = {pipefd[0], POLLIN, 0};
    if (poll(&pfd, 1, NETNS_READY_TIMEOUT_MS) == 1 &&
        read(pipefd[0], &code, sizeof(code)) != (ssize_t)sizeof(code))
        code = -1;
    close(pipefd[0]);
    if (code != 0) {
        if (code == EPERM || code == EACCES || code == EINVAL || code == ENOSYS)
            netns_log("cannot create namespaces: %s (--netns needs root, CAP_SYS_ADMIN and "
                      "CAP_NET_ADMIN)", strerror(code));
        else
            netns_log("namespace keeper %d failed: %s", slot,
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
        netns_log("%s %d: keeper pid %d, netns net:[%llu]", hub ? "hub" : "node", slot,
                  (int)pid, (unsigned long long)ns->net_ino[slot]);
    return STRATA_OK;
}

/* Node k's link to the hub, its address, and its shaping. */
static strata_status_t netns_link(stb_netns_t *ns, int k, const char *rate, uint64_t rate_bps)
{
    const int hub = ns->nodes;
    char port[16], hubns[64], cidr[32], addr[24], burst[32];
    strata_status_t st;

    snprintf(port, sizeof(port), "n%d", k);
    snprintf(hubns, sizeof(hubns), "/proc/%d/ns/net", (int)ns->keeper[hub]);
    stb_netns_addr(k, addr, sizeof(addr));
    snprintf(cidr, sizeof(cidr), "%s/%d", addr, STB_NETNS_PREFIX_LEN);
    char *add[] = {"ip", "link", "add", STB_NETNS_IFNAME, "type", "veth", "peer", "name", port,
                   "netns", hubns, NULL};
    char *master[] = {"ip", "link", "set", port, "master", "br0", "up", NULL};
    char *lo[] = {"ip", "link", "set", "lo", "up", NULL};
    char *ip[] = {"ip", "addr", "add", cidr, "dev", STB_NETNS_IFNAME, NULL};
    char *up[] = {"ip", "link", "set", STB_NETNS_IFNAME, "up", NULL};
    if ((st = netns_cmd(ns, k, add)) != STRATA_OK ||
        (st = netns_cmd(ns, hub, master)) != STRATA_OK ||
        (st = netns_cmd(ns, k, lo)) != STRATA_OK || (st = netns_cmd(ns, k, ip)) != STRATA_OK ||
        (st = netns_cmd(ns, k, up)) != STRATA_OK)
        return st;
    if (rate == NULL || rate_bps == 0)
        return STRATA_OK;
    /* both ends: the node's egress (veth0) and its ingress (the hub's port egress) */
    snprintf(burst, sizeof(burst), "%zu", stb_run_tbf_burst(rate_bps));
    char *shape_node[] = {"tc", "qdisc", "add", "dev", STB_NETNS_IFNAME, "root", "tbf", "rate",
                          (char *)rate, "burst", burst, "latency", "50ms", NULL};
    char *shape_hub[] = {"tc", "qdisc", "add", "dev", port, "root", "tbf", "rate", (char *)rate,
                         "burst", burst, "latency", "50ms", NULL};
    if ((st = netns_cmd(ns, k, shape_node)) != STRATA_OK)
        return st;
    return netns_cmd(ns, hub, shape_hub);
}

strata_status_t stb_netns_create(stb_netns_t *ns, int nodes, const char *rate, uint64_t rate_bps,
                                 int verbose)
{
    strata_status_t status;

    stb_netns_init(ns);
    ns->nodes = nodes;
    ns->verbose = verbose;
    if (geteuid() != 0) {
        netns_log("--netns needs root (network and mount namespaces, veth, tc): run it with "
                  "sudo, or leave out --netns to emulate nodes with STRATA_NODE_ID only");
        return STRATA_ERR_UNSUPPORTED;
    }
    for (int slot = nodes; slot >= 0; slot--)     /* the hub first: the nodes link to it */
        if ((status = netns_keeper_start(ns, slot)) != STRATA_OK)
            return status;
    char *bridge[] = {"ip", "link", "add", "br0", "type", "bridge", NULL};
    char *bridge_up[] = {"ip", "link", "set", "br0", "up", NULL};
    if ((status = netns_cmd(ns, nodes, bridge)) != STRATA_OK ||
        (status = netns_cmd(ns, nodes, bridge_up)) != STRATA_OK)
        return status;
    for (int k = 0; k < nodes; k++)
        if ((status = netns_link(ns, k, rate, rate_bps)) != STRATA_OK)
            return status;
    return STRATA_OK;
}

int stb_netns_is_keeper(const stb_netns_t *ns, pid_t pid)
{
    for (int i = 0; i <= ns->nodes && i <= STB_RUN_MAX_NODES; i++)
        if (ns->keeper[i] == pid && pid > 0)
            return 1;
    return 0;
}

void stb_netns_keeper_gone(stb_netns_t *ns, pid_t pid)
{
    for (int i = 0; i <= ns->nodes && i <= STB_RUN_MAX_NODES; i++)
        if (ns->keeper[i] == pid)
            ns->keeper[i] = 0;
}

void stb_netns_destroy(stb_netns_t *ns)
{
    for (int i = 0; i <= STB_RUN_MAX_NODES; i++) {
        if (ns->keeper[i] > 0) {
            kill(ns->keeper[i], SIGKILL);
            netns_wait(ns->keeper[i], NETNS_CMD_TIMEOUT_MS);
            if (ns->verbose)
                netns_log("%s %d: keeper %d stopped", i == ns->nodes ? "hub" : "node", i,
                          (int)ns->keeper[i]);
            ns->keeper[i] = 0;
        }
        if (ns->net_fd[i] >= 0)
            close(ns->net_fd[i]);
        ns->net_fd[i] = -1;
        if (i < STB_RUN_MAX_NODES && ns->mnt_fd[i] >= 0)
            close(ns->mnt_fd[i]);
        if (i < STB_RUN_MAX_NODES)
            ns->mnt_fd[i] = -1;
    }
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
    stb_netns_addr(node, text, sizeof(text));
    strncat(text, ":0", sizeof(text) - strlen(text) - 1);
    if ((status = stu_addr_parse(text, &a)) != STRATA_OK) {
        close(self);
        return status;
    }
    if (setns(ns->net_fd[node], CLONE_NEWNET) != 0) {
        netns_log("setns into node %d: %s", node, strerror(errno));
        close(self);
        return STRATA_ERR_IO;
    }
    status = stu_sock_listen(&a, SOMAXCONN, fd_p, &bound);
    if (setns(self, CLONE_NEWNET) != 0) {
        /* every later command would run in the wrong namespace: stop here */
        netns_log("setns back to the original namespace: %s; aborting", strerror(errno));
        abort();
    }
    close(self);
    if (status == STRATA_OK)
        stu_addr_format(&bound, addr, len);
    return status;
}

strata_status_t stb_netns_enter(const stb_netns_t *ns, int node, const char *cwd)
{
    if (setns(ns->net_fd[node], CLONE_NEWNET) != 0 || setns(ns->mnt_fd[node], CLONE_NEWNS) != 0) {
        netns_log("entering node %d's namespaces: %s", node, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (cwd != NULL && chdir(cwd) != 0) {
        netns_log("chdir %s in node %d: %s", cwd, node, strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

/*
 * Emulated nodes in network namespaces (see netns.h for the contract and the
 * cleanup guarantees). Interfaces and qdiscs are set up by running iproute2
 * inside each namespace: a forked child enters it with setns() and execs
 * `ip` or `tc`, so the test process never leaves its own namespace except for
 * the instant of unshare() that makes a new one.
 */
#define _GNU_SOURCE 1   /* unshare, setns */
#include "netns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/compiler.h"
#include "util/time.h"

#define NETNS_NAP_MS 5               /* polling interval while waiting for a child */
#define NETNS_CMD_TIMEOUT_MS 20000   /* an ip/tc command slower than this is stuck */
#define NETNS_MAX_ARGS 32
#define NETNS_EXIT_NO_EXEC 127       /* the shell's convention for "command not found" */
#define NETNS_EXIT_NO_SETNS 126

static void STU_PRINTF(1, 2) netns_log(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "netns %d: ", (int)getpid());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void netns_nap(void)
{
    poll(NULL, 0, NETNS_NAP_MS);
}

/* Makes one anonymous namespace and returns a descriptor that keeps it alive. */
static strata_status_t netns_new(int *fd_p, uint64_t *id_p)
{
    struct stat st;
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

    if (self < 0) {
        netns_log("open /proc/self/ns/net: %s", strerror(errno));
        return STRATA_ERR_UNSUPPORTED;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        int e = errno;
        close(self);
        netns_log("unshare(CLONE_NEWNET): %s", strerror(e));
        return e == EPERM || e == EINVAL || e == ENOSYS ? STRATA_ERR_UNSUPPORTED
                                                        : STRATA_ERR_IO;
    }
    int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int open_errno = errno;
    if (setns(self, CLONE_NEWNET) != 0) {
        /* This thread is stranded in the new namespace; every later test would lie. */
        netns_log("setns back to the original namespace: %s; aborting", strerror(errno));
        abort();
    }
    close(self);
    if (fd < 0 || fstat(fd, &st) != 0) {
        netns_log("opening the new namespace: %s", strerror(fd < 0 ? open_errno : errno));
        if (fd >= 0)
            close(fd);
        return STRATA_ERR_IO;
    }
    *fd_p = fd;
    *id_p = (uint64_t)st.st_ino;
    return STRATA_OK;
}

/* Waits for pid until deadline_ns (0: forever); kills it past the deadline. */
static strata_status_t netns_reap(pid_t pid, uint64_t deadline_ns, int *wstatus_p)
{
    int ws = 0;

    for (;;) {
        pid_t r = waitpid(pid, &ws, deadline_ns ? WNOHANG : 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            netns_log("waitpid(%d): %s", (int)pid, strerror(errno));
            return STRATA_ERR_IO;
        }
        if (deadline_ns && stu_time_ns() > deadline_ns) {
            kill(pid, SIGKILL);
            netns_reap(pid, 0, wstatus_p);
            return STRATA_ERR_TIMEOUT;
        }
        if (r == 0)
            netns_nap();
    }
    if (wstatus_p != NULL)
        *wstatus_p = ws;
    return STRATA_OK;
}

/* In a fresh child: die with the parent, enter the namespace (fd -1: stay). */
static void netns_child_enter(pid_t parent, int fd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(NETNS_EXIT_NO_SETNS);             /* the parent is already gone */
    if (fd >= 0 && setns(fd, CLONE_NEWNET) != 0) {
        netns_log("setns: %s", strerror(errno));
        _exit(NETNS_EXIT_NO_SETNS);
    }
}

static int netns_fd_of(const sts_netns_t *net, int node)
{
    return node < 0 ? net->hub_fd : net->node_fd[node];
}

/* Runs argv in namespace fd and waits for it. */
static strata_status_t netns_exec(int fd, const char *const *argv)
{
    pid_t parent = getpid();
    int ws = 0;

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        netns_log("fork: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    if (pid == 0) {
        netns_child_enter(parent, fd);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDOUT_FILENO);
        execvp(argv[0], (char *const *)argv);
        _exit(NETNS_EXIT_NO_EXEC);
    }
    strata_status_t status = netns_reap(pid, stu_time_ns() + NETNS_CMD_TIMEOUT_MS * 1000000ull,
                                        &ws);
    if (status == STRATA_OK && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
        return STRATA_OK;
    char line[256] = "";
    for (int i = 0, len = 0; argv[i] != NULL && len < (int)sizeof(line) - 1; i++)
        len += snprintf(line + len, sizeof(line) - (size_t)len, " %s", argv[i]);
    netns_log("'%s' failed (%s)", line + 1, status == STRATA_ERR_TIMEOUT ? "timed out" :
              WIFEXITED(ws) ? "non-zero exit" : "killed by a signal");
    if (status == STRATA_OK && WIFEXITED(ws) && WEXITSTATUS(ws) == NETNS_EXIT_NO_EXEC)
        return STRATA_ERR_UNSUPPORTED;          /* no iproute2 here */
    return status == STRATA_OK ? STRATA_ERR_IO : status;
}

/* netns_cmd(fd, "ip", "link", ..., NULL) */
static strata_status_t netns_cmd(int fd, ...)
{
    const char *argv[NETNS_MAX_ARGS];
    int n = 0;
    va_list ap;

    va_start(ap, fd);
    for (const char *a = va_arg(ap, const char *); a != NULL && n < NETNS_MAX_ARGS - 1;
         a = va_arg(ap, const char *))
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return netns_exec(fd, argv);
}

/* The path through which `ip ... netns PATH` reaches one of our descriptors. */
static void netns_fd_path(int fd, char *buf, size_t len)
{
    snprintf(buf, len, "/proc/%d/fd/%d", (int)getpid(), fd);
}

static strata_status_t netns_wire_pair(sts_netns_t *net)
{
    char peer[64];

    netns_fd_path(net->node_fd[1], peer, sizeof(peer));
    return netns_cmd(net->node_fd[0], "ip", "link", "add", STS_NETNS_IFNAME, "type", "veth",
                     "peer", "name", STS_NETNS_IFNAME, "netns", peer, (char *)NULL);
}

static strata_status_t netns_wire_bridge(sts_netns_t *net)
{
    strata_status_t status;

    status = netns_cmd(net->hub_fd, "ip", "link", "add", "br0", "type", "bridge",
                       (char *)NULL);
    if (status == STRATA_OK)
        status = netns_cmd(net->hub_fd, "ip", "link", "set", "br0", "up", (char *)NULL);
    for (int i = 0; i < net->nodes && status == STRATA_OK; i++) {
        char port[16], peer[64];
        snprintf(port, sizeof(port), "n%d", i);
        netns_fd_path(net->node_fd[i], peer, sizeof(peer));
        status = netns_cmd(net->hub_fd, "ip", "link", "add", port, "type", "veth", "peer",
                           "name", STS_NETNS_IFNAME, "netns", peer, (char *)NULL);
        if (status == STRATA_OK)
            status = netns_cmd(net->hub_fd, "ip", "link", "set", port, "master", "br0",
                               (char *)NULL);
        if (status == STRATA_OK)
            status = netns_cmd(net->hub_fd, "ip", "link", "set", port, "up", (char *)NULL);
    }
    return status;
}

static strata_status_t netns_node_up(sts_netns_t *net, int node)
{
    char addr[32], cidr[40];
    strata_status_t status;

    sts_netns_addr(net, node, addr, sizeof(addr));
    snprintf(cidr, sizeof(cidr), "%s/%d", addr, STS_NETNS_PREFIX_LEN);
    status = netns_cmd(net->node_fd[node], "ip", "link", "set", "lo", "up", (char *)NULL);
    if (status == STRATA_OK)
        status = netns_cmd(net->node_fd[node], "ip", "addr", "add", cidr, "dev",
                           STS_NETNS_IFNAME, (char *)NULL);
    if (status == STRATA_OK)
        status = netns_cmd(net->node_fd[node], "ip", "link", "set", STS_NETNS_IFNAME, "up",
                           (char *)NULL);
    return status;
}

strata_status_t sts_netns_create(int nodes, sts_netns_topo_t topo, sts_netns_t **net_p)
{
    strata_status_t status = STRATA_OK;

    if (topo == STS_NETNS_AUTO)
        topo = nodes == 2 ? STS_NETNS_PAIR : STS_NETNS_BRIDGE;
    if (net_p == NULL || nodes < 2 || nodes > STS_NETNS_MAX_NODES ||
        (topo == STS_NETNS_PAIR && nodes != 2) || topo > STS_NETNS_BRIDGE) {
        netns_log("create: bad arguments (%d nodes, topology %d)", nodes, (int)topo);
        return STRATA_ERR_INVALID;
    }
    sts_netns_t *net = calloc(1, sizeof(*net));
    if (net == NULL)
        return STRATA_ERR_NO_MEMORY;
    net->nodes = nodes;
    net->topo = topo;
    net->hub_fd = -1;
    for (int i = 0; i < STS_NETNS_MAX_NODES; i++)
        net->node_fd[i] = -1;
    for (int k = 0; k < STS_NETNS_MAX_KIDS; k++)
        net->kids[k].ctl = -1;

    if (topo == STS_NETNS_BRIDGE)
        status = netns_new(&net->hub_fd, &net->ns_ids[net->nids++]);
    for (int i = 0; i < nodes && status == STRATA_OK; i++)
        status = netns_new(&net->node_fd[i], &net->ns_ids[net->nids++]);
    if (status == STRATA_OK)
        status = topo == STS_NETNS_PAIR ? netns_wire_pair(net) : netns_wire_bridge(net);
    for (int i = 0; i < nodes && status == STRATA_OK; i++)
        status = netns_node_up(net, i);
    if (status != STRATA_OK) {
        if (status == STRATA_ERR_INVALID || status == STRATA_ERR_TIMEOUT)
            status = STRATA_ERR_IO;
        sts_netns_destroy(net);
        return status;
    }
    *net_p = net;
    return STRATA_OK;
}

void sts_netns_destroy(sts_netns_t *net)
{
    if (net == NULL)
        return;
    for (int k = 0; k < STS_NETNS_MAX_KIDS; k++) {
        sts_netns_kid_t *kid = &net->kids[k];
        if (kid->pid > 0) {
            kill(kid->pid, SIGKILL);
            netns_reap(kid->pid, 0, NULL);
        }
        if (kid->ctl >= 0)
            close(kid->ctl);
    }
    /* The last reference to each namespace: the kernel tears down its interfaces. */
    for (int i = 0; i < STS_NETNS_MAX_NODES; i++)
        if (net->node_fd[i] >= 0)
            close(net->node_fd[i]);
    if (net->hub_fd >= 0)
        close(net->hub_fd);
    free(net);
}

void sts_netns_addr(const sts_netns_t *net, int node, char *buf, size_t len)
{
    snprintf(buf, len, "%s.%d", STS_NETNS_SUBNET, node + 1);
}

strata_status_t sts_netns_run(sts_netns_t *net, int node, const char *const *argv)
{
    if (net == NULL || argv == NULL || argv[0] == NULL || node >= net->nodes ||
        (node < 0 && (node != -1 || net->hub_fd < 0))) {
        netns_log("run: bad arguments (node %d)", node);
        return STRATA_ERR_INVALID;
    }
    return netns_exec(netns_fd_of(net, node), argv);
}

/* `tc qdisc replace dev IF root <spec words>` or `tc qdisc del dev IF root` in one end. */
static strata_status_t netns_shape_end(int fd, const char *ifname, const char *qdisc)
{
    const char *argv[NETNS_MAX_ARGS];
    char spec[256];
    int n = 0;

    if (qdisc == NULL) {
        return netns_cmd(fd, "tc", "qdisc", "del", "dev", ifname, "root", (char *)NULL);
    }
    if (strlen(qdisc) >= sizeof(spec)) {
        netns_log("shape: qdisc spec longer than %zu bytes", sizeof(spec) - 1);
        return STRATA_ERR_INVALID;
    }
    snprintf(spec, sizeof(spec), "%s", qdisc);
    argv[n++] = "tc";
    argv[n++] = "qdisc";
    argv[n++] = "replace";
    argv[n++] = "dev";
    argv[n++] = ifname;
    argv[n++] = "root";
    char *save = NULL;
    for (char *w = strtok_r(spec, " \t", &save); w != NULL; w = strtok_r(NULL, " \t", &save)) {
        if (n == NETNS_MAX_ARGS - 1) {
            netns_log("shape: more than %d words in '%s'", NETNS_MAX_ARGS - 8, qdisc);
            return STRATA_ERR_INVALID;
        }
        argv[n++] = w;
    }
    argv[n] = NULL;
    return netns_exec(fd, argv);
}

strata_status_t sts_netns_shape(sts_netns_t *net, int node, const char *qdisc)
{
    strata_status_t status;

    if (net == NULL || node < 0 || node >= net->nodes) {
        netns_log("shape: bad node %d", node);
        return STRATA_ERR_INVALID;
    }
    status = netns_shape_end(net->node_fd[node], STS_NETNS_IFNAME, qdisc);
    if (status != STRATA_OK)
        return status;
    if (net->topo == STS_NETNS_PAIR)
        return netns_shape_end(net->node_fd[1 - node], STS_NETNS_IFNAME, qdisc);
    char port[16];
    snprintf(port, sizeof(port), "n%d", node);
    return netns_shape_end(net->hub_fd, port, qdisc);
}

strata_status_t sts_netns_spawn(sts_netns_t *net, int node, int (*fn)(void *arg, int ctl),
                                void *arg, pid_t *pid_p, int *ctl_p)
{
    sts_netns_kid_t *kid = NULL;
    int sv[2];

    if (net == NULL || fn == NULL || node < 0 || node >= net->nodes) {
        netns_log("spawn: bad arguments (node %d)", node);
        return STRATA_ERR_INVALID;
    }
    for (int k = 0; k < STS_NETNS_MAX_KIDS && kid == NULL; k++)
        if (net->kids[k].pid == 0)
            kid = &net->kids[k];
    if (kid == NULL) {
        netns_log("spawn: more than %d children", STS_NETNS_MAX_KIDS);
        return STRATA_ERR_NO_RESOURCE;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        netns_log("socketpair: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        netns_log("fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return STRATA_ERR_IO;
    }
    if (pid == 0) {
        netns_child_enter(parent, net->node_fd[node]);
        /* A test runner's crash handlers (cmocka longjmps back into its loop) must not
         * turn a crashing child into a second copy of the test run. */
        static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGABRT};
        for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
            signal(crash_signals[i], SIG_DFL);
        close(sv[0]);
        /* Siblings' channels are not ours: holding them would hide their EOFs. */
        for (int k = 0; k < STS_NETNS_MAX_KIDS; k++)
            if (net->kids[k].ctl >= 0)
                close(net->kids[k].ctl);
        int rc = fn(arg, sv[1]);
        fflush(NULL);
        _exit(rc & 0xff);
    }
    close(sv[1]);
    kid->pid = pid;
    kid->ctl = sv[0];
    kid->node = node;
    if (pid_p != NULL)
        *pid_p = pid;
    if (ctl_p != NULL)
        *ctl_p = sv[0];
    return STRATA_OK;
}

strata_status_t sts_netns_wait(sts_netns_t *net, pid_t pid, int timeout_ms, int *wstatus_p)
{
    sts_netns_kid_t *kid = NULL;

    for (int k = 0; net != NULL && k < STS_NETNS_MAX_KIDS && kid == NULL; k++)
        if (pid > 0 && net->kids[k].pid == pid)
            kid = &net->kids[k];
    if (kid == NULL) {
        netns_log("wait: %d is not a child of this sts_netns_t", (int)pid);
        return STRATA_ERR_INVALID;
    }
    uint64_t deadline = stu_time_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
    strata_status_t status = netns_reap(pid, deadline, wstatus_p);
    if (status == STRATA_ERR_TIMEOUT)
        netns_log("child %d (node %d) still running after %d ms: killed", (int)pid, kid->node,
                  timeout_ms);
    close(kid->ctl);
    kid->ctl = -1;
    kid->pid = 0;
    return status;
}

bool sts_netns_exit_ok(int wstatus)
{
    return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

/* Waits for events on fd until deadline_ns. */
static strata_status_t netns_fd_wait(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        uint64_t now = stu_time_ns();
        if (now >= deadline_ns)
            return STRATA_ERR_TIMEOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int ms = (int)((deadline_ns - now + 999999) / 1000000);
        int r = poll(&p, 1, ms);
        if (r > 0)
            return STRATA_OK;
        if (r < 0 && errno != EINTR)
            return STRATA_ERR_IO;
    }
}

strata_status_t sts_netns_msg_send(int fd, const void *buf, size_t len, int timeout_ms)
{
    uint64_t deadline = stu_time_ns() + (uint64_t)timeout_ms * 1000000ull;
    size_t done = 0;

    while (done < len) {
        strata_status_t status = netns_fd_wait(fd, POLLOUT, deadline);
        if (status != STRATA_OK)
            return status;
        ssize_t r = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0)
            done += (size_t)r;
        else if (r < 0 && errno != EAGAIN && errno != EINTR)
            return errno == EPIPE || errno == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    return STRATA_OK;
}

strata_status_t sts_netns_msg_recv(int fd, void *buf, size_t len, int timeout_ms)
{
    uint64_t deadline = stu_time_ns() + (uint64_t)timeout_ms * 1000000ull;
    size_t done = 0;

    while (done < len) {
        strata_status_t status = netns_fd_wait(fd, POLLIN, deadline);
        if (status != STRATA_OK)
            return status;
        ssize_t r = recv(fd, (char *)buf + done, len - done, MSG_DONTWAIT);
        if (r > 0)
            done += (size_t)r;
        else if (r == 0)
            return STRATA_ERR_REMOTE;            /* the other side is gone */
        else if (errno != EAGAIN && errno != EINTR)
            return errno == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    return STRATA_OK;
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

int sts_netns_count_held(const uint64_t *ns_ids, int n)
{
    DIR *proc;
    struct dirent *e;
    char path[2 * sizeof(e->d_name) + 16];   /* /proc/<pid>/fd/<fd> */
    bool held[STS_NETNS_MAX_NODES + 1] = {false};
    int count = 0;

    if (n < 0 || n > STS_NETNS_MAX_NODES + 1)
        return -1;
    proc = opendir("/proc");
    if (proc == NULL)
        return -1;
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/ns/net", e->d_name);
        uint64_t id = netns_link_id(path);
        for (int i = 0; id != 0 && i < n; i++)
            held[i] |= id == ns_ids[i];
        snprintf(path, sizeof(path), "/proc/%s/fd", e->d_name);
        DIR *fds = opendir(path);
        if (fds == NULL)
            continue;                           /* the process just ended */
        struct dirent *f;
        while ((f = readdir(fds)) != NULL) {
            if (f->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "/proc/%s/fd/%s", e->d_name, f->d_name);
            id = netns_link_id(path);
            for (int i = 0; id != 0 && i < n; i++)
                held[i] |= id == ns_ids[i];
        }
        closedir(fds);
    }
    closedir(proc);
    for (int i = 0; i < n; i++)
        count += held[i];
    return count;
}

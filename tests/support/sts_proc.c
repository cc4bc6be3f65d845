/* Peer processes and their control socket. */
#define _GNU_SOURCE
#include "sts_proc.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sts_util.h"
#include "tools/lib/tool_proc.h"
#include "util/sock.h"

#define STS_PEER_ARGS 16
/* Bound on sending one control message: the socket buffer holds many, so only a peer that
 * stopped reading for this long makes it fail. */
#define STS_CTL_SEND_S 30.0

/*
 * Peers spawned and not yet reaped, by value: a test that fails half-way
 * loses its sts_peer_t (a stack variable), but sts_peer_kill_all must still
 * find the process and its control socket.
 */
static struct {
    pid_t pid;
    int fd;
} peer_live[STS_PEER_MAX];

static void peer_track(pid_t pid, int fd)
{
    for (int i = 0; i < STS_PEER_MAX; i++) {
        if (peer_live[i].pid == 0) {
            peer_live[i].pid = pid;
            peer_live[i].fd = fd;
            return;
        }
    }
}

static void peer_untrack(pid_t pid)
{
    for (int i = 0; i < STS_PEER_MAX; i++)
        if (peer_live[i].pid == pid)
            peer_live[i].pid = 0;
}

static void peer_reaped(sts_peer_t *peer, int wstatus)
{
    peer_untrack(peer->pid);
    peer->status = stb_proc_exit_code(wstatus);
    peer->pid = 0;
    if (peer->fd >= 0)
        close(peer->fd);
    peer->fd = -1;
}

/* Starts the child of s with a control socketpair; the child's end is sv[1]. */
static int peer_start(sts_peer_t *peer, stb_spawn_t *s, int sv[2])
{
    int others[STS_PEER_MAX], n = 0;
    pid_t pid;

    for (int i = 0; i < STS_PEER_MAX; i++)
        if (peer_live[i].pid != 0)
            others[n++] = peer_live[i].fd;
    others[n++] = sv[0];
    s->close_fds = others;
    s->nclose = n;
    if (stb_proc_spawn(s, &pid) != STRATA_OK) {
        close(sv[0]);
        close(sv[1]);
        errno = EAGAIN;
        return -1;
    }
    close(sv[1]);
    peer->pid = pid;
    peer->fd = sv[0];
    peer_track(pid, sv[0]);
    return 0;
}

int sts_peer_spawn(sts_peer_t *peer, const char *prog, const char *const *args)
{
    const char *argv[STS_PEER_ARGS + 3];
    char fdtext[16];
    int sv[2], n = 0;

    memset(peer, 0, sizeof(*peer));
    peer->fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    snprintf(fdtext, sizeof(fdtext), "%d", sv[1]);
    argv[n++] = prog;
    argv[n++] = fdtext;
    for (int i = 0; args != NULL && args[i] != NULL && i < STS_PEER_ARGS; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    stb_spawn_t s = {.argv = (char *const *)argv, .keep = {sv[1]}, .nkeep = 1};
    return peer_start(peer, &s, sv);
}

typedef struct peer_fn {
    int (*fn)(void *arg, int ctl);
    void *arg;
    int ctl;
} peer_fn_t;

static int peer_fn_run(void *arg)
{
    const peer_fn_t *f = arg;
    return f->fn(f->arg, f->ctl);
}

int sts_peer_fork(sts_peer_t *peer, const stb_netns_t *ns, int node,
                  int (*fn)(void *arg, int ctl), void *arg)
{
    int sv[2];

    memset(peer, 0, sizeof(*peer));
    peer->fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    peer_fn_t f = {.fn = fn, .arg = arg, .ctl = sv[1]};
    stb_netns_place_t place = {.ns = ns, .node = node, .cwd = NULL};
    stb_spawn_t s = {.fn = peer_fn_run, .arg = &f};
    if (ns != NULL) {
        s.setup = stb_netns_setup;
        s.setup_arg = &place;
    }
    return peer_start(peer, &s, sv);
}

int sts_peer_exited(sts_peer_t *peer)
{
    int wstatus;

    if (peer->pid == 0)
        return 1;
    if (stb_proc_reap(peer->pid, &wstatus) == 1) {
        peer_reaped(peer, wstatus);
        return 1;
    }
    return 0;
}

int sts_peer_wait(sts_peer_t *peer, uint64_t deadline)
{
    int wstatus = 0;

    if (peer->pid == 0)
        return peer->status;
    strata_status_t status = stb_proc_wait(peer->pid, deadline, &wstatus);
    peer_reaped(peer, wstatus);
    return status == STRATA_OK ? peer->status : -1;
}

void sts_peer_kill(sts_peer_t *peer)
{
    int wstatus = 0;

    if (peer->pid == 0)
        return;
    stb_proc_kill(peer->pid, &wstatus);
    peer_reaped(peer, wstatus);
}

int sts_peer_kill_all(void)
{
    int n = 0;

    for (int i = 0; i < STS_PEER_MAX; i++) {
        sts_peer_t peer = {.pid = peer_live[i].pid, .fd = peer_live[i].fd};
        if (peer.pid != 0) {
            sts_peer_kill(&peer);
            n++;
        }
    }
    return n;
}

/* ------------------------------------------------------------------ control messages */

typedef struct ctl_hdr {
    uint32_t kind;
    uint32_t len;
} ctl_hdr_t;

/* Whole-buffer receive: 0, -1 on EOF or error, -2 at the deadline. */
static int read_full(int fd, void *buf, size_t len, uint64_t deadline)
{
    strata_status_t status = stu_sock_recv_all(fd, buf, len, deadline);
    return status == STRATA_OK ? 0 : status == STRATA_ERR_TIMEOUT ? -2 : -1;
}

int sts_ctl_send(int fd, uint32_t kind, const void *data, uint32_t len)
{
    ctl_hdr_t hdr = {.kind = kind, .len = len};
    char buf[sizeof(hdr) + STS_CTL_MAX];
    size_t total = sizeof(hdr) + len;

    if (len > STS_CTL_MAX)
        return -1;
    memcpy(buf, &hdr, sizeof(hdr));
    if (len > 0)
        memcpy(buf + sizeof(hdr), data, len);
    return stu_sock_send_all(fd, buf, total, sts_deadline(STS_CTL_SEND_S)) == STRATA_OK ? 0 : -1;
}

int sts_ctl_recv(int fd, uint32_t *kind_p, void *data, uint32_t cap, uint32_t *len_p,
                 uint64_t deadline)
{
    char sink[STS_CTL_MAX];
    ctl_hdr_t hdr;
    int r;

    r = read_full(fd, &hdr, sizeof(hdr), deadline);
    if (r != 0)
        return r;
    if (hdr.len > STS_CTL_MAX)
        return -1;
    r = read_full(fd, sink, hdr.len, deadline);
    if (r != 0)
        return r;
    if (hdr.len > 0 && cap > 0)
        memcpy(data, sink, hdr.len < cap ? hdr.len : cap);
    *kind_p = hdr.kind;
    *len_p = hdr.len;
    return 0;
}

int sts_ctl_expect(int fd, uint32_t kind, void *data, uint32_t len, uint64_t deadline)
{
    uint32_t k, l;
    if (sts_ctl_recv(fd, &k, data, len, &l, deadline) != 0 || k != kind || l != len)
        return -1;
    return 0;
}

int sts_ctl_pending(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

int sts_ctl_result(int fd, int32_t status, const char *fmt, ...)
{
    char buf[STS_CTL_MAX];
    va_list ap;

    memcpy(buf, &status, sizeof(status));
    va_start(ap, fmt);
    int n = vsnprintf(buf + sizeof(status), sizeof(buf) - sizeof(status), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    size_t room = sizeof(buf) - sizeof(status);
    size_t len = sizeof(status) + ((size_t)n + 1 < room ? (size_t)n + 1 : room);
    return sts_ctl_send(fd, STS_CTL_RESULT, buf, (uint32_t)len);
}

int32_t sts_ctl_wait_result(int fd, char *msg, size_t cap, uint64_t deadline)
{
    char buf[STS_CTL_MAX + 1];
    uint32_t kind, len;
    int32_t status;

    for (;;) {
        int r = sts_ctl_recv(fd, &kind, buf, STS_CTL_MAX, &len, deadline);
        if (r != 0) {
            snprintf(msg, cap, "%s", r == -2 ? "no result before the deadline"
                                             : "control socket closed without a result");
            return -1000;
        }
        if (kind != STS_CTL_RESULT || len < sizeof(status))
            continue;
        buf[len] = '\0';
        memcpy(&status, buf, sizeof(status));
        snprintf(msg, cap, "%s", buf + sizeof(status));
        return status;
    }
}

int sts_root_child(int ctl, int node, int rank, int backlog, uint64_t deadline, char *root,
                   size_t len, int *lfd_p)
{
    char addr[64];
    stu_addr_t mine, bound;

    *lfd_p = -1;
    if (rank != 0)
        return stu_sock_recv_all(ctl, root, len, deadline) == STRATA_OK ? 0 : 12;
    stb_netns_addr(node, addr, sizeof(addr));
    if (stu_addr_make(addr, 0, &mine) != STRATA_OK ||
        stu_sock_listen(&mine, backlog, lfd_p, &bound) != STRATA_OK)
        return 10;
    memset(root, 0, len);
    stu_addr_format(&bound, root, len);
    return stu_sock_send_all(ctl, root, len, deadline) == STRATA_OK ? 0 : 11;
}

int sts_root_relay(const sts_peer_t *peers, int n, uint64_t deadline)
{
    char root[STU_ADDR_TEXT_LEN];

    if (stu_sock_recv_all(peers[0].fd, root, sizeof(root), deadline) != STRATA_OK)
        return -1;
    for (int r = 1; r < n; r++)
        if (stu_sock_send_all(peers[r].fd, root, sizeof(root), deadline) != STRATA_OK)
            return -1;
    return 0;
}

int sts_root_wait_all(sts_peer_t *peers, int n, uint64_t deadline)
{
    int failed = 0;

    for (int r = 0; r < n; r++) {
        int code = sts_peer_wait(&peers[r], deadline);
        if (code != 0) {
            fprintf(stderr, "rank %d: exit status %d\n", r, code);
            failed++;
        }
    }
    return failed;
}

/* Peer processes and their control socket. */
#define _GNU_SOURCE
#include "sts_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sts_util.h"

#define STS_PEER_ARGS 16

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

static int decode_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 255;
}

static void peer_reaped(sts_peer_t *peer, int wstatus)
{
    peer_untrack(peer->pid);
    peer->status = decode_status(wstatus);
    peer->pid = 0;
    if (peer->fd >= 0)
        close(peer->fd);
    peer->fd = -1;
}

int sts_peer_spawn(sts_peer_t *peer, const char *prog, const char *const *args)
{
    const char *argv[STS_PEER_ARGS + 3];
    char fdtext[16];
    int sv[2], n = 0;
    pid_t parent = getpid(), pid;

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

    fflush(NULL); /* or buffered test output is printed twice */
    pid = fork();
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls until exec. */
        close(sv[0]);
        if (fcntl(sv[1], F_SETFD, 0) != 0)
            _exit(126);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        execv(prog, (char *const *)argv);
        _exit(127);
    }
    close(sv[1]);
    peer->pid = pid;
    peer->fd = sv[0];
    peer_track(pid, sv[0]);
    return 0;
}

int sts_peer_exited(sts_peer_t *peer)
{
    int wstatus;

    if (peer->pid == 0)
        return 1;
    if (waitpid(peer->pid, &wstatus, WNOHANG) == peer->pid) {
        peer_reaped(peer, wstatus);
        return 1;
    }
    return 0;
}

int sts_peer_wait(sts_peer_t *peer, uint64_t deadline)
{
    const struct timespec nap = {0, 2 * 1000 * 1000};

    while (peer->pid != 0) {
        if (sts_peer_exited(peer))
            break;
        if (sts_expired(deadline)) {
            sts_peer_kill(peer);
            return -1;
        }
        nanosleep(&nap, NULL);
    }
    return peer->status;
}

void sts_peer_kill(sts_peer_t *peer)
{
    int wstatus;

    if (peer->pid == 0)
        return;
    kill(peer->pid, SIGKILL);
    while (waitpid(peer->pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
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

static int wait_readable(int fd, uint64_t deadline)
{
    for (;;) {
        uint64_t now = sts_now_ns();
        int ms = now >= deadline ? 0 : (int)((deadline - now) / 1000000 + 1);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, ms > 1000 ? 1000 : ms);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (r == 0 && sts_expired(deadline))
            return -2;
    }
}

static int read_full(int fd, void *buf, size_t len, uint64_t deadline)
{
    char *p = buf;
    while (len > 0) {
        int w = wait_readable(fd, deadline);
        if (w != 0)
            return w;
        ssize_t r = read(fd, p, len);
        if (r == 0)
            return -1;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

int sts_ctl_send(int fd, uint32_t kind, const void *data, uint32_t len)
{
    ctl_hdr_t hdr = {.kind = kind, .len = len};
    char buf[sizeof(hdr) + STS_CTL_MAX];
    size_t total = sizeof(hdr) + len, off = 0;

    if (len > STS_CTL_MAX)
        return -1;
    memcpy(buf, &hdr, sizeof(hdr));
    if (len > 0)
        memcpy(buf + sizeof(hdr), data, len);
    while (off < total) {
        ssize_t w = send(fd, buf + off, total - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
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

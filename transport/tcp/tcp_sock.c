/*
 * Socket options only the TCP transport sets: buffer sizes before connect or
 * listen, and NODELAY, keepalive and the user timeout on connected sockets.
 * (Opening, connecting and accepting: base/sock.h; addresses: base/netif.h.)
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/sock.h"
#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/param.h"

/*
 * Keepalive probes: the first after a third of the user timeout idle, then
 * every third, so that TCP_USER_TIMEOUT (which bounds keepalive too) expires
 * after about three unanswered probes.
 */
#define TCP_KEEPALIVE_PROBES 3

strata_status_t stt_tcp_sock_open(int family, int *fd_p)
{
    int fd;
    strata_status_t status = stt_sock_open("tcp", family, &fd);

    if (status != STRATA_OK)
        return status;
    int64_t bufsize = stu_param_int(STU_PARAM_SOCKET_BUFSIZE);
    if (bufsize > 0) {
        /* The kernel doubles and caps the value; too large is not an error. */
        int v = bufsize > INT32_MAX / 2 ? INT32_MAX / 2 : (int)bufsize;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) != 0)
            STU_INFO(STU_LOG_NET, "tcp: SO_SNDBUF/SO_RCVBUF %d: %s (ignored)", v,
                     strerror(errno));
    }
    *fd_p = fd;
    return STRATA_OK;
}

static strata_status_t sock_setopt(int fd, int level, int name, int value, const char *what,
                                   const char *peer)
{
    if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
        STU_WARN("tcp: setsockopt %s=%d on the socket to %s: %s", what, value, peer,
                 strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

strata_status_t stt_tcp_sock_tune(int fd, const char *peer)
{
    strata_status_t status;
    int64_t timeout_ms = stu_param_int(STU_PARAM_SOCKET_USER_TIMEOUT);

    status = sock_setopt(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY", peer);
    if (status != STRATA_OK)
        return status;
    if (timeout_ms <= 0)
        return STRATA_OK;    /* 0 or less: keep the kernel's defaults (minutes) */
    if (timeout_ms > INT32_MAX)
        timeout_ms = INT32_MAX;
    int probe_s = (int)(timeout_ms / 1000 / TCP_KEEPALIVE_PROBES);
    if (probe_s < 1)
        probe_s = 1;
    status = sock_setopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE", peer);
    if (status == STRATA_OK)
        status = sock_setopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, probe_s, "TCP_KEEPIDLE", peer);
    if (status == STRATA_OK)
        status = sock_setopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, probe_s, "TCP_KEEPINTVL", peer);
    if (status == STRATA_OK)
        status = sock_setopt(fd, IPPROTO_TCP, TCP_KEEPCNT, TCP_KEEPALIVE_PROBES,
                             "TCP_KEEPCNT", peer);
    if (status == STRATA_OK)
        status = sock_setopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)timeout_ms,
                             "TCP_USER_TIMEOUT", peer);
    return status;
}

/* Non-blocking socket steps of connection setup shared by tcp, ucx and ib (sock.h). */
#define _GNU_SOURCE 1   /* accept4 */
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/base/sock.h"
#include "util/log.h"

strata_status_t stt_sock_errno_status(int err)
{
    switch (err) {
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EPIPE:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
        return STRATA_ERR_REMOTE;
    default:
        return STRATA_ERR_IO;
    }
}

strata_status_t stt_sock_open(const char *who, int family, int *fd_p)
{
    int one = 1;
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);

    if (fd < 0) {
        STU_WARN("%s: socket(family %d): %s", who, family, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        STU_INFO(STU_LOG_NET, "%s: TCP_NODELAY: %s (ignored)", who, strerror(errno));
    *fd_p = fd;
    return STRATA_OK;
}

strata_status_t stt_sock_listen(const char *who, int fd, const stt_netif_addr_t *addr,
                                stt_netif_addr_t *bound_p)
{
    stt_netif_addr_t bound;
    socklen_t len = sizeof(bound);
    char text[STT_NETIF_ADDR_STRLEN];

    if (bind(fd, &addr->sa, stt_netif_addr_len(addr)) == 0 && listen(fd, SOMAXCONN) == 0 &&
        getsockname(fd, &bound.sa, &len) == 0) {
        *bound_p = bound;
        return STRATA_OK;
    }
    stt_netif_addr_format(addr, text, sizeof(text));
    STU_WARN("%s: listening on %s: %s", who, text, strerror(errno));
    return STRATA_ERR_IO;
}

int stt_sock_accept(const char *who, int lfd, const char *local, stt_netif_addr_t *addr_p)
{
    for (;;) {
        socklen_t len = sizeof(*addr_p);
        int fd = accept4(lfd, &addr_p->sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno == EINTR || errno == ECONNABORTED)
            continue;                    /* a connection that went before we took it */
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            STU_WARN("%s: accept on %s: %s", who, local, strerror(errno));
        return -1;
    }
}

strata_status_t stt_sock_connect(const char *who, int fd, const stt_netif_addr_t *addr,
                                 const char *peer)
{
    if (connect(fd, &addr->sa, stt_netif_addr_len(addr)) == 0 || errno == EINPROGRESS ||
        errno == EINTR)
        return STRATA_OK;
    int err = errno;
    STU_WARN("%s: connecting to %s: %s", who, peer, strerror(err));
    return stt_sock_errno_status(err);
}

strata_status_t stt_sock_connected(const char *who, int fd, const char *peer)
{
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof(err);

    if (poll(&pfd, 1, 0) < 0) {
        if (errno == EINTR)
            return STRATA_INPROGRESS;
        STU_WARN("%s: poll while connecting to %s: %s", who, peer, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (pfd.revents == 0)
        return STRATA_INPROGRESS;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err == 0)
        return STRATA_OK;
    STU_WARN("%s: connecting to %s: %s", who, peer, strerror(err));
    return stt_sock_errno_status(err);
}

strata_status_t stt_sock_xfer(const char *who, int fd, bool out, void *buf, uint32_t len,
                              uint32_t *done, const char *what, const char *peer)
{
    while (*done < len) {
        ssize_t r = out ? send(fd, (char *)buf + *done, len - *done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(fd, (char *)buf + *done, len - *done, MSG_DONTWAIT);
        if (r > 0) {
            *done += (uint32_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return STRATA_INPROGRESS;
        int err = r < 0 ? errno : 0;
        STU_WARN("%s: %s %s %s %s: %s after %u of %u bytes", who, out ? "sending" : "receiving",
                 what, out ? "to" : "from", peer,
                 err != 0 ? strerror(err) : out ? "nothing written" : "connection closed",
                 *done, len);
        return err != 0 ? stt_sock_errno_status(err) : STRATA_ERR_REMOTE;
    }
    return STRATA_OK;
}

stt_sock_peek_t stt_sock_peek(int fd, int *err_p)
{
    char b;
    ssize_t r = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

    *err_p = 0;
    if (r > 0)
        return STT_SOCK_BYTES;
    if (r == 0)
        return STT_SOCK_EOF;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return STT_SOCK_QUIET;
    *err_p = errno;
    return STT_SOCK_ERROR;
}

bool stt_sock_backlogged(int lfd)
{
    struct pollfd pfd = {.fd = lfd, .events = POLLIN};

    return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN) != 0;
}

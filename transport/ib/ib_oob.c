/* The TCP side channel of the ib transport: sockets and non-blocking transfers. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/time.h"

void stt_ib_oob_format(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
    } else {
        snprintf(buf, len, "?");
    }
}

strata_status_t stt_ib_oob_socket(int family, int *fd_p)
{
    int one = 1;
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        STU_WARN("ib: side-channel socket: %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        STU_INFO(STU_LOG_NET, "ib: TCP_NODELAY on the side channel: %s", strerror(errno));
    *fd_p = fd;
    return STRATA_OK;
}

strata_status_t stt_ib_oob_xfer(int fd, bool out, uint8_t *buf, uint32_t len, uint32_t *done,
                                const char *what, const char *peer)
{
    while (*done < len) {
        ssize_t r = out ? send(fd, buf + *done, len - *done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(fd, buf + *done, len - *done, MSG_DONTWAIT);
        if (r > 0) {
            *done += (uint32_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return STRATA_INPROGRESS;
        STU_WARN("ib: %s %s %s %s: %s after %u of %u bytes", out ? "sending" : "receiving", what,
                 out ? "to" : "from", peer, r == 0 ? "connection closed" : strerror(errno),
                 *done, len);
        return STRATA_ERR_REMOTE;
    }
    return STRATA_OK;
}

uint64_t stt_ib_oob_random(void)
{
    uint64_t v = 0;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = stu_time_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&v;
    return v;
}

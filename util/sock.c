/* Blocking-with-deadline TCP helpers for control paths. */
#define _GNU_SOURCE
#include "util/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/time.h"

#define SOCK_RETRY_NS 20000000ull   /* 20 ms between connect attempts to a listener not up yet */

strata_status_t stu_addr_parse(const char *text, stu_addr_t *addr_p)
{
    char host[256];
    const char *port;
    struct addrinfo hints, *res = NULL;

    if (text == NULL)
        return STRATA_ERR_INVALID;
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        if (end == NULL || end[1] != ':' || (size_t)(end - text - 1) >= sizeof(host))
            goto err_format;
        memcpy(host, text + 1, (size_t)(end - text - 1));
        host[end - text - 1] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL || (size_t)(colon - text) >= sizeof(host) || colon == text)
            goto err_format;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        port = colon + 1;
    }
    char *pend;
    long p = strtol(port, &pend, 10);
    if (*port == '\0' || *pend != '\0' || p < 0 || p > 65535)
        goto err_format;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        STU_WARN("address '%s': cannot resolve '%s': %s", text, host, gai_strerror(rc));
        return STRATA_ERR_INVALID;
    }
    memset(addr_p, 0, sizeof(*addr_p));
    memcpy(&addr_p->ss, res->ai_addr, res->ai_addrlen);
    addr_p->len = res->ai_addrlen;
    freeaddrinfo(res);
    return STRATA_OK;
err_format:
    STU_WARN("address '%s' is not host:port", text);
    return STRATA_ERR_INVALID;
}

int stu_addr_is_loopback(const stu_addr_t *addr)
{
    if (addr->ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&addr->ss;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (addr->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&addr->ss;
        if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
    }
    return 0;
}

void stu_addr_format(const stu_addr_t *addr, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (addr->ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&addr->ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
        snprintf(buf, len, "%s:%d", host, port);
    } else if (addr->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&addr->ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
        snprintf(buf, len, "[%s]:%d", host, port);
    } else {
        snprintf(buf, len, "(family %d)", addr->ss.ss_family);
    }
}

static int remaining_ms(uint64_t deadline_ns)
{
    uint64_t now = stu_time_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > 1000000 ? 1000000 : (int)ms;
}

/* Waits for events on fd; OK, STRATA_ERR_TIMEOUT or STRATA_ERR_IO. */
static strata_status_t sock_wait(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int ms = remaining_ms(deadline_ns);
        if (ms == 0)
            return STRATA_ERR_TIMEOUT;
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return STRATA_OK;
        if (rc < 0 && errno != EINTR) {
            STU_WARN("poll: %s", strerror(errno));
            return STRATA_ERR_IO;
        }
    }
}

strata_status_t stu_sock_listen(const stu_addr_t *addr, int backlog, int *fd_p,
                                stu_addr_t *bound_p)
{
    char name[128];
    int one = 1;
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    stu_addr_format(addr, name, sizeof(name));
    if (fd < 0) {
        STU_WARN("socket for %s: %s", name, strerror(errno));
        return STRATA_ERR_IO;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) != 0 || listen(fd, backlog) != 0) {
        STU_WARN("bind/listen on %s: %s", name, strerror(errno));
        close(fd);
        return STRATA_ERR_IO;
    }
    if (bound_p != NULL) {
        bound_p->len = sizeof(bound_p->ss);
        getsockname(fd, (struct sockaddr *)&bound_p->ss, &bound_p->len);
    }
    *fd_p = fd;
    return STRATA_OK;
}

strata_status_t stu_sock_accept(int listen_fd, uint64_t deadline_ns, int *fd_p)
{
    int one = 1;
    for (;;) {
        strata_status_t status = sock_wait(listen_fd, POLLIN, deadline_ns);
        if (status != STRATA_OK)
            return status;
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            *fd_p = fd;
            return STRATA_OK;
        }
        if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
            STU_WARN("accept: %s", strerror(errno));
            return STRATA_ERR_IO;
        }
    }
}

strata_status_t stu_sock_connect(const stu_addr_t *addr, uint64_t deadline_ns, int *fd_p)
{
    char name[128];
    int one = 1;
    int last_errno = 0;

    stu_addr_format(addr, name, sizeof(name));
    while (stu_time_ns() < deadline_ns) {
        int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            STU_WARN("socket for %s: %s", name, strerror(errno));
            return STRATA_ERR_IO;
        }
        if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) == 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            *fd_p = fd;
            return STRATA_OK;
        }
        last_errno = errno;
        close(fd);
        if (last_errno != ECONNREFUSED && last_errno != EINTR && last_errno != ETIMEDOUT &&
            last_errno != EHOSTUNREACH && last_errno != ENETUNREACH) {
            STU_WARN("connect to %s: %s", name, strerror(last_errno));
            return STRATA_ERR_IO;
        }
        struct timespec ts = {0, (long)SOCK_RETRY_NS};
        nanosleep(&ts, NULL);
    }
    STU_WARN("connect to %s: no listener before the deadline (last error: %s)", name,
             last_errno ? strerror(last_errno) : "none");
    return STRATA_ERR_TIMEOUT;
}

strata_status_t stu_sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            strata_status_t status = sock_wait(fd, POLLOUT, deadline_ns);
            if (status != STRATA_OK)
                return status;
            continue;
        }
        return (errno == EPIPE || errno == ECONNRESET) ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    return STRATA_OK;
}

strata_status_t stu_sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return STRATA_ERR_REMOTE;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            strata_status_t status = sock_wait(fd, POLLIN, deadline_ns);
            if (status != STRATA_OK)
                return status;
            continue;
        }
        return errno == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    return STRATA_OK;
}

/* Blocking-with-deadline TCP helpers for control paths (see sock.h). */
#define _GNU_SOURCE
#include "util/sock.h"

#include <arpa/inet.h>
#include <errno.h>
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

#define SOCK_RETRY_MS 20   /* between connect attempts to a listener not up yet */

strata_status_t stu_addr_make(const char *host, int port, stu_addr_t *addr_p)
{
    struct addrinfo hints = {0}, *res = NULL;
    char portstr[16];

    if (port < 0 || port > 65535) {
        STU_WARN("address: port %d out of range", port);
        return STRATA_ERR_INVALID;
    }
    memset(addr_p, 0, sizeof(*addr_p));
    if (host == NULL || host[0] == '\0') {
        int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&addr_p->ss;
            close(probe);
            a->sin6_family = AF_INET6;
            a->sin6_addr = in6addr_any;
            a->sin6_port = htons((uint16_t)port);
            addr_p->len = sizeof(*a);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&addr_p->ss;
            a->sin_family = AF_INET;
            a->sin_addr.s_addr = htonl(INADDR_ANY);
            a->sin_port = htons((uint16_t)port);
            addr_p->len = sizeof(*a);
        }
        return STRATA_OK;
    }
    snprintf(portstr, sizeof(portstr), "%d", port);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || res == NULL) {
        STU_WARN("address: cannot resolve '%s': %s", host, gai_strerror(rc));
        return STRATA_ERR_INVALID;
    }
    memcpy(&addr_p->ss, res->ai_addr, res->ai_addrlen);
    addr_p->len = res->ai_addrlen;
    freeaddrinfo(res);
    return STRATA_OK;
}

strata_status_t stu_addr_parse(const char *text, stu_addr_t *addr_p)
{
    char host[256];
    const char *port, *hbeg, *hend;

    if (text == NULL)
        return STRATA_ERR_INVALID;
    if (text[0] == '[') {
        hbeg = text + 1;
        hend = strchr(hbeg, ']');
        if (hend == NULL || hend[1] != ':')
            goto err_format;
        port = hend + 2;
    } else {
        hbeg = text;
        hend = strrchr(text, ':');
        if (hend == NULL)
            goto err_format;
        port = hend + 1;
    }
    if (hend == hbeg || (size_t)(hend - hbeg) >= sizeof(host) || *port == '\0' ||
        strspn(port, "0123456789") != strlen(port) || strlen(port) > 5)
        goto err_format;
    memcpy(host, hbeg, (size_t)(hend - hbeg));
    host[hend - hbeg] = '\0';
    return stu_addr_make(host, atoi(port), addr_p);
err_format:
    STU_WARN("address '%s' is not host:port or [v6addr]:port", text);
    return STRATA_ERR_INVALID;
}

/* An IPv4 peer of a dual-stack socket shows as ::ffff:a.b.c.d: rewrites it as a.b.c.d. */
static stu_addr_t addr_unmapped(const stu_addr_t *addr)
{
    stu_addr_t out = *addr;
    const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&addr->ss;

    if (addr->ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
        struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = a6->sin6_port};
        memcpy(&a4.sin_addr, &a6->sin6_addr.s6_addr[12], 4);
        memset(&out, 0, sizeof(out));
        memcpy(&out.ss, &a4, sizeof(a4));
        out.len = sizeof(a4);
    }
    return out;
}

void stu_addr_host(const stu_addr_t *addr, char *buf, size_t len)
{
    stu_addr_t a = addr_unmapped(addr);

    if (getnameinfo((const struct sockaddr *)&a.ss, a.len, buf, (socklen_t)len, NULL, 0,
                    NI_NUMERICHOST) != 0)
        snprintf(buf, len, "(family %d)", a.ss.ss_family);
}

int stu_addr_port(const stu_addr_t *addr)
{
    if (addr->ss.ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&addr->ss)->sin_port);
    if (addr->ss.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&addr->ss)->sin6_port);
    return 0;
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
    char host[STU_ADDR_TEXT_LEN];

    stu_addr_host(addr, host, sizeof(host));
    snprintf(buf, len, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host,
             stu_addr_port(addr));
}

strata_status_t stu_sock_addr(int fd, int peer, stu_addr_t *addr_p)
{
    stu_addr_t a = {.len = sizeof(a.ss)};
    int rc = peer ? getpeername(fd, (struct sockaddr *)&a.ss, &a.len)
                  : getsockname(fd, (struct sockaddr *)&a.ss, &a.len);

    if (rc != 0 || (a.ss.ss_family != AF_INET && a.ss.ss_family != AF_INET6))
        return STRATA_ERR_IO;
    *addr_p = addr_unmapped(&a);
    return STRATA_OK;
}

void stu_sock_name(int fd, int peer, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    stu_addr_t a;

    if (stu_sock_addr(fd, peer, &a) == STRATA_OK)
        stu_addr_format(&a, buf, len);
    else if (getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0 && ss.ss_family == AF_UNIX)
        snprintf(buf, len, "a local socket");
    else
        snprintf(buf, len, "?");
}

strata_status_t stu_fd_wait(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int ms = stu_deadline_left_ms(deadline_ns);
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

static void sock_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

strata_status_t stu_sock_listen(const stu_addr_t *addr, int backlog, int *fd_p,
                                stu_addr_t *bound_p)
{
    char name[STU_ADDR_TEXT_LEN];
    int one = 1, zero = 0;
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    stu_addr_format(addr, name, sizeof(name));
    if (fd < 0) {
        STU_WARN("socket for %s: %s", name, strerror(errno));
        return STRATA_ERR_IO;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addr->ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) != 0 || listen(fd, backlog) != 0) {
        STU_WARN("bind/listen on %s: %s", name, strerror(errno));
        close(fd);
        return STRATA_ERR_IO;
    }
    if (bound_p != NULL && stu_sock_addr(fd, 0, bound_p) != STRATA_OK) {
        STU_WARN("getsockname after listening on %s: %s", name, strerror(errno));
        close(fd);
        return STRATA_ERR_IO;
    }
    *fd_p = fd;
    return STRATA_OK;
}

strata_status_t stu_sock_accept(int listen_fd, uint64_t deadline_ns, int *fd_p)
{
    for (;;) {
        strata_status_t status = stu_fd_wait(listen_fd, POLLIN, deadline_ns);
        if (status != STRATA_OK)
            return status;
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            sock_nodelay(fd);
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
    char name[STU_ADDR_TEXT_LEN];
    int last_errno = 0;

    stu_addr_format(addr, name, sizeof(name));
    while (!stu_deadline_passed(deadline_ns)) {
        int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            STU_WARN("socket for %s: %s", name, strerror(errno));
            return STRATA_ERR_IO;
        }
        if (connect(fd, (const struct sockaddr *)&addr->ss, addr->len) == 0) {
            sock_nodelay(fd);
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
        stu_sleep_ms(SOCK_RETRY_MS);
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
            strata_status_t status = stu_fd_wait(fd, POLLOUT, deadline_ns);
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
            strata_status_t status = stu_fd_wait(fd, POLLIN, deadline_ns);
            if (status != STRATA_OK)
                return status;
            continue;
        }
        return errno == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    return STRATA_OK;
}

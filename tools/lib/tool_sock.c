/* TCP socket helpers with bounded waits (see bench_sock.h). */
#define _GNU_SOURCE /* accept4 */
#include "tools/lib/tool_sock.h"

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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/lib/tool_util.h"

/* Pause between attempts to reach a peer that refuses: short next to a 30 s timeout. */
#define SOCK_RETRY_MS 100
#define SOCK_BACKLOG 4

strata_status_t stb_sock_nodelay_set(int fd)
{
    int one = 1;

    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
        stb_log_err("setsockopt(TCP_NODELAY): %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

static int sock_blocking_set(int fd, int blocking)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0)
        return -1;
    flags = blocking ? (flags & ~O_NONBLOCK) : (flags | O_NONBLOCK);
    return fcntl(fd, F_SETFL, flags);
}

static strata_status_t sock_bind_listen(int family, const struct sockaddr *sa, socklen_t salen,
                                        const char *what, int *fd_p)
{
    int one = 1, zero = 0;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        stb_log_err("socket(%s): %s", what, strerror(errno));
        return errno == EAFNOSUPPORT ? STRATA_ERR_UNSUPPORTED : STRATA_ERR_IO;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(fd, sa, salen) != 0 || listen(fd, SOCK_BACKLOG) != 0) {
        stb_log_err("bind/listen on %s: %s", what, strerror(errno));
        close(fd);
        return STRATA_ERR_IO;
    }
    *fd_p = fd;
    return STRATA_OK;
}

strata_status_t stb_sock_listen(const char *host, int port, int *fd_p)
{
    char portstr[16], what[STB_SOCK_NAME_LEN];
    struct addrinfo hints = {0}, *res = NULL;
    strata_status_t status;

    if (port < 0 || port > 65535) {
        stb_log_err("listen: port %d out of range", port);
        return STRATA_ERR_INVALID;
    }
    if (host == NULL || host[0] == '\0') {
        struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                                    .sin6_addr = IN6ADDR_ANY_INIT};
        struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_ANY)};
        snprintf(what, sizeof(what), "[::]:%d", port);
        status = sock_bind_listen(AF_INET6, (struct sockaddr *)&sin6, sizeof(sin6), what, fd_p);
        if (status != STRATA_ERR_UNSUPPORTED)
            return status;
        snprintf(what, sizeof(what), "0.0.0.0:%d", port);
        return sock_bind_listen(AF_INET, (struct sockaddr *)&sin, sizeof(sin), what, fd_p);
    }

    snprintf(portstr, sizeof(portstr), "%d", port);
    snprintf(what, sizeof(what), "%s:%d", host, port);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        stb_log_err("listen: cannot resolve %s: %s", host, gai_strerror(rc));
        return STRATA_ERR_INVALID;
    }
    status = STRATA_ERR_IO;
    for (struct addrinfo *ai = res; ai != NULL && status != STRATA_OK; ai = ai->ai_next)
        status = sock_bind_listen(ai->ai_family, ai->ai_addr, ai->ai_addrlen, what, fd_p);
    freeaddrinfo(res);
    return status;
}

strata_status_t stb_sock_accept(int lfd, int timeout_ms, int *fd_p)
{
    uint64_t deadline = stb_deadline_make(timeout_ms);
    struct pollfd pfd = {.fd = lfd, .events = POLLIN};

    for (;;) {
        int rc = poll(&pfd, 1, stb_deadline_left_ms(deadline));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            stb_log_err("poll(listen socket): %s", strerror(errno));
            return STRATA_ERR_IO;
        }
        if (rc == 0) {
            stb_log_err("no peer connected within %d ms", timeout_ms);
            return STRATA_ERR_TIMEOUT;
        }
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED))
            continue;
        if (fd < 0) {
            stb_log_err("accept: %s", strerror(errno));
            return STRATA_ERR_IO;
        }
        if (stb_sock_nodelay_set(fd) != STRATA_OK) {
            close(fd);
            return STRATA_ERR_IO;
        }
        *fd_p = fd;
        return STRATA_OK;
    }
}

/* One non-blocking connect bounded by the deadline; returns the errno of the failure, or 0. */
static int sock_connect_once(const struct addrinfo *ai, uint64_t deadline, int *fd_p)
{
    int err = 0;
    socklen_t errlen = sizeof(err);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return errno;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
            close(fd);
            return err;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int rc;
        do {
            rc = poll(&pfd, 1, stb_deadline_left_ms(deadline));
        } while (rc < 0 && errno == EINTR);
        if (rc <= 0) {
            err = rc == 0 ? ETIMEDOUT : errno;
            close(fd);
            return err;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errlen) != 0)
            err = errno;
        if (err != 0) {
            close(fd);
            return err;
        }
    }
    if (sock_blocking_set(fd, 1) != 0 || stb_sock_nodelay_set(fd) != STRATA_OK) {
        err = errno != 0 ? errno : EINVAL;
        close(fd);
        return err;
    }
    *fd_p = fd;
    return 0;
}

strata_status_t stb_sock_connect(const char *host, const char *port, int timeout_ms, int *fd_p)
{
    struct addrinfo hints = {0}, *res = NULL;
    uint64_t deadline = stb_deadline_make(timeout_ms);
    int err = ETIMEDOUT;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        stb_log_err("cannot resolve %s:%s: %s", host, port, gai_strerror(rc));
        return STRATA_ERR_INVALID;
    }
    for (;;) {
        for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
            err = sock_connect_once(ai, deadline, fd_p);
            if (err == 0) {
                freeaddrinfo(res);
                return STRATA_OK;
            }
        }
        /* Refused or unreachable: the peer may still be starting; retry until the deadline. */
        if (stb_deadline_left_ms(deadline) <= SOCK_RETRY_MS)
            break;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = SOCK_RETRY_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    freeaddrinfo(res);
    stb_log_err("cannot connect to %s:%s within %d ms: %s", host, port, timeout_ms,
                strerror(err));
    return STRATA_ERR_TIMEOUT;
}

strata_status_t stb_sock_split_hostport(const char *text, char *host, size_t host_len,
                                        char *port, size_t port_len)
{
    const char *colon, *hbeg = text, *hend;

    if (text == NULL)
        return STRATA_ERR_INVALID;
    if (text[0] == '[') {
        hbeg = text + 1;
        hend = strchr(hbeg, ']');
        if (hend == NULL || hend[1] != ':')
            return STRATA_ERR_INVALID;
        colon = hend + 1;
    } else {
        colon = strrchr(text, ':');
        if (colon == NULL)
            return STRATA_ERR_INVALID;
        hend = colon;
    }
    size_t hlen = (size_t)(hend - hbeg);
    size_t plen = strlen(colon + 1);
    if (hlen == 0 || hlen >= host_len || plen == 0 || plen >= port_len)
        return STRATA_ERR_INVALID;
    for (const char *c = colon + 1; *c != '\0'; c++)
        if (*c < '0' || *c > '9')
            return STRATA_ERR_INVALID;
    memcpy(host, hbeg, hlen);
    host[hlen] = '\0';
    memcpy(port, colon + 1, plen + 1);
    return STRATA_OK;
}

static const char sock_unix_why[] = "a local socket pair has no address";

/* stb_sock_addr_get without the log: a static reason on failure, NULL on success. */
static const char *sock_addr_query(int fd, int peer, char *host, size_t host_len, int *port_p)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char serv[16];
    int rc = peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
                  : getsockname(fd, (struct sockaddr *)&ss, &len);

    if (rc != 0)
        return strerror(errno);
    if (ss.ss_family == AF_UNIX)
        return sock_unix_why;
    /* An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d; print it as a.b.c.d. */
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = sin6->sin6_port};
            memcpy(&sin.sin_addr, &sin6->sin6_addr.s6_addr[12], 4);
            memcpy(&ss, &sin, sizeof(sin));
            len = sizeof(sin);
        }
    }
    rc = getnameinfo((struct sockaddr *)&ss, len, host, (socklen_t)host_len, serv, sizeof(serv),
                     NI_NUMERICHOST | NI_NUMERICSERV);
    if (rc != 0)
        return gai_strerror(rc);
    *port_p = atoi(serv);
    return NULL;
}

strata_status_t stb_sock_addr_get(int fd, int peer, char *host, size_t host_len, int *port_p)
{
    const char *why = sock_addr_query(fd, peer, host, host_len, port_p);

    if (why != NULL) {
        stb_log_err("cannot read the %s address of a socket: %s", peer ? "remote" : "local",
                    why);
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

void stb_sock_name(int fd, int peer, char *buf, size_t len)
{
    char host[STB_SOCK_NAME_LEN];
    int port;
    const char *why = sock_addr_query(fd, peer, host, sizeof(host), &port);

    if (why == sock_unix_why) {
        snprintf(buf, len, "the forked peer");
        return;
    }
    if (why != NULL) {
        snprintf(buf, len, "?");
        return;
    }
    snprintf(buf, len, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
}

/* Waits for events on fd before the deadline: 1 ready, 0 timed out, -1 error (errno set). */
/* Logs a data-transfer failure with the peer's address. */
static void sock_io_err(int fd, const char *op, const char *why)
{
    char peer[STB_SOCK_NAME_LEN];

    stb_sock_name(fd, 1, peer, sizeof(peer));
    stb_log_err("%s, peer %s: %s", op, peer, why);
}

static int sock_wait(int fd, short events, uint64_t deadline_ns)
{
    struct pollfd pfd = {.fd = fd, .events = events};

    for (;;) {
        int rc = poll(&pfd, 1, stb_deadline_left_ms(deadline_ns));
        if (rc < 0 && errno == EINTR)
            continue;
        return rc < 0 ? -1 : rc;
    }
}

strata_status_t stb_sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns)
{
    const char *p = buf;

    while (len > 0) {
        int rc = sock_wait(fd, POLLOUT, deadline_ns);
        if (rc <= 0) {
            sock_io_err(fd, "send", rc == 0 ? "timed out" : strerror(errno));
            return rc == 0 ? STRATA_ERR_TIMEOUT : STRATA_ERR_IO;
        }
        ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            sock_io_err(fd, "send", strerror(errno));
            return errno == EPIPE || errno == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return STRATA_OK;
}

strata_status_t stb_sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
    char *p = buf;

    while (len > 0) {
        int rc = sock_wait(fd, POLLIN, deadline_ns);
        if (rc <= 0) {
            sock_io_err(fd, "recv", rc == 0 ? "timed out" : strerror(errno));
            return rc == 0 ? STRATA_ERR_TIMEOUT : STRATA_ERR_IO;
        }
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            sock_io_err(fd, "recv", strerror(errno));
            return errno == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
        }
        if (n == 0) {
            sock_io_err(fd, "recv", "the peer closed the connection");
            return STRATA_ERR_REMOTE;
        }
        p += n;
        len -= (size_t)n;
    }
    return STRATA_OK;
}

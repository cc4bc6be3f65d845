/*
 * Blocking socket helpers with deadlines, for out-of-band control paths: the
 * collective library's bootstrap, the tools' and benchmarks' handle exchange,
 * the tests' control channels. Never used on a data path.
 *
 * Every wait is bounded by an absolute deadline (util/time.h); a call that
 * runs past it fails with STRATA_ERR_TIMEOUT. Outputs are set only on
 * success, and a failed call leaves no descriptor open. Address and socket
 * set-up failures are logged here (with the address and the errno text);
 * send/recv failures are only returned, for the caller to log once with what
 * it was exchanging. Thread-safe (no state).
 */
#ifndef STU_SOCK_H
#define STU_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "strata/status.h"

/* Longest text of an address, "[v6addr%scope]:port", with its NUL. */
#define STU_ADDR_TEXT_LEN 80

typedef struct stu_addr {
    struct sockaddr_storage ss;
    socklen_t len;
} stu_addr_t;

/*
 * host and port into an address: host NULL or "" is every local address (IPv6
 * "::", which also takes IPv4, or 0.0.0.0 where the kernel has no IPv6); a
 * name is resolved (its first address). STRATA_ERR_INVALID, logged, otherwise.
 */
strata_status_t stu_addr_make(const char *host, int port, stu_addr_t *addr_p);

/* Parses "host:port" or "[v6addr]:port" (host may be a name) with stu_addr_make. */
strata_status_t stu_addr_parse(const char *text, stu_addr_t *addr_p);

/* 1 for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104: only this host can be there. */
int stu_addr_is_loopback(const stu_addr_t *addr);

/* "a.b.c.d:port" or "[v6]:port" into buf (an IPv4-mapped IPv6 address as IPv4). */
void stu_addr_format(const stu_addr_t *addr, char *buf, size_t len);

/* The address's numeric host alone ("a.b.c.d", "v6addr"), and its port. */
void stu_addr_host(const stu_addr_t *addr, char *buf, size_t len);
int stu_addr_port(const stu_addr_t *addr);

/*
 * The local (peer 0) or remote (peer 1) address of a socket. STRATA_ERR_IO
 * when it has none (a socketpair's end); not logged.
 */
strata_status_t stu_sock_addr(int fd, int peer, stu_addr_t *addr_p);

/* stu_sock_addr as text for messages: "host:port", "a local socket", or "?". */
void stu_sock_name(int fd, int peer, char *buf, size_t len);

/*
 * A listening TCP socket bound to addr (port 0 allowed; an IPv6 address also
 * takes IPv4). *bound_p (may be NULL) gets the real address.
 */
strata_status_t stu_sock_listen(const stu_addr_t *addr, int backlog, int *fd_p,
                                stu_addr_t *bound_p);

/* Accepts one connection before the deadline (TCP_NODELAY set). */
strata_status_t stu_sock_accept(int listen_fd, uint64_t deadline_ns, int *fd_p);

/*
 * Connects, retrying refused and unreachable attempts (the listener may not be
 * up yet) until the deadline. The socket is blocking, with TCP_NODELAY.
 */
strata_status_t stu_sock_connect(const stu_addr_t *addr, uint64_t deadline_ns, int *fd_p);

/* Sends / receives exactly len bytes, in any socket mode. EOF or reset: STRATA_ERR_REMOTE. */
strata_status_t stu_sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns);
strata_status_t stu_sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns);

/*
 * Waits until fd has one of events (POLLIN, POLLOUT) or hung up: OK,
 * STRATA_ERR_TIMEOUT at the deadline, STRATA_ERR_IO if poll fails.
 */
strata_status_t stu_fd_wait(int fd, short events, uint64_t deadline_ns);

#endif /* STU_SOCK_H */

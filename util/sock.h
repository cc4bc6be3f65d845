/*
 * Blocking socket helpers with deadlines, for out-of-band control paths
 * (bootstrap, benchmarks' handle exchange). Never used on a data path.
 * Every wait is bounded by an absolute deadline from stu_time_ns(); a call
 * that runs past it fails with STRATA_ERR_TIMEOUT. Thread-safe (no state).
 */
#ifndef STU_SOCK_H
#define STU_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "strata/status.h"

typedef struct stu_addr {
    struct sockaddr_storage ss;
    socklen_t len;
} stu_addr_t;

/* Parses "host:port", "[v6addr]:port" (host may be a name). */
strata_status_t stu_addr_parse(const char *text, stu_addr_t *addr_p);

/* 1 for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104: only this host can be there. */
int stu_addr_is_loopback(const stu_addr_t *addr);

/* "a.b.c.d:port" or "[v6]:port" into buf. */
void stu_addr_format(const stu_addr_t *addr, char *buf, size_t len);

/* A listening TCP socket bound to addr (port 0 allowed); *bound_p gets the real address. */
strata_status_t stu_sock_listen(const stu_addr_t *addr, int backlog, int *fd_p,
                                stu_addr_t *bound_p);

/* Accepts one connection before the deadline. */
strata_status_t stu_sock_accept(int listen_fd, uint64_t deadline_ns, int *fd_p);

/* Connects, retrying refused attempts (the listener may not be up yet) until the deadline. */
strata_status_t stu_sock_connect(const stu_addr_t *addr, uint64_t deadline_ns, int *fd_p);

/* Sends / receives exactly len bytes. EOF or reset: STRATA_ERR_REMOTE. */
strata_status_t stu_sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns);
strata_status_t stu_sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns);

#endif /* STU_SOCK_H */

/*
 * TCP socket helpers for the bench tools' bootstrap and raw paths.
 *
 * Every call that waits takes a deadline (stb_deadline_make) or a timeout and
 * fails with STRATA_ERR_TIMEOUT when it passes. Errors are logged once, here,
 * with the errno text and the address involved. Outputs are set only on
 * success; on failure no descriptor is left open.
 */
#ifndef STB_SOCK_H
#define STB_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

/* Longest "[v6addr]:port" text, with its NUL. */
#define STB_SOCK_NAME_LEN 80

/*
 * Binds and listens on host:port. host NULL or "" means every address (IPv6
 * dual stack when the kernel has IPv6, else IPv4); port 0 lets the kernel pick.
 */
strata_status_t stb_sock_listen(const char *host, int port, int *fd_p);

/* Waits up to timeout_ms for one connection on a listening socket. */
strata_status_t stb_sock_accept(int lfd, int timeout_ms, int *fd_p);

/*
 * Connects to host:port, trying every address the name resolves to and
 * retrying refused connections (the peer may not listen yet) until timeout_ms.
 * The returned socket is blocking, with TCP_NODELAY set.
 */
strata_status_t stb_sock_connect(const char *host, const char *port, int timeout_ms, int *fd_p);

/* Splits "host:port", "[v6]:port" into its parts. OK or STRATA_ERR_INVALID. */
strata_status_t stb_sock_split_hostport(const char *text, char *host, size_t host_len,
                                        char *port, size_t port_len);

/* Local (peer = 0) or remote (peer = 1) address: numeric host only, and port. */
strata_status_t stb_sock_addr_get(int fd, int peer, char *host, size_t host_len, int *port_p);

/* "host:port" of the local or remote end, for messages; "?" on failure. */
void stb_sock_name(int fd, int peer, char *buf, size_t len);

/* Sends or receives exactly len bytes before the deadline (any socket mode). */
strata_status_t stb_sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns);
strata_status_t stb_sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns);

/* Sets TCP_NODELAY; logs and returns STRATA_ERR_IO on failure. */
strata_status_t stb_sock_nodelay_set(int fd);

#endif /* STB_SOCK_H */

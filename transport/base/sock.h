/*
 * The non-blocking socket steps that connection setup shares across the
 * tcp, ucx and ib transports: open, listen, accept, connect and its
 * completion, moving a message piecewise, and peeking at a quiet socket for
 * its peer's close. (Blocking helpers with deadlines, for bootstrap and
 * tools, are util/sock.h's.)
 *
 * who ("tcp", "ucx", "ib") prefixes every message. Errors are logged once,
 * here, with the peer's address and the errno text; a status then says what
 * kind: STRATA_ERR_REMOTE when the peer refused, reset, closed or cannot be
 * reached, STRATA_ERR_IO for anything else the kernel said. Stateless and
 * thread-safe.
 */
#ifndef STT_BASE_SOCK_H
#define STT_BASE_SOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/base/netif.h"

/* A non-blocking, close-on-exec TCP socket with TCP_NODELAY (best effort). */
strata_status_t stt_sock_open(const char *who, int family, int *fd_p);

/* Binds fd to addr (port 0: any), listens, and writes the bound address to *bound_p. */
strata_status_t stt_sock_listen(const char *who, int fd, const stt_netif_addr_t *addr,
                                stt_netif_addr_t *bound_p);

/*
 * One connection the kernel has ready on the listening socket lfd
 * (non-blocking, close-on-exec), its peer address in *addr_p; -1 when none
 * is (errors other than "none now" are logged with local, the listen
 * address).
 */
int stt_sock_accept(const char *who, int lfd, const char *local, stt_netif_addr_t *addr_p);

/* Starts a non-blocking connect of fd to addr; OK while it is in progress. */
strata_status_t stt_sock_connect(const char *who, int fd, const stt_netif_addr_t *addr,
                                 const char *peer);

/* Has fd's connect completed? OK when it has, STRATA_INPROGRESS while not yet. */
strata_status_t stt_sock_connected(const char *who, int fd, const char *peer);

/*
 * Moves bytes [*done, len) of buf on non-blocking fd (sends when out), as
 * far as the kernel takes them. OK once all len are done, STRATA_INPROGRESS
 * when it would block; what names the message in the error ("the hello").
 */
strata_status_t stt_sock_xfer(const char *who, int fd, bool out, void *buf, uint32_t len,
                              uint32_t *done, const char *what, const char *peer);

/* What a one-byte MSG_PEEK finds on a socket whose peer should stay silent. */
typedef enum stt_sock_peek {
    STT_SOCK_QUIET = 0,   /* nothing to read: the peer is there */
    STT_SOCK_EOF,         /* the peer closed its end */
    STT_SOCK_BYTES,       /* the peer wrote something */
    STT_SOCK_ERROR,       /* a reset or another error: *err_p has the errno */
} stt_sock_peek_t;

stt_sock_peek_t stt_sock_peek(int fd, int *err_p);

/*
 * Whether the listening socket lfd has connections waiting in the kernel's accept queue:
 * a listener whose pending table is full then closes its idle unauthenticated entries
 * (past STT_HANDSHAKE_FIRST_MS) to make room.
 */
bool stt_sock_backlogged(int lfd);

/* STRATA_ERR_REMOTE for an errno that means the peer went or cannot be reached, IO otherwise. */
strata_status_t stt_sock_errno_status(int err);

#endif /* STT_BASE_SOCK_H */

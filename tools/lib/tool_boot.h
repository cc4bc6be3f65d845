/*
 * The out-of-band bootstrap of a two-process bench run: a stream socket
 * between the two processes (a socketpair after fork, or TCP between hosts)
 * that carries the 128-byte plugin handles, the run parameters, and start/stop
 * synchronisation.
 *
 * Every call waits at most the boot's timeout and fails with
 * STRATA_ERR_TIMEOUT after it, so a missing or dead peer is an error, never a
 * hang. Messages are small (a few KiB); both sides may send before receiving.
 * A stb_boot_t is used by one thread.
 */
#ifndef STB_BOOT_H
#define STB_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "util/sock.h"

typedef struct stb_boot {
    int fd;                          /* -1 when closed */
    int timeout_ms;                  /* bound on every wait */
    char peer[STU_ADDR_TEXT_LEN];    /* for messages */
} stb_boot_t;

/* Wraps a connected stream socket (one end of a socketpair); takes ownership of fd. */
void stb_boot_from_fd(stb_boot_t *boot, int fd, int timeout_ms, const char *peer_name);

/*
 * Two hosts, server side: stb_boot_listen binds host:port (host NULL or "":
 * every address; port 0: the kernel picks) and returns the bound port;
 * stb_boot_accept waits for the client. The listening socket is the caller's
 * to close.
 */
strata_status_t stb_boot_listen(const char *host, int port, int *lfd_p, int *port_p);
strata_status_t stb_boot_accept(stb_boot_t *boot, int lfd, int timeout_ms);

/* Two hosts, client side: "host:port" or "[v6]:port"; retries until the timeout. */
strata_status_t stb_boot_connect(stb_boot_t *boot, const char *hostport, int timeout_ms);

/*
 * First exchange: both sides send a magic word, the tool name and a protocol
 * version, and fail with STRATA_ERR_INVALID if the peer's differ (the peer's
 * bytes are logged as printable text only).
 */
strata_status_t stb_boot_hello(stb_boot_t *boot, const char *tool, uint32_t version);

strata_status_t stb_boot_send(stb_boot_t *boot, const void *buf, size_t len);
strata_status_t stb_boot_recv(stb_boot_t *boot, void *buf, size_t len);

/* Sends mine and receives the peer's copy of the same-size record into theirs. */
strata_status_t stb_boot_exchange(stb_boot_t *boot, const void *mine, void *theirs, size_t len);

/*
 * Barrier that also carries each side's status: returns `mine` if it is an
 * error, STRATA_ERR_REMOTE if the peer's is (the peer logged the cause), and
 * STRATA_OK when both are fine. A side that fails calls this with its error
 * so the peer stops waiting for it.
 */
strata_status_t stb_boot_sync(stb_boot_t *boot, strata_status_t mine);

/*
 * Non-blocking look at the bootstrap socket for a long wait elsewhere: 1 if
 * the peer closed it or sent a sync carrying an error, 0 otherwise. Consumes
 * nothing.
 */
int stb_boot_peer_failed(stb_boot_t *boot);

/* Closes the socket; safe to call twice. */
void stb_boot_close(stb_boot_t *boot);

#endif /* STB_BOOT_H */

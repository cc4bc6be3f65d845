/*
 * The head every connection (send or receive comm) of the tcp, ucx and ib
 * transports starts with: the contract's comm, its direction, the peer's
 * address for messages, and its first failure. A transport's own connection
 * struct embeds it first, so a stt_comm_t * is a stt_conn_t *.
 *
 * Failure is sticky: the first stt_conn_fail records the status and logs one
 * line with the peer and the cause; every later call of the comm returns that
 * status. Transports check the comm (stt_conn_of) at every entry point, so a
 * foreign or wrongly-kinded comm is an error with a warning, never a crash.
 *
 * Thread safety: a comm is used by one thread at a time (the contract);
 * failed is written and read atomically, since UCX's error callback records
 * a failure from inside progress.
 */
#ifndef STT_BASE_CONN_H
#define STT_BASE_CONN_H

#include <stdbool.h>

#include "transport/base/netif.h"
#include "transport/transport.h"
#include "util/compiler.h"

/* Room for what a transport adds after the peer in messages (" on mlx5_0:1 (QP 0x1a2b3c)"). */
#define STT_CONN_WHERE_LEN 96

typedef struct stt_conn {
    stt_comm_t base;
    bool send;                        /* a send comm; else a receive comm */
    bool closing;                     /* in close_*: failures are expected, logged as info */
    strata_status_t failed;           /* first error; STRATA_OK while healthy */
    char peer[STT_NETIF_ADDR_STRLEN]; /* the peer's address, for messages */
    char where[STT_CONN_WHERE_LEN];   /* "" or what the transport adds after the peer */
} stt_conn_t;

/* Fills the head of a new comm of ops on dev (healthy, peer copied, where empty). */
void stt_conn_init(stt_conn_t *conn, const stt_ops_t *ops, int dev, bool send, const char *peer);

/* The warning of stt_conn_of for a comm that is not one; returns NULL. */
stt_conn_t *stt_conn_bad(const stt_comm_t *comm, const stt_ops_t *ops, bool send,
                         const char *call);

/*
 * comm as a connection of ops and of the given direction, or NULL with a
 * warning naming call ("isend", "close_recv", ...) when it is NULL, another
 * transport's, or of the other direction. Inline: every post and test checks.
 */
static inline stt_conn_t *stt_conn_of(stt_comm_t *comm, const stt_ops_t *ops, bool send,
                                      const char *call)
{
    stt_conn_t *conn = (stt_conn_t *)comm;

    if (STU_LIKELY(conn != NULL && conn->base.ops == ops && conn->send == send))
        return conn;
    return stt_conn_bad(comm, ops, send, call);
}

/*
 * Records the comm's first failure and logs it once:
 *   "<transport>: <send|receive> comm with <peer><where> failed (<status>): <why>"
 * as a warning, or as info while closing. Does nothing once the comm failed.
 */
void stt_conn_fail(stt_conn_t *conn, strata_status_t status, const char *fmt, ...)
    STU_PRINTF(3, 4);

/* The comm's state: STRATA_OK or its first failure. */
static inline strata_status_t stt_conn_status(const stt_conn_t *conn)
{
    return __atomic_load_n(&conn->failed, __ATOMIC_ACQUIRE);
}

static inline const char *stt_conn_kind(const stt_conn_t *conn)
{
    return conn->send ? "send" : "receive";
}

#endif /* STT_BASE_CONN_H */

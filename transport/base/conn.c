/* The connection head shared by tcp, ucx and ib (conn.h): identity, checks, failure. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "transport/base/conn.h"
#include "util/log.h"

void stt_conn_init(stt_conn_t *conn, const stt_ops_t *ops, int dev, bool send, const char *peer)
{
    conn->base.ops = ops;
    conn->base.dev = dev;
    conn->base.failovers = 0;
    conn->send = send;
    conn->closing = false;
    conn->failed = STRATA_OK;
    snprintf(conn->peer, sizeof(conn->peer), "%s", peer);
    conn->where[0] = '\0';
}

stt_conn_t *stt_conn_bad(const stt_comm_t *comm, const stt_ops_t *ops, bool send,
                         const char *call)
{
    if (comm == NULL)
        STU_WARN("%s: %s called with a NULL comm", ops->name, call);
    else
        STU_WARN("%s: %s called with a comm that is not a %s %s comm", ops->name, call,
                 ops->name, send ? "send" : "receive");
    return NULL;
}

void stt_conn_fail(stt_conn_t *conn, strata_status_t status, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    if (stt_conn_status(conn) != STRATA_OK)
        return;
    __atomic_store_n(&conn->failed, status, __ATOMIC_RELEASE);
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (conn->closing)
        STU_INFO(STU_LOG_NET, "%s: %s comm with %s%s failed while closing (%s): %s",
                 conn->base.ops->name, stt_conn_kind(conn), conn->peer, conn->where,
                 strata_status_str(status), why);
    else
        STU_WARN("%s: %s comm with %s%s failed (%s): %s", conn->base.ops->name,
                 stt_conn_kind(conn), conn->peer, conn->where, strata_status_str(status), why);
}

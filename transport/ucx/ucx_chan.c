/*
 * The side channel while a connection is set up: each end writes its hello
 * and UCP worker address, and reads the other's. Non-blocking throughout;
 * the callers (ucx_conn.c, ucx_listen.c) poll it from connect/accept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/connect.h"
#include "transport/base/sock.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/time.h"

void stt_ucx_chan_init(stt_ucx_chan_t *ch, int fd, const char *peer)
{
    memset(ch, 0, sizeof(*ch));
    ch->fd = fd;
    ch->start_ns = stu_time_ns();
    snprintf(ch->peer, sizeof(ch->peer), "%s", peer);
}

strata_status_t stt_ucx_chan_set_hello(stt_ucx_chan_t *ch, const stt_ucx_hello_t *hello,
                                       const void *addr)
{
    uint32_t len = STT_UCX_HELLO_BYTES + hello->addr_len;
    uint8_t *out = malloc(len);

    if (out == NULL) {
        STU_WARN("ucx: no memory for a hello of %u bytes to %s", len, ch->peer);
        return STRATA_ERR_NO_MEMORY;
    }
    stt_ucx_hello_encode(hello, out);
    memcpy(out + STT_UCX_HELLO_BYTES, addr, hello->addr_len);
    free(ch->out);
    ch->out = out;
    ch->out_len = len;
    ch->out_off = 0;
    return STRATA_OK;
}

strata_status_t stt_ucx_chan_write(stt_ucx_chan_t *ch, bool *done)
{
    strata_status_t status = stt_sock_xfer("ucx", ch->fd, true, ch->out, ch->out_len,
                                           &ch->out_off, "the hello", ch->peer);

    *done = status == STRATA_OK;
    return status == STRATA_INPROGRESS ? STRATA_OK : status;
}

/* The peer's hello against what this end expects (stt_ucx_chan_read). */
static strata_status_t chan_hello_check(const stt_ucx_chan_t *ch, const stt_ucx_hello_t *expect)
{
    const stt_ucx_hello_t *in = &ch->in;

    if (in->kind == expect->kind && in->listener_id == expect->listener_id &&
        (expect->kind == STT_UCX_HELLO_CONNECT || in->conn_id == expect->conn_id) &&
        stt_handle_secret_ok(expect->secret, in->secret))
        return STRATA_OK;
    if (expect->kind == STT_UCX_HELLO_CONNECT)
        STU_WARN("ucx: rejected a connection from %s: its hello does not carry this"
                 " listener's id and secret (a stale or foreign handle, or a stranger)",
                 ch->peer);
    else
        STU_WARN("ucx: %s answered with a hello for another connection, or without the"
                 " handle's secret (kind %u, connection 0x%08x, listener 0x%016llx): not the"
                 " listener the handle names", ch->peer, in->kind, in->conn_id,
                 (unsigned long long)in->listener_id);
    return STRATA_ERR_REMOTE;
}

strata_status_t stt_ucx_chan_read(stt_ucx_chan_t *ch, const stt_ucx_hello_t *expect,
                                  bool *done)
{
    strata_status_t status;

    *done = false;
    if (ch->in_addr == NULL) {
        status = stt_sock_xfer("ucx", ch->fd, false, ch->in_hdr, STT_UCX_HELLO_BYTES,
                               &ch->in_have, "the hello", ch->peer);
        if (status != STRATA_OK)
            return status == STRATA_INPROGRESS ? STRATA_OK : status;
        if (stt_ucx_hello_decode(ch->in_hdr, &ch->in) != STRATA_OK)
            return STRATA_ERR_INVALID;   /* the decoder said why */
        if ((status = chan_hello_check(ch, expect)) != STRATA_OK)
            return status;
        ch->in_addr = malloc(ch->in.addr_len);
        if (ch->in_addr == NULL) {
            STU_WARN("ucx: no memory for a worker address of %u bytes from %s",
                     ch->in.addr_len, ch->peer);
            return STRATA_ERR_NO_MEMORY;
        }
    }
    status = stt_sock_xfer("ucx", ch->fd, false, ch->in_addr, ch->in.addr_len, &ch->addr_have,
                           "the worker address", ch->peer);
    *done = status == STRATA_OK;
    return status == STRATA_INPROGRESS ? STRATA_OK : status;
}

void stt_ucx_chan_fini(stt_ucx_chan_t *ch, bool keep_fd)
{
    free(ch->out);
    free(ch->in_addr);
    ch->out = NULL;
    ch->in_addr = NULL;
    if (!keep_fd && ch->fd >= 0)
        close(ch->fd);
    ch->fd = -1;
}

/*
 * The side channel while a connection is set up: each end writes its hello
 * and UCP worker address, and reads the other's. Non-blocking throughout;
 * the callers (ucx_connect.c, ucx_listen.c) poll it from connect/accept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/param.h"
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

/* errno of a failed send/recv as a status: "again" is OK, the rest fails the setup. */
static strata_status_t chan_errno(const stt_ucx_chan_t *ch, const char *call)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == EINPROGRESS)
        return STRATA_OK;
    STU_WARN("ucx: side channel with %s: %s: %s", ch->peer, call, strerror(errno));
    return errno == ECONNREFUSED || errno == ECONNRESET || errno == EPIPE ? STRATA_ERR_REMOTE
                                                                          : STRATA_ERR_IO;
}

strata_status_t stt_ucx_chan_write(stt_ucx_chan_t *ch, bool *done)
{
    while (ch->out_off < ch->out_len) {
        ssize_t n = send(ch->fd, ch->out + ch->out_off, ch->out_len - ch->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            *done = false;
            return chan_errno(ch, "send");
        }
        ch->out_off += (uint32_t)n;
    }
    *done = true;
    return STRATA_OK;
}

strata_status_t stt_ucx_chan_read(stt_ucx_chan_t *ch, bool *done)
{
    *done = false;
    for (;;) {
        bool in_hdr = ch->in_have < STT_UCX_HELLO_BYTES;
        uint8_t *dst;
        size_t want;
        if (in_hdr) {
            dst = ch->in_hdr + ch->in_have;
            want = STT_UCX_HELLO_BYTES - ch->in_have;
        } else {
            uint32_t got = ch->in_have - STT_UCX_HELLO_BYTES;
            if (got == ch->in.addr_len) {
                *done = true;
                return STRATA_OK;
            }
            dst = ch->in_addr + got;
            want = ch->in.addr_len - got;
        }
        ssize_t n = recv(ch->fd, dst, want, MSG_DONTWAIT);
        if (n == 0) {
            STU_WARN("ucx: %s closed the side channel during the handshake (%u bytes in)",
                     ch->peer, ch->in_have);
            return STRATA_ERR_REMOTE;
        }
        if (n < 0)
            return chan_errno(ch, "recv");
        ch->in_have += (uint32_t)n;
        if (in_hdr && ch->in_have == STT_UCX_HELLO_BYTES) {
            if (stt_ucx_hello_decode(ch->in_hdr, &ch->in) != STRATA_OK)
                return STRATA_ERR_INVALID;   /* the decoder said why */
            ch->in_addr = malloc(ch->in.addr_len);
            if (ch->in_addr == NULL) {
                STU_WARN("ucx: no memory for a worker address of %u bytes from %s",
                         ch->in.addr_len, ch->peer);
                return STRATA_ERR_NO_MEMORY;
            }
        }
    }
}

bool stt_ucx_chan_expired(const stt_ucx_chan_t *ch, const char *what)
{
    int64_t timeout_ms = stu_param_int(STU_PARAM_CONNECT_TIMEOUT);

    if (timeout_ms <= 0 || stu_time_ns() - ch->start_ns <= (uint64_t)timeout_ms * 1000000ull)
        return false;
    STU_WARN("ucx: %s %s took longer than STRATA_CONNECT_TIMEOUT=%lld ms", what, ch->peer,
             (long long)timeout_ms);
    return true;
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

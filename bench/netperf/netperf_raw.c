/* The raw TCP baseline: one blocking socket, ping-pong and streaming kernels. */
#include "bench/netperf/netperf_raw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tools/lib/tool_util.h"
#include "util/time.h"

/* Size of the ack that ends a streaming phase. */
#define RAW_ACK_BYTES 8
/* Spinning receives look at the clock once per this many empty polls. */
#define RAW_SPIN_CLOCK_EVERY 256
/* The client's one or two connections, and room for a stray one. */
#define RAW_BACKLOG 4

static strata_status_t raw_timeouts_set(int fd, int timeout_ms)
{
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};

    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
        stb_log_err("raw: setsockopt(SO_RCVTIMEO/SO_SNDTIMEO): %s", strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

/*
 * With a pair, the client marks each new connection with one byte saying who
 * sends on it, so the server can tell them apart whatever order accept()
 * returns them in.
 */
#define RAW_MARK_CLIENT_SENDS 'C'
#define RAW_MARK_SERVER_SENDS 'S'

static void raw_fds_close(stb_raw_t *raw)
{
    if (raw->rfd >= 0 && raw->rfd != raw->fd)
        close(raw->rfd);
    if (raw->fd >= 0)
        close(raw->fd);
    raw->fd = raw->rfd = -1;
}

/* Takes ownership of both descriptors (equal for one socket), even on failure. */
static strata_status_t raw_init(stb_raw_t *raw, int fd, int rfd, int spin, int timeout_ms)
{
    raw->fd = fd;
    raw->rfd = rfd;
    raw->pair = fd != rfd;
    raw->spin = spin;
    raw->timeout_ms = timeout_ms;
    strata_status_t status = raw_timeouts_set(fd, timeout_ms);
    if (status == STRATA_OK && raw->pair)
        status = raw_timeouts_set(rfd, timeout_ms);
    if (status != STRATA_OK) {
        raw_fds_close(raw);
        return status;
    }
    stu_sock_name(fd, 1, raw->peer, sizeof(raw->peer));
    return STRATA_OK;
}

strata_status_t stb_raw_listen(const char *host, int *lfd_p, int *port_p)
{
    stu_addr_t addr, bound;
    strata_status_t status = stu_addr_make(host, 0, &addr);

    if (status == STRATA_OK)
        status = stu_sock_listen(&addr, RAW_BACKLOG, lfd_p, &bound);
    if (status == STRATA_OK)
        *port_p = stu_addr_port(&bound);
    return status;
}

/* Logs a failed connection set-up step once (the socket helpers leave that to the caller). */
static strata_status_t raw_setup_err(const char *step, strata_status_t status)
{
    if (status != STRATA_OK)
        stb_log_err("raw: %s: %s", step, strata_status_str(status));
    return status;
}

strata_status_t stb_raw_accept(stb_raw_t *raw, int lfd, int pair, int spin, int timeout_ms)
{
    uint64_t deadline = stu_deadline_ms(timeout_ms);
    int fds[2] = {-1, -1}, send_fd = -1, recv_fd = -1;
    strata_status_t status = STRATA_OK;

    for (int i = 0; i < (pair ? 2 : 1) && status == STRATA_OK; i++) {
        char mark = RAW_MARK_CLIENT_SENDS;
        status = raw_setup_err("accept", stu_sock_accept(lfd, deadline, &fds[i]));
        if (status == STRATA_OK && pair)
            status = raw_setup_err("connection mark", stu_sock_recv_all(fds[i], &mark, 1,
                                                                         deadline));
        if (status != STRATA_OK)
            break;
        if (!pair) {
            send_fd = recv_fd = fds[i];
        } else if (mark == RAW_MARK_CLIENT_SENDS && recv_fd < 0) {
            recv_fd = fds[i];
        } else if (mark == RAW_MARK_SERVER_SENDS && send_fd < 0) {
            send_fd = fds[i];
        } else {
            stb_log_err("raw: unexpected connection mark 0x%02x", (unsigned char)mark);
            status = STRATA_ERR_REMOTE;
        }
    }
    if (status != STRATA_OK) {
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return status;
    }
    return raw_init(raw, send_fd, recv_fd, spin, timeout_ms);
}

strata_status_t stb_raw_connect(stb_raw_t *raw, const char *host, int port, int pair, int spin,
                                int timeout_ms)
{
    static const char marks[2] = {RAW_MARK_CLIENT_SENDS, RAW_MARK_SERVER_SENDS};
    uint64_t deadline = stu_deadline_ms(timeout_ms);
    int fds[2] = {-1, -1};
    stu_addr_t addr;
    strata_status_t status = stu_addr_make(host, port, &addr);

    for (int i = 0; i < (pair ? 2 : 1) && status == STRATA_OK; i++) {
        status = stu_sock_connect(&addr, deadline, &fds[i]);
        if (status == STRATA_OK && pair)
            status = raw_setup_err("connection mark",
                                   stu_sock_send_all(fds[i], &marks[i], 1, deadline));
    }
    if (status != STRATA_OK) {
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return status;
    }
    return raw_init(raw, fds[0], pair ? fds[1] : fds[0], spin, timeout_ms);
}

void stb_raw_close(stb_raw_t *raw)
{
    raw_fds_close(raw);
}

static strata_status_t raw_io_err(stb_raw_t *raw, const char *op, size_t len, int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK) {
        stb_log_err("raw %s of %zu bytes, peer %s: no progress in %d ms", op, len, raw->peer,
                    raw->timeout_ms);
        return STRATA_ERR_TIMEOUT;
    }
    stb_log_err("raw %s of %zu bytes, peer %s: %s", op, len, raw->peer,
                err == 0 ? "the peer closed the connection" : strerror(err));
    return (err == 0 || err == ECONNRESET || err == EPIPE) ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
}

strata_status_t stb_raw_send(stb_raw_t *raw, const void *buf, size_t len)
{
    const char *p = buf;
    size_t left = len;

    while (left > 0) {
        ssize_t n = send(raw->fd, p, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return raw_io_err(raw, "send", len, errno);
        p += n;
        left -= (size_t)n;
    }
    return STRATA_OK;
}

/* Receives by polling: never sleeps in the kernel, bounded by the timeout all the same. */
static strata_status_t raw_recv_spin(stb_raw_t *raw, char *p, size_t len)
{
    uint64_t deadline = stu_deadline_ms(raw->timeout_ms);
    unsigned empty = 0;
    size_t left = len;

    while (left > 0) {
        ssize_t n = recv(raw->rfd, p, left, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            left -= (size_t)n;
            continue;
        }
        if (n == 0)
            return raw_io_err(raw, "recv", len, 0);
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return raw_io_err(raw, "recv", len, errno);
        if (++empty % RAW_SPIN_CLOCK_EVERY == 0 && stu_time_ns() > deadline)
            return raw_io_err(raw, "recv", len, EAGAIN);
    }
    return STRATA_OK;
}

strata_status_t stb_raw_recv(stb_raw_t *raw, void *buf, size_t len)
{
    char *p = buf;
    size_t left = len;

    if (raw->spin)
        return raw_recv_spin(raw, p, len);
    while (left > 0) {
        ssize_t n = recv(raw->rfd, p, left, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return raw_io_err(raw, "recv", len, n == 0 ? 0 : errno);
        p += n;
        left -= (size_t)n;
    }
    return STRATA_OK;
}

/* The checked first round trip: a pattern each way, each receiver counts wrong bytes. */
static strata_status_t raw_pingpong_check(stb_raw_t *raw, int initiator, void *sbuf, void *rbuf,
                                          size_t size, uint64_t *wrong_p)
{
    strata_status_t status;

    stb_pattern_poison(rbuf, size);
    if (initiator) {
        stb_pattern_fill(sbuf, size, stb_pattern_seed(size, 1));
        status = stb_raw_send(raw, sbuf, size);
        if (status == STRATA_OK)
            status = stb_raw_recv(raw, rbuf, size);
        if (status == STRATA_OK)
            *wrong_p += stb_pattern_check(rbuf, size, stb_pattern_seed(size, 0));
        return status;
    }
    status = stb_raw_recv(raw, rbuf, size);
    if (status != STRATA_OK)
        return status;
    *wrong_p += stb_pattern_check(rbuf, size, stb_pattern_seed(size, 1));
    stb_pattern_fill(sbuf, size, stb_pattern_seed(size, 0));
    return stb_raw_send(raw, sbuf, size);
}

strata_status_t stb_raw_pingpong(stb_raw_t *raw, int initiator, void *sbuf, void *rbuf,
                                 size_t size, int warmup, int iters, int check, double *rtt_us,
                                 uint64_t *wrong_p)
{
    strata_status_t status = STRATA_OK;

    if (check) {
        status = raw_pingpong_check(raw, initiator, sbuf, rbuf, size, wrong_p);
        if (status != STRATA_OK)
            return status;
    }
    for (int i = 0; i < warmup + iters && status == STRATA_OK; i++) {
        if (initiator) {
            uint64_t t0 = stu_time_ns();
            status = stb_raw_send(raw, sbuf, size);
            if (status == STRATA_OK)
                status = stb_raw_recv(raw, rbuf, size);
            if (i >= warmup && rtt_us != NULL)
                rtt_us[i - warmup] = (double)(stu_time_ns() - t0) * 1e-3;
        } else {
            status = stb_raw_recv(raw, rbuf, size);
            if (status == STRATA_OK)
                status = stb_raw_send(raw, sbuf, size);
        }
    }
    return status;
}

/* count messages one way, then an ack back: the end of every streaming phase. */
static strata_status_t raw_stream_phase(stb_raw_t *raw, int sender, void *sbuf, void *rbuf,
                                        size_t size, int count)
{
    strata_status_t status = STRATA_OK;

    for (int i = 0; i < count && status == STRATA_OK; i++)
        status = sender ? stb_raw_send(raw, sbuf, size) : stb_raw_recv(raw, rbuf, size);
    if (status != STRATA_OK)
        return status;
    return sender ? stb_raw_recv(raw, rbuf, RAW_ACK_BYTES) : stb_raw_send(raw, sbuf, RAW_ACK_BYTES);
}

strata_status_t stb_raw_stream(stb_raw_t *raw, int sender, void *sbuf, void *rbuf, size_t size,
                               int warmup, int count, int check, double *elapsed_us_p,
                               uint64_t *wrong_p)
{
    strata_status_t status;

    if (check) {
        if (sender) {
            stb_pattern_fill(sbuf, size, stb_pattern_seed(size, 1));
            status = raw_stream_phase(raw, 1, sbuf, rbuf, size, 1);
        } else {
            stb_pattern_poison(rbuf, size);
            status = stb_raw_recv(raw, rbuf, size);
            if (status == STRATA_OK) {
                *wrong_p += stb_pattern_check(rbuf, size, stb_pattern_seed(size, 1));
                status = stb_raw_send(raw, sbuf, RAW_ACK_BYTES);
            }
        }
        if (status != STRATA_OK)
            return status;
    }
    if (warmup > 0) {
        status = raw_stream_phase(raw, sender, sbuf, rbuf, size, warmup);
        if (status != STRATA_OK)
            return status;
    }
    uint64_t t0 = stu_time_ns();
    status = raw_stream_phase(raw, sender, sbuf, rbuf, size, count);
    if (status == STRATA_OK && elapsed_us_p != NULL)
        *elapsed_us_p = (double)(stu_time_ns() - t0) * 1e-3;
    return status;
}

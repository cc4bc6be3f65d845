/*
 * The raw baseline of strata-netperf: the same ping-pong and streaming
 * measurements over one plain blocking TCP socket, on the same path as the
 * plugin's device, so plugin/raw can be read off directly.
 *
 * The socket is blocking with TCP_NODELAY and kernel-default buffers (the
 * plugin's default too); waits are bounded by SO_SNDTIMEO/SO_RCVTIMEO. With
 * spin set, receives poll with MSG_DONTWAIT instead of sleeping in the kernel
 * (a busy-polling baseline, closer to what a plugin driven by a spinning
 * proxy thread does). With pair set, each direction has its own connection,
 * the layout NCCL gives a plugin (a send comm and a receive comm): on
 * loopback that alone costs ~2 us per one-way hop, because data and ACKs no
 * longer share segments.
 *
 * One thread per stb_raw_t. Buffers belong to the caller.
 */
#ifndef STB_RAW_H
#define STB_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "util/sock.h"

typedef struct stb_raw {
    int fd;                          /* sends go here; -1 when closed */
    int rfd;                         /* receives; == fd unless pair */
    int pair;
    int spin;                        /* 1: receive by polling, not by sleeping */
    int timeout_ms;                  /* bound on one message */
    char peer[STU_ADDR_TEXT_LEN];
} stb_raw_t;

/* Server: listens on host (numeric address of the measured path), port chosen by the kernel. */
strata_status_t stb_raw_listen(const char *host, int *lfd_p, int *port_p);
strata_status_t stb_raw_accept(stb_raw_t *raw, int lfd, int pair, int spin, int timeout_ms);
/* Client: connects to the server's host and port (twice with pair). */
strata_status_t stb_raw_connect(stb_raw_t *raw, const char *host, int port, int pair, int spin,
                                int timeout_ms);
void stb_raw_close(stb_raw_t *raw);

/* One whole message each way; STRATA_ERR_TIMEOUT when the peer stalls past the timeout. */
strata_status_t stb_raw_send(stb_raw_t *raw, const void *buf, size_t len);
strata_status_t stb_raw_recv(stb_raw_t *raw, void *buf, size_t len);

/*
 * Ping-pong of `size` bytes. The initiator sends then receives; the responder
 * echoes. `warmup` untimed round trips, then `iters` timed ones; the
 * initiator stores each round trip in rtt_us[0..iters-1] (the responder
 * passes NULL). If check is set, one extra first round trip carries a
 * pattern both ways and *wrong_p counts the bytes each side received wrong.
 */
strata_status_t stb_raw_pingpong(stb_raw_t *raw, int initiator, void *sbuf, void *rbuf,
                                 size_t size, int warmup, int iters, int check, double *rtt_us,
                                 uint64_t *wrong_p);

/*
 * Streaming: the sender writes `count` messages back to back (the socket
 * buffer is the window), the receiver reads them and answers with one small
 * ack, which the sender waits for. The sender's *elapsed_us_p covers its
 * first write to the ack. With check set, a first untimed message carries a
 * pattern and the receiver counts wrong bytes into *wrong_p; `warmup`
 * untimed messages precede the timed ones.
 */
strata_status_t stb_raw_stream(stb_raw_t *raw, int sender, void *sbuf, void *rbuf, size_t size,
                               int warmup, int count, int check, double *elapsed_us_p,
                               uint64_t *wrong_p);

#endif /* STB_RAW_H */

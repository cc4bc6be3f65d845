/*
 * What the functional tests and their peer program (helper_peer.c) agree on:
 * the scenarios the peer can play, and the sizes, tags and seeds of every
 * message, so each side checks the other's data without shipping it.
 *
 * The peer is started as
 *     helper_peer <control fd> <ABI version> <scenario> [argument]
 * and ends with a STS_CTL_RESULT message (status 0 = all its checks passed)
 * and exit status 0. It bounds every wait and exits on its own if the test
 * process disappears.
 */
#ifndef PEER_SCENARIOS_H
#define PEER_SCENARIOS_H

#include <stddef.h>
#include <stdint.h>

#define PEER_PROG STRATA_BUILD_DIR "/tests/functional/helper_peer"

#define PEER_KiB ((size_t)1 << 10)
#define PEER_MiB ((size_t)1 << 20)

/* The pause between the peer's handshake calls (accept-steps, connect-steps): the test's
 * side, driven without pause, answers each call's bytes before the next. */
#define PEER_STEP_MS 50

/* Bounds on the peer's own waits, and on the tests' waits for the peer. */
#define PEER_TIMEOUT_S 60.0

/*
 * Scenarios (the peer's side):
 *   echo-matrix, echo-smoke  both sides link (listen, swap handles, connect,
 *                            accept); the test sends each message of the list,
 *                            the peer checks it and sends it back
 *   flood <rounds>           link; per round the peer posts STT_MAX_REQUESTS
 *                            grouped receives of maxRecvs buffers at once
 *   tagged                   link; for n = 1..maxRecvs the peer sends n tagged
 *                            messages in a permuted order
 *   trunc                    link; the peer sends PEER_TRUNC_SEND bytes, then a
 *                            small message
 *   stall-send               link; the peer starts a PEER_STALL_BYTES send,
 *                            pushes what the socket buffers take, says READY,
 *                            waits to be killed
 *   stall-idle               link; the peer says READY and waits to be killed,
 *                            never receiving (a sender to it stalls)
 *   many <k>                 the peer takes the test's handle and connects k
 *                            times, then sends its index and a larger message
 *                            on each; closes after GO
 *   cycles <n>               the peer takes the test's handle and n times
 *                            connects, sends one message, closes; its RESULT
 *                            says whether its descriptor count came back
 *   inflight                 link; both sides post requests that cannot all
 *                            complete, swap READY, then close everything
 *                            while requests are in flight
 *   send-close               link; after GO the peer sends PEER_CLOSED_COUNT
 *                            small messages one after the other (each to
 *                            local completion), closes its link, says READY
 *   listen-die               the peer listens, sends its handle and READY,
 *                            waits to be killed (the test connects after)
 *   close-early              link; READY; after GO the peer closes both comms
 *                            and ends
 *   accept-steps <k>         the peer listens, sends its handle, waits for GO
 *                            (the test connects), makes k accept calls
 *                            PEER_STEP_MS apart, says READY, waits to be killed
 *   connect-steps <k>        the peer takes the test's handle, makes k connect
 *                            calls PEER_STEP_MS apart, says READY, waits to be
 *                            killed
 *   tags-shared              link; PEER_TAGS_T "GPUs" share the peer's send
 *                            comm, each with its own tag, PEER_TAGS_STEPS
 *                            messages each; the even ones post every step at
 *                            once, the odd ones one step every third round
 */

static const size_t peer_matrix[] = {
    0, 1, 3, 4 * PEER_KiB - 1, 4 * PEER_KiB, 4 * PEER_KiB + 1, 64 * PEER_KiB + 1,
    256 * PEER_KiB - 1, 256 * PEER_KiB, 256 * PEER_KiB + 1, 512 * PEER_KiB + 3, PEER_MiB,
    PEER_MiB + 7, 64 * PEER_MiB,
};
static const size_t peer_smoke[] = {0, 1, 4 * PEER_KiB, PEER_MiB + 3};

#define PEER_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* echo: message i of a list uses this seed and tag; the peer's receive has slack. */
static inline uint32_t peer_echo_seed(int i) { return 0xec00u + (uint32_t)i; }
static inline int peer_echo_tag(int i) { return i % 4; }
static inline size_t peer_echo_slack(int i) { return (i % 2) ? 100 : 0; }

/* flood: message j*n+k of round r (receive j, buffer k, tag k). */
static inline size_t peer_flood_size(int r, int idx)
{
    return 1 + ((size_t)idx * 7919u + (size_t)r * 13u) % (8 * PEER_KiB);
}
static inline uint32_t peer_flood_seed(int r, int idx) { return (uint32_t)(r * 100000 + idx); }

/* tagged: buffer i of a group of n. */
static inline int peer_tagged_tag(int i) { return 100 + 3 * i; }
static inline size_t peer_tagged_size(int n, int i) { return 1000 * (size_t)(i + 1) + (size_t)n; }
static inline uint32_t peer_tagged_seed(int n, int i) { return (uint32_t)(n * 100 + i); }

/*
 * cycles: both sides sample their descriptors every PEER_CYCLES_SAMPLE cycles
 * (each sample must equal the first) and compare resident memory after
 * PEER_CYCLES_WARMUP cycles with the end: growth above PEER_CYCLES_RSS_SLACK
 * fails. 16 MiB is generous (allocator and page-cache noise) yet a leak of
 * one receive comm per cycle (over 100 KiB for tcp) passes it within 200 cycles.
 */
#define PEER_CYCLES_SAMPLE 1000
#define PEER_CYCLES_WARMUP 100
#define PEER_CYCLES_RSS_SLACK (16ll << 20)

/* tags-shared: message (GPU t, step s); two above tcp's 256 KiB striping threshold. */
#define PEER_TAGS_T 8
#define PEER_TAGS_STEPS 4
static inline int peer_tags_tag(int t) { return 7 * t + 1; }
static inline size_t peer_tags_size(int t, int s)
{
    return (t * 3 + s) % 9 == 2 ? 300 * PEER_KiB + (size_t)t
                                : 1 + ((size_t)(t * 131 + s * 977) * 7919u) % (32 * PEER_KiB);
}
static inline uint32_t peer_tags_seed(int t, int s) { return 0x7a00u + (uint32_t)(t * 16 + s); }

/* trunc: the first message is larger than the receive the test posts. */
#define PEER_TRUNC_SEND 4096
#define PEER_TRUNC_RECV 1024
#define PEER_TRUNC_NEXT 100
#define PEER_TRUNC_SEED1 0x7701u
#define PEER_TRUNC_SEED2 0x7702u

/* A large message, beyond what TCP socket buffers hold with the default settings. */
#define PEER_BIG (64 * PEER_MiB)
/*
 * The stall scenarios' message: beyond what socket buffers hold (this
 * kernel's autotuning tops out at 4 MiB send + 32 MiB receive per socket), so
 * it cannot finish while one side does not read. Its pages are never touched
 * beyond what moves, so it costs little memory.
 */
#define PEER_STALL_BYTES (256 * PEER_MiB)

/* many: message sizes and seeds. */
#define PEER_MANY_BIG 100000
static inline uint32_t peer_many_seed(int k) { return 500u + (uint32_t)k; }

/* inflight: what each side posts. */
#define PEER_INFLIGHT_SMALL PEER_MiB
#define PEER_INFLIGHT_NSMALL_RECV 7
#define PEER_INFLIGHT_NSMALL_SEND 3

/* send-close: message i, tag 0; all under PEER_CLOSED_MAX. */
#define PEER_CLOSED_COUNT 8
#define PEER_CLOSED_MAX (2 * PEER_KiB)
static inline size_t peer_closed_size(int i) { return 1 + 251 * (size_t)i; }
static inline uint32_t peer_closed_seed(int i) { return 0xc105u + (uint32_t)i; }

#endif /* PEER_SCENARIOS_H */

/*
 * Point-to-point through a net plugin, driven the way NCCL's proxy thread
 * drives it: one send comm and one receive comm per side (two connections),
 * buffers registered once, isend/irecv posted in order, the oldest request
 * tested until done, and a yield after every test that made no progress
 * (NCCL's progress loop yields when idle; --spin turns that off).
 *
 * Waits are bounded by timeout_ms. While a wait drags on (past
 * STB_P2P_PEER_CHECK_MS), the bootstrap socket is checked too, so a peer that
 * failed or died ends the wait with STRATA_ERR_REMOTE instead of a timeout.
 *
 * One thread per stb_p2p_t. Buffers belong to the caller and must outlive it.
 */
#ifndef STB_P2P_H
#define STB_P2P_H

#include <stddef.h>
#include <stdint.h>

#include "tools/lib/tool_boot.h"
#include "tools/lib/plugin_loader.h"
#include "strata/status.h"

#define STB_P2P_MAX_WINDOW STB_PLUGIN_MAX_REQUESTS
#define STB_P2P_PEER_CHECK_MS 100

typedef struct stb_p2p {
    stb_plugin_t *plugin;
    stb_boot_t *boot;        /* watched while waiting */
    int dev;
    int timeout_ms;
    int spin;                /* 1: never yield between tests */
    void *lcomm;
    void *scomm;
    void *rcomm;
    void *sbuf;              /* registered on scomm */
    void *rbuf;              /* registered on rcomm */
    void *smh;
    void *rmh;
    /* A request posted on the other comm while a wait is on one: tested on every idle poll
     * of that wait too (netperf_p2p.c, p2p_side_*). NULL: none. */
    void *side;
    size_t side_want;
    int side_done;
} stb_p2p_t;

/*
 * listen on dev, swap handles over the bootstrap, then call connect and
 * accept alternately until both comms exist (the non-blocking loop NCCL's
 * proxy runs). On failure everything opened is closed again.
 */
strata_status_t stb_p2p_open(stb_p2p_t *p2p, stb_plugin_t *plugin, stb_boot_t *boot, int dev,
                             int timeout_ms, int spin);

/* Registers sbuf on the send comm and rbuf on the receive comm (size bytes each). */
strata_status_t stb_p2p_reg(stb_p2p_t *p2p, void *sbuf, void *rbuf, size_t size);

/* Deregisters and closes send, receive and listen comms. */
void stb_p2p_close(stb_p2p_t *p2p);

/*
 * Ping-pong as in bench_raw.h: the initiator posts its receive, sends, and
 * times until the reply lands; the responder keeps one receive posted ahead.
 */
strata_status_t stb_p2p_pingpong(stb_p2p_t *p2p, int initiator, size_t size, int warmup,
                                 int iters, int check, double *rtt_us, uint64_t *wrong_p);

/*
 * Streaming with `window` messages in flight on each side (<= STB_P2P_MAX_WINDOW),
 * ended by a small ack from receiver to sender; timing as in bench_raw.h.
 */
strata_status_t stb_p2p_stream(stb_p2p_t *p2p, int sender, size_t size, int window, int warmup,
                               int count, int check, double *elapsed_us_p, uint64_t *wrong_p);

#endif /* STB_P2P_H */

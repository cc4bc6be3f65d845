/*
 * The peer process of test_ib_faults and test_ib_handshake: one end of an ib
 * connection that the test kills (SIGKILL) mid-transfer, or that kills itself
 * at a step of the handshake.
 *
 *   helper_ib_peer send DEV HANDLE-HEX [OPT]   connect to the test's listener, then
 *                                              send 1 MiB messages until killed
 *   helper_ib_peer recv DEV [OPT]              listen, print the handle in hex on
 *                                              stdout, accept, receive until killed
 *
 * Prints "ready" once its first message completed. Exit status 1 on error.
 *
 * Options, for the handshake's steps (test_ib_handshake). This program defines send() and
 * recv(), so the transport's calls on its side channel (transport/base/sock.c, linked in
 * statically) come here before the kernel; the shared libraries keep libc's. The test thus
 * stops the real handshake at any byte without knowing the wire's layout:
 *   --trace        prints "xfer out N" / "xfer in N" for every send and receive that
 *                  moved N > 0 bytes, and "connected" when the comm is handed out
 *   --budget=B     the side channel may move B bytes in all (both directions); the
 *                  call that would move more moves only what is left, and the next
 *                  call after the budget is spent kills this process (SIGKILL), as a
 *                  crash at that point of the handshake would
 *   --budget=-2    (recv) dies once the handle is printed, before it accepts
 * Peeks (MSG_PEEK) pass through uncounted: they move nothing.
 */
#define _GNU_SOURCE 1
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/ib/ib.h"
#include "util/time.h"

/* --budget: bytes the side channel may still move; HS_UNLIMITED: no limit. */
#define HS_UNLIMITED (-1LL)
#define HS_DIE_BEFORE_ACCEPT (-2LL)
static long long hs_budget = HS_UNLIMITED;
static bool hs_trace;

/* Clamps a transfer to the budget; a call with nothing left is this process's death. */
static size_t hs_clamp(size_t len)
{
    if (hs_budget < 0 || len == 0)
        return len;
    if (hs_budget == 0)
        kill(getpid(), SIGKILL);
    return len > (size_t)hs_budget ? (size_t)hs_budget : len;
}

static void hs_count(const char *dir, ssize_t moved)
{
    if (moved <= 0)
        return;
    if (hs_budget > 0)
        hs_budget -= moved;
    if (hs_trace) {
        printf("xfer %s %zd\n", dir, moved);
        fflush(stdout);
    }
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    len = hs_clamp(len);
    ssize_t r = syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
    hs_count("out", r);
    return r;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    if (flags & MSG_PEEK)
        return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
    len = hs_clamp(len);
    ssize_t r = syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
    hs_count("in", r);
    return r;
}

#define PEER_MSG (1u << 20)

static const stt_ops_t *ops = &stt_ib_ops;

static void peer_ok(strata_status_t status, const char *what)
{
    if (status != STRATA_OK) {
        fprintf(stderr, "helper_ib_peer: %s: %s\n", what, strata_status_str(status));
        exit(1);
    }
}

static void peer_wait(stt_req_t *req)
{
    int done = 0;
    while (!done)
        peer_ok(stt_test(req, &done, NULL), "test");
}

int main(int argc, char **argv)
{
    uint8_t handle[STT_HANDLE_SIZE];
    static uint8_t buf[PEER_MSG];
    stt_comm_t *comm = NULL;
    int ndev = 0;

    if (argc < 3 || (strcmp(argv[1], "send") == 0 && argc < 4)) {
        fprintf(stderr, "usage: helper_ib_peer send DEV HANDLE-HEX | recv DEV\n");
        return 2;
    }
    int dev = atoi(argv[2]);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--trace") == 0)
            hs_trace = true;
        else if (strncmp(argv[i], "--budget=", 9) == 0)
            hs_budget = atoll(argv[i] + 9);
    }
    peer_ok(stt_init(ops), "init");
    peer_ok(stt_devices(ops, &ndev), "devices");
    if (dev >= ndev)
        dev = 0;
    bool send = strcmp(argv[1], "send") == 0;
    if (send) {
        for (int i = 0; i < STT_HANDLE_SIZE; i++)
            sscanf(argv[3] + 2 * i, "%2hhx", &handle[i]);
        while (comm == NULL)
            peer_ok(stt_connect(ops, dev, handle, NULL, &comm), "connect");
    } else {
        stt_listen_t *l;
        peer_ok(stt_listen(ops, dev, handle, &l), "listen");
        for (int i = 0; i < STT_HANDLE_SIZE; i++)
            printf("%02x", handle[i]);
        printf("\n");
        fflush(stdout);
        if (hs_budget == HS_DIE_BEFORE_ACCEPT)
            kill(getpid(), SIGKILL);
        while (comm == NULL)
            peer_ok(stt_accept(l, &comm), "accept");
    }
    if (hs_trace) {
        printf("connected\n");
        fflush(stdout);
    }
    for (unsigned n = 0;; n++) {
        stt_req_t *req = NULL;
        void *data[1] = {buf};
        size_t size = PEER_MSG;
        int tag = 0;
        while (req == NULL) {
            if (send)
                peer_ok(stt_isend(comm, buf, size, tag, NULL, &req), "isend");
            else
                peer_ok(stt_irecv(comm, 1, data, &size, &tag, NULL, &req), "irecv");
        }
        peer_wait(req);
        if (n == 0) {
            printf("ready\n");
            fflush(stdout);
        }
    }
}

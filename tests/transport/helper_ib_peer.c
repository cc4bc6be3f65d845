/*
 * The peer process of test_ib_faults: one end of an ib connection that the
 * test kills (SIGKILL) mid-transfer.
 *
 *   helper_ib_peer send DEV HANDLE-HEX   connect to the test's listener, then
 *                                        send 1 MiB messages until killed
 *   helper_ib_peer recv DEV              listen, print the handle in hex on
 *                                        stdout, accept, receive until killed
 *
 * Prints "ready" once its first message completed. Exit status 1 on error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/ib.h"
#include "util/time.h"

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
        while (comm == NULL)
            peer_ok(stt_accept(l, &comm), "accept");
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

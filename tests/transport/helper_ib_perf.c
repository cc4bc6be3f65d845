/*
 * A small in-process measurement of the ib transport, printed next to
 * perftest's ib_write_bw / ib_write_lat by scripts/softroce/guest-test-rdma.sh.
 * One thread drives both ends through the transport contract (registered
 * buffers, as NCCL does):
 *
 *   bandwidth: `window` sends and receives of `size` bytes kept in flight,
 *              `iters` messages in all; MB/s = iters * size / time (10^6 B/s)
 *   latency:   8-byte ping-pong over two connections (A->B, B->A); one way =
 *              round trip / 2, median of `iters` round trips
 *
 *   helper_ib_perf [listen-dev connect-dev [size [iters [window]]]]
 *
 * Exit status 0 on success, 1 on any transport error, 77 without a device.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/ib.h"
#include "util/param.h"
#include "util/time.h"

#define PERF_MAX_WINDOW 32
#define PERF_LAT_BYTES 8
#define PERF_DEADLINE_NS (300ull * 1000000000ull)

static const stt_ops_t *ops = &stt_ib_ops;

typedef struct perf_pair {
    stt_listen_t *listen;
    stt_comm_t *send;
    stt_comm_t *recv;
    uint8_t handle[STT_HANDLE_SIZE];
} perf_pair_t;

static int perf_check(strata_status_t status, const char *what)
{
    if (status != STRATA_OK) {
        fprintf(stderr, "helper_ib_perf: %s: %s\n", what, strata_status_str(status));
        exit(1);
    }
    return 0;
}

static void perf_open(perf_pair_t *p, int ldev, int cdev)
{
    uint64_t start = stu_time_ns();

    memset(p, 0, sizeof(*p));
    perf_check(stt_listen(ops, ldev, p->handle, &p->listen), "listen");
    while (p->send == NULL || p->recv == NULL) {
        if (p->send == NULL)
            perf_check(stt_connect(ops, cdev, p->handle, NULL, &p->send), "connect");
        if (p->recv == NULL)
            perf_check(stt_accept(p->listen, &p->recv), "accept");
        if (stu_time_ns() - start > PERF_DEADLINE_NS)
            perf_check(STRATA_ERR_TIMEOUT, "connecting");
    }
}

static void perf_close(perf_pair_t *p)
{
    stt_close_send(p->send);
    stt_close_recv(p->recv);
    stt_close_listen(p->listen);
}

/* Tests until done; returns when the request finished. */
static void perf_wait(stt_req_t *req, const char *what)
{
    int done = 0;
    uint64_t start = stu_time_ns();

    while (!done) {
        perf_check(stt_test(req, &done, NULL), what);
        if (stu_time_ns() - start > PERF_DEADLINE_NS)
            perf_check(STRATA_ERR_TIMEOUT, what);
    }
}

static stt_req_t *perf_post(perf_pair_t *p, bool send, void *buf, size_t size, void *mh)
{
    stt_req_t *req = NULL;
    int tag = 0;
    void *data[1] = {buf}, *mhs[1] = {mh};

    while (req == NULL) {
        if (send)
            perf_check(stt_isend(p->send, buf, size, tag, mh, &req), "isend");
        else
            perf_check(stt_irecv(p->recv, 1, data, &size, &tag, mhs, &req), "irecv");
    }
    return req;
}

static double perf_bandwidth(perf_pair_t *p, size_t size, int iters, int window)
{
    uint8_t *sbuf = calloc(1, size), *rbuf = calloc(1, size);
    stt_req_t *sreq[PERF_MAX_WINDOW], *rreq[PERF_MAX_WINDOW];
    void *smh, *rmh;

    if (sbuf == NULL || rbuf == NULL)
        perf_check(STRATA_ERR_NO_MEMORY, "buffers");
    perf_check(stt_reg_mr(p->send, sbuf, size, STT_PTR_HOST, &smh), "reg_mr");
    perf_check(stt_reg_mr(p->recv, rbuf, size, STT_PTR_HOST, &rmh), "reg_mr");
    /* warm-up: one full window */
    for (int w = 0; w < window; w++) {
        rreq[w] = perf_post(p, false, rbuf, size, rmh);
        sreq[w] = perf_post(p, true, sbuf, size, smh);
    }
    for (int w = 0; w < window; w++) {
        perf_wait(sreq[w], "send");
        perf_wait(rreq[w], "receive");
    }
    uint64_t t0 = stu_time_ns();
    for (int i = 0; i < iters + window; i++) {
        int w = i % window;
        if (i >= window) {
            perf_wait(sreq[w], "send");
            perf_wait(rreq[w], "receive");
        }
        if (i < iters) {
            rreq[w] = perf_post(p, false, rbuf, size, rmh);
            sreq[w] = perf_post(p, true, sbuf, size, smh);
        }
    }
    double secs = (double)(stu_time_ns() - t0) / 1e9;
    stt_dereg_mr(p->send, smh);
    stt_dereg_mr(p->recv, rmh);
    free(sbuf);
    free(rbuf);
    return (double)iters * (double)size / secs / 1e6;
}

static int perf_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double perf_latency(perf_pair_t *ab, perf_pair_t *ba, int iters)
{
    uint8_t a[PERF_LAT_BYTES] = {1}, b[PERF_LAT_BYTES] = {0};
    double *rtt = calloc((size_t)iters, sizeof(*rtt));
    void *amh_s, *amh_r, *bmh_s, *bmh_r;

    if (rtt == NULL)
        perf_check(STRATA_ERR_NO_MEMORY, "samples");
    perf_check(stt_reg_mr(ab->send, a, sizeof(a), STT_PTR_HOST, &amh_s), "reg_mr");
    perf_check(stt_reg_mr(ba->recv, a, sizeof(a), STT_PTR_HOST, &amh_r), "reg_mr");
    perf_check(stt_reg_mr(ab->recv, b, sizeof(b), STT_PTR_HOST, &bmh_r), "reg_mr");
    perf_check(stt_reg_mr(ba->send, b, sizeof(b), STT_PTR_HOST, &bmh_s), "reg_mr");
    for (int i = -10; i < iters; i++) {
        uint64_t t0 = stu_time_ns();
        stt_req_t *r = perf_post(ab, false, b, sizeof(b), bmh_r);
        stt_req_t *s = perf_post(ab, true, a, sizeof(a), amh_s);
        perf_wait(r, "ping receive");
        stt_req_t *r2 = perf_post(ba, false, a, sizeof(a), amh_r);
        stt_req_t *s2 = perf_post(ba, true, b, sizeof(b), bmh_s);
        perf_wait(r2, "pong receive");
        perf_wait(s, "ping send");
        perf_wait(s2, "pong send");
        if (i >= 0)
            rtt[i] = (double)(stu_time_ns() - t0) / 1e3;
    }
    qsort(rtt, (size_t)iters, sizeof(*rtt), perf_cmp);
    double median = rtt[iters / 2];
    stt_dereg_mr(ab->send, amh_s);
    stt_dereg_mr(ba->recv, amh_r);
    stt_dereg_mr(ab->recv, bmh_r);
    stt_dereg_mr(ba->send, bmh_s);
    free(rtt);
    return median / 2;
}

int main(int argc, char **argv)
{
    int ndev = 0;
    int ldev = argc > 1 ? atoi(argv[1]) : 0;
    int cdev = argc > 2 ? atoi(argv[2]) : 0;
    size_t size = argc > 3 ? strtoull(argv[3], NULL, 0) : 65536;
    int iters = argc > 4 ? atoi(argv[4]) : 1000;
    int window = argc > 5 ? atoi(argv[5]) : 16;

    if (window < 1 || window > PERF_MAX_WINDOW || iters < 1 || size == 0) {
        fprintf(stderr, "helper_ib_perf: bad size, iteration count or window (1..%d)\n",
                PERF_MAX_WINDOW);
        return 2;
    }
    if (stt_probe(ops) != STRATA_OK || stt_init(ops) != STRATA_OK ||
        stt_devices(ops, &ndev) != STRATA_OK || ndev == 0) {
        fprintf(stderr, "helper_ib_perf: no ib device here\n");
        return 77;
    }
    if (ldev < 0 || ldev >= ndev || cdev < 0 || cdev >= ndev) {
        fprintf(stderr, "helper_ib_perf: devices %d and %d, but only %d exist\n", ldev, cdev,
                ndev);
        return 2;
    }
    stt_props_t lp, cp;
    stt_get_props(ops, ldev, &lp);
    stt_get_props(ops, cdev, &cp);
    perf_pair_t ab, ba;
    perf_open(&ab, ldev, cdev);
    perf_open(&ba, cdev, ldev);
    double mbps = perf_bandwidth(&ab, size, iters, window);
    printf("strata ib %s->%s: bandwidth %zu B x %d (window %d): %.1f MB/s\n", cp.name, lp.name,
           size, iters, window, mbps);
    double lat = perf_latency(&ab, &ba, iters);
    printf("strata ib %s->%s: latency %d B ping-pong, median one way: %.2f us\n", cp.name,
           lp.name, PERF_LAT_BYTES, lat);
    perf_close(&ab);
    perf_close(&ba);
    stt_fini(ops);
    return 0;
}

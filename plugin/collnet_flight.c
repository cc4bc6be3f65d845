/*
 * The CollNet executor's flights (collnet_exec.h): the transport requests in flight, kept in
 * posting order, tested oldest first once per connection and direction per pass, and their
 * completions handed to their units.
 */
#include "plugin/collnet_exec.h"
#include "util/time.h"

/* Appends a transport request, in posting order. */
void stp_cn_flight_add(stp_cn_comm_t *c, stt_req_t *req, int run, int u, int is_send,
                       int peer, int link, size_t len)
{
    c->flights[c->nflights++] = (stp_cn_flight_t){req, run, u, is_send, peer, link, len};
}

static int flight_done(stp_cn_comm_t *c, const stp_cn_flight_t *f, size_t got)
{
    stp_cn_run_t *r = &c->runs[f->run];

    r->last_ns = stu_time_ns();
    if (f->unit < 0) {
        r->stage_done++;                           /* a self-link staging transfer */
    } else if (f->is_send) {
        r->sdone[f->unit] = 1;
        stp_cn_unit_settle(r, f->unit);
        if (r->rstate[f->unit] == STP_CN_R_ARRIVED)  /* a REDUCE_OUT waiting for it */
            stp_cn_unit_reduce(r, f->unit);
    } else {
        if (got != f->len) {
            stp_cn_exec_fail(c, STRATA_ERR_REMOTE, f->peer, "a piece of the wrong size"
                             " (protocol broken) from", r->req->seq, f->unit / r->npieces);
            return 0;
        }
        r->rstate[f->unit] = STP_CN_R_ARRIVED;
        stp_cn_unit_reduce(r, f->unit);
    }
    return 1;
}

/*
 * Tests the transport requests in flight, oldest first, and completes units. A connection's
 * requests finish in posting order (its messages arrive in order), and testing one progresses
 * the whole comm (the transport contract), so once a request is found unfinished the later
 * ones of its comm wait for the next pass: a pass costs a system call or two per connection,
 * not one per piece in flight (up to STP_CN_MAX_INFLIGHT). A later request that finished
 * first (a transport may complete a small message before a striped one) is seen in the pass
 * after the older one, never lost.
 */
void stp_cn_flights_test(stp_cn_comm_t *c, int *changed)
{
    size_t sizes[STT_MAX_RECVS];
    const unsigned pass = ++c->pass;
    int keep = 0, i = 0;

    for (; i < c->nflights && c->failed == STRATA_OK; i++) {
        const stp_cn_flight_t f = c->flights[i];
        stp_cn_link_t *lk = &c->links[f.link];
        unsigned *mark = f.is_send ? &lk->send_mark : &lk->recv_mark;
        int done = 0;

        if (*mark == pass) {
            c->flights[keep++] = f;                    /* an older one of its comm is out */
            continue;
        }
        sizes[0] = 0;
        strata_status_t status = stt_test(f.req, &done, sizes);
        if (status != STRATA_OK) {
            stp_cn_exec_fail(c, status, f.peer, f.is_send ? "sending to" : "receiving from",
                             c->runs[f.run].req->seq, f.unit / c->runs[f.run].npieces);
            i++;                                       /* the request is released */
            break;
        }
        if (!done) {
            *mark = pass;
            c->flights[keep++] = f;
            continue;
        }
        *changed = 1;                                  /* the request is released */
        if (!flight_done(c, &f, sizes[0])) {
            i++;
            break;
        }
    }
    while (i < c->nflights)                            /* after a failure: the untested */
        c->flights[keep++] = c->flights[i++];
    c->nflights = keep;
}

/*
 * Posts a run's two self-link transfers, GPU to host (IN) or host to GPU (OUT): the send, then
 * the receive, so that runs' transfers pair up in order on the self link. 1 when both are
 * posted, 0 when the transport had no slot (try again).
 */

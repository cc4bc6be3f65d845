/*
 * Per-member counters of an ib comm (stt_member_stats_t in transport/transport.h), written
 * by the comm's thread where requests complete (test) and where members fail:
 *
 *   sender    each completed send adds the bytes each member's QPs wrote for it in the
 *             plan that landed (the first post, or the failover's replay, which
 *             replaces the lost member's share: stt_ib_count_plan), and one message on
 *             every member that carried a part of it (a 0-byte send: its immediate's)
 *   receiver  the QPs that delivered a receive's immediates carried it: each buffer's
 *             bytes are split over them as the sender's striping splits a message over
 *             that many QPs (one QP: all of it), one message on each member with a part.
 *             Exact for a single-buffer receive outside a failover; a grouped receive
 *             whose sends took different QPs, or a replay (whose immediates go on every
 *             live QP), is attributed by the same rule, so the sum stays exact
 *   both      errors: the failure of one of the member's QPs (a loss, seen here or
 *             reported by the peer, or a completion error that failed the comm); lost: 1
 *             once its traffic moved to the other members
 *
 * Once every request completed, the members' bytes add up to the comm's payload.
 */
#include <string.h>

#include "transport/ib/ib_internal.h"

void stt_ib_count_plan(const stt_ib_conn_t *conn, stt_ib_sreq_t *req, const int *map, int nlive,
                       const stt_ib_stripe_t *plan)
{
    memset(req->mbytes, 0, sizeof(req->mbytes));
    req->mcarried = 0;
    for (int k = 0; k < nlive; k++) {
        int m = conn->qps[map[k]].member;
        req->mbytes[m] += plan->len[k];
        if (plan->qmask & (1u << k))
            req->mcarried |= (uint8_t)(1u << m);
    }
}

void stt_ib_count_send(stt_ib_send_t *sc, const stt_ib_sreq_t *req)
{
    stt_member_stats_t *ms = sc->conn.head.base.members;

    for (int m = 0; m < sc->conn.nmembers; m++) {
        if (req->mbytes[m] != 0)
            stt_member_add(&ms[m].bytes, req->mbytes[m]);
        if (req->mcarried & (1u << m))
            stt_member_add(&ms[m].msgs, 1);
    }
}

void stt_ib_count_recv(stt_ib_recv_t *rc, const stt_ib_rreq_t *req)
{
    stt_ib_conn_t *conn = &rc->conn;
    stt_member_stats_t *ms = conn->head.base.members;
    int map[STT_IB_MAX_QPS], n = 0;
    stt_ib_stripe_t plan;

    for (int q = 0; q < conn->nqps; q++)
        if (req->qps_imm & (1u << q))
            map[n++] = q;
    if (n == 0)
        return;                           /* nothing delivered it (cannot complete so) */
    for (int i = 0; i < req->slot.n; i++) {
        uint64_t mbytes[STT_IB_MAX_MEMBERS] = {0};
        uint32_t carried = 0;
        /* split_min 0: striped over the n QPs whenever n > 1 and there are bytes */
        stt_ib_stripe_plan(req->got[i], n, 0, 0, &plan);
        for (int k = 0; k < n; k++) {
            int m = conn->qps[map[k]].member;
            mbytes[m] += plan.len[k];
            if (plan.qmask & (1u << k))
                carried |= 1u << m;
        }
        for (int m = 0; m < conn->nmembers; m++) {
            if (mbytes[m] != 0)
                stt_member_add(&ms[m].bytes, mbytes[m]);
            if (carried & (1u << m))
                stt_member_add(&ms[m].msgs, 1);
        }
    }
}

void stt_ib_count_error(stt_ib_conn_t *conn, uint32_t members, bool lost)
{
    stt_member_stats_t *ms = conn->head.base.members;

    for (int m = 0; m < conn->nmembers; m++) {
        if (!(members & (1u << m)))
            continue;
        stt_member_add(&ms[m].errors, 1);
        if (lost)
            __atomic_store_n(&ms[m].lost, 1, __ATOMIC_RELAXED);
    }
}

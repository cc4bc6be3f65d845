/*
 * poll_fds of the UCX transport: each lane's worker's event descriptor (one
 * lane, or one per member of a virtual device)
 * (ucp_worker_get_efd, UCP_FEATURE_WAKEUP) armed with ucp_worker_arm, plus
 * the side-channel socket with POLLIN so that the peer's close wakes the
 * caller too.
 *
 * ucp_worker_arm answers UCS_ERR_BUSY when events are already waiting; then,
 * and for a failed comm, one whose peer closed (its socket stays readable),
 * a worker without a descriptor, or an array too small for both, the answer
 * is 0 (the caller naps and calls test()): a partial set could sleep through
 * the event that matters. The side channel is peeked first (one recv, paid
 * only by a caller about to sleep), so a closed peer is seen here rather than
 * leaving a descriptor that stays readable. The worker is progressed before
 * arming, as UCP requires; when that finds events the answer is 0 as well: the
 * completions they bring are reported by the next test(), which must come
 * before any sleep.
 */
#include "transport/ucx/ucx_internal.h"

int stt_ucx_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    stt_ucx_conn_t *conn = (stt_ucx_conn_t *)comm;

    if (conn == NULL || conn->head.base.ops != &stt_ucx_ops || fds == NULL ||
        max < conn->nlanes + 1 || conn->head.failed != STRATA_OK || conn->peer_eof)
        return 0;
    for (int i = 0; i < conn->nlanes; i++)
        if (conn->lane[i].efd < 0)
            return 0;
    stt_ucx_conn_check_peer(conn);
    if (conn->head.failed != STRATA_OK || conn->peer_eof)
        return 0;
    /* Events found now may complete requests only the next test() reports: nothing to
     * sleep on until then (no sleep may hide a completion). */
    if (stt_ucx_conn_progress_lanes(conn) != 0)
        return 0;
    /* Every lane's worker is armed (one per member of a virtual device). */
    for (int i = 0; i < conn->nlanes; i++) {
        if (stt_ucx_lib.worker_arm(conn->lane[i].worker) != UCS_OK)
            return 0;
        fds[i] = (struct pollfd){.fd = conn->lane[i].efd, .events = POLLIN};
    }
    fds[conn->nlanes] = (struct pollfd){.fd = conn->fd, .events = POLLIN};
    return conn->nlanes + 1;
}

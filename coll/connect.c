/*
 * Connections between ranks. At init every rank connects to each peer its
 * algorithms use (flat ring and binomial neighbours at distance 2^k, the
 * recursive-doubling partners, rank-order neighbours, and the same at node
 * distance 2^k on its rail). The sets are symmetric, so each connect meets an
 * accept. An accepted connection learns its peer from a first 8-byte message.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/comm.h"
#include "util/log.h"

#define CONNECT_IDENT_MAGIC 0x53544944u    /* "STID" */

typedef struct ident {
    uint32_t magic;
    int32_t rank;
} ident_t;

static void peer_add(int *peers, int *n, int max, int me, int p)
{
    if (p == me || *n >= max)
        return;
    for (int i = 0; i < *n; i++)
        if (peers[i] == p)
            return;
    peers[(*n)++] = p;
}

static int int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int stc_peer_set(const strata_comm_t *comm, int me, int *peers, int max)
{
    const int P = comm->ctx.nranks;
    const int *flat = comm->flat_ranks;
    int n = 0, fp = 0;

    for (int i = 0; i < P; i++)
        if (flat[i] == me)
            fp = i;
    for (int d = 1; d < P; d *= 2) {
        peer_add(peers, &n, max, me, flat[(fp + d) % P]);
        peer_add(peers, &n, max, me, flat[((fp - d) % P + P) % P]);
    }
    int p2 = 1;
    while (p2 * 2 <= P)
        p2 *= 2;
    int r = P - p2, q;
    if (fp < 2 * r) {
        peer_add(peers, &n, max, me, flat[fp ^ 1]);
        q = (fp % 2) ? fp / 2 : -1;
    } else {
        q = fp - r;
    }
    for (int mask = 1; q >= 0 && mask < p2; mask <<= 1) {
        int t = q ^ mask;
        peer_add(peers, &n, max, me, flat[t < r ? 2 * t + 1 : t + r]);
    }
    peer_add(peers, &n, max, me, (me + 1) % P);
    peer_add(peers, &n, max, me, (me + P - 1) % P);
    /* recursive-doubling allgather works in rank order (block i is rank i's) */
    if ((P & (P - 1)) == 0)
        for (int m = 1; m < P; m <<= 1)
            peer_add(peers, &n, max, me, me ^ m);
    if (comm->ctx.uniform) {
        const int N = comm->ctx.nnodes, L = comm->ctx.local_size;
        const int node = comm->node_of[me], local = comm->local_of[me];
        for (int d = 1; d < N; d *= 2) {
            peer_add(peers, &n, max, me, comm->rank_of[(size_t)((node + d) % N) * L + local]);
            peer_add(peers, &n, max, me,
                     comm->rank_of[(size_t)(((node - d) % N + N) % N) * L + local]);
        }
    }
    qsort(peers, (size_t)n, sizeof(int), int_cmp);
    return n;
}

typedef struct pending_recv {
    stt_comm_t *comm;
    stt_req_t *req;
    ident_t msg;
} pending_recv_t;

typedef struct pending_send {
    int peer;
    stt_req_t *req;
    int state;                         /* 0 connecting, 1 ident posted, 2 done */
    ident_t msg;
    /* the transport reads (and updates) its handle in place as its own struct: keep the
     * bytes aligned for it (UBSan: a misaligned stt_tcp_handle_t at offset 4 mod 8) */
    _Alignas(16) char handle[STT_HANDLE_SIZE];
} pending_send_t;

/* One pass over the outgoing connections; counts the finished ones. */
static strata_status_t connect_sends(strata_comm_t *comm, pending_send_t *ps, int n, int *done)
{
    stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    strata_status_t status;

    for (int i = 0; i < n; i++) {
        pending_send_t *s = &ps[i];
        if (s->state == 0) {
            stt_comm_t *c = NULL;
            if ((status = stt_connect(comm->ops, comm->dev, s->handle, &cfg, &c)) != STRATA_OK)
                return sta_ctx_fail(&comm->ctx, status, "connecting to rank %d", s->peer);
            if (c != NULL) {
                comm->ctx.peers[s->peer].send = c;
                s->state = 1;
            }
        }
        if (s->state == 1 && s->req == NULL) {
            status = stt_isend(comm->ctx.peers[s->peer].send, &s->msg, sizeof(s->msg), 0, NULL,
                               &s->req);
            if (status != STRATA_OK)
                return sta_ctx_fail(&comm->ctx, status, "greeting rank %d", s->peer);
        }
        if (s->state == 1 && s->req != NULL) {
            int d = 0;
            if ((status = stt_test(s->req, &d, NULL)) != STRATA_OK)
                return sta_ctx_fail(&comm->ctx, status, "greeting rank %d", s->peer);
            if (d)
                s->state = 2;
        }
        *done += s->state == 2;
    }
    return STRATA_OK;
}

/* Accepts and identifies incoming connections; counts the identified ones. */
static strata_status_t connect_recvs(strata_comm_t *comm, pending_recv_t *pr, int *naccepted,
                                     int max, const int *peers, int npeers, int *done)
{
    strata_status_t status;
    stt_comm_t *c = NULL;

    if (*naccepted < max) {
        if ((status = stt_accept(comm->listen, &c)) != STRATA_OK)
            return sta_ctx_fail(&comm->ctx, status, "accepting a connection");
        if (c != NULL)
            pr[(*naccepted)++].comm = c;
    }
    for (int i = 0; i < *naccepted; i++) {
        pending_recv_t *r = &pr[i];
        if (r->comm == NULL)
            continue;   /* identified already */
        if (r->req == NULL) {
            void *buf = &r->msg;
            size_t size = sizeof(r->msg);
            int tag = 0;
            status = stt_irecv(r->comm, 1, &buf, &size, &tag, NULL, &r->req);
            if (status != STRATA_OK)
                return sta_ctx_fail(&comm->ctx, status, "waiting for a greeting");
            if (r->req == NULL)
                continue;
        }
        int d = 0;
        size_t got = 0;
        if ((status = stt_test(r->req, &d, &got)) != STRATA_OK)
            return sta_ctx_fail(&comm->ctx, status, "receiving a greeting");
        if (!d)
            continue;
        int from = r->msg.rank;
        int expected = 0;
        for (int k = 0; k < npeers; k++)
            expected |= peers[k] == from;
        if (got != sizeof(r->msg) || r->msg.magic != CONNECT_IDENT_MAGIC || !expected ||
            comm->ctx.peers[from].recv != NULL)
            return sta_ctx_fail(&comm->ctx, STRATA_ERR_REMOTE,
                                "unexpected greeting (%zu bytes, magic %x, rank %d)", got,
                                r->msg.magic, from);
        comm->ctx.peers[from].recv = r->comm;
        r->comm = NULL;
        (*done)++;
    }
    return STRATA_OK;
}

strata_status_t stc_connect_peers(strata_comm_t *comm, const char *handles)
{
    const int P = comm->ctx.nranks;
    strata_status_t status = STRATA_OK;
    int peers[P > 1 ? P : 1];
    int npeers = stc_peer_set(comm, comm->ctx.rank, peers, P);
    pending_send_t *ps = calloc((size_t)npeers + 1, sizeof(*ps));
    pending_recv_t *pr = calloc((size_t)npeers + 1, sizeof(*pr));
    int naccepted = 0, recvs_done = 0;
    sta_backoff_t b;

    if (ps == NULL || pr == NULL) {
        status = STRATA_ERR_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < npeers; i++) {
        ps[i].peer = peers[i];
        ps[i].msg.magic = CONNECT_IDENT_MAGIC;
        ps[i].msg.rank = comm->ctx.rank;
        memcpy(ps[i].handle, handles + (size_t)peers[i] * STT_HANDLE_SIZE, STT_HANDLE_SIZE);
    }
    sta_backoff_start(&b, &comm->ctx);
    for (;;) {
        int sends_done = 0;
        if ((status = connect_sends(comm, ps, npeers, &sends_done)) != STRATA_OK)
            break;
        status = connect_recvs(comm, pr, &naccepted, npeers, peers, npeers, &recvs_done);
        if (status != STRATA_OK || (sends_done == npeers && recvs_done == npeers))
            break;
        if (sta_backoff_step(&b) != STRATA_OK) {
            status = sta_ctx_fail(&comm->ctx, STRATA_ERR_TIMEOUT, "connections to %d peers: "
                                  "%d outgoing and %d incoming ready at the timeout", npeers,
                                  sends_done, recvs_done);
            break;
        }
    }
    /* Accepted connections never identified are closed here; identified ones belong to ctx. */
    for (int i = 0; i < naccepted; i++)
        if (pr[i].comm != NULL)
            stt_close_recv(pr[i].comm);
out:
    free(ps);
    free(pr);
    return status;
}

void stc_disconnect_peers(strata_comm_t *comm)
{
    if (comm->ctx.peers == NULL)
        return;
    for (int i = 0; i < comm->ctx.nranks; i++) {
        if (comm->ctx.peers[i].send != NULL)
            stt_close_send(comm->ctx.peers[i].send);
        if (comm->ctx.peers[i].recv != NULL)
            stt_close_recv(comm->ctx.peers[i].recv);
        comm->ctx.peers[i].send = comm->ctx.peers[i].recv = NULL;
    }
}

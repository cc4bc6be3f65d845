/*
 * Connections between ranks. At init every rank connects to each peer its
 * algorithms use (flat ring and binomial neighbours at distance 2^k, the
 * recursive-doubling partners, rank-order neighbours, and the same at node
 * distance 2^k on its rail). The sets are symmetric, so each connect meets an
 * accept.
 *
 * An accepted connection learns its peer from a first message of
 * CONNECT_IDENT_BYTES: magic u32 "STI2" | rank i32 | token [32], the token
 * proving the sender is that rank of this communicator (coll/boot_wire.h:
 * an HMAC under the job key over the communicator's session and both ranks).
 * A connection whose first message is anything else (a stranger who learnt a
 * handle, a replay, a rank already connected) is closed and accept goes on;
 * it never fails init. Unidentified connections are bounded
 * (CONNECT_PENDING_EXTRA beyond the peers expected), and one idle past
 * CONNECT_IDENT_NS gives its slot to the next connection.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/comm.h"
#include "util/le.h"
#include "util/log.h"
#include "util/time.h"

#define CONNECT_IDENT_MAGIC 0x32495453u /* "STI2" as bytes on the wire */
#define CONNECT_IDENT_BYTES (8 + STC_BOOT_MAC_BYTES)
/* Unidentified connections held beyond the expected peers: strangers cannot take them all. */
#define CONNECT_PENDING_EXTRA 16
/* A peer sends its ident right after connecting; an idle one past this yields its slot. */
#define CONNECT_IDENT_NS 1000000000ull
/* Rejected connections logged one by one; later ones are only counted. */
#define CONNECT_WARN_MAX 8

typedef struct ident {
    uint8_t bytes[CONNECT_IDENT_BYTES];
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
    stt_comm_t *comm; /* NULL: a free slot */
    stt_req_t *req;
    uint64_t since;
    ident_t msg;
} pending_recv_t;

/* The incoming side: a bounded table of unidentified connections. */
typedef struct recv_side {
    pending_recv_t *slots;
    int nslots;
    int done; /* identified connections */
    int rejected;
} recv_side_t;

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

static void ident_encode(const strata_comm_t *comm, int to, ident_t *msg)
{
    stu_le_put32(msg->bytes, CONNECT_IDENT_MAGIC);
    stu_le_put32(msg->bytes + 4, (uint32_t)comm->ctx.rank);
    stc_boot_conn_token(&comm->boot, comm->ctx.rank, to, msg->bytes + 8);
}

/* The rank an ident proves, or -1 with *why set. */
static int ident_check(const strata_comm_t *comm, const ident_t *msg, size_t got,
                       const int *peers, int npeers, const char **why)
{
    uint8_t want[STC_BOOT_MAC_BYTES];
    int from = (int32_t)stu_le_get32(msg->bytes + 4);
    int expected = 0;

    if (got != CONNECT_IDENT_BYTES || stu_le_get32(msg->bytes) != CONNECT_IDENT_MAGIC) {
        *why = "its first message is not a rank's greeting";
        return -1;
    }
    for (int k = 0; k < npeers; k++)
        expected |= peers[k] == from;
    if (!expected) {
        *why = "it claims a rank this rank does not connect with";
        return -1;
    }
    stc_boot_conn_token(&comm->boot, from, comm->ctx.rank, want);
    if (!stu_mac_equal(want, msg->bytes + 8, sizeof(want))) {
        *why = "its greeting does not prove the job secret";
        return -1;
    }
    if (comm->ctx.peers[from].recv != NULL) {
        *why = "its rank is connected already (a replay?)";
        return -1;
    }
    return from;
}

/* Closes an unidentified connection and frees its slot. */
static void recv_drop(recv_side_t *rs, pending_recv_t *r, const char *why)
{
    if (why != NULL && rs->rejected++ < CONNECT_WARN_MAX)
        STU_WARN("connect: closed an incoming connection: %s%s", why,
                 rs->rejected == CONNECT_WARN_MAX ? " (further ones are only counted)" : "");
    stt_close_recv(r->comm); /* releases a request still posted on it */
    memset(r, 0, sizeof(*r));
}

/* A free slot, or the oldest slot idle past CONNECT_IDENT_NS made free; NULL if none. */
static pending_recv_t *recv_slot(recv_side_t *rs, uint64_t now)
{
    pending_recv_t *oldest = NULL;
    for (int i = 0; i < rs->nslots; i++) {
        pending_recv_t *r = &rs->slots[i];
        if (r->comm == NULL)
            return r;
        if (oldest == NULL || r->since < oldest->since)
            oldest = r;
    }
    if (oldest == NULL || now - oldest->since < CONNECT_IDENT_NS)
        return NULL;
    recv_drop(rs, oldest, "no greeting within a second while others waited");
    return oldest;
}

/* Progresses one unidentified connection; it is identified, dropped, or still waiting. */
static strata_status_t recv_progress(strata_comm_t *comm, recv_side_t *rs, pending_recv_t *r,
                                     const int *peers, int npeers)
{
    strata_status_t status;
    const char *why = NULL;

    if (r->req == NULL) {
        void *buf = &r->msg;
        size_t size = sizeof(r->msg);
        int tag = 0;
        status = stt_irecv(r->comm, 1, &buf, &size, &tag, NULL, &r->req);
        if (status != STRATA_OK) {
            recv_drop(rs, r, "posting the receive of its greeting failed");
            return STRATA_OK;
        }
        if (r->req == NULL)
            return STRATA_OK;
    }
    int d = 0;
    size_t got = 0;
    if ((status = stt_test(r->req, &d, &got)) != STRATA_OK) {
        r->req = NULL; /* released by the failed test */
        recv_drop(rs, r,
                  status == STRATA_ERR_TRUNCATED ? "its first message is too long"
                                                 : "it failed before its greeting");
        return STRATA_OK;
    }
    if (!d)
        return STRATA_OK;
    r->req = NULL;
    int from = ident_check(comm, &r->msg, got, peers, npeers, &why);
    if (from < 0) {
        recv_drop(rs, r, why);
        return STRATA_OK;
    }
    comm->ctx.peers[from].recv = r->comm;
    memset(r, 0, sizeof(*r));
    rs->done++;
    return STRATA_OK;
}

/* Accepts and identifies incoming connections. */
static strata_status_t connect_recvs(strata_comm_t *comm, recv_side_t *rs, const int *peers,
                                     int npeers)
{
    strata_status_t status;
    uint64_t now = stu_time_ns();

    for (pending_recv_t *slot; rs->done < npeers && (slot = recv_slot(rs, now)) != NULL;) {
        stt_comm_t *c = NULL;
        if ((status = stt_accept(comm->listen, &c)) != STRATA_OK)
            return sta_ctx_fail(&comm->ctx, status, "accepting a connection");
        if (c == NULL)
            break;
        slot->comm = c;
        slot->since = now;
    }
    for (int i = 0; i < rs->nslots; i++)
        if (rs->slots[i].comm != NULL &&
            (status = recv_progress(comm, rs, &rs->slots[i], peers, npeers)) != STRATA_OK)
            return status;
    return STRATA_OK;
}

strata_status_t stc_connect_peers(strata_comm_t *comm, const char *handles)
{
    const int P = comm->ctx.nranks;
    strata_status_t status = STRATA_OK;
    int peers[P > 1 ? P : 1];
    int npeers = stc_peer_set(comm, comm->ctx.rank, peers, P);
    pending_send_t *ps = calloc((size_t)npeers + 1, sizeof(*ps));
    recv_side_t rs = {.nslots = npeers + CONNECT_PENDING_EXTRA};
    sta_backoff_t b;

    rs.slots = calloc((size_t)rs.nslots, sizeof(*rs.slots));
    if (ps == NULL || rs.slots == NULL) {
        status = STRATA_ERR_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < npeers; i++) {
        ps[i].peer = peers[i];
        ident_encode(comm, peers[i], &ps[i].msg);
        memcpy(ps[i].handle, handles + (size_t)peers[i] * STT_HANDLE_SIZE, STT_HANDLE_SIZE);
    }
    sta_backoff_start(&b, &comm->ctx);
    for (;;) {
        int sends_done = 0;
        if ((status = connect_sends(comm, ps, npeers, &sends_done)) != STRATA_OK)
            break;
        status = connect_recvs(comm, &rs, peers, npeers);
        if (status != STRATA_OK || (sends_done == npeers && rs.done == npeers))
            break;
        if (sta_backoff_step(&b) != STRATA_OK) {
            status = sta_ctx_fail(&comm->ctx, STRATA_ERR_TIMEOUT,
                                  "connections to %d peers: "
                                  "%d outgoing and %d incoming ready at the timeout",
                                  npeers, sends_done, rs.done);
            break;
        }
    }
    if (rs.rejected > CONNECT_WARN_MAX)
        STU_WARN("connect: closed %d incoming connections that were not a peer's", rs.rejected);
    /* Accepted connections never identified are closed here; identified ones belong to ctx. */
    for (int i = 0; i < rs.nslots; i++)
        if (rs.slots[i].comm != NULL)
            stt_close_recv(rs.slots[i].comm);
out:
    free(ps);
    free(rs.slots);
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

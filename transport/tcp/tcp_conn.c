/*
 * Connections of the TCP transport: the connect side of the handshake, and
 * the send and receive comms' lifecycle (create, close). Data moves in
 * tcp_send.c and tcp_recv.c, which call in here; this file never calls them.
 *
 * connect is a state machine driven by base/connect.h (which keeps the
 * attempt in the caller's handle and enforces STRATA_CONNECT_TIMEOUT). Per
 * socket: CONNECTING (non-blocking connect) -> HELLO (writing the hello) ->
 * SENT. Socket 0 then waits for the listener's ack; the connection is ready
 * when every hello is out and the ack is valid.
 *
 * Request slots are preallocated per comm (STT_TCP_RING of them, base/slots.h),
 * so posting and releasing cost no allocation, lock or system call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/base/connect.h"
#include "transport/base/sock.h"
#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

enum { SOCK_CONNECTING, SOCK_HELLO, SOCK_SENT };

typedef struct tcp_connect {
    stt_connect_t head;          /* start time, peer */
    uint64_t conn_id;
    int nsocks;
    int nmembers;                /* of the local device */
    int dev;                     /* the local device */
    stt_tcp_vnic_t peer;         /* the peer's members (one unless it is a virtual device) */
    int fds[STT_TCP_MAX_SOCKS];
    uint8_t stage[STT_TCP_MAX_SOCKS];
    uint32_t sent[STT_TCP_MAX_SOCKS];
    uint8_t hello[STT_TCP_MAX_SOCKS][STT_TCP_HELLO_BYTES];
    uint32_t ack_have;
    uint8_t ack[STT_TCP_ACK_BYTES];
    uint32_t late;               /* times the listener answered LATE and we started over */
} tcp_connect_t;

static void conn_fds_close(const int *fds, int nsocks)
{
    for (int j = 0; j < nsocks; j++)
        if (fds[j] >= 0)
            close(fds[j]);
}

/* ------------------------------------------------------------------ comms */

strata_status_t stt_tcp_conn_create(bool send, int dev, const int *fds, int nsocks,
                                    int nmembers, const char *peer, stt_comm_t **comm_p)
{
    size_t bytes = send ? sizeof(stt_tcp_send_t) : sizeof(stt_tcp_recv_t);
    stt_tcp_conn_t *conn = calloc(1, bytes);

    if (conn == NULL) {
        STU_WARN("tcp: no memory for a %s comm with %s (%zu bytes)", send ? "send" : "receive",
                 peer, bytes);
        conn_fds_close(fds, nsocks);
        return STRATA_ERR_NO_MEMORY;
    }
    stt_conn_init(&conn->head, &stt_tcp_ops, dev, send, peer);
    conn->nsocks = nsocks;
    conn->nmembers = nmembers < 1 ? 1 : nmembers;
    conn->head.base.nmembers = conn->nmembers;
    for (int j = 0; j < STT_TCP_MAX_SOCKS; j++)
        conn->socks[j].fd = j < nsocks ? fds[j] : -1;
    conn->alive = (uint8_t)((1u << nsocks) - 1u);
    conn->fo.rsock = -1;
    conn->fo.old_lead = -1;
    if (send) {
        stt_tcp_send_t *sc = (stt_tcp_send_t *)conn;
        int64_t stripe_min = stu_param_int(STU_PARAM_SOCKET_STRIPE_MIN);
        sc->stripe_min = stripe_min < 0 ? 0 : (uint64_t)stripe_min;
        int64_t user_timeout = stu_param_int(STU_PARAM_SOCKET_USER_TIMEOUT);
        sc->user_timeout_ns = user_timeout > 0 ? (uint64_t)user_timeout * 1000000ull : 0;
        stt_slots_bind(&sc->slots, sc->reqs, sizeof(sc->reqs[0]), STT_TCP_RING,
                       &conn->head.base);
    } else {
        stt_tcp_recv_t *rc = (stt_tcp_recv_t *)conn;
        stt_slots_bind(&rc->slots, rc->reqs, sizeof(rc->reqs[0]), STT_TCP_RING,
                       &conn->head.base);
    }
    *comm_p = &conn->head.base;
    return STRATA_OK;
}

void stt_tcp_member_msg(stt_tcp_conn_t *conn, uint64_t size, uint32_t flags, uint8_t rot,
                        uint8_t mask)
{
    uint32_t carried = 0;

    if (conn->nmembers > 1 && size > 0)
        for (int j = 0; j < conn->nsocks; j++) {
            uint64_t off, len;
            if (!(mask & (1u << j)))
                continue;
            stt_tcp_part_locate(size, flags, rot, mask, j, &off, &len);
            if (len > 0)
                carried |= 1u << (j % conn->nmembers);
        }
    if (carried == 0)
        carried = 1u;
    for (int m = 0; m < conn->nmembers; m++)
        if (carried & (1u << m))
            stt_member_add(&conn->head.base.members[m].msgs, 1);
}

void stt_tcp_conn_fail_sock(stt_tcp_conn_t *conn, int j, const char *what, int err)
{
    char path[2 * STT_TCP_ADDR_STRLEN + 48] = "";

    if (conn->nmembers > 1) {
        stt_netif_addr_t local, peer;
        socklen_t llen = sizeof(local), plen = sizeof(peer);
        char ltext[STT_TCP_ADDR_STRLEN] = "?", ptext[STT_TCP_ADDR_STRLEN + 4] = "";
        if (getsockname(conn->socks[j].fd, &local.sa, &llen) == 0)
            stt_netif_addr_format(&local, ltext, sizeof(ltext));
        /* a socket the kernel gave up on has no peer any more */
        if (getpeername(conn->socks[j].fd, &peer.sa, &plen) == 0) {
            memcpy(ptext, " -> ", 5);
            stt_netif_addr_format(&peer, ptext + 4, sizeof(ptext) - 4);
        }
        snprintf(path, sizeof(path), " (virtual NIC member %d of %d, from %s%s)",
                 j % conn->nmembers, conn->nmembers, ltext, ptext);
    }
    stt_member_add(&stt_tcp_member_count(conn, j)->errors, 1);
    stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "%s on socket %d of %d%s: %s", what, j,
                  conn->nsocks, path, strerror(err));
}

static void conn_close(stt_comm_t *comm, bool send, const char *call)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)stt_conn_of(comm, &stt_tcp_ops, send, call);
    if (conn == NULL)
        return;
    for (int j = 0; j < conn->nsocks; j++)
        if (conn->socks[j].fd >= 0)
            close(conn->socks[j].fd);
    if (!send)
        free(((stt_tcp_recv_t *)conn)->drain);
    free(conn);
}

void stt_tcp_close_send(stt_comm_t *comm)
{
    conn_close(comm, true, "close_send");
}

void stt_tcp_close_recv(stt_comm_t *comm)
{
    conn_close(comm, false, "close_recv");
}

/* ------------------------------------------------------------------ connect */

static void connect_free(stt_connect_t *state)
{
    tcp_connect_t *cs = (tcp_connect_t *)state;

    conn_fds_close(cs->fds, cs->nsocks);
    free(cs);
}

/*
 * The head checked, then the raw bytes before the connect slot copied, vNIC
 * members included (connect_start reads them); hp is 8-byte aligned.
 */
static strata_status_t connect_decode(const void *handle, void *hp, uint64_t *listener_id_p)
{
    stt_tcp_handle_t head;
    stt_tcp_vnic_t vnic;
    const char *why = NULL;
    strata_status_t status = stt_handle_load(handle, STT_TCP_HANDLE_MAGIC,
                                             STT_TCP_PROTO_VERSION, "tcp", &head);

    if (status != STRATA_OK)
        return status;
    memcpy(hp, handle, STT_CONNSLOT_OFFSET);
    if (stt_tcp_vnic_decode(hp, &head.addr, &vnic, &why) != STRATA_OK) {
        STU_WARN("tcp: connect handle: %s", why);
        return STRATA_ERR_INVALID;
    }
    memcpy(hp, &head, sizeof(head));
    *listener_id_p = head.listener_id;
    return STRATA_OK;
}

int stt_tcp_conn_nsocks(int members)
{
    int64_t nsocks = stu_param_int(STU_PARAM_SOCKET_NSOCKS);
    /* Out-of-range values were reported once at init. */
    int n = (int)(nsocks < 1 ? 1 : nsocks > STT_TCP_MAX_SOCKS ? STT_TCP_MAX_SOCKS : nsocks);
    int per = n / members;

    return members * (per < 1 ? 1 : per);
}

/* Socket i leaves from member i % n of a virtual device: bound to its address first. */
static strata_status_t connect_bind(int fd, const stt_tcp_dev_t *d, int i)
{
    const stt_netif_addr_t *a = &d->member_addr[i % d->nmembers];
    char text[STT_TCP_ADDR_STRLEN];

    if (d->nmembers <= 1 || bind(fd, &a->sa, stt_netif_addr_len(a)) == 0)
        return STRATA_OK;
    stt_netif_addr_format(a, text, sizeof(text));
    STU_WARN("tcp: cannot bind socket %d of a %s connection to %s: %s", i, d->props.name, text,
             strerror(errno));
    return STRATA_ERR_IO;
}

/* Opens the sockets, under a new connection id, and starts every connect: socket i from
 * member i % n of a virtual device, to the peer's member i % m. */
static strata_status_t connect_open(tcp_connect_t *cs, const stt_tcp_handle_t *h)
{
    stt_tcp_dev_t d;
    strata_status_t status = stt_tcp_device_get(cs->dev, &d);

    if (status != STRATA_OK)
        return status;
    conn_fds_close(cs->fds, cs->nsocks);
    cs->conn_id = stt_netif_random_u64();
    cs->ack_have = 0;
    for (int i = 0; i < STT_TCP_MAX_SOCKS; i++)
        cs->fds[i] = -1;
    for (int i = 0; i < cs->nsocks; i++) {
        stt_tcp_hello_t hello = {.version = STT_TCP_PROTO_VERSION, .index = (uint8_t)i,
                                 .nsocks = (uint8_t)cs->nsocks,
                                 .listener_id = h->listener_id, .conn_id = cs->conn_id};
        memcpy(hello.secret, h->secret, sizeof(hello.secret));
        stt_tcp_hello_encode(&hello, cs->hello[i]);
        cs->sent[i] = 0;
        status = stt_tcp_sock_open(h->addr.sa.sa_family, &cs->fds[i]);
        if (status == STRATA_OK)
            status = connect_bind(cs->fds[i], &d, i);
        if (status == STRATA_OK)
            status = stt_sock_connect("tcp", cs->fds[i], &cs->peer.addr[i % cs->peer.n],
                                      cs->head.peer);
        if (status != STRATA_OK)
            return status;
        cs->stage[i] = SOCK_CONNECTING;
    }
    return STRATA_OK;
}

static strata_status_t connect_start(int dev, const void *hp, const stt_conn_cfg_t *cfg,
                                     stt_connect_t **state_p)
{
    const stt_tcp_handle_t *h = hp;
    stt_tcp_vnic_t peer;
    const char *why = NULL;
    stt_tcp_dev_t d;
    strata_status_t status = stt_tcp_device_get(dev, &d);

    if (status != STRATA_OK)
        return status;
    stt_tcp_vnic_decode(hp, &h->addr, &peer, &why);   /* checked by connect_decode */
    tcp_connect_t *cs = calloc(1, sizeof(*cs));
    if (cs == NULL) {
        STU_WARN("tcp: no memory for a connect state (%zu bytes)", sizeof(*cs));
        return STRATA_ERR_NO_MEMORY;
    }
    cs->dev = dev;
    cs->peer = peer;
    cs->nmembers = d.nmembers > peer.n ? d.nmembers : peer.n;
    cs->nsocks = stt_tcp_conn_nsocks(cs->nmembers);
    cs->nmembers = d.nmembers;
    cs->head.start_ns = stu_time_ns();
    stt_netif_addr_format(&h->addr, cs->head.peer, sizeof(cs->head.peer));
    for (int i = 0; i < STT_TCP_MAX_SOCKS; i++)
        cs->fds[i] = -1;
    status = connect_open(cs, h);
    if (status != STRATA_OK) {
        connect_free(&cs->head);
        return status;
    }
    *state_p = &cs->head;
    return STRATA_OK;
}

/* What the attempt got to, for the timeout's warning: the cause, as far as this end knows. */
static const char *connect_why_late(const stt_connect_t *state)
{
    const tcp_connect_t *cs = (const tcp_connect_t *)state;

    for (int i = 0; i < cs->nsocks; i++)
        if (cs->stage[i] == SOCK_CONNECTING)
            return cs->late > 0
                       ? ": the listener closed our hellos as late, then our TCP connect did not"
                         " complete (the listener's host is overloaded or its accept queue full)"
                       : ": our TCP connect did not complete (the listener's host is unreachable,"
                         " or its accept queue is full)";
    for (int i = 0; i < cs->nsocks; i++)
        if (cs->stage[i] != SOCK_SENT)
            return ": the listener's host took our connection but not our hello (it is"
                   " not reading: stopped, or its socket buffers full)";
    return cs->late > 0 ? ": the listener has our hello but has not answered, after closing"
                          " earlier ones as late (it calls accept too rarely, or is flooded"
                          " with other connections)"
                        : ": the listener has our hello but has not answered (it is not"
                          " calling accept, or its pending connections are full)";
}

/* Moves connected sockets on (tuned, to HELLO) and writes their hellos. */
static strata_status_t connect_hellos_send(tcp_connect_t *cs)
{
    strata_status_t status;

    for (int i = 0; i < cs->nsocks; i++) {
        if (cs->stage[i] == SOCK_CONNECTING) {
            status = stt_sock_connected("tcp", cs->fds[i], cs->head.peer);
            if (status == STRATA_INPROGRESS)
                continue;
            if (status == STRATA_OK)
                status = stt_tcp_sock_tune(cs->fds[i], cs->head.peer);
            if (status != STRATA_OK)
                return status;
            cs->stage[i] = SOCK_HELLO;
        }
        if (cs->stage[i] == SOCK_HELLO) {
            status = stt_sock_xfer("tcp", cs->fds[i], true, cs->hello[i], STT_TCP_HELLO_BYTES,
                                   &cs->sent[i], "a hello", cs->head.peer);
            if (status == STRATA_OK)
                cs->stage[i] = SOCK_SENT;
            else if (status != STRATA_INPROGRESS)
                return status;
        }
    }
    return STRATA_OK;
}

/* The listener answered REJECTED: the handle is not its own. */
static strata_status_t connect_refused(const tcp_connect_t *cs)
{
    STU_WARN("tcp: the listener at %s refused our hello: the handle's listener id or secret is"
             " not its own (a stale handle, from an earlier listen or another process?)",
             cs->head.peer);
    return STRATA_ERR_REMOTE;
}

/*
 * The listener answers (and closes) a refused socket on that socket, which need not be
 * socket 0, where the connection's ack comes: so while no ack is in, sockets 1.. are
 * watched too (the listener writes nothing else there). STRATA_INPROGRESS when one was
 * answered LATE or closed (the caller starts over), STRATA_ERR_REMOTE when one was
 * REJECTED, OK while they are quiet.
 */
static strata_status_t connect_others_check(tcp_connect_t *cs)
{
    for (int i = 1; i < cs->nsocks; i++) {
        int err;
        uint8_t buf[STT_TCP_ACK_BYTES];
        stt_tcp_ack_t ack;
        const char *why;
        if (cs->stage[i] != SOCK_SENT || stt_sock_peek(cs->fds[i], &err) == STT_SOCK_QUIET)
            continue;
        /* An answer is 16 bytes, sent at once; anything else, or none, means closed. */
        ssize_t got = recv(cs->fds[i], buf, sizeof(buf), MSG_DONTWAIT);
        if (got == (ssize_t)sizeof(buf) && stt_tcp_ack_decode(buf, &ack, &why) == STRATA_OK &&
            ack.status == STT_TCP_ACK_REJECTED)
            return connect_refused(cs);
        return STRATA_INPROGRESS;
    }
    return STRATA_OK;
}

/*
 * OK with *ready set once every hello is out and the ack is in and valid; STRATA_INPROGRESS
 * when the listener answered LATE (the caller starts over).
 */
static strata_status_t connect_ack_read(tcp_connect_t *cs, bool *ready)
{
    stt_tcp_ack_t ack;
    const char *why = NULL;

    *ready = false;
    if (cs->stage[0] != SOCK_SENT)
        return STRATA_OK;
    strata_status_t status =
        stt_sock_xfer("tcp", cs->fds[0], false, cs->ack, STT_TCP_ACK_BYTES, &cs->ack_have,
                      "the ack (the listener closed the connection without one: its listen"
                      " comm was closed or its process ended)", cs->head.peer);
    /* No ack yet: an answer on another socket? (Only then: a listener that accepted may
     * already have closed the comm, and its ack on socket 0 is what counts.) */
    if (status == STRATA_INPROGRESS)
        return cs->ack_have == 0 ? connect_others_check(cs) : STRATA_OK;
    if (status != STRATA_OK)
        return status;
    if (stt_tcp_ack_decode(cs->ack, &ack, &why) != STRATA_OK) {
        STU_WARN("tcp: invalid ack from %s: %s", cs->head.peer, why);
        return STRATA_ERR_REMOTE;
    }
    if (ack.status == STT_TCP_ACK_REJECTED)
        return connect_refused(cs);
    if (ack.status == STT_TCP_ACK_LATE)
        return STRATA_INPROGRESS;
    if (ack.conn_id != cs->conn_id || ack.nsocks != cs->nsocks) {
        STU_WARN("tcp: ack from %s is for connection %016llx with %u sockets, ours is %016llx"
                 " with %d", cs->head.peer, (unsigned long long)ack.conn_id, ack.nsocks,
                 (unsigned long long)cs->conn_id, cs->nsocks);
        return STRATA_ERR_REMOTE;
    }
    for (int i = 0; i < cs->nsocks; i++)
        if (cs->stage[i] != SOCK_SENT)
            return STRATA_OK;    /* cannot happen (the listener waits for all), but be safe */
    *ready = true;
    return STRATA_OK;
}

/* Hellos out, the ack in: then the send comm, which takes the sockets. */
static strata_status_t connect_step(stt_connect_t *state, int dev, const void *h,
                                    stt_comm_t **send_p)
{
    tcp_connect_t *cs = (tcp_connect_t *)state;
    bool ready = false;
    strata_status_t status = connect_hellos_send(cs);

    if (status == STRATA_OK)
        status = connect_ack_read(cs, &ready);
    if (status == STRATA_INPROGRESS) {
        /* Our hello reached the listener after its first-message deadline: start over. */
        cs->late++;
        STU_INFO(STU_LOG_NET, "tcp: %s closed our connection as late (%u); connecting again",
                 cs->head.peer, cs->late);
        status = connect_open(cs, h);
        return status == STRATA_OK ? STRATA_INPROGRESS : status;
    }
    if (status != STRATA_OK)
        return status;
    if (!ready)
        return STRATA_INPROGRESS;
    STU_INFO(STU_LOG_NET, "tcp: connected to %s with %d sockets over %d member(s)",
             cs->head.peer, cs->nsocks, cs->nmembers);
    status = stt_tcp_conn_create(true, dev, cs->fds, cs->nsocks, cs->nmembers, cs->head.peer,
                                 send_p);
    for (int i = 0; i < cs->nsocks; i++)
        cs->fds[i] = -1;                 /* the comm owns them now, even on failure */
    return status;
}

static const stt_connect_steps_t connect_steps = {
    .who = "tcp",
    .hint = "",
    .why_late = connect_why_late,
    .decode = connect_decode,
    .magic = STT_TCP_HANDLE_MAGIC,
    .version = STT_TCP_PROTO_VERSION,
    .start = connect_start,
    .step = connect_step,
    .free = connect_free,
};

void stt_tcp_connect_abandon(void *handle)
{
    stt_connect_abandon_run(&connect_steps, handle);
}

strata_status_t stt_tcp_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p)
{
    return stt_connect_run(&connect_steps, dev, handle, cfg, send_p);
}

/*
 * Objects of the TCP transport, shared by its files. Nothing outside
 * transport/tcp includes this (its tests aside).
 *
 *   stt_tcp_dev_t     one network interface (tcp_device.c)
 *   stt_tcp_handle_t  the connection handle, in the caller's 128 bytes (tcp_wire.h)
 *   stt_tcp_listen_t  a listening socket and its table of half-open connections
 *                     (tcp_listen.c)
 *   stt_tcp_send_t / stt_tcp_recv_t  the two ends of a connection: nsocks sockets, a
 *                     preallocated request ring and per-socket cursors (made and closed
 *                     in tcp_conn.c, moved by tcp_send.c and tcp_recv.c, polled by
 *                     tcp_poll.c)
 *
 * Calls go one way: tcp_ops.c -> tcp_listen.c, tcp_send.c, tcp_recv.c, tcp_poll.c ->
 * tcp_conn.c -> tcp_sock.c, tcp_wire.c, tcp_device.c, base/. tcp_conn.c never calls the
 * data path; a failure found anywhere goes through stt_conn_fail (base/conn.h).
 *
 * Threading: the device table is guarded by its devref (tcp_device.c). Comms and
 * listen comms are used by one thread at a time (the transport contract), so
 * they hold no lock.
 */
#ifndef STT_TCP_INTERNAL_H
#define STT_TCP_INTERNAL_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "transport/base/conn.h"
#include "transport/base/netif.h"
#include "transport/base/slots.h"
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_wire.h"
#include "util/compiler.h"

/* ------------------------------------------------------------------ constants */

/*
 * Added by NCCL to its network latency term. Kernel TCP with polling costs
 * 4-7 us one way on these machines (docs/machines.md, busy-polled ping-pong).
 */
#define STT_TCP_LATENCY_US 5.0f
#define STT_TCP_MAX_COMMS 65536
#define STT_TCP_MAX_COLL_BYTES (512ull << 20)  /* NCCL's MAX_COLLNET_SIZE */

/* Requests in flight per comm: the contract's send budget, used for receives too. */
#define STT_TCP_RING 256
/* Matched-but-unfinished messages on a receive comm: every buffer of every receive. */
#define STT_TCP_MSGQ (STT_TCP_RING * STT_MAX_RECVS)
/* Scratch that truncated payloads are drained into. */
#define STT_TCP_DRAIN_BYTES (64u << 10)
/* iovecs one sendmsg gathers on socket 0 (header + payload per small message). */
#define STT_TCP_SEND_IOV 64
/*
 * Socket 0 of a receive comm is read through a staging buffer of this many bytes
 * whenever a header is due, so that one recv brings a header, a small payload and
 * the headers and payloads behind it (tcp_recv.c). Holds a 4 KiB eager message
 * plus its header with room to spare; 8 KiB per receive comm is small next to
 * its request ring and message queue.
 */
#define STT_TCP_STAGE_BYTES 8192u
/*
 * Rest of a payload below which socket 0 reads into the stage and copies out
 * (a 4 KiB copy takes ~0.3 us at the 12-13 GB/s of docs/machines.md, about one
 * EAGAIN recv, while it saves one recv per message); from this size on it reads
 * straight into the user buffer, with the stage behind it in the same readv.
 */
#define STT_TCP_STAGE_EAGER 4096u
/*
 * A receive comm whose next message waits for a receive with its tag, while
 * other receives wait behind it, fails this long after the peer closed: the
 * ib transport's grace for its closed side channel (STT_IB_EOF_GRACE_NS).
 */
#define STT_TCP_EOF_GRACE_NS (2000ull * 1000000ull)

#define STT_TCP_ADDR_STRLEN STT_NETIF_ADDR_STRLEN

/* ------------------------------------------------------------------ devices */

/*
 * An interface, or a virtual device fusing several (tcp_vdev.c): its members'
 * addresses in member order, member 0 in addr too. props.name is "eth1+eth2" then.
 */
typedef struct stt_tcp_dev {
    char name[IF_NAMESIZE];
    stt_netif_addr_t addr;     /* port 0; member 0's for a virtual device */
    int nmembers;              /* 1 for an interface */
    int members[STT_MAX_VDEV_MEMBERS];          /* their device indices */
    stt_netif_addr_t member_addr[STT_MAX_VDEV_MEMBERS];
    stt_props_t props;
} stt_tcp_dev_t;

/* Virtual devices one process may add after the interfaces. */
#define STT_TCP_MAX_VDEVS 16
#define STT_TCP_MAX_DEVS (STT_NETIF_MAX + STT_TCP_MAX_VDEVS)
/*
 * On a virtual device's connection, payloads from this size up to the stripe
 * threshold travel whole on one socket in turn (round robin over the members);
 * smaller ones stay behind their header on socket 0, where one send carries
 * both (STT_TCP_STAGE_EAGER: the receiver stages them in the same read).
 */
#define STT_TCP_ROTATE_MIN STT_TCP_STAGE_EAGER
/* A stuck virtual-device send comm looks at its sockets' acknowledgements at most this
 * often: one ioctl per socket per ms, against timeouts of seconds. */
#define STT_TCP_WATCH_NS (1000ull * 1000ull)

/* Copies device dev out of the table. STRATA_ERR_NOT_FOUND for a bad index or no init. */
strata_status_t stt_tcp_device_get(int dev, stt_tcp_dev_t *dev_p);
/* Sockets of a connection on a device of `members` members: STRATA_SOCKET_NSOCKS rounded to
 * a multiple of the members (tcp_conn.c). */
int stt_tcp_conn_nsocks(int members);
/*
 * tcp_vdev.c: the table entry of a virtual device fusing members[0..n) of
 * table[0..count), ordered by interface name. Errors (logged): STRATA_ERR_INVALID
 * (a bad member list), STRATA_ERR_UNSUPPORTED (members that cannot share a handle).
 */
strata_status_t stt_tcp_vdev_fill(const stt_tcp_dev_t *table, int count, const int *members,
                                  int n, stt_tcp_dev_t *vdev);
/*
 * tcp_vdev.c: applies STRATA_NET_FUSE's "all" or groups to the interfaces
 * table[0..*count_p): each group's virtual device takes its first member's
 * place and the other members leave the table. Logs each decision.
 */
void stt_tcp_vdev_force(stt_tcp_dev_t *table, int *count_p);

/* ------------------------------------------------------------------ tcp_sock.c */

/* A socket of base/sock.h's stt_sock_open with SO_SNDBUF/SO_RCVBUF applied. */
strata_status_t stt_tcp_sock_open(int family, int *fd_p);
/* TCP_NODELAY, keepalive and TCP_USER_TIMEOUT; on connected sockets. */
strata_status_t stt_tcp_sock_tune(int fd, const char *peer);

/* ------------------------------------------------------------------ listen */

#define STT_TCP_PEND_SOCKS 64      /* accepted sockets whose hello is not read yet */
#define STT_TCP_PEND_GROUPS 16     /* connections waiting for the rest of their sockets */

typedef struct stt_tcp_pend_sock {
    int fd;                        /* -1: free */
    uint32_t have;
    uint64_t start_ns;
    uint8_t buf[STT_TCP_HELLO_BYTES];
    char peer[STT_TCP_ADDR_STRLEN];
} stt_tcp_pend_sock_t;

typedef struct stt_tcp_pend_group {
    bool used;
    bool acking;                   /* every socket arrived; the ack is being written */
    uint8_t nsocks;
    uint8_t count;
    uint32_t ack_sent;
    uint64_t conn_id;
    uint64_t start_ns;
    int fds[STT_TCP_MAX_SOCKS];
    uint8_t ack[STT_TCP_ACK_BYTES];
    char peer[STT_TCP_ADDR_STRLEN];
} stt_tcp_pend_group_t;

typedef struct stt_tcp_listen {
    stt_listen_t base;
    int nfds;                      /* one listening socket per member of the device */
    int fds[STT_MAX_VDEV_MEMBERS];
    uint64_t listener_id;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
    uint32_t dropped;              /* sockets closed before their hello placed them */
    char local[STT_TCP_ADDR_STRLEN];
    stt_tcp_pend_sock_t socks[STT_TCP_PEND_SOCKS];
    stt_tcp_pend_group_t groups[STT_TCP_PEND_GROUPS];
} stt_tcp_listen_t;

/* ------------------------------------------------------------------ comms */

/* Requests: slot.state is STT_SLOT_FREE, ACTIVE (posted) or DONE (base/slots.h). */
typedef struct stt_tcp_sreq {
    stt_slot_t slot;
    uint8_t hdr[STT_TCP_HDR_BYTES];
    uint8_t rot;             /* stt_tcp_rot: which of mask's sockets a rotated payload takes */
    uint8_t mask;            /* the sockets it was laid out on (all but lost ones) */
    uint8_t lead;            /* the socket its header travels on */
    uint32_t flags;
    uint64_t size;
    char *data;
    uint64_t hstart;         /* the lead's stream offset of its header; STT_TCP_UNSENT before */
    /* virtual devices: socket j's stream offset at the end of its part, set when
     * socket j's cursor passes it; the message completes once each is acknowledged */
    uint64_t end[STT_TCP_MAX_SOCKS];
} stt_tcp_sreq_t;

/* slot.n buffers; slot.status turns STRATA_ERR_TRUNCATED once any buffer overflowed. */
typedef struct stt_tcp_rreq {
    stt_slot_t slot;
    uint8_t unmatched;       /* buffers no message was matched to yet */
    uint8_t matched_mask;
    uint16_t pending;        /* matched messages whose payload is not all in */
    int tags[STT_MAX_RECVS];
    char *data[STT_MAX_RECVS];
    uint64_t cap[STT_MAX_RECVS];
    uint64_t got[STT_MAX_RECVS];
} stt_tcp_rreq_t;

/* One matched message on a receive comm. */
typedef struct stt_tcp_msg {
    uint64_t size;
    uint16_t slot;           /* receive request */
    uint8_t buf;             /* buffer in that request */
    uint8_t flags;           /* STT_TCP_HDR_* */
    uint8_t discard;         /* larger than its buffer: drain the payload */
    uint8_t rot;             /* stt_tcp_rot: which of mask's sockets a rotated payload takes */
    uint8_t mask;            /* the sockets it was laid out on */
} stt_tcp_msg_t;

/* Per socket: where it stands in the message queue. Counters wrap freely. */
typedef struct stt_tcp_cursor {
    int fd;                  /* -1 once the socket was lost and replayed */
    uint32_t msg;            /* queue position of the message being moved */
    uint64_t off;            /* bytes of this socket's part already moved */
    uint64_t bytes;          /* bytes this socket's stream moved in all (failover positions) */
} stt_tcp_cursor_t;

/* stt_tcp_sreq_t.hstart of a header not written yet. */
#define STT_TCP_UNSENT UINT64_MAX

/* Failover state of a connection (tcp_failover.c). */
enum {
    STT_TCP_FO_NONE = 0,
    STT_TCP_FO_LEAD,         /* the lead's member is lost; sender: waits for the receiver's
                                LEAD position; receiver: sent it, waits for DOWN on the new
                                lead */
    STT_TCP_FO_SUSPECT,      /* receiver: told the sender which sockets it saw fail */
    STT_TCP_FO_DOWN,         /* sender: socket 0 writes up to `end`, then DOWN */
    STT_TCP_FO_POS,          /* sender: waits for the receiver's POS of every lost socket */
    STT_TCP_FO_REPLAY,       /* sender: writes REPLAYs; receiver: reads them */
};

typedef struct stt_tcp_fo {
    uint8_t state;
    uint8_t lost;            /* sockets being given up */
    uint8_t have;            /* sender: sockets whose POS arrived; receiver: replayed */
    int8_t rsock;            /* the socket whose bytes are being replayed, -1: none */
    int8_t old_lead;         /* a lead failover: the lost lead socket; -1: none */
    bool lead_data;          /* sender: the new lead still moves its data parts before end */
    uint32_t end;            /* queue position of the first message laid out without them */
    uint64_t rleft;          /* replay bytes still to move */
    uint32_t rmsg;           /* sender: queue position and offset the replay reads from */
    uint64_t roff;
    uint64_t pos[STT_TCP_MAX_SOCKS];  /* sender: the receiver's position on each lost socket */
    uint64_t started_ns;     /* when this failover began (for the log) */
    uint64_t replayed;       /* bytes replayed so far (for the log) */
    uint32_t out_len, out_off;        /* a frame being written on socket 0 */
    uint8_t out[4 * STT_TCP_RFRAME_BYTES + STT_TCP_HDR_BYTES];
    /* sender: receiver frames being read, per socket; receiver: DOWN read on the new lead */
    uint32_t in_have[STT_TCP_MAX_SOCKS];
    uint8_t in[STT_TCP_MAX_SOCKS][STT_TCP_HDR_BYTES];
} stt_tcp_fo_t;

/* What both comm kinds share. */
typedef struct stt_tcp_conn {
    stt_conn_t head;         /* comm, direction, peer, first failure (base/conn.h) */
    int nsocks;
    int nmembers;            /* members of the device (socket j uses member j % nmembers) */
    uint32_t seq;            /* next message sequence number */
    uint8_t alive;           /* the sockets new messages are laid out on */
    uint8_t lead;            /* the socket headers and frames travel on: the lowest alive
                                (0 until its member is lost) */
    stt_tcp_fo_t fo;
    stt_tcp_cursor_t socks[STT_TCP_MAX_SOCKS];
} stt_tcp_conn_t;

typedef struct stt_tcp_send {
    stt_tcp_conn_t conn;
    uint64_t stripe_min;
    uint64_t acked[STT_TCP_MAX_SOCKS];  /* virtual devices: bytes the peer's kernel acked */
    uint64_t watch_ns;                  /* the last stt_tcp_send_watch */
    uint64_t eof_ns;                    /* virtual devices: when the receiver was seen closing
                                           its last member with messages unacknowledged */
    uint64_t user_timeout_ns;           /* STRATA_SOCKET_USER_TIMEOUT; 0: none */
    uint32_t head;           /* oldest incomplete message */
    uint32_t tail;           /* next queue position */
    uint16_t queue[STT_TCP_RING];
    stt_slots_t slots;
    stt_tcp_sreq_t reqs[STT_TCP_RING];
} stt_tcp_send_t;

typedef struct stt_tcp_recv {
    stt_tcp_conn_t conn;
    /* receives waiting for messages, in posting order */
    uint32_t post_head;
    uint32_t post_tail;
    uint16_t posts[STT_TCP_RING];
    /* matched messages */
    uint32_t msg_head;
    uint32_t msg_tail;
    stt_tcp_msg_t msgs[STT_TCP_MSGQ];
    /* socket 0's bytes read ahead: stage[stage_off, stage_len) is not consumed yet */
    uint32_t stage_off;
    uint32_t stage_len;
    bool eof0;               /* the peer closed socket 0 between two messages */
    uint64_t stall_closed_ns;  /* when the peer was seen closed while the next message
                                  waits for a receive of its tag; 0: not */
    stt_slots_t slots;
    stt_tcp_rreq_t reqs[STT_TCP_RING];
    uint8_t *drain;          /* STT_TCP_DRAIN_BYTES, allocated at the first truncation */
    uint8_t stage[STT_TCP_STAGE_BYTES];
} stt_tcp_recv_t;

_Static_assert(STT_TCP_STAGE_EAGER + STT_TCP_HDR_BYTES <= STT_TCP_STAGE_BYTES,
               "the stage must hold an eager payload and the next header");

/* Bytes of socket 0 read into the stage and not consumed yet. */
static inline uint32_t stt_tcp_recv_staged(const stt_tcp_recv_t *rc)
{
    return rc->stage_len - rc->stage_off;
}

/*
 * True when a staged header could be matched right now (socket 0 is between
 * messages, a posted receive has an open buffer with its tag and the message
 * queue has room): test() would progress without reading a socket, so nobody
 * may sleep on one. tcp_recv.c.
 */
bool stt_tcp_recv_header_ready(const stt_tcp_recv_t *rc);

/* ------------------------------------------------------------------ tcp_conn.c */

/*
 * Builds a send (send true) or receive comm around connected, tuned sockets,
 * which it then owns (even on failure).
 */
strata_status_t stt_tcp_conn_create(bool send, int dev, const int *fds, int nsocks,
                                    int nmembers, const char *peer, stt_comm_t **comm_p);

/* Socket j's member's counters (telemetry: stt_member_stats_t, transport.h). */
static inline stt_member_stats_t *stt_tcp_member_count(stt_tcp_conn_t *conn, int j)
{
    return &conn->head.base.members[j % conn->nmembers];
}
static inline void stt_tcp_member_bytes(stt_tcp_conn_t *conn, int j, uint64_t n)
{
    stt_member_add(&stt_tcp_member_count(conn, j)->bytes, n);
}
/* Counts a completed message (its size and layout) on each member that carried a part
 * of it, or on socket 0's member for a message without payload. */
void stt_tcp_member_msg(stt_tcp_conn_t *conn, uint64_t size, uint32_t flags, uint8_t rot,
                        uint8_t mask);

/*
 * Fails the comm for an error err (errno) of socket j, in `what` ("send", "recv");
 * on a virtual device's connection the message names the member and the socket's
 * two addresses, so a lost rail is told apart from a dead peer.
 */
void stt_tcp_conn_fail_sock(stt_tcp_conn_t *conn, int j, const char *what, int err);

/*
 * Failover (tcp_failover.c, tcp_fo_send.c, tcp_fo_recv.c; docs/tcp-protocol.md,
 * "Failover"). Only on a virtual device's connection (nmembers > 1), for any member
 * while another is left.
 */
static inline bool stt_tcp_fused(const stt_tcp_conn_t *conn)
{
    return conn->nmembers > 1;
}
/* The sockets sharing socket j's member: the unit that fails over. */
uint8_t stt_tcp_member_socks(const stt_tcp_conn_t *conn, int j);
/*
 * Socket j failed with err (0: EOF), seen while doing `what`: starts a failover
 * of its member (the lead's member: the LEAD exchange), or fails the comm when that
 * cannot be survived (the last member, a second failover at once, not a virtual
 * device; on the receiver, EOF on the lead's member: an orderly close). Returns true
 * when the comm survives.
 */
bool stt_tcp_send_sock_lost(stt_tcp_send_t *sc, int j, const char *what, int err);
/* Sender, after its receiver closed while messages waited for acknowledgements (eof_ns):
 * fails the comm once they all completed or STT_TCP_EOF_GRACE_NS passed. tcp_fo_send.c. */
void stt_tcp_send_eof_check(stt_tcp_send_t *sc);

/* tcp_failover.c: what both ends' failover code (tcp_fo_send.c, tcp_fo_recv.c) shares. */
typedef enum stt_tcp_fo_verdict {
    STT_TCP_FO_UNDER_WAY = 0,   /* its member is failing over already */
    STT_TCP_FO_REFUSED,         /* failover cannot take it: *why_p says why */
    STT_TCP_FO_BEGIN,           /* a new failover of *lost_p; cause holds the log's reason */
} stt_tcp_fo_verdict_t;
/* What losing socket j (what failed, err; 0: the peer closed it) starts, for either end. */
stt_tcp_fo_verdict_t stt_tcp_fo_judge(const stt_tcp_conn_t *conn, int j, const char *what,
                                      int err, uint8_t *lost_p, const char **why_p,
                                      char *cause, size_t len);
/* Why losing the sockets of `lost` cannot be survived, or NULL. */
const char *stt_tcp_fo_refusal(const stt_tcp_conn_t *conn, uint8_t lost);
/* Fails the comm for socket j's error, saying at INFO why it did not fail over. */
void stt_tcp_fo_fail(stt_tcp_conn_t *conn, int j, const char *what, int err, const char *why);
/* The WARN of a failover's start (counts the member's error and marks it lost) and the
 * INFO of its end (counts the failover). */
void stt_tcp_fo_begin_log(stt_tcp_conn_t *conn, uint8_t lost, const char *cause);
void stt_tcp_fo_done_log(stt_tcp_conn_t *conn, uint64_t replayed);
/* One non-blocking send on the frame socket (the sender's lead, the receiver's lowest
 * live socket): bytes sent, 0 when it would block, -1 when the comm failed. */
ssize_t stt_tcp_fo_out_send(stt_tcp_conn_t *conn, const void *buf, size_t len);
/* Queues a frame (fo.out) and writes what it can; true once all of it is out. */
void stt_tcp_fo_out_add(stt_tcp_conn_t *conn, const uint8_t *frame, uint32_t len);
bool stt_tcp_fo_out_flush(stt_tcp_conn_t *conn);
bool stt_tcp_recv_sock_lost(stt_tcp_recv_t *rc, int j, const char *what, int err);
/* Sender: reads the receiver's frames and moves a failover along; call from progress. */
void stt_tcp_send_fo_progress(stt_tcp_send_t *sc);
/* Sender: true when socket 0 may write messages from queue position pos. */
static inline bool stt_tcp_send_lead_open(const stt_tcp_send_t *sc, uint32_t pos)
{
    return sc->conn.fo.state == STT_TCP_FO_NONE || pos != sc->conn.fo.end;
}
/*
 * Sender, virtual devices, on a pass that moved nothing (at most every
 * STT_TCP_WATCH_NS): a socket that owes acknowledgements and received none for
 * user_timeout_ns (TCP_INFO's tcpi_last_ack_recv: a peer that closed its window
 * still answers probes), or that the kernel gave up on (SO_ERROR), is lost. The kernel's own
 * TCP_USER_TIMEOUT does not cover a sender whose interface is down (it retries
 * locally without end), nor a socket whose every byte was written (no call reports
 * its error).
 */
void stt_tcp_send_watch(stt_tcp_send_t *sc);
/* Sender: true when every socket's bytes of the message at queue position pos were
 * acknowledged by the peer's kernel (virtual devices only; asks the kernel lazily). */
bool stt_tcp_send_acked(stt_tcp_send_t *sc, uint32_t pos);
/* Receiver: how many more bytes the lead socket may be read (a lost lead: up to the
 * position it reported; else no limit). */
uint64_t stt_tcp_recv_lead_cap(const stt_tcp_recv_t *rc);
/* Receiver, lead failover: reads the sender's DOWN on the new lead once everything
 * before it is in, and moves the lead there; false when the comm failed. */
bool stt_tcp_recv_lead_down(stt_tcp_recv_t *rc);
/* Receiver: handles the failover frame staged at a header position; false to stop. */
bool stt_tcp_recv_ctl(stt_tcp_recv_t *rc);
/* Receiver: moves replayed bytes staged or waiting on socket 0; false to stop. */
bool stt_tcp_recv_replay(stt_tcp_recv_t *rc, bool *dry_p);
/* Receiver: writes what frames it owes the sender. */
void stt_tcp_recv_fo_flush(stt_tcp_recv_t *rc);

/* ------------------------------------------------------------------ the data path */

/* tcp_send.c: lays req (size and data set) out as message seq on the sockets alive now,
 * with its header for the lead socket. */
void stt_tcp_send_layout(stt_tcp_send_t *sc, stt_tcp_sreq_t *req, uint32_t seq, int tag);
/* tcp_fo_send.c: refreshes acked[j] from the kernel (SIOCOUTQ); false when it will not say. */
bool stt_tcp_send_acked_read(stt_tcp_send_t *sc, int j);
/* tcp_fo_send.c, virtual devices: true once the peer's kernel acknowledged req's header
 * (asks the kernel when not known yet), so other sockets may carry its payload. */
bool stt_tcp_send_hdr_acked(stt_tcp_send_t *sc, const stt_tcp_sreq_t *req);
/* tcp_send.c: completes, in order, the messages every socket has moved (and, on a virtual
 * device, the peer's kernel acknowledged); returns how many. */
uint32_t stt_tcp_send_retire(stt_tcp_send_t *sc);
/* tcp_send.c: moves data until the sockets would block; returns the comm's state. */
strata_status_t stt_tcp_send_progress(stt_tcp_send_t *sc);
/* test() of a send request (tcp_ops.c dispatches by the comm's direction). */
strata_status_t stt_tcp_send_test(stt_tcp_send_t *sc, stt_req_t *req, int *done, size_t *sizes);

/* tcp_recv.c: socket j's part of message m, and where its next bytes go (done of them
 * moved) and how many fit there (the drain buffer for a discarded message). */
void stt_tcp_recv_part(const stt_tcp_recv_t *rc, const stt_tcp_msg_t *m, int j,
                       uint64_t *off_p, uint64_t *len_p);
char *stt_tcp_recv_dest(stt_tcp_recv_t *rc, const stt_tcp_msg_t *m, uint64_t poff,
                        uint64_t plen, uint64_t done, size_t *len_p);
/* tcp_recv.c: where socket j's cursor reads next (the cursor moved past parts it finished)
 * and how much fits there; NULL when it has passed every matched message. */
char *stt_tcp_cursor_dest(stt_tcp_recv_t *rc, stt_tcp_cursor_t *cur, int j, size_t *want_p);
/* tcp_recv.c: the same for a receive comm. */
strata_status_t stt_tcp_recv_progress(stt_tcp_recv_t *rc);
strata_status_t stt_tcp_recv_test(stt_tcp_recv_t *rc, stt_req_t *req, int *done, size_t *sizes);

/* ------------------------------------------------------------------ operations, by file */

/* tcp_device.c */
strata_status_t stt_tcp_probe(void);
strata_status_t stt_tcp_init(void);
void stt_tcp_fini(void);
strata_status_t stt_tcp_devices(int *ndev_p);
strata_status_t stt_tcp_get_props(int dev, stt_props_t *props_p);
strata_status_t stt_tcp_make_vdev(const int *devs, int n, int *vdev_p);
/* tcp_listen.c */
strata_status_t stt_tcp_listen(int dev, void *handle, stt_listen_t **listen_p);
strata_status_t stt_tcp_accept(stt_listen_t *listen, stt_comm_t **recv_p);
void stt_tcp_close_listen(stt_listen_t *listen);
/* tcp_conn.c */
void stt_tcp_connect_abandon(void *handle);
strata_status_t stt_tcp_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p);
void stt_tcp_close_send(stt_comm_t *comm);
void stt_tcp_close_recv(stt_comm_t *comm);
/* tcp_send.c */
strata_status_t stt_tcp_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                              stt_req_t **req_p);
/* tcp_recv.c */
strata_status_t stt_tcp_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                              const int *tags, void **mhs, stt_req_t **req_p);
strata_status_t stt_tcp_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                               void **mhs, stt_req_t **req_p);
/* tcp_poll.c */
int stt_tcp_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max);

#endif /* STT_TCP_INTERNAL_H */

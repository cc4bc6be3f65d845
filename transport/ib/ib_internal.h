/*
 * Objects of the ib transport, shared by its files. Nothing outside
 * transport/ib includes this (tests aside).
 *
 *   stt_ib_ctx_t     one opened verbs device: context, protection domain,
 *                    registration cache, async-event thread (ib_device.c,
 *                    ib_async.c, ib_mr.c)
 *   stt_ib_dev_t     one ACTIVE port of a context, or a virtual device fusing
 *                    2..8 of them: a Strata device (ib_device.c, ib_vdev.c)
 *   stt_ib_handle_t  the connection handle, in the caller's 128 bytes (ib_wire.h)
 *   stt_ib_listen_t  the side-channel listener and its half-open connections
 *                    (ib_listen.c)
 *   stt_ib_conn_t    what both comm kinds share: per member port a CQ and the
 *                    control block's registration; QPs spread over the members;
 *                    the side-channel socket (made, watched and closed in
 *                    ib_conn.c; QPs in ib_qp.c)
 *   stt_ib_send_t / stt_ib_recv_t  the two ends, with preallocated request
 *                    rings (ib_send.c, ib_recv.c)
 *
 * Calls go one way: ib_ops.c -> ib_listen.c, ib_send.c, ib_recv.c -> ib_conn.c ->
 * ib_qp.c, ib_mr.c, ib_device.c, ib_wire.c, ib_fifo.c, base/. ib_conn.c never
 * calls the data path; a failure found anywhere goes through stt_conn_fail
 * (base/conn.h).
 *
 * Threading: the device table is guarded by its devref (ib_device.c); each
 * context's registration cache by the context's mutex. Comms are used by one
 * thread at a time (the contract); the async thread only sets atomic flags.
 */
#ifndef STT_IB_INTERNAL_H
#define STT_IB_INTERNAL_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/base/conn.h"
#include "transport/base/netif.h"
#include "transport/base/slots.h"
#include "transport/ib/ib.h"
#include "transport/ib/ib_gid.h"
#include "transport/ib/ib_mrcache.h"
#include "transport/ib/ib_stripe.h"
#include "transport/ib/ib_verbs_load.h"
#include "transport/ib/ib_wire.h"
#include "util/compiler.h"

/* ------------------------------------------------------------------ constants */

#define STT_IB_MAX_DEVS 32               /* ports kept after filtering */
#define STT_IB_MAX_VDEVS 16              /* virtual devices one process may add (make_vdev) */
/*
 * Ports per context whose loss the async thread reports to the virtual NICs on them
 * (port numbers 1..this; HCAs have 1 or 2): a port past it is left to RC's retries.
 */
#define STT_IB_CTX_PORTS 16
#define STT_IB_MAX_RECVS 8               /* max_recvs property: NCCL's IB value */
/* Added by NCCL to its network latency; NCCL's IB transport reports 0 too. */
#define STT_IB_LATENCY_US 0.0f
#define STT_IB_MAX_COLL_BYTES (512ull << 20)   /* NCCL's MAX_COLLNET_SIZE */
#define STT_IB_SEND_RING STT_MAX_SEND_REQUESTS
/* Work requests one FIFO slot can need per QP: every buffer's payload, sizes, immediate. */
#define STT_IB_WR_PER_SLOT (STT_MAX_RECVS + 2)
#define STT_IB_SEND_SQ_DEPTH (STT_IB_FIFO_DEPTH * STT_IB_WR_PER_SLOT + 32)
#define STT_IB_RECV_SQ_DEPTH (2 * STT_IB_FIFO_DEPTH + 8)
/* Receive WRs kept posted per QP: at most one immediate per receive in flight, doubled. */
#define STT_IB_RQ_DEPTH (2 * STT_IB_FIFO_DEPTH)
#define STT_IB_CQ_BATCH 16               /* completions taken per ibv_poll_cq */
#define STT_IB_CTS_SIGNAL_EVERY 8        /* one CTS write in 8 is signalled */
#define STT_IB_INLINE_WANT 256u          /* inline bytes asked for: a whole CTS slot */
/* A side channel found closed is checked at most this often (ns): a clock read, then a peek. */
#define STT_IB_EOF_CHECK_NS (10ull * 1000000ull)
/*
 * After the peer closed its side channel, sends already posted get this long
 * for their acknowledgements (which the peer's NIC sent before the process
 * could exit), then fail; unposted work fails at once.
 */
#define STT_IB_EOF_GRACE_NS (2000ull * 1000000ull)
#define STT_IB_ADDR_STRLEN STT_NETIF_ADDR_STRLEN
#define STT_IB_MRC_KEEP_MAX 64           /* idle registrations kept with STRATA_IB_MR_KEEP=1 */
#define STT_IB_FO_QUEUE 4                /* failover frames waiting for the side channel */
/* Room a replayed receive needs per QP: its buffers' payload, the sizes, the immediate. */
#define STT_IB_FO_WR_PER_RECV (STT_MAX_RECVS + 2)

/* ------------------------------------------------------------------ devices */

typedef struct stt_ib_ctx {
    char name[64];
    struct ibv_context *vctx;
    struct ibv_pd *pd;
    struct ibv_device_attr attr;
    bool dmabuf;                 /* ibv_reg_dmabuf_mr works here */
    pthread_mutex_t lock;        /* the registration cache */
    stt_ib_mrc_t mrc;
    int fatal;                   /* device-fatal events seen (atomic) */
    int port_downs[STT_IB_CTX_PORTS + 1];   /* IBV_EVENT_PORT_ERR seen, per port (atomic) */
    pthread_t async_thread;
    bool async_running;
    int async_stop_fd;           /* eventfd that ends the async thread */
} stt_ib_ctx_t;

typedef struct stt_ib_dev {
    stt_ib_ctx_t *ctx;
    int port;
    uint8_t link_layer;          /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
    enum ibv_mtu mtu;
    uint16_t lid;
    uint32_t max_qp_wr;
    int gid_index;
    uint8_t gid[16];
    bool has_alt;                /* a link-local GID to fall back to */
    int alt_index;
    uint8_t alt_gid[16];
    int plane;                   /* STRATA_IB_HCA's hca:port:rail:plane, or -1 */
    stt_props_t props;
    /*
     * The ports it carries: itself for a port (nmembers 1), 2..8 ports in
     * their fixed order for a virtual device, whose other fields are its
     * first member's. Pointers into the table of ports (ib_device.c).
     */
    int nmembers;
    struct stt_ib_dev *member[STT_IB_MAX_MEMBERS];
} stt_ib_dev_t;

/* The device table entry for dev, valid until the last fini; NULL (and a warning) if none. */
stt_ib_dev_t *stt_ib_device_at(int dev);

/*
 * Is gid one of this host's GIDs, on a device other than d's? (The peer is
 * another device of this host: the case where only link-local GIDs reach.)
 */
bool stt_ib_device_gid_elsewhere(const stt_ib_dev_t *d, const uint8_t gid[16]);

/* ib_vdev.c: the entry of a virtual device fusing asked[0..n) of table[0..count). */
strata_status_t stt_ib_vdev_fill(const stt_ib_dev_t *table, int count, const int *asked, int n,
                                 stt_ib_dev_t *out);
/* ib_vdev.c: applies STRATA_NET_FUSE to the discovered table[0..*count_p). */
void stt_ib_vdev_force(stt_ib_dev_t *table, int *count_p);

/* Side-channel address chosen at init (port 0): sockets bind to it. */
strata_status_t stt_ib_device_oob_addr(stt_netif_addr_t *addr_p);

/* Async-event thread of a context (ib_async.c). */
strata_status_t stt_ib_async_start(stt_ib_ctx_t *ctx);
void stt_ib_async_stop(stt_ib_ctx_t *ctx);
/* Port-down events the async thread saw on port of ctx (0 for a port it does not watch). */
static inline int stt_ib_port_downs(stt_ib_ctx_t *ctx, int port)
{
    return port >= 1 && port <= STT_IB_CTX_PORTS ?
           __atomic_load_n(&ctx->port_downs[port], __ATOMIC_ACQUIRE) : 0;
}

/* ------------------------------------------------------------------ memory (ib_mr.c) */

struct stt_ib_conn;

/* A buffer's keys on each member port of a comm (index: member). */
typedef struct stt_ib_keys {
    uint32_t lkey[STT_IB_MAX_MEMBERS];
    uint32_t rkey[STT_IB_MAX_MEMBERS];
} stt_ib_keys_t;

void stt_ib_mr_cache_init(stt_ib_ctx_t *ctx);
/* Does the handle cover [data, data + size)? */
bool stt_ib_mr_covers(const stt_ib_mrc_entry_t *e, const void *data, size_t size);
/*
 * Resolves mh (a comm of one port: a cache entry; of a virtual device: one
 * registration per member) into keys; with mh NULL registers on the fly
 * through each member's cache, fly[0..nmembers) holding what to release.
 */
strata_status_t stt_ib_mr_resolve(const struct stt_ib_conn *conn, void *mh, void *data,
                                  size_t size, stt_ib_keys_t *keys, stt_ib_mrc_entry_t **fly);
/* Releases the on-the-fly registrations fly[0..nmembers) and clears them. */
void stt_ib_mr_fly_drop(const struct stt_ib_conn *conn, stt_ib_mrc_entry_t **fly);

/* ------------------------------------------------------------------ comms */

/* Kinds of work request, in the low byte of wr_id. */
enum {
    STT_IB_WR_SEND = 1, STT_IB_WR_CTS = 2, STT_IB_WR_RECV = 3, STT_IB_WR_NONE = 4,
    STT_IB_WR_FLUSH = 5, STT_IB_WR_REPLAY = 6,
};

static inline uint64_t stt_ib_wr_id(int kind, int qp, int req, uint32_t pos)
{
    return (uint64_t)kind | ((uint64_t)qp << 8) | ((uint64_t)req << 16) | ((uint64_t)pos << 32);
}

typedef struct stt_ib_qp {
    struct ibv_qp *qp;
    int member;                  /* the member port it runs on (conn->m[member]) */
    uint32_t sq_depth;
    uint32_t sq_posted;          /* WRs posted, ever (wraps) */
    uint32_t sq_done;            /* position retired by the last signalled completion */
    uint32_t max_inline;
    uint32_t remote_qpn;
} stt_ib_qp_t;

static inline uint32_t stt_ib_qp_room(const stt_ib_qp_t *q)
{
    return q->sq_depth - (q->sq_posted - q->sq_done);
}

/*
 * One member port of a comm: a comm on a port has one, a comm on a virtual
 * device one per fused port, with QP q on member q % nmembers.
 */
typedef struct stt_ib_member {
    stt_ib_dev_t *dev;           /* the physical port */
    stt_ib_ctx_t *ctx;
    struct ibv_cq *cq;
    struct ibv_mr *ctl_mr;       /* the control block, registered on this port */
    int dev_fatal;               /* ctx->fatal when the comm was made */
    int port_downs;              /* ctx->port_downs[port] when the comm was made */
    uint32_t remote_rkey;        /* the peer's control block on its matching member */
    int sgid_index;              /* the GID pair the QPs use */
    uint8_t local_gid[16];
    uint8_t remote_gid[16];
} stt_ib_member_t;

typedef struct stt_ib_conn {
    stt_conn_t head;             /* comm, direction, peer, first failure (base/conn.h) */
    stt_ib_dev_t *dev;           /* the device the comm was made on (a port or a vdev) */
    int nmembers;
    stt_ib_member_t m[STT_IB_MAX_MEMBERS];
    int nqps;
    stt_ib_qp_t qps[STT_IB_MAX_QPS];
    /*
     * Receive comms with flushing on: an RC QP connected to itself, whose
     * 1-byte RDMA read of a received buffer makes the NIC's earlier writes to
     * GPU memory visible (PCIe reads do not pass writes). qp NULL when off.
     */
    stt_ib_qp_t flush_qp;
    void *ctl;                   /* registered control block (FIFO, sizes, CTS source) */
    size_t ctl_bytes;
    int fd;                      /* side channel, watched for EOF */
    int async_err;               /* set by the async thread (atomic) */
    uint64_t eof_check_ns;
    uint64_t eof_ns;             /* when the side channel was found closed; 0: open */
    uint8_t tc;
    uint8_t sl;
    uint64_t remote_addr;        /* FIFO (recv comm) or sizes array (send comm) */
    /*
     * A virtual device's failover state (ib_failover.c; docs/ib-protocol.md,
     * "Failover"). On one port dead stays 0 and live holds every QP.
     */
    uint8_t epoch;               /* failovers agreed with the peer; in immediates */
    uint8_t dead;                /* members lost, bit per member */
    uint8_t live;                /* QPs in use, bit per QP */
    uint8_t agreed;              /* sender: lost members a POS covered (replayed or landed) */
    int async_lost;              /* members the async thread saw fail, bit each (atomic) */
    uint8_t port_lost;           /* members lost to their port's PORT_ERR event, bit each */
    bool fo_wait;                /* sender: DOWN sent, waiting for the receiver's POS */
    uint64_t fo_since_ns;        /* when fo_wait began */
    uint64_t fo_check_ns;        /* last read of the side channel */
    uint32_t fo_in_done;
    uint8_t fo_in[STT_IB_FO_BYTES];
    int fo_nout;                 /* frames queued for the side channel */
    uint32_t fo_out_done;        /* bytes of the first one sent */
    uint8_t fo_out[STT_IB_FO_QUEUE][STT_IB_FO_BYTES];
} stt_ib_conn_t;

static inline bool stt_ib_conn_vnic(const stt_ib_conn_t *conn)
{
    return conn->nmembers > 1;
}

/* The member port QP q runs on. */
static inline stt_ib_member_t *stt_ib_conn_member(stt_ib_conn_t *conn, int q)
{
    return &conn->m[conn->qps[q].member];
}

/*
 * Request states (slot.state): STT_SLOT_FREE, ACTIVE (posted to the NIC, or a
 * receive published), DONE (base/slots.h), and for sends QUEUED, waiting for
 * the CTS of its receive.
 */
#define STT_IB_REQ_QUEUED STT_SLOT_OWN

typedef struct stt_ib_sreq {
    stt_slot_t slot;
    uint8_t cqes_left;           /* signalled completions still due */
    int tag;
    char *data;
    uint64_t size;
    uint32_t lkey[STT_IB_MAX_MEMBERS];
    stt_ib_mrc_entry_t *fly[STT_IB_MAX_MEMBERS];   /* registrations made for a NULL handle */
    /* Virtual device: where it was matched, and whether a loss holds its completion */
    uint32_t recv_seq;
    uint8_t buf;
    bool fo_hold;                /* a work request failed: done only once replayed or landed */
    /* what each member carries of it in the plan that lands, counted at test (ib_count.c) */
    uint8_t mcarried;            /* bit per member: a part (or its immediate) */
    uint64_t mbytes[STT_IB_MAX_MEMBERS];
    /* work-request events (ib_wrev.c): the observer's cookie, its open event per QP */
    void *wr_cookie;
    void *wr_ev[STT_IB_MAX_QPS];
} stt_ib_sreq_t;

typedef struct stt_ib_send {
    stt_ib_conn_t conn;
    volatile stt_ib_fifo_slot_t *fifo;   /* in ctl: STT_IB_FIFO_DEPTH slots */
    uint32_t *sizes_src;                 /* in ctl: [DEPTH][MAX_RECVS] */
    uint32_t recv_seq;                   /* the receive the next send goes to */
    /* the FIFO slot of recv_seq once it arrived */
    bool slot_ready;
    uint8_t slot_n;
    uint8_t slot_matched;                /* bit per buffer */
    uint8_t slot_qps;                    /* bit per QP used so far */
    bool slot_trunc;
    bool slot_sizes;                     /* sizes go through the sizes array */
    stt_ib_fifo_entry_t slot[STT_MAX_RECVS];
    uint32_t slot_xkeys[STT_MAX_RECVS][STT_IB_MAX_MEMBERS];   /* virtual device: rkeys */
    uint64_t slot_bad_since;             /* when recv_seq's slot first read malformed; 0: not */
    uint32_t slot_bad_reads;             /* malformed reads since then */
    uint32_t rr;                         /* round robin over QPs for unsplit messages */
    bool ar;
    uint64_t ar_threshold;
    uint64_t split_min;
    uint32_t imm_size_max;               /* larger sizes go through the sizes array */
    /* per FIFO slot, for a failover's replay: the receive, its buffers matched, how it ends */
    uint32_t hist_seq[STT_IB_FIFO_DEPTH];
    uint8_t hist_trunc[STT_IB_FIFO_DEPTH];
    uint8_t hist_sizes[STT_IB_FIFO_DEPTH];
    uint32_t hist_bytes[STT_IB_FIFO_DEPTH];     /* the immediate's byte count, without sizes */
    /* the replay after a POS: receives [replay_seq, replay_end] still to do, open ones flagged */
    bool replaying;
    uint32_t replay_seq;
    uint32_t replay_end;
    uint32_t replay_open;
    uint32_t replay_next;                /* the receiver's next receive at the POS */
    /* unmatched sends, in posting order */
    uint32_t q_head;
    uint32_t q_tail;
    uint16_t queue[STT_IB_SEND_RING];
    stt_slots_t slots;
    stt_ib_sreq_t reqs[STT_IB_SEND_RING];
} stt_ib_send_t;

/* A receive (slot.n buffers) or a flush. */
typedef struct stt_ib_rreq {
    stt_slot_t slot;
    uint8_t is_flush;
    uint8_t cqes_want;           /* 0 until the first immediate says */
    uint8_t cqes_got;
    uint8_t epoch;               /* virtual device: immediates of other epochs are stale */
    uint8_t qps_imm;             /* QPs whose immediate counted for it (bit each: ib_count.c) */
    uint32_t imm;                /* the first immediate */
    uint64_t cap[STT_MAX_RECVS];
    uint64_t got[STT_MAX_RECVS];
    stt_ib_mrc_entry_t *fly[STT_MAX_RECVS][STT_IB_MAX_MEMBERS];
    /* work-request events (ib_wrev.c): a cookie per buffer, the open events per QP */
    bool wr_any;                 /* some buffer has a cookie */
    void *wr_cookie[STT_MAX_RECVS];
    void *wr_ev[STT_MAX_RECVS][STT_IB_MAX_QPS];
} stt_ib_rreq_t;

typedef struct stt_ib_recv {
    stt_ib_conn_t conn;
    stt_ib_fifo_slot_t *cts;             /* in ctl: CTS source, [DEPTH] */
    volatile uint32_t *sizes;            /* in ctl: written by the sender, [DEPTH][MAX_RECVS] */
    uint32_t seq;                        /* next receive */
    int cts_qp;                          /* the QP CTS writes go on: the first live one */
    stt_ib_rreq_t reqs[STT_IB_FIFO_DEPTH];      /* receive seq uses reqs[seq % DEPTH] */
    stt_slots_t flush_slots;
    stt_ib_rreq_t flushes[STT_IB_FIFO_DEPTH];
    uint64_t *flush_sink;                /* in ctl: where flush reads land */
} stt_ib_recv_t;

/*
 * Whether receive comms on dev flush (STRATA_IB_FLUSH: 1 always, 0 never,
 * -1 when the device takes GPU memory).
 */
bool stt_ib_flush_wanted(const stt_ib_dev_t *d);

/* ------------------------------------------------------------------ ib_conn.c */

/* QPs of a connection on a device of `nmembers` ports: STRATA_IB_QPS_PER_CONNECTION, the same
 * number on each member and at least one (ib_conn.c). */
int stt_ib_conn_nqps(int nmembers);
/*
 * Makes a send (send true) or receive comm on dev with nqps QPs in INIT; a
 * receive comm's QPs get their receive WRs posted. It owns fd from then on,
 * even on failure.
 */
strata_status_t stt_ib_conn_create(bool send, int dev, int nqps, int fd, const char *peer,
                                   stt_ib_conn_t **conn_p);
void stt_ib_conn_destroy(stt_ib_conn_t *conn);
/* Destroys the QPs (no more DMA), keeping the rest for destroy. */
void stt_ib_conn_quiesce(stt_ib_conn_t *conn);

/* Fills the metadata this end sends (kind, QPs, address, control block). */
void stt_ib_conn_meta(const stt_ib_conn_t *conn, int kind, uint64_t listener_id,
                      uint64_t conn_id, stt_ib_meta_t *meta);

/* Logs a failed work completion with everything known and fails the comm. */
void stt_ib_conn_wc_fail(stt_ib_conn_t *conn, const struct ibv_wc *wc);

/*
 * The checks every progress call makes besides the CQ: async errors, device
 * fatal events, the side channel. Returns true when the peer closed its end
 * (eof_ns set); failures go through stt_conn_fail.
 */
bool stt_ib_conn_watch(stt_ib_conn_t *conn, bool pending);

/* ------------------------------------------------------------------ QPs (ib_qp.c) */

strata_status_t stt_ib_qp_create(stt_ib_conn_t *conn, stt_ib_qp_t *q, uint32_t sq_depth,
                                 uint32_t rq_depth);
strata_status_t stt_ib_qp_to_init(stt_ib_conn_t *conn, stt_ib_qp_t *q);
/* The RTR attributes: GRH and GID on RoCE, the remote LID on InfiniBand; MTU the smaller. */
void stt_ib_qp_rtr_attr(const stt_ib_dev_t *d, uint8_t sl, uint8_t tc, uint32_t remote_qpn,
                        const stt_ib_meta_port_t *remote, int sgid_index, const uint8_t *dgid,
                        struct ibv_qp_attr *attr);
strata_status_t stt_ib_qp_to_rtr(stt_ib_conn_t *conn, stt_ib_qp_t *q,
                                 const stt_ib_meta_port_t *remote, int sgid_index,
                                 const uint8_t *dgid, bool quiet);
strata_status_t stt_ib_qp_to_rts(stt_ib_conn_t *conn, stt_ib_qp_t *q);
/*
 * Posts an RDMA write of len bytes at src (in the control block) to raddr in the
 * peer's control block through QP q: a CTS. Signalled when signal says so or the
 * send queue runs short (the signalled one retires the others). 0 or the error.
 */
int stt_ib_qp_post_cts(stt_ib_conn_t *conn, int q, const void *src, uint32_t len,
                       uint64_t raddr, uint32_t slot, bool signal);
/* Posts count zero-length receive WRs on QP q of conn; 0 or ibv_post_recv's error. */
int stt_ib_qp_post_recvs(stt_ib_conn_t *conn, int q, int count);

/*
 * Takes every QP of conn (and its flush QP) to RTR then RTS against the
 * peer's metadata, using the GID pair gid_choice names; records the remote
 * control block. STRATA_ERR_REMOTE (logged) when a transition fails; quiet
 * says not to warn (the caller will try the other pair).
 */
strata_status_t stt_ib_qp_connect(stt_ib_conn_t *conn, const stt_ib_meta_t *remote,
                                  int gid_choice, bool quiet);

/* ------------------------------------------------------------------ failover (ib_failover.c) */

/* Whether a failed work completion of a virtual device's QP means its member is gone. */
bool stt_ib_fo_link_lost(const stt_ib_conn_t *conn, const struct ibv_wc *wc);
/* The member QP q (from a wr_id) runs on, or -1 for an id naming no QP. */
int stt_ib_fo_member_of(const stt_ib_conn_t *conn, uint64_t wr_id);
/*
 * Both ends, every progress call of a virtual device's comm: the async thread's
 * and the devices' verdicts, the side channel's frames (at most every
 * STT_IB_EOF_CHECK_NS, or always while waiting for the peer), the frames to send,
 * the replay. Failures go through stt_conn_fail.
 */
void stt_ib_fo_send_poll(stt_ib_send_t *sc);
void stt_ib_fo_recv_poll(stt_ib_recv_t *rc);
/* The loss of members (bit mask) found on this end: logged once, agreed with the peer. */
void stt_ib_fo_send_lost(stt_ib_send_t *sc, uint32_t members, const char *why);
void stt_ib_fo_recv_lost(stt_ib_recv_t *rc, uint32_t members, const char *why);
/* Sender: true while a failover keeps new sends from being matched. */
static inline bool stt_ib_fo_send_busy(const stt_ib_send_t *sc)
{
    return sc->conn.fo_wait || sc->replaying;
}

/* ------------------------------------------------------------------ counters (ib_count.c) */

/* Records what each member carries of req when posted on the live QPs map[0..nlive) by plan. */
void stt_ib_count_plan(const stt_ib_conn_t *conn, stt_ib_sreq_t *req, const int *map, int nlive,
                       const stt_ib_stripe_t *plan);
/* A send, a receive completed without error: adds them to the members' counters. */
void stt_ib_count_send(stt_ib_send_t *sc, const stt_ib_sreq_t *req);
void stt_ib_count_recv(stt_ib_recv_t *rc, const stt_ib_rreq_t *req);
/* A failure of members (bit mask): an error each, and lost when their traffic moved. */
void stt_ib_count_error(stt_ib_conn_t *conn, uint32_t members, bool lost);

/* ------------------------------------------------------------------ work-request events (ib_wrev.c) */

/* Starts the event of work on QP q for cookie into *slot, after stopping one left there. */
void stt_ib_wrev_start(const stt_ib_conn_t *conn, void *cookie, void **slot, int q,
                       uint64_t wr_id, int opcode, size_t length);
/* Stops the event in *slot, if any, and clears it. */
void stt_ib_wrev_stop(void **slot);
/* A send request ends: its open events stop. */
void stt_ib_wrev_send_end(stt_ib_sreq_t *req);
/* irecv: one event per buffer with a cookie and live QP. */
void stt_ib_wrev_recv_start(stt_ib_recv_t *rc, stt_ib_rreq_t *req, uint32_t slot);
/* QP q delivered receive req's immediate: its events on q stop. */
void stt_ib_wrev_recv_qp(stt_ib_rreq_t *req, int q);
/* A receive request ends: its open events stop. */
void stt_ib_wrev_recv_end(stt_ib_rreq_t *req);

/* ------------------------------------------------------------------ the data path */

/* ib_send.c: polls the CQ, moves work on; returns the comm's state. */
strata_status_t stt_ib_send_progress(stt_ib_send_t *sc);
/* test() of a send request of sc (ib_ops.c found it in sc's ring). */
strata_status_t stt_ib_send_test(stt_ib_send_t *sc, stt_ib_sreq_t *req, int *done,
                                 size_t *sizes);
/*
 * (Re)writes the CTS of receive seq (FIFO slot `slot`, n buffers) into the
 * sender's FIFO through QP rc->cts_qp: the entries, after the per-member rkeys
 * on a virtual device. 0 or ibv_post_send's error.
 */
static inline int stt_ib_recv_cts_post(stt_ib_recv_t *rc, uint32_t slot, int n, uint32_t seq)
{
    size_t off = stt_ib_fifo_write_off(rc->conn.nmembers);

    return stt_ib_qp_post_cts(&rc->conn, rc->cts_qp, (const char *)&rc->cts[slot] + off,
                              (uint32_t)stt_ib_fifo_write_len(rc->conn.nmembers, n),
                              rc->conn.remote_addr + slot * sizeof(stt_ib_fifo_slot_t) + off,
                              slot, seq % STT_IB_CTS_SIGNAL_EVERY == STT_IB_CTS_SIGNAL_EVERY - 1);
}
/* ib_recv.c: the same for a receive comm. */
strata_status_t stt_ib_recv_progress(stt_ib_recv_t *rc);
strata_status_t stt_ib_recv_test(stt_ib_recv_t *rc, stt_ib_rreq_t *req, int *done,
                                 size_t *sizes);

/* ------------------------------------------------------------------ operations, by file */

/* ib_device.c */
strata_status_t stt_ib_probe(void);
strata_status_t stt_ib_init(void);
void stt_ib_fini(void);
strata_status_t stt_ib_devices(int *ndev_p);
strata_status_t stt_ib_get_props(int dev, stt_props_t *props_p);
strata_status_t stt_ib_make_vdev(const int *devs, int n, int *vdev_p);
/* ib_listen.c */
strata_status_t stt_ib_listen(int dev, void *handle, stt_listen_t **listen_p);
strata_status_t stt_ib_accept(stt_listen_t *listen, stt_comm_t **recv_p);
void stt_ib_close_listen(stt_listen_t *listen);
/* ib_conn.c */
void stt_ib_connect_abandon(void *handle);
strata_status_t stt_ib_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                               stt_comm_t **send_p);
void stt_ib_close_send(stt_comm_t *comm);
void stt_ib_close_recv(stt_comm_t *comm);
/* ib_mr.c */
strata_status_t stt_ib_reg_mr(stt_comm_t *comm, void *data, size_t size, int type,
                              void **mh_p);
strata_status_t stt_ib_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p);
strata_status_t stt_ib_dereg_mr(stt_comm_t *comm, void *mh);
/* ib_send.c */
strata_status_t stt_ib_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                             stt_req_t **req_p);
/* ib_recv.c */
strata_status_t stt_ib_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                             const int *tags, void **mhs, stt_req_t **req_p);
strata_status_t stt_ib_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p);

#endif /* STT_IB_INTERNAL_H */

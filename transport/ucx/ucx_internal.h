/*
 * Objects of the UCX transport, shared by its files. Nothing outside
 * transport/ucx includes this.
 *
 *   devices      network interfaces, reference-counted by init/fini (ucx_device.c)
 *   context      one ucp_context per process, reference-counted by the device
 *                table and every worker; workers (ucx_context.c)
 *   stt_ucx_chan_t   the side channel of one connection while it is set up: a
 *                non-blocking TCP socket that sends our hello + worker address
 *                and reads the peer's (ucx_chan.c)
 *   stt_ucx_listen_t a listening socket and the connections half accepted on it
 *                (ucx_listen.c); the connect side is ucx_conn.c
 *   stt_ucx_send_t / stt_ucx_recv_t  the two ends: a UCP worker, one endpoint to
 *                the peer's worker, the side-channel socket kept as a liveness
 *                check, and preallocated request slots (made, progressed and
 *                closed in ucx_conn.c; requests in ucx_send.c and ucx_recv.c)
 *   lingering closes send comms whose flush outlived close_send, finished by
 *                a background thread (ucx_linger.c)
 *
 * Calls go one way: ucx_ops.c -> ucx_listen.c, ucx_send.c, ucx_recv.c,
 * ucx_poll.c -> ucx_conn.c -> ucx_linger.c, ucx_chan.c, ucx_context.c,
 * ucx_device.c, ucx_wire.c, base/. ucx_conn.c never calls the request files;
 * ucx_linger.c reaches back only through the finish function it is given.
 *
 * Threading: a worker per comm, created UCS_THREAD_MODE_SERIALIZED, so a comm
 * (used by one thread at a time, the contract) needs no lock, and comms used
 * by different threads at once never share UCP state but the context, which
 * is created with mt_workers_shared. A closed send comm's worker may pass to
 * the lingering-close thread, which then alone progresses it (the last fini,
 * in ucx_device.c, waits for that thread). The device table is guarded by its
 * devref, the context by a mutex in ucx_context.c (taken after the devref's).
 */
#ifndef STT_UCX_INTERNAL_H
#define STT_UCX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <ucp/api/ucp.h>

#include "transport/base/conn.h"
#include "transport/base/netif.h"
#include "transport/base/slots.h"
#include "transport/ucx/ucx.h"
#include "transport/ucx/ucx_load.h"
#include "transport/ucx/ucx_wire.h"
#include "util/compiler.h"

/* ------------------------------------------------------------------ constants */

/* Props. Latency: UCX 1.13 point-to-point over TCP, 4.7 us (docs/machines.md). */
#define STT_UCX_LATENCY_US 4.7f
#define STT_UCX_MAX_COMMS 65536
/*
 * Largest message advertised (max_p2p_bytes) and accepted by isend. UCP tag
 * messages take size_t lengths; 2 GiB is a conservative bound, not a measured
 * limit (NCCL splits larger transfers).
 */
#define STT_UCX_MAX_MSG_BYTES (1ull << 31)
#define STT_UCX_MAX_COLL_BYTES (512ull << 20)  /* NCCL's MAX_COLLNET_SIZE */

#define STT_UCX_SEND_SLOTS STT_MAX_SEND_REQUESTS   /* the contract's send budget */
#define STT_UCX_RECV_SLOTS STT_MAX_REQUESTS        /* and its receive budget */
/*
 * Idle test() calls (the worker made no progress) between two liveness checks
 * of the side channel, one recv(MSG_PEEK) each: a check costs ~1 us, an idle
 * test ~0.1 us, so checks take about a tenth of an idle spinner's time and
 * none of a busy one's.
 */
#define STT_UCX_LIVENESS_EVERY 64u
/*
 * After the peer closed its side channel (or, for a receive comm, UCX failed
 * the endpoint), how long the worker may stay idle before the comm fails:
 * data the peer sent before closing may still be in flight on UCX's own
 * connections (the side channel is a different socket) or waiting in UCX for
 * a receive, and every progress restarts the wait. 200 ms covers a scheduler tick on a
 * loaded 2-core machine many times over.
 */
#define STT_UCX_EOF_GRACE_NS (200ull * 1000000ull)
/*
 * Closing a send comm with nothing in flight flushes its endpoint, so that
 * completed sends still queued in UCX (a send completes when its buffer may
 * be reused) reach the peer. close_send waits for the flush inline for at
 * most FLUSH_NS, and only while the worker keeps making progress: after
 * IDLE_NS without any, the flush is waiting for the peer's worker (a process
 * not scheduled yet on a loaded machine, or NCCL's same-thread loopback probe,
 * whose receive side is progressed only after close_send returns), and the
 * rest of the close finishes in the background (ucx_linger.c) instead of
 * blocking the caller or dropping the data.
 */
#define STT_UCX_CLOSE_FLUSH_NS (2000ull * 1000000ull)
#define STT_UCX_CLOSE_IDLE_NS (5ull * 1000000ull)
/*
 * A virtual device's send comm flushes its lanes other than lane 0 inline at
 * close and gives up on one after this long without progress (its peer is
 * not progressing it: gone, or a same-thread caller that closes its receive
 * comm next). Longer than the plain comm's 5 ms because those lanes do not
 * linger; 100 ms is many scheduler ticks on a loaded 2-core machine.
 */
#define STT_UCX_VNIC_CLOSE_IDLE_NS (100ull * 1000000ull)
/* Endpoint close (force mode) and cancelled receives complete within this bound. */
#define STT_UCX_CLOSE_FORCE_NS (1000ull * 1000000ull)

/* ------------------------------------------------------------------ devices (ucx_device.c, _vdev.c) */

/* Interfaces, then virtual devices made by make_vdev. */
#define STT_UCX_MAX_DEVS (STT_NETIF_MAX + 16)

/* A device: an interface, or a virtual device fusing 2..8 of them. */
typedef struct stt_ucx_dev {
    stt_netif_t nif;             /* the side channel's interface (a virtual device: its first
                                    member's) */
    stt_props_t props;
    int nmembers;                /* 1 for an interface */
    char member_name[STT_MAX_VDEV_MEMBERS][IF_NAMESIZE];   /* ordered (base/vdev.h) */
} stt_ucx_dev_t;

/* Copies device dev out of the table. STRATA_ERR_NOT_FOUND for a bad index. */
strata_status_t stt_ucx_device_get(int dev, stt_ucx_dev_t *dev_p);
/* ucx_vdev.c: the entry of members asked[0..n) of table[0..count) (checked, ordered). */
strata_status_t stt_ucx_vdev_fill(const stt_ucx_dev_t *table, int count, const int *asked,
                                  int n, stt_ucx_dev_t *vdev);
/* ucx_vdev.c: the groups STRATA_NET_FUSE names, fused in place of their members. */
void stt_ucx_vdev_force(stt_ucx_dev_t *table, int *count_p);
strata_status_t stt_ucx_make_vdev(const int *devs, int n, int *vdev_p);

/* ------------------------------------------------------------------ context (ucx_context.c) */

/*
 * The device table's reference on the process's ucp_context, from the first
 * init (open, which creates the context if no worker kept it) to the last
 * fini (close). Every worker holds one more (stt_ucx_worker_open), so a comm
 * outlives the fini of its init.
 */
strata_status_t stt_ucx_context_open(void);
void stt_ucx_context_close(void);
/* STRATA_ERR_REMOTE for errors that mean the peer is gone, IO otherwise. */
strata_status_t stt_ucx_status(ucs_status_t status);

/* ------------------------------------------------------------------ side channel (ucx_chan.c) */

typedef struct stt_ucx_chan {
    int fd;
    uint64_t start_ns;
    char peer[STT_NETIF_ADDR_STRLEN];
    /* our hello + worker address, written from out_off on */
    uint8_t *out;
    uint32_t out_len;
    uint32_t out_off;
    /* the peer's hello, then its worker address */
    uint8_t in_hdr[STT_UCX_HELLO_BYTES];
    uint32_t in_have;        /* bytes of the hello read so far */
    stt_ucx_hello_t in;
    uint8_t *in_addr;        /* in.addr_len bytes once the hello is read */
    uint32_t addr_have;      /* bytes of the address read so far */
} stt_ucx_chan_t;

/* Adopts a connected (or connecting) non-blocking socket. */
void stt_ucx_chan_init(stt_ucx_chan_t *ch, int fd, const char *peer);
/* Queues our hello; the worker address is copied. */
strata_status_t stt_ucx_chan_set_hello(stt_ucx_chan_t *ch, const stt_ucx_hello_t *hello,
                                       const void *addr);
/* Writes what is queued; *done when all of it is out. */
strata_status_t stt_ucx_chan_write(stt_ucx_chan_t *ch, bool *done);
/*
 * Reads the peer's hello and address; *done once both are in (then ch->in, ch->in_addr).
 * The hello's fixed 40 bytes are checked against expect as soon as they are in, before the
 * address behind them is allocated or read, so a stranger costs no more than those bytes:
 * its kind, listener id and secret (constant time) must be expect's, and for an ACCEPT
 * (the listener's reply) its connection id too. STRATA_ERR_REMOTE, with a warning, if not.
 */
strata_status_t stt_ucx_chan_read(stt_ucx_chan_t *ch, const stt_ucx_hello_t *expect,
                                  bool *done);
/* Frees the buffers; closes the socket unless keep_fd. */
void stt_ucx_chan_fini(stt_ucx_chan_t *ch, bool keep_fd);

/* ------------------------------------------------------------------ comms */

/* Requests: slot.state is STT_SLOT_FREE, ACTIVE (posted) or DONE (base/slots.h). */
typedef struct stt_ucx_sreq {
    stt_slot_t slot;
    void *ucp;               /* UCP request, NULL once complete */
    ucs_status_t ucs;        /* UCS_OK or how it failed, once complete */
    size_t size;
    /* A virtual device's send (ucx_vnic_send.c): a whole message, or a head and parts. */
    uint8_t nparts;          /* UCP sends below: 1 whole, or 1 head + the parts */
    uint8_t lane[1 + STT_MAX_VDEV_MEMBERS];
    uint32_t part_len[1 + STT_MAX_VDEV_MEMBERS];      /* payload bytes (the head: 0) */
    void *part[1 + STT_MAX_VDEV_MEMBERS];             /* UCP requests, NULL once complete */
    uint8_t head[STT_UCX_VHDR_BYTES];
} stt_ucx_sreq_t;

/* slot.n buffers; slot.status is the first failure of a buffer (TRUNCATED, ...). */
/* One buffer of a virtual device's receive (ucx_vnic_recv.c). */
typedef struct stt_ucx_vbuf {
    uint8_t *data;
    size_t size;
    uint8_t head_lane;
    uint8_t nparts;          /* 0 while the head (or whole message) is awaited in part[0] */
    uint8_t npend;           /* UCP receives not complete */
    bool done_counted;       /* npend reached 0 and the request's pending count knows */
    uint8_t lane[STT_MAX_VDEV_MEMBERS];
    void *part[STT_MAX_VDEV_MEMBERS];                 /* UCP receives, NULL once complete */
    uint32_t part_len[STT_MAX_VDEV_MEMBERS];          /* bytes received into each */
    uint64_t total;          /* the message's size, once known */
    /* The head (or a whole message's first bytes) lands here, never in the caller's
     * buffer, which another receive in flight may share: iov[0] is scratch, iov[1] the
     * caller's buffer past its first STT_UCX_VHDR_BYTES. */
    uint8_t scratch[STT_UCX_VHDR_BYTES];
    ucp_dt_iov_t iov[2];
} stt_ucx_vbuf_t;

typedef struct stt_ucx_rreq {
    stt_slot_t slot;
    uint8_t pending;         /* buffers whose UCP receive is not complete */
    void *ucp[STT_MAX_RECVS];
    ucp_tag_recv_info_t info[STT_MAX_RECVS];
    stt_ucx_vbuf_t v[STT_MAX_RECVS];                  /* a virtual device's buffers */
} stt_ucx_rreq_t;

/* One member of a comm's device: its worker and the endpoint to the peer's. */
typedef struct stt_ucx_lane {
    struct stt_ucx_conn *conn;
    int idx;
    ucp_worker_h worker;
    ucp_ep_h ep;
    int efd;                 /* -1 without one */
} stt_ucx_lane_t;

/* Messages of one tag sent (or buffers posted) so far on a virtual device's comm. */
typedef struct stt_ucx_tagcount {
    int tag;
    uint32_t n;
    bool used;
} stt_ucx_tagcount_t;
/* Distinct tags one comm on a virtual device follows (NCCL uses a handful per comm). */
#define STT_UCX_VNIC_TAGS 64

/*
 * What both comm kinds share. head.failed is also written by UCX's error
 * callback (from inside progress); head.closing turns failures into info.
 */
typedef struct stt_ucx_conn {
    stt_conn_t head;         /* comm, direction, peer, first failure (base/conn.h) */
    int fd;                  /* side channel, open for the comm's life */
    int efd;                 /* lane 0's event descriptor, -1 without one */
    ucp_worker_h worker;     /* lane 0's */
    ucp_ep_h ep;             /* lane 0's */
    int nlanes;              /* the device's members: 1 for an interface */
    stt_ucx_lane_t lane[STT_MAX_VDEV_MEMBERS];
    int ctx_slot[STT_MAX_VDEV_MEMBERS];               /* given back with the workers */
    uint32_t stripe_min;     /* virtual device: messages this large are striped */
    uint32_t vseq;           /* virtual device: striped messages sent (send comm) */
    stt_ucx_tagcount_t tagc[STT_UCX_VNIC_TAGS];       /* virtual device */
    uint32_t conn_id;
    uint32_t idle;           /* idle tests since the last liveness check */
    bool peer_eof;           /* the peer closed the side channel, or (receive comm) UCX
                                saw its worker go */
    ucs_status_t ep_status;  /* how UCX failed a receive comm's endpoint, UCS_OK before */
    uint64_t quiet_since_ns; /* since then, or the last progress after it */
} stt_ucx_conn_t;

typedef struct stt_ucx_send {
    stt_ucx_conn_t conn;
    stt_slots_t slots;
    stt_ucx_sreq_t reqs[STT_UCX_SEND_SLOTS];
} stt_ucx_send_t;

typedef struct stt_ucx_recv {
    stt_ucx_conn_t conn;
    stt_slots_t slots;
    stt_ucx_rreq_t reqs[STT_UCX_RECV_SLOTS];
} stt_ucx_recv_t;

/*
 * A worker with its address, for a connection being set up. The address is
 * released with ucp_worker_release_address.
 */
typedef struct stt_ucx_worker {
    ucp_worker_h worker;     /* lane 0's */
    int n;                   /* lanes open */
    ucp_worker_h lane[STT_MAX_VDEV_MEMBERS];
    int ctx_slot[STT_MAX_VDEV_MEMBERS];
    uint8_t *addr;           /* the packed addresses (ucx_wire.h), malloc'ed */
    size_t addr_len;
} stt_ucx_worker_t;

/*
 * ucx_context.c: a worker per member of dev (an interface: one, on the
 * process's context; a virtual device: one per member, each on a context
 * whose NET_DEVICES is that member) and their packed addresses, for a
 * connection with peer, with a context reference each; STRATA_ERR_INVALID
 * (warned) before init or after the last fini.
 */
strata_status_t stt_ucx_worker_open(stt_ucx_worker_t *w, const stt_ucx_dev_t *dev,
                                    const char *peer);
void stt_ucx_worker_close(stt_ucx_worker_t *w);

/* ------------------------------------------------------------------ closes in the background (ucx_linger.c) */

typedef void (*stt_ucx_linger_fn)(void *arg);

/*
 * Hands over a closed send comm's worker whose flush req is still in flight:
 * a background thread progresses the worker until req completes, the side
 * channel fd shows the peer's close, or stt_ucx_linger_bound_ms passes, then
 * frees req and calls finish(arg). key is the connection id. On an error
 * (warned) nothing is taken over.
 */
strata_status_t stt_ucx_linger_add(uint32_t key, ucp_worker_h worker, void *req, int fd,
                                   const char *peer, stt_ucx_linger_fn finish, void *arg);
/*
 * The receive end of connection key is closing in this process: a close of
 * its send end still lingering here has no one left to deliver to and
 * finishes now, in the caller's thread.
 */
void stt_ucx_linger_cancel(uint32_t key);
/* How long a close may linger: STRATA_SOCKET_USER_TIMEOUT, or 30 s when that is 0. */
int64_t stt_ucx_linger_bound_ms(void);
/* Waits until every lingering close is finished and the thread has returned (last fini). */
void stt_ucx_linger_drain(void);

/* ------------------------------------------------------------------ ucx_conn.c */

/*
 * Builds a send (send true) or receive comm around w (its worker, taken
 * over), the side-channel socket fd (taken over, even on failure) and the
 * peer's worker address.
 */
strata_status_t stt_ucx_conn_create(bool send, int dev, stt_ucx_worker_t *w, int fd,
                                    const stt_ucx_hello_t *peer_hello, const void *peer_addr,
                                    uint32_t conn_id, const char *peer, stt_comm_t **comm_p);

/* Peeks at the side channel: EOF sets peer_eof, a reset or stray bytes fail the comm. */
void stt_ucx_conn_check_peer(stt_ucx_conn_t *conn);

/*
 * Progresses the worker; when it was idle, checks the side channel now and
 * then. Returns the comm's state (OK or its error).
 */
strata_status_t stt_ucx_conn_progress(stt_ucx_conn_t *conn);
/*
 * A request is still pending after stt_ucx_conn_progress and a look at it:
 * once the peer has gone (peer_eof) and the worker stayed idle for
 * STT_UCX_EOF_GRACE_NS, the comm fails. Returns the comm's state. A request
 * that completes is never failed by the grace, however late it is tested.
 */
strata_status_t stt_ucx_conn_pending(stt_ucx_conn_t *conn);

/* ------------------------------------------------------------------ the data path */

/* Progresses every lane's worker; returns the events (ucx_conn.c). */
unsigned stt_ucx_conn_progress_lanes(stt_ucx_conn_t *conn);
/* Lane of the next message (or buffer) of tag; STRATA_ERR_NO_RESOURCE past STT_UCX_VNIC_TAGS. */
strata_status_t stt_ucx_vnic_lane_of(stt_ucx_conn_t *conn, int tag, int *lane_p);
/* A virtual device's data path (ucx_vnic_send.c, ucx_vnic_recv.c). */
strata_status_t stt_ucx_vnic_isend(stt_ucx_send_t *sc, void *data, size_t size, int tag,
                                   stt_req_t **req_p);
strata_status_t stt_ucx_vnic_send_test(stt_ucx_send_t *sc, stt_ucx_sreq_t *req, int *done,
                                       size_t *sizes);
void stt_ucx_vnic_send_abandon(stt_ucx_sreq_t *req);
strata_status_t stt_ucx_vnic_irecv(stt_ucx_recv_t *rc, int n, void **data, const size_t *sizes,
                                   const int *tags, stt_req_t **req_p);
strata_status_t stt_ucx_vnic_recv_test(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req, int *done,
                                       size_t *sizes);
void stt_ucx_vnic_recv_abandon(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req);

/* test() of each direction (ucx_send.c, ucx_recv.c); ucx_ops.c dispatches. */
strata_status_t stt_ucx_send_test(stt_ucx_send_t *sc, stt_req_t *base, int *done, size_t *sizes);
strata_status_t stt_ucx_recv_test(stt_ucx_recv_t *rc, stt_req_t *base, int *done, size_t *sizes);

/* ------------------------------------------------------------------ operations, by file */

/* ucx_device.c */
strata_status_t stt_ucx_probe(void);
strata_status_t stt_ucx_init(void);
void stt_ucx_fini(void);
strata_status_t stt_ucx_devices(int *ndev_p);
strata_status_t stt_ucx_get_props(int dev, stt_props_t *props_p);
/* ucx_listen.c */
strata_status_t stt_ucx_listen(int dev, void *handle, stt_listen_t **listen_p);
strata_status_t stt_ucx_accept(stt_listen_t *listen, stt_comm_t **recv_p);
void stt_ucx_close_listen(stt_listen_t *listen);
/* ucx_conn.c */
void stt_ucx_connect_abandon(void *handle);
strata_status_t stt_ucx_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p);
void stt_ucx_close_send(stt_comm_t *comm);
void stt_ucx_close_recv(stt_comm_t *comm);
/* ucx_send.c */
strata_status_t stt_ucx_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                              stt_req_t **req_p);
/* ucx_recv.c */
strata_status_t stt_ucx_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                              const int *tags, void **mhs, stt_req_t **req_p);
strata_status_t stt_ucx_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                               void **mhs, stt_req_t **req_p);
/* ucx_poll.c */
int stt_ucx_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max);

#endif /* STT_UCX_INTERNAL_H */

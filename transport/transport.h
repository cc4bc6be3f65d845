/*
 * The transport contract: what every Strata transport (tcp, ib, ucx, loop, and the tests'
 * fault-injecting fake) provides, and what the NCCL edge (plugin/), the collective library
 * (algos/, coll/), the tools and the tests call. It follows NCCL's net plugin semantics in
 * Strata's own types. Callers use the stt_* wrappers at the end of this file, never the
 * ops table's members (make lint checks it).
 *
 * Objects. A transport hands out listen comms (stt_listen_t), send and receive comms
 * (stt_comm_t), requests (stt_req_t) and memory handles (void *). Each comm begins with its
 * base struct, whose ops pointer the wrappers dispatch through; a request begins with a
 * pointer to the comm that owns it.
 *
 * Progress and blocking. Nothing on the data path waits for a peer:
 *   - connect and accept return STRATA_OK with a NULL comm while the connection is not
 *     ready; the caller calls again (connect with the same handle memory).
 *   - isend, irecv and iflush return STRATA_OK with a NULL request when the comm has no
 *     free slot; the caller tests earlier requests and posts again.
 *   - test() is the only call that moves data: it progresses the request's comm (every
 *     request of it, not just this one) and reports *done. A caller that stops testing
 *     stops its comm's progress.
 * "In progress" is said by a NULL output or *done == 0, never by a status: no operation
 * returns STRATA_INPROGRESS. init and reg_mr may take time (device discovery, pinning
 * pages); none of them waits for a peer.
 *
 * Errors. A negative strata_status_t, logged once where it is first seen with its cause.
 * Outputs are written only on STRATA_OK. What each operation returns is listed with it;
 * every operation answers STRATA_ERR_INVALID for an argument it cannot use (a NULL
 * output, a comm or request of another transport or kind, a device out of range, a
 * buffer outside its handle, more than max_p2p_bytes), without touching the comm.
 * STRATA_ERR_REMOTE means the peer died, closed or broke the protocol: a dead peer fails
 * every pending request of the comm within a bounded time (STRATA_SOCKET_USER_TIMEOUT
 * for tcp, the QP's retries for ib), never a hang. An error that breaks a comm is sticky:
 * later posts and tests on it return the same status (STRATA_ERR_TRUNCATED fails only
 * its receive).
 *
 * Matching. A receive groups n <= max_recvs buffers with a tag each. Matching is per
 * tag and in posting order: the k-th send of tag t on a connection lands in the k-th
 * buffer of tag t the receiver posted (receives in posting order, a receive's buffers in
 * index order). Several tags may share one connection and progress out of step, as
 * NCCL's shared comms do (one send comm for the GPUs of a node that send to one peer,
 * each with its own tag, maxRecvs > 1): a send whose buffer is not posted yet is never
 * an error and is never lost or reordered within its tag. isend accepts it (a NULL
 * request still means only "no free slot") and its request stays pending until a
 * receive with its tag is posted and the data has moved; sends of other tags pass it.
 * When a transport matches (ib and loop, as NCCL's IB transport: only against the oldest
 * receive with an unmatched buffer; ucx and tcp: against any posted receive) changes
 * when a request completes, never where data lands. A held send keeps its slot: a caller
 * that posts STT_MAX_SEND_REQUESTS sends ahead of their receives gets NULL for the next.
 * On a transport with props.tags_block set (tcp, a byte stream) a message whose buffer is
 * not posted also holds back the messages behind it on the connection, so a receiver that
 * waits for one of those before posting that buffer waits forever; the NCCL edge reports
 * maxRecvs 1 for such a device, which keeps NCCL from sharing its comms (NCCL's own
 * socket transport does the same). A buffer may be larger than the send (test reports
 * the real size); a send larger than its buffer fails that receive with
 * STRATA_ERR_TRUNCATED and the comm stays usable. Every comm sustains STT_MAX_REQUESTS
 * receives and STT_MAX_SEND_REQUESTS sends in flight.
 *
 * Memory handles. reg_mr returns a handle for [data, data + size) on one comm;
 * isend/irecv/iflush take one per buffer, which must cover the buffer. A NULL handle (or
 * a NULL mhs array) means "host memory, not registered": every transport accepts it for
 * host memory; tcp, ucx and loop need no registration at all, ib registers the buffer on
 * the fly through its registration cache (a lock per message; STRATA_IB_MR_KEEP says
 * whether it stays registered). GPU memory always needs a handle.
 *
 * Threads. probe, init, fini, devices and get_props may be called from any thread at any
 * time. Every other operation is on one object: a listen comm, or a send or receive comm
 * with its requests and handles, is used by one thread at a time (the caller serialises);
 * different objects may be used from different threads at once, as NCCL's proxy threads
 * do. The locks a transport takes inside a call are short and never held across calls
 * (ib's registration cache per device, loop's channel between its two ends).
 *
 * Ownership and lifetime. The transport owns every object it hands out. A request is
 * released when test() reports done or returns an error; a comm's close_* frees the comm
 * and every request still pending on it (their pointers become invalid; their buffers are
 * the caller's again). Memory handles belong to the comm they were registered on and are
 * deregistered before it is closed. Buffers stay valid and untouched by the caller from
 * the post until the request is released. init is reference-counted: each successful init
 * is matched by one fini, and every comm is closed before the last fini.
 */
#ifndef STRATA_TRANSPORT_H
#define STRATA_TRANSPORT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STT_HANDLE_SIZE 128      /* connection handle, carried out of band (NCCL's limit) */
#define STT_MAX_RECVS 8          /* buffers per grouped receive */
#define STT_MAX_REQUESTS 32      /* receives in flight per comm (NCCL_NET_MAX_REQUESTS) */
#define STT_MAX_SEND_REQUESTS (STT_MAX_REQUESTS * STT_MAX_RECVS)
#define STT_MAX_VDEV_MEMBERS 8   /* devices one virtual device fuses (NCCL v12's ndevs bound) */

/* Memory types, bit values equal to NCCL_PTR_*. */
#define STT_PTR_HOST 0x1
#define STT_PTR_CUDA 0x2
#define STT_PTR_DMABUF 0x4

#define STT_TRAFFIC_CLASS_UNDEF (-1)   /* no class asked for (NCCL_NET_TRAFFIC_CLASS_UNDEF) */

typedef struct stt_ops stt_ops_t;

/* One device's properties, filled by get_props; the NCCL edge copies them to ncclNetProperties. */
typedef struct stt_props {
    char name[64];          /* device name for logs and NCCL ("mlx5_0", "eth0"), NUL-terminated */
    char pci_path[256];     /* sysfs PCI path NCCL reads for topology; "" for a virtual device */
    uint64_t guid;          /* devices sharing a guid are one physical port */
    int ptr_support;        /* STT_PTR_* mask of the memory reg_mr takes; STT_PTR_HOST always */
    int reg_is_global;      /* 1: a registration is cached by address and serves every comm
                               of the device (NCCL may register once and reuse); else 0 */
    int force_flush;        /* 1: NCCL must call iflush after every GPU receive; else 0 */
    int speed_mbps;         /* link speed in Mbit/s, > 0 */
    int port;               /* the device's port number (ib: the HCA port; others 0 or 1) */
    float latency_us;       /* one-way latency NCCL adds to its inter-node model, µs, >= 0 */
    int max_comms;          /* most send plus receive comms the device holds at once, > 0 */
    int max_recvs;          /* most buffers one irecv/iflush groups, 1..STT_MAX_RECVS */
    int tags_block;         /* 1: a message whose receive is not posted holds back the later
                               messages of its connection (tcp's byte stream); else 0 */
    size_t max_p2p_bytes;   /* largest message isend/irecv take on this device, > 0 */
    size_t max_coll_bytes;  /* largest message a collective hands one call (NCCL), > 0 */
    size_t stripe_min;      /* a message of at least this many bytes is split across the
                               connection's parallel streams (tcp: its sockets, ib: its QPs),
                               each moved on its own; 0: every message takes one stream */
    int cpu_copies;         /* 1: the host's cores copy every payload byte (tcp: the kernel's
                               socket copies), so the streams at once share them; 0: the NIC
                               moves them (RDMA) or unknown */
} stt_props_t;

/* Options of one connection; connect accepts a NULL cfg for "all defaults". */
typedef struct stt_conn_cfg {
    int traffic_class;      /* QoS class (ib: the GRH traffic class); STT_TRAFFIC_CLASS_UNDEF
                               unless the user set one */
} stt_conn_cfg_t;

/* Base of every listen comm. */
typedef struct stt_listen {
    const stt_ops_t *ops;   /* the transport that made it; the wrappers dispatch through it */
    int dev;                /* the device it listens on */
} stt_listen_t;

/*
 * Counters of one member of the device a comm runs on: each member of a virtual device, or
 * the device itself. The transport writes them (one writer: the comm's thread, with relaxed
 * atomic stores, stt_member_add); the layer above may read them from any thread with relaxed
 * atomic loads while the comm is open.
 */
typedef struct stt_member_stats {
    uint64_t bytes;         /* payload bytes the member's sockets (or QPs) moved: written by a
                               sender, read by a receiver; a lost member's bytes the peer never
                               got are taken back, and replayed bytes count on the member that
                               carried the replay, so once every message completed the members
                               add up to the comm's payload */
    uint64_t msgs;          /* completed messages the member carried a part of (a message with
                               no payload: the member that carried its header) */
    uint64_t errors;        /* failures of the member's sockets (or QPs) */
    uint64_t lost;          /* 0: up; 1: lost (its traffic moved to the other members) */
} stt_member_stats_t;

/* Adds v to a counter of stt_member_stats_t (its one writer only). */
static inline void stt_member_add(uint64_t *counter, uint64_t v)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* Base of every send or receive comm. */
typedef struct stt_comm {
    const stt_ops_t *ops;   /* the transport that made it; the wrappers dispatch through it */
    int dev;                /* the device it was connected or accepted on */
    void *stats;            /* the layer above's per-comm counters (plugin/net_stats.h), set by
                               it after connect/accept; transports never touch it */
    uint32_t failovers;     /* written by the transport: times traffic moved off a lost
                               member of a virtual device (0 at connect/accept); the layer
                               above reads it after test */
    int nmembers;           /* members with counters below, set by the transport at
                               connect/accept: a virtual device's members, 1 for a plain
                               device, 0 for a transport that keeps no member counters */
    stt_member_stats_t members[STT_MAX_VDEV_MEMBERS];
    void *const *wr_cookies; /* written by the layer above around each isend/irecv, for a
                               transport that reports work requests (stt_reports_wrs): the
                               observer's handles for the request being posted (one for a
                               send, one per buffer for a receive), or NULL for none; the
                               transport copies them into the request during the call */
} stt_comm_t;

/*
 * Work-request events, for a profiler above (NCCL's IB shape: one event per work request
 * on one QP). A transport that reports them (stt_reports_wrs: ib) calls the observer's
 * start when it posts a request's work on one of its queues, with the request's cookie
 * (stt_comm_t.wr_cookies), and stop on the handle start returned when that work completes
 * or the request ends (done, failed, or its comm closed), every start with one stop, from
 * the thread using the comm. Without a cookie nothing is called.
 */
typedef struct stt_wr_event {
    int member;             /* the member of the comm's device the queue runs on (0 on a
                               plain device) */
    uint32_t qpn;           /* the queue's number (ib: the QP number) */
    uint64_t wr_id;         /* the work request's id (ib: the one its completion carries) */
    int opcode;             /* the work request's opcode (ib: enum ibv_wr_opcode for a send;
                               for a receive, IBV_WC_RECV_RDMA_WITH_IMM, the completion it
                               waits for) */
    size_t length;          /* payload bytes of the request on that queue (a receive: 0, its
                               share of each queue is known only when its data arrived) */
} stt_wr_event_t;

typedef struct stt_wr_observer {
    void *(*start)(void *cookie, const stt_wr_event_t *ev);   /* its handle, or NULL */
    void (*stop)(void *handle);
} stt_wr_observer_t;

/* Sets the process's observer (NULL: none); the table must outlive every comm. */
void stt_wr_observer_set(const stt_wr_observer_t *obs);
/* The observer set, or NULL. */
const stt_wr_observer_t *stt_wr_observer(void);

/* Base of every request. */
typedef struct stt_req {
    stt_comm_t *comm;       /* the comm it was posted on, which owns it */
    int nsizes;             /* set at post: how many sizes test() reports (1 for a send, n for
                               a receive of n buffers, 0 for a flush), so a layer above copies
                               exactly that many */
    void *prof;             /* the layer above's profiler event (plugin/net_prof.h), written
                               by it after each post; transports never touch it */
} stt_req_t;

/*
 * The operations. Each lists what it may return besides STRATA_OK and the
 * STRATA_ERR_INVALID every operation gives for arguments it cannot use.
 */
struct stt_ops {
    const char *name;       /* "tcp", "ib", ...: what STRATA_TRANSPORT names */
    int reports_wrs;        /* 1: reports its work requests to the observer (stt_wr_event_t) */

    /*
     * Cheap check that the transport can run here (its library loads, the kernel has
     * what it needs); does not count as init and allocates nothing.
     * Errors: STRATA_ERR_UNSUPPORTED, STRATA_ERR_NOT_FOUND (no device of this kind).
     */
    strata_status_t (*probe)(void);

    /*
     * The shared library the transport loads at run time (on its first probe or init, or
     * now), and whether it loaded: returns its file name ("libibverbs.so.1"), NULL for a
     * transport that needs none; *why_p is NULL when it loaded (or none is needed), else
     * why not (the loader's text). Thread-safe; allocates nothing the caller frees.
     */
    const char *(*library)(const char **why_p);

    /*
     * Reference-counted: the first init discovers the devices, the last fini frees them;
     * a later init discovers again. fini without a matching init is ignored.
     * Errors (init): STRATA_ERR_NOT_FOUND (no usable device), STRATA_ERR_NO_MEMORY,
     * STRATA_ERR_IO (a library or system call failed).
     */
    strata_status_t (*init)(void);
    void (*fini)(void);

    /* Between init and fini: the number of devices (may be 0), and one device's properties. */
    strata_status_t (*devices)(int *ndev_p);
    strata_status_t (*get_props)(int dev, stt_props_t *props_p);

    /*
     * Starts listening on dev and writes into handle (STT_HANDLE_SIZE bytes, any
     * alignment, carried to the peer out of band) what a peer needs to connect.
     * Errors: STRATA_ERR_IO (socket, bind), STRATA_ERR_NO_MEMORY, STRATA_ERR_NO_RESOURCE.
     */
    strata_status_t (*listen)(int dev, void *handle, stt_listen_t **listen_p);

    /*
     * Connects to the listener a handle describes. STRATA_OK with *send_p NULL while in
     * progress: call again with the same handle memory (a transport keeps its
     * in-progress state inside the handle, after the bytes listen wrote). A caller that
     * gives up on a connect in progress calls connect_abandon with the same handle memory;
     * one that neither finishes nor abandons it leaks that state. cfg may be NULL.
     * Errors: STRATA_ERR_INVALID (a handle from another transport or version),
     * STRATA_ERR_REMOTE (refused, or the peer broke the handshake), STRATA_ERR_TIMEOUT
     * (past STRATA_CONNECT_TIMEOUT; the handle is reset and a later call starts over),
     * STRATA_ERR_IO, STRATA_ERR_NO_MEMORY.
     */
    strata_status_t (*connect)(int dev, void *handle, const stt_conn_cfg_t *cfg,
                               stt_comm_t **send_p);

    /*
     * Ends the connect in progress on handle (the memory connect was called with): frees
     * its state and resets the handle, so a later connect starts over. Nothing to do when
     * none is in progress (never started, finished, or failed). NULL in a transport whose
     * connect keeps no state between calls.
     */
    void (*connect_abandon)(void *handle);

    /*
     * Accepts one connection: STRATA_OK with *recv_p NULL while none is ready. A peer
     * that fails its half of the handshake is dropped and logged, not reported here.
     * Errors: STRATA_ERR_IO, STRATA_ERR_NO_MEMORY.
     */
    strata_status_t (*accept)(stt_listen_t *listen, stt_comm_t **recv_p);

    /*
     * Registers [data, data + size) of memory type STT_PTR_* for use on comm and returns
     * its handle. reg_mr_dmabuf does the same for a DMA-BUF (fd, offset). Registering
     * may pin pages; it never waits for the peer.
     * Errors: STRATA_ERR_UNSUPPORTED (a memory type the device's ptr_support lacks),
     * STRATA_ERR_NO_MEMORY (ib: also the locked-memory limit), STRATA_ERR_IO.
     */
    strata_status_t (*reg_mr)(stt_comm_t *comm, void *data, size_t size, int type,
                              void **mh_p);
    strata_status_t (*reg_mr_dmabuf)(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p);
    /* Releases a handle of this comm; no request may still use it. */
    strata_status_t (*dereg_mr)(stt_comm_t *comm, void *mh);

    /*
     * Posts a send of size bytes (at most max_p2p_bytes) with a tag; mh covers data or
     * is NULL. *req_p NULL with STRATA_OK: no free slot now. The buffer is the
     * transport's until test() releases the request.
     * Errors: the comm's sticky error (STRATA_ERR_REMOTE, ...).
     */
    strata_status_t (*isend)(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                             stt_req_t **req_p);
    /*
     * Posts one receive of n buffers (1..max_recvs), each with its capacity, tag and
     * handle (mhs NULL, or entries NULL: unregistered host memory). Slots as for isend.
     * Errors: the comm's sticky error.
     */
    strata_status_t (*irecv)(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                             const int *tags, void **mhs, stt_req_t **req_p);
    /*
     * After a completed receive into device memory: makes the data visible to the
     * device (ib: a loopback RDMA read of the last buffer, STRATA_IB_FLUSH); completes
     * at once for host memory and for transports with nothing to flush. Slots as for
     * isend. sizes are the received sizes as ints (NCCL's type).
     * Errors: the comm's sticky error, STRATA_ERR_NO_RESOURCE.
     */
    strata_status_t (*iflush)(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p);

    /*
     * Progresses the request's comm and reports *done. When done, sizes[] (may be NULL)
     * gets the byte count of each of the request's nsizes buffers, and the request is
     * released; on an error it is released too and *done is left alone. *done 0 with
     * STRATA_OK: test again later.
     * Errors: STRATA_ERR_REMOTE (the peer died, closed or broke protocol),
     * STRATA_ERR_TRUNCATED (a send larger than its receive buffer; the comm stays
     * usable), STRATA_ERR_IO, STRATA_ERR_INTERNAL (a completion the transport cannot
     * place).
     */
    strata_status_t (*test)(stt_req_t *req, int *done, size_t *sizes);

    /*
     * Free the comm (send or receive, as made) or the listen comm, with every request
     * still pending on it. NULL is ignored. They cannot fail and do not wait for the peer
     * (which sees STRATA_ERR_REMOTE on its pending requests), except for a bounded flush
     * (ucx: up to 2 s to deliver sends that already completed).
     */
    void (*close_send)(stt_comm_t *comm);
    void (*close_recv)(stt_comm_t *comm);
    void (*close_listen)(stt_listen_t *listen);

    /*
     * For a caller out of work that wants to sleep until this comm can progress: fills
     * up to max pollfds (fd and events) that become ready when test() on the comm may
     * make progress, and returns how many. 0 means "no descriptor to sleep on" (none
     * exists, the comm failed, or max is too small for the whole set): the caller naps
     * briefly and tests. The set describes the comm now; ask again before each sleep.
     * Never blocks; the caller polls the descriptors, then calls test().
     */
    int (*poll_fds)(stt_comm_t *comm, struct pollfd *fds, int max);

    /*
     * Progresses a comm (send or receive) without a request to test: what test() would
     * move besides requests, such as a tcp virtual NIC's failover (noticing a lost
     * member, reading and answering the peer's frames), which the peer's sends may wait
     * for while this end has nothing posted on the comm. A caller that waits while some of
     * its comms have nothing posted calls it on them now and then (the collective
     * library: before each sleep of a wait). Cheap when there is nothing to do (a
     * transport with nothing of the kind points it at stt_no_progress); same thread rules
     * as test(). Returns the comm's sticky error (STRATA_ERR_REMOTE, ...) or STRATA_OK.
     */
    strata_status_t (*progress)(stt_comm_t *comm);

    /*
     * Between init and fini: fuses devs[0..n-1] (2..STT_MAX_VDEV_MEMBERS distinct
     * physical devices, in any order: the transport orders the members itself, the
     * same way in every process, tcp by interface name) into one virtual device and
     * returns its index in *vdev_p; devices() counts it from then on, until the last
     * fini. The same members give the same index again.
     * A comm on a virtual device carries each message over its members (the transport
     * says how: docs/multirail.md); listen and connect take it like any device.
     * Errors: STRATA_ERR_UNSUPPORTED (this transport cannot fuse, or not these
     * devices: logged with why), STRATA_ERR_NO_RESOURCE (no room for another device).
     */
    strata_status_t (*make_vdev)(const int *devs, int n, int *vdev_p);
};

/*
 * The wrappers every caller uses: one line each, so a call site reads like a method call
 * and nothing outside transport/ touches the ops table. The object's ops pointer picks
 * the transport; the transport-wide ones take the table.
 */
static inline const char *stt_name(const stt_ops_t *ops)
{
    return ops->name;
}
static inline int stt_reports_wrs(const stt_ops_t *ops)
{
    return ops->reports_wrs;
}
static inline strata_status_t stt_probe(const stt_ops_t *ops)
{
    return ops->probe();
}
static inline const char *stt_library(const stt_ops_t *ops, const char **why_p)
{
    return ops->library(why_p);
}
static inline strata_status_t stt_init(const stt_ops_t *ops)
{
    return ops->init();
}
static inline void stt_fini(const stt_ops_t *ops)
{
    ops->fini();
}
static inline strata_status_t stt_devices(const stt_ops_t *ops, int *ndev_p)
{
    return ops->devices(ndev_p);
}
static inline strata_status_t stt_get_props(const stt_ops_t *ops, int dev, stt_props_t *props_p)
{
    return ops->get_props(dev, props_p);
}
static inline strata_status_t stt_listen(const stt_ops_t *ops, int dev, void *handle,
                                         stt_listen_t **listen_p)
{
    return ops->listen(dev, handle, listen_p);
}
static inline strata_status_t stt_connect(const stt_ops_t *ops, int dev, void *handle,
                                          const stt_conn_cfg_t *cfg, stt_comm_t **send_p)
{
    return ops->connect(dev, handle, cfg, send_p);
}
static inline void stt_connect_abandon(const stt_ops_t *ops, void *handle)
{
    if (ops->connect_abandon != NULL && handle != NULL)
        ops->connect_abandon(handle);
}
static inline strata_status_t stt_accept(stt_listen_t *l, stt_comm_t **recv_p)
{
    return l->ops->accept(l, recv_p);
}
static inline strata_status_t stt_reg_mr(stt_comm_t *c, void *data, size_t size, int type,
                                         void **mh_p)
{
    return c->ops->reg_mr(c, data, size, type, mh_p);
}
static inline strata_status_t stt_reg_mr_dmabuf(stt_comm_t *c, void *data, size_t size,
                                                int type, uint64_t offset, int fd, void **mh_p)
{
    return c->ops->reg_mr_dmabuf(c, data, size, type, offset, fd, mh_p);
}
static inline strata_status_t stt_dereg_mr(stt_comm_t *c, void *mh)
{
    return c->ops->dereg_mr(c, mh);
}
static inline strata_status_t stt_isend(stt_comm_t *c, void *data, size_t size, int tag,
                                        void *mh, stt_req_t **req_p)
{
    return c->ops->isend(c, data, size, tag, mh, req_p);
}
static inline strata_status_t stt_irecv(stt_comm_t *c, int n, void **data, const size_t *sizes,
                                        const int *tags, void **mhs, stt_req_t **req_p)
{
    return c->ops->irecv(c, n, data, sizes, tags, mhs, req_p);
}
static inline strata_status_t stt_iflush(stt_comm_t *c, int n, void **data, const int *sizes,
                                         void **mhs, stt_req_t **req_p)
{
    return c->ops->iflush(c, n, data, sizes, mhs, req_p);
}
static inline strata_status_t stt_test(stt_req_t *r, int *done, size_t *sizes)
{
    return r->comm->ops->test(r, done, sizes);
}
/* The three closes accept NULL, so cleanup paths need no test. */
static inline void stt_close_send(stt_comm_t *c)
{
    if (c != NULL)
        c->ops->close_send(c);
}
static inline void stt_close_recv(stt_comm_t *c)
{
    if (c != NULL)
        c->ops->close_recv(c);
}
static inline void stt_close_listen(stt_listen_t *l)
{
    if (l != NULL)
        l->ops->close_listen(l);
}
static inline int stt_poll_fds(stt_comm_t *c, struct pollfd *fds, int max)
{
    return c->ops->poll_fds(c, fds, max);
}
static inline strata_status_t stt_progress(stt_comm_t *c)
{
    return c->ops->progress(c);
}
static inline strata_status_t stt_make_vdev(const stt_ops_t *ops, const int *devs, int n,
                                            int *vdev_p)
{
    return ops->make_vdev(devs, n, vdev_p);
}

strata_status_t stt_no_make_vdev(const int *devs, int n, int *vdev_p);
/* Whether the transport fuses devices at all (its make_vdev is not the stub). */
static inline int stt_can_fuse(const stt_ops_t *ops)
{
    return ops->make_vdev != stt_no_make_vdev;
}

/* Shared "unsupported" operations, for ops a transport does not implement. */
strata_status_t stt_no_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p);
strata_status_t stt_no_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p);
int stt_no_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max);
/* Nothing moves without a request: STRATA_OK. */
strata_status_t stt_no_progress(stt_comm_t *comm);
/* stt_no_make_vdev is declared above, beside stt_can_fuse. */

/* For a transport that loads no library: NULL, *why_p NULL. */
const char *stt_no_library(const char **why_p);

/*
 * The registry: an ordered, const table of every transport built in (which ones depends on
 * what make found; util/build_info.h names them). Thread-safe, no state of its own.
 *   stt_registry_find: the transport of that name (case-insensitive), NULL if not built in.
 *   stt_registry_count, stt_registry_at: walk the table in order (NULL past the end).
 *   stt_registry_select: resolves "auto" (or NULL, "") to the first transport, in order
 *     ib, tcp, that probes, initialises and has at least one device (ucx and loop are
 *     taken only when named); a named transport is taken as is or fails:
 *     STRATA_ERR_NOT_FOUND when it is not built in (logged with what is) or nothing can
 *     run, else its probe's or init's error. On success the transport holds one init
 *     reference, which the caller releases with stt_fini(*ops_p).
 */
const stt_ops_t *stt_registry_find(const char *name);
int stt_registry_count(void);
const stt_ops_t *stt_registry_at(int index);
strata_status_t stt_registry_select(const char *name, const stt_ops_t **ops_p, int *ndev_p);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_TRANSPORT_H */

/*
 * The transport contract: what every Strata transport (tcp, ib, ucx, loop, ...)
 * provides, and what the plugin layer and the collective library call.
 *
 * It follows NCCL's net plugin semantics closely, in Strata's own types:
 *
 *   - Nothing blocks. connect/accept return STRATA_OK with a NULL comm until the
 *     connection is ready, and are called again with the same arguments.
 *     isend/irecv/iflush return STRATA_OK with a NULL request to mean "no slot
 *     now, call again after testing earlier requests". test() is the only call
 *     that moves data; a caller that stops calling test stops progress.
 *   - Sends and receives on one connection match in posting order. A receive
 *     may group n <= max_recvs buffers; each incoming send lands in the buffer
 *     of the oldest incompletely matched receive whose tag equals the send's.
 *     A receive buffer may be larger than the send (test reports the real
 *     size); a send larger than its receive buffer fails that receive with
 *     STRATA_ERR_TRUNCATED.
 *   - Every comm sustains STT_MAX_REQUESTS receives and
 *     STT_MAX_REQUESTS * STT_MAX_RECVS sends in flight.
 *   - A dead peer fails pending requests with STRATA_ERR_REMOTE within a
 *     bounded time; it never hangs test().
 *
 * Objects: a transport hands out listen comms, send/recv comms, requests and
 * memory handles. Every comm and listen comm starts with its base struct, so
 * the inline wrappers below dispatch through ->ops. Requests start with a
 * pointer to the comm that owns them.
 *
 * Threads: init/fini/devices/get_props are thread-safe. A comm (and its
 * requests) is used by one thread at a time; different comms may be used from
 * different threads concurrently (NCCL's proxy threads do this).
 *
 * Ownership: a comm owns its requests; close_* frees the comm and invalidates
 * every request still pending on it. Memory handles belong to the comm they
 * were registered on and must be deregistered before it is closed.
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

/* Memory types, bit values equal to NCCL_PTR_*. */
#define STT_PTR_HOST 0x1
#define STT_PTR_CUDA 0x2
#define STT_PTR_DMABUF 0x4

#define STT_TRAFFIC_CLASS_UNDEF (-1)

typedef struct stt_ops stt_ops_t;

typedef struct stt_props {
    char name[64];
    char pci_path[256];     /* sysfs PCI path, "" for a virtual device */
    uint64_t guid;          /* devices sharing a guid are one physical port */
    int ptr_support;        /* STT_PTR_* mask */
    int reg_is_global;      /* 1: registrations are cached by address across comms */
    int force_flush;
    int speed_mbps;
    int port;
    float latency_us;       /* added by NCCL to its inter-node latency */
    int max_comms;
    int max_recvs;
    size_t max_p2p_bytes;
    size_t max_coll_bytes;
} stt_props_t;

typedef struct stt_conn_cfg {
    int traffic_class;      /* STT_TRAFFIC_CLASS_UNDEF unless the user set one */
} stt_conn_cfg_t;

/* Base of every listen comm. */
typedef struct stt_listen {
    const stt_ops_t *ops;
    int dev;
} stt_listen_t;

/* Base of every send or receive comm. */
typedef struct stt_comm {
    const stt_ops_t *ops;
    int dev;
} stt_comm_t;

/*
 * Base of every request. The transport sets nsizes when the request is posted:
 * how many sizes test() reports (1 for a send or flush, n for a receive of n
 * buffers), so layers above can copy exactly that many.
 */
typedef struct stt_req {
    stt_comm_t *comm;
    int nsizes;
} stt_req_t;

struct stt_ops {
    const char *name;

    /*
     * Cheap check that the transport can run here (library present, kernel
     * support). OK, STRATA_ERR_UNSUPPORTED, or STRATA_ERR_NOT_FOUND. Does not
     * count as init.
     */
    strata_status_t (*probe)(void);

    /* Reference-counted: the first init discovers devices, the last fini frees them. */
    strata_status_t (*init)(void);
    void (*fini)(void);

    strata_status_t (*devices)(int *ndev_p);
    strata_status_t (*get_props)(int dev, stt_props_t *props_p);

    /*
     * Starts listening on dev and fills handle (STT_HANDLE_SIZE bytes) with
     * what a peer needs to connect. Never blocks.
     */
    strata_status_t (*listen)(int dev, void *handle, stt_listen_t **listen_p);

    /*
     * Connects to the listener described by handle. Returns OK with *send_p
     * NULL while in progress; call again with the same handle memory (a
     * transport may keep its in-progress state inside the handle, after the
     * bytes listen wrote). Fails with STRATA_ERR_TIMEOUT after
     * STRATA_CONNECT_TIMEOUT.
     */
    strata_status_t (*connect)(int dev, void *handle, const stt_conn_cfg_t *cfg,
                               stt_comm_t **send_p);

    /* Accepts one connection; OK with *recv_p NULL while none is ready. */
    strata_status_t (*accept)(stt_listen_t *listen, stt_comm_t **recv_p);

    strata_status_t (*reg_mr)(stt_comm_t *comm, void *data, size_t size, int type,
                              void **mh_p);
    strata_status_t (*reg_mr_dmabuf)(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p);
    strata_status_t (*dereg_mr)(stt_comm_t *comm, void *mh);

    /* *req_p NULL with OK: no slot now. The buffer must stay valid until done. */
    strata_status_t (*isend)(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                             stt_req_t **req_p);
    strata_status_t (*irecv)(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                             const int *tags, void **mhs, stt_req_t **req_p);
    strata_status_t (*iflush)(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p);

    /*
     * Progresses the request's comm and reports *done. When done, sizes[] gets
     * the received byte count of each buffer (one entry for a send) and the
     * request is released. On error the request is released too. sizes may be
     * NULL.
     */
    strata_status_t (*test)(stt_req_t *req, int *done, size_t *sizes);

    void (*close_send)(stt_comm_t *comm);
    void (*close_recv)(stt_comm_t *comm);
    void (*close_listen)(stt_listen_t *listen);

    /*
     * For callers that run out of work and want to sleep until this comm can
     * progress: fills up to max pollfds (fd and events) that become ready
     * when test() on this comm may make progress, and returns how many; 0
     * when the transport has no such descriptors (the caller then naps).
     * Never blocks; the caller polls the descriptors and calls test().
     */
    int (*poll_fds)(stt_comm_t *comm, struct pollfd *fds, int max);
};

/* Dispatch helpers: one line each, so call sites read like method calls. */
static inline strata_status_t stt_accept(stt_listen_t *l, stt_comm_t **recv_p)
{
    return l->ops->accept(l, recv_p);
}
static inline strata_status_t stt_reg_mr(stt_comm_t *c, void *data, size_t size, int type,
                                         void **mh_p)
{
    return c->ops->reg_mr(c, data, size, type, mh_p);
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
static inline strata_status_t stt_test(stt_req_t *r, int *done, size_t *sizes)
{
    return r->comm->ops->test(r, done, sizes);
}
static inline void stt_close_send(stt_comm_t *c)
{
    c->ops->close_send(c);
}
static inline void stt_close_recv(stt_comm_t *c)
{
    c->ops->close_recv(c);
}
static inline void stt_close_listen(stt_listen_t *l)
{
    l->ops->close_listen(l);
}

/* Shared "unsupported" operations, for ops a transport does not implement. */
strata_status_t stt_no_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p);
strata_status_t stt_no_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p);
int stt_no_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max);

/*
 * The registry: an ordered, const table of every transport built in.
 * stt_registry_find returns NULL for an unknown name. stt_registry_select
 * resolves "auto" (or NULL) to the first transport, in order ib, tcp, that
 * probes, initialises and has at least one device (ucx and loop are taken
 * only when named); a named transport is taken as is or fails. On success the transport holds one init reference
 * that the caller releases with ops->fini().
 */
const stt_ops_t *stt_registry_find(const char *name);
int stt_registry_count(void);
const stt_ops_t *stt_registry_at(int index);
strata_status_t stt_registry_select(const char *name, const stt_ops_t **ops_p, int *ndev_p);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_TRANSPORT_H */

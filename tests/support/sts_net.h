/*
 * The built plugin as NCCL sees it: dlopen the shared object, look up
 * ncclNetPlugin_vN (6..11) and call it through one interface, so the
 * functional tests and their peer program drive any ABI version with the
 * same code, the way NCCL's proxy thread drives whichever version it found
 * (NCCL adapts older versions to v11 the same way, src/plugin/net/net_vN.cc).
 *
 * What differs between versions is confined here: v11 takes a per-communicator
 * context in init/listen/connect and has finalize; v10 takes the traffic
 * class in connect and a profiler callback in init; v7..v10 pass device
 * handles to connect/accept; v6..v8 use int sizes (a size_t that does not fit
 * is refused here, before the call, with ncclInvalidArgument).
 *
 * Thread safety: none; one thread drives one sts_net_t.
 */
#ifndef STS_NET_H
#define STS_NET_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/net.h"

#define STS_NET_MIN_VERSION 6
#define STS_NET_MAX_VERSION 11
#define STS_NET_MAX_RECVS 8

typedef struct sts_net {
    int version;
    void *dl;               /* dlopen handle, owned */
    const void *table;      /* ncclNetPlugin_v<version> */
    const char *name;
    void *ctx;              /* v11 context from the last successful init */
    int inited;
} sts_net_t;

/* The properties every version has, plus the newer ones (-1 / 0 where absent). */
typedef struct sts_net_props {
    char name[64];
    int has_pci_path;
    uint64_t guid;
    int ptr_support;
    int speed;
    int port;
    float latency;
    int max_comms;
    int max_recvs;
    int reg_is_global;      /* v8+ */
    int force_flush;        /* v9+ */
    int net_device_type;    /* v7+ */
    int vprops_ndevs;       /* v9+ */
    int vprops_dev0;
    size_t max_p2p_bytes;   /* v9+ */
    size_t max_coll_bytes;
    int max_multi_request;  /* v11 */
} sts_net_props_t;

/*
 * dlopen(path, RTLD_NOW | RTLD_LOCAL) (path NULL: STRATA_PLUGIN_PATH) and
 * dlsym("ncclNetPlugin_v<version>"). 0, or -1 with the reason in err.
 */
int sts_net_open(sts_net_t *net, int version, const char *path, char *err, size_t errlen);

/* dlclose. The caller finalizes and closes its comms first. */
void sts_net_close(sts_net_t *net);

/*
 * init for this version: v11 init(&ctx, comm_id, {trafficClass undef},
 * logger, NULL) into net->ctx, v10 init(logger, NULL), older init(logger).
 * The logger is sts_net_logger (prints WARN lines, counts them).
 */
ncclResult_t sts_net_init(sts_net_t *net, uint64_t comm_id);
/* v11 finalize(net->ctx); a no-op for older versions (they have none). */
ncclResult_t sts_net_finalize(sts_net_t *net);

ncclResult_t sts_net_devices(sts_net_t *net, int *ndev);
ncclResult_t sts_net_props(sts_net_t *net, int dev, sts_net_props_t *props);
ncclResult_t sts_net_listen(sts_net_t *net, int dev, void *handle, void **listen);
ncclResult_t sts_net_connect(sts_net_t *net, int dev, void *handle, void **send);
ncclResult_t sts_net_accept(sts_net_t *net, void *listen, void **recv);
ncclResult_t sts_net_reg_mr(sts_net_t *net, void *comm, void *data, size_t size, int type,
                            void **mh);
ncclResult_t sts_net_dereg_mr(sts_net_t *net, void *comm, void *mh);
ncclResult_t sts_net_isend(sts_net_t *net, void *comm, void *data, size_t size, int tag,
                           void *mh, void **req);
ncclResult_t sts_net_irecv(sts_net_t *net, void *comm, int n, void **data, const size_t *sizes,
                           const int *tags, void **mhs, void **req);
ncclResult_t sts_net_test(sts_net_t *net, void *req, int *done, int *sizes);
/* iflush (the same in every version); *req NULL means nothing to wait for. */
ncclResult_t sts_net_iflush(sts_net_t *net, void *comm, int n, void **data, int *sizes,
                            void **mhs, void **req);
ncclResult_t sts_net_close_send(sts_net_t *net, void *comm);
ncclResult_t sts_net_close_recv(sts_net_t *net, void *comm);
ncclResult_t sts_net_close_listen(sts_net_t *net, void *listen);

/* WARN lines the plugin logged through sts_net_logger since the process started. */
int sts_net_warnings(void);

/* A connection in both directions to one peer. */
typedef struct sts_net_link {
    void *send;
    void *recv;
} sts_net_link_t;

/*
 * Both processes call this at the same time: each listens, sends its handle
 * over the control socket ctl_fd, receives the peer's, then polls connect and
 * accept until both are ready or the deadline passes. ncclSuccess, an error
 * from the plugin, or ncclInternalError for a control-socket failure or the
 * deadline (why in err).
 */
ncclResult_t sts_net_link_open(sts_net_t *net, int dev, int ctl_fd, uint64_t deadline,
                               sts_net_link_t *link, char *err, size_t errlen);
void sts_net_link_close(sts_net_t *net, sts_net_link_t *link);

/* Polls connect until the comm is ready: ncclSuccess, the plugin's error, or ncclInternalError
 * at the deadline. */
ncclResult_t sts_net_connect_wait(sts_net_t *net, int dev, void *handle, uint64_t deadline,
                                  void **send);
/* Polls accept likewise. */
ncclResult_t sts_net_accept_wait(sts_net_t *net, void *listen, uint64_t deadline, void **recv);

/* A request being progressed, and its outcome. */
typedef struct sts_net_req {
    void *req;              /* NULL once finished */
    ncclResult_t result;    /* ncclInProgress while pending */
    int sizes[STS_NET_MAX_RECVS];
} sts_net_req_t;

/* One test() on every pending request. Returns how many are still pending. */
int sts_net_progress(sts_net_t *net, sts_net_req_t *reqs, int n);

/*
 * Progresses until nothing is pending (0; read each result) or the deadline
 * passes (-1).
 */
int sts_net_wait_all(sts_net_t *net, sts_net_req_t *reqs, int n, uint64_t deadline);

/* isend/irecv posted again while the plugin answers NULL, progressing `progress`. */
ncclResult_t sts_net_isend_retry(sts_net_t *net, void *comm, void *data, size_t size, int tag,
                                 void *mh, sts_net_req_t *progress, int nprogress,
                                 uint64_t deadline, void **req);
ncclResult_t sts_net_irecv_retry(sts_net_t *net, void *comm, int n, void **data,
                                 const size_t *sizes, const int *tags, void **mhs,
                                 sts_net_req_t *progress, int nprogress, uint64_t deadline,
                                 void **req);

/* ncclResult_t as text, for messages. */
const char *sts_nccl_str(ncclResult_t res);

#endif /* STS_NET_H */

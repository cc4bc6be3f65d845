/*
 * Polling helpers for the functional tests and their peer program, over the
 * one plugin loader (tools/lib/plugin_loader.h, which loads any
 * ncclNetPlugin_v<N> and calls it through one interface): connections in both
 * directions set up over a control socket, request sets progressed together,
 * isend/irecv retried while the plugin answers "no slot", registered buffers
 * with guard bytes. Results are the plugin's own ncclResult_t.
 *
 * Thread safety: none; one thread drives one stb_plugin_t.
 */
#ifndef STS_NET_H
#define STS_NET_H

#include <stddef.h>
#include <stdint.h>

#include "tools/lib/plugin_loader.h"

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
ncclResult_t sts_net_link_open(stb_plugin_t *pl, int dev, int ctl_fd, uint64_t deadline,
                               sts_net_link_t *link, char *err, size_t errlen);
void sts_net_link_close(stb_plugin_t *pl, sts_net_link_t *link);

/*
 * Polls connect (accept) alone until the comm is ready, for a connection whose
 * other end is in another process: ncclSuccess, the plugin's error, or
 * ncclInternalError at the deadline.
 */
ncclResult_t sts_net_connect_wait(stb_plugin_t *pl, int dev, void *handle, uint64_t deadline,
                                  void **send);
ncclResult_t sts_net_accept_wait(stb_plugin_t *pl, void *listen, uint64_t deadline, void **recv);

/* A request being progressed, and its outcome. */
typedef struct sts_net_req {
    void *req;              /* NULL once finished */
    ncclResult_t result;    /* ncclInProgress while pending */
    int sizes[STB_PLUGIN_MAX_RECVS];
} sts_net_req_t;

/* One test() on every pending request. Returns how many are still pending. */
int sts_net_progress(stb_plugin_t *pl, sts_net_req_t *reqs, int n);

/*
 * Progresses until nothing is pending (0; read each result) or the deadline
 * passes (-1).
 */
int sts_net_wait_all(stb_plugin_t *pl, sts_net_req_t *reqs, int n, uint64_t deadline);

/* isend/irecv posted again while the plugin answers NULL, progressing `progress`. */
ncclResult_t sts_net_isend_retry(stb_plugin_t *pl, void *comm, void *data, size_t size, int tag,
                                 void *mh, sts_net_req_t *progress, int nprogress,
                                 uint64_t deadline, void **req);
ncclResult_t sts_net_irecv_retry(stb_plugin_t *pl, void *comm, int n, void **data,
                                 const size_t *sizes, const int *tags, void **mhs,
                                 sts_net_req_t *progress, int nprogress, uint64_t deadline,
                                 void **req);

/*
 * A host buffer of size bytes plus STS_GUARD_SIZE guard bytes (set),
 * registered on comm (a 0-byte buffer registers 1 byte). On failure nothing
 * is left allocated and the buffer is empty.
 */
typedef struct sts_net_buf {
    char *data;
    size_t size;
    void *comm;             /* NULL once deregistered */
    void *mh;
} sts_net_buf_t;

ncclResult_t sts_net_buf_get(stb_plugin_t *pl, sts_net_buf_t *b, void *comm, size_t size);
/* Deregisters (the memory stays, e.g. for requests still in flight on a closed comm). */
ncclResult_t sts_net_buf_dereg(stb_plugin_t *pl, sts_net_buf_t *b);
/* Deregisters if still registered, and frees. */
void sts_net_buf_put(stb_plugin_t *pl, sts_net_buf_t *b);

#endif /* STS_NET_H */

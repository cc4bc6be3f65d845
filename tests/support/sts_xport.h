/*
 * Contract helpers for driving a Strata transport (transport/transport.h)
 * from one thread: both ends of a connection in the same process, every wait
 * bounded by a deadline so a transport bug fails a test instead of hanging it.
 *
 * They follow the contract's non-blocking rules literally: connect/accept are
 * polled (a NULL comm means "not yet"), a NULL request from isend/irecv means
 * "no slot now: progress earlier requests and call again", and test() is the
 * only call that moves data. The collective library's tests use them too.
 *
 * Thread safety: none; a helper and the objects it drives belong to one thread.
 */
#ifndef STS_XPORT_H
#define STS_XPORT_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

/* Generous bound for a connection handshake on a loaded machine. */
#define STS_CONNECT_TIMEOUT_S 30.0
/* Generous bound for a data exchange, including 64 MiB under sanitizers. */
#define STS_IO_TIMEOUT_S 60.0

/* One connection: a listener, the connecting (send) end and the accepted (recv) end. */
typedef struct sts_pair {
    const stt_ops_t *ops;
    int dev;
    stt_listen_t *listen;
    stt_comm_t *send;
    stt_comm_t *recv;
    char handle[STT_HANDLE_SIZE];
} sts_pair_t;

/*
 * Connects a send comm to listen (whose handle is `handle`; this memory is
 * handed to connect on every call, as the contract asks) while polling accept,
 * alternately, until both ends are ready. Outputs are set only on OK. On an
 * error or STRATA_ERR_TIMEOUT whichever end was ready is closed again.
 */
strata_status_t sts_connect_accept(const stt_ops_t *ops, int dev, stt_listen_t *listen,
                                   void *handle, double timeout_s, stt_comm_t **send_p,
                                   stt_comm_t **recv_p);

/*
 * Calls connect with handle (its listener is dead) until it fails or deadline (stu_time_ns)
 * passes; returns the last status (STRATA_OK: still pending at the deadline). Writes a
 * comm it unexpectedly got to *comm_p, else NULL.
 */
strata_status_t sts_connect_until_error(const stt_ops_t *ops, void *handle, uint64_t deadline,
                                        stt_comm_t **comm_p);

/* One row of a fault matrix on stdout: "  matrix | xport | what | result after S s", S the
 * seconds since `since` (stu_time_ns of the fault): printed, never asserted. */
void sts_matrix_row(const char *xport, const char *what, const char *result, uint64_t since);

/* listen + sts_connect_accept. On failure *pair is left closed (all NULL). */
strata_status_t sts_pair_open(const stt_ops_t *ops, int dev, double timeout_s, sts_pair_t *pair);
/* The same with the listener on ldev and the connecting end on cdev (two NICs). */
strata_status_t sts_pair_open_on(const stt_ops_t *ops, int ldev, int cdev, double timeout_s,
                                 sts_pair_t *pair);

/* Closes whatever part of the pair is open (send, recv, listen, in that order). */
void sts_pair_close(sts_pair_t *pair);

/* Final state of one request tracked by a request set. */
typedef struct sts_req_slot {
    stt_req_t *req;             /* NULL once the request finished (either way) */
    strata_status_t status;     /* STRATA_INPROGRESS while pending, then OK or the error */
    size_t sizes[STT_MAX_RECVS];
} sts_req_slot_t;

/*
 * A set of requests, possibly on different comms (both ends of a pair), that
 * are progressed together. The set never calls test on a finished request:
 * test releases a request when it reports done or an error.
 */
typedef struct sts_reqset {
    sts_req_slot_t *slots;
    int count;
    int cap;
    int pending;
    int errors;                 /* requests that finished with an error */
} sts_reqset_t;

/* Room for cap requests. Returns OK or STRATA_ERR_NO_MEMORY. */
strata_status_t sts_reqset_init(sts_reqset_t *set, int cap);
void sts_reqset_fini(sts_reqset_t *set);
/* Forgets every slot (the caller must have finished or abandoned the requests). */
void sts_reqset_clear(sts_reqset_t *set);

/* Tracks req (non-NULL); returns its slot index, or -1 when the set is full. */
int sts_reqset_add(sts_reqset_t *set, stt_req_t *req);

/* One test() per pending request. Returns how many are still pending. */
int sts_reqset_progress(sts_reqset_t *set);

/*
 * Progresses until nothing is pending (OK, even if some requests failed: read
 * their slots) or the deadline passes (STRATA_ERR_TIMEOUT; pending requests
 * stay owned by their comms, which the caller closes).
 */
strata_status_t sts_reqset_wait(sts_reqset_t *set, uint64_t deadline);

/*
 * isend / irecv that handle "no slot now": on a NULL request they progress
 * `progress` (which should hold the earlier requests of both ends) and call
 * again, until the deadline. On OK the new request is added to `progress` and
 * *slot_p (may be NULL) gets its index. *nulls_p (may be NULL) is increased by
 * the number of NULL answers seen. A posting error is returned as is;
 * STRATA_ERR_TIMEOUT if no slot appeared in time; STRATA_ERR_NO_RESOURCE if
 * the set is full.
 */
strata_status_t sts_isend_retry(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                                sts_reqset_t *progress, uint64_t deadline, int *slot_p,
                                int *nulls_p);
strata_status_t sts_irecv_retry(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                                const int *tags, void **mhs, sts_reqset_t *progress,
                                uint64_t deadline, int *slot_p, int *nulls_p);

/*
 * Waits for one request alone: OK with sizes filled (may be NULL) when done,
 * the request's error, or STRATA_ERR_TIMEOUT (then the request is still
 * pending and belongs to its comm).
 */
strata_status_t sts_req_wait(stt_req_t *req, uint64_t deadline, size_t *sizes);

/*
 * Tests *req once (a NULL *req is finished already); sets *req to NULL when
 * the request ended, well or not. Returns its error, or OK (done or pending).
 */
strata_status_t sts_req_poke(stt_req_t **req, size_t *sizes);

/*
 * Drives a send and a receive (either may be NULL) to their ends. Returns the
 * receive's status (OK without one), or STRATA_ERR_TIMEOUT at the deadline;
 * *send_status (may be NULL) gets the send's.
 */
strata_status_t sts_req_wait_pair(stt_req_t *sreq, stt_req_t *rreq, uint64_t deadline,
                                  size_t *rsizes, strata_status_t *send_status);

/*
 * Sends one message on pair->send and receives it on pair->recv into a buffer
 * of recv_size bytes, progressing both. *send_status and *recv_status get
 * each request's final status, *received the size test reported. Returns OK
 * when both requests finished (whatever their status), or the posting error,
 * or STRATA_ERR_TIMEOUT.
 */
strata_status_t sts_pair_exchange(sts_pair_t *pair, void *sbuf, size_t ssize, void *smh,
                                  void *rbuf, size_t rsize, void *rmh, int tag,
                                  uint64_t deadline, strata_status_t *send_status,
                                  strata_status_t *recv_status, size_t *received);

/*
 * A test buffer: size bytes plus STS_GUARD_SIZE guard bytes (set), registered
 * as host memory on comm (a 0-byte buffer registers 1 byte, so every buffer
 * has a handle). Deregister with sts_buf_free before the comm is closed;
 * free_data 0 keeps the memory (sts_buf_free_data frees it later, e.g. after
 * closing a comm that had requests in flight on it).
 */
typedef struct sts_buf {
    char *data;
    size_t size;
    void *mh;
    stt_comm_t *comm;
} sts_buf_t;

strata_status_t sts_buf_alloc(sts_buf_t *buf, stt_comm_t *comm, size_t size);
void sts_buf_dereg(sts_buf_t *buf);
void sts_buf_free_data(sts_buf_t *buf);
void sts_buf_free(sts_buf_t *buf);

#endif /* STS_XPORT_H */

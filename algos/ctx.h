/*
 * The execution context of the collective algorithms: who this rank is, the
 * transport connections to its peers, the node's shared-memory tier, scratch
 * memory, the timeout, and the sticky error. The collective library (coll/)
 * builds one per communicator; algorithms only read the topology fields and
 * use the helpers below. One thread at a time per context.
 */
#ifndef STA_CTX_H
#define STA_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "transport/transport.h"
#include "strata/types.h"
#include "util/compiler.h"

typedef struct sta_node sta_node_t;
typedef struct sta_ctx sta_ctx_t;

/*
 * How a rank's waits poll (sta_backoff_t): SPIN, ranks with cores to spare: busy-poll a
 * while, then yield, then nap; BLOCK, more ranks than cores: yield briefly, then sleep until
 * a descriptor is ready; YIELD, two ranks that have the cores to themselves but may share
 * one (calibration's ping-pong, coll/calibrate.c): yield at every poll, never sleep early,
 * so a peer on this core runs at once and one on another core is met as a spinner would.
 */
typedef enum { STA_WAIT_SPIN, STA_WAIT_BLOCK, STA_WAIT_YIELD } sta_wait_mode_t;

struct sta_model;
struct sta_dims;

/*
 * Work a wait must keep moving: while a pipelined two-tier algorithm has a
 * chunk on the network, every shared-memory wait calls this so that the
 * transport's requests progress (tcp and ucx move bytes only when tested) and
 * no rank blocked on a local peer holds up a remote one. Returns the
 * context's error, if any.
 */
typedef strata_status_t (*sta_progress_fn)(sta_ctx_t *ctx, void *arg);

typedef struct sta_peer_conn {
    stt_comm_t *send;     /* this rank -> peer; NULL when not connected */
    stt_comm_t *recv;     /* peer -> this rank */
} sta_peer_conn_t;

#define STA_ERRLEN 512

struct sta_ctx {
    int rank, nranks;
    int node, nnodes;
    int local_rank, local_size;
    int uniform;              /* every node has local_size ranks */
    const int *node_of;       /* [nranks] node index of each rank */
    const int *local_of;      /* [nranks] local rank of each rank */
    const int *rank_of;       /* [nnodes * local_size] rank at (node, local); uniform only */
    sta_peer_conn_t *peers;   /* [nranks] */
    sta_node_t *node_tier;    /* this node's shared memory */
    sta_wait_mode_t wait;     /* STA_WAIT_BLOCK: more local ranks than cores */
    uint64_t timeout_ns;
    void *scratch;
    size_t scratch_size;
    strata_status_t failed;   /* sticky: once set, every collective returns it */
    char errmsg[STA_ERRLEN];
    /* The two-tier pipeline: the model and dims its chunk comes from (NULL: one chunk), and
     * STRATA_HIER_CHUNK (0: the model's optimum, algos/cost_model.h). */
    const struct sta_model *model;
    const struct sta_dims *dims;
    size_t hier_chunk;
    sta_progress_fn progress;   /* set while a chunk is on the network, else NULL */
    void *progress_arg;
};

/*
 * Records the first error of the context with a message (also logged as a
 * warning) and returns status, so call sites read `return sta_ctx_fail(...)`.
 */
strata_status_t sta_ctx_fail(sta_ctx_t *ctx, strata_status_t status, const char *fmt, ...)
    STU_PRINTF(3, 4);

/*
 * stt_progress on every connected comm of ctx (both directions of every peer), so that
 * what a comm moves without a request (a tcp virtual NIC's failover frames) moves while
 * this rank has nothing posted on it. Errors stay with the comms: the next post or test
 * reports them. Cheap for comms with nothing of the kind (a call and a few loads each).
 */
void sta_ctx_progress_idle(const sta_ctx_t *ctx);

/* Scratch of at least bytes, kept and reused across calls (no page faults per call). */
strata_status_t sta_ctx_scratch(sta_ctx_t *ctx, size_t bytes, void **buf_p);

/*
 * Backoff for waits: spin, then yield, then sleep with growing naps, so ranks
 * that outnumber the cores do not spin against each other. Call step() once
 * per unsuccessful poll; it returns STRATA_ERR_TIMEOUT past the deadline.
 */
typedef struct sta_backoff {
    uint64_t start_ns;
    uint64_t deadline_ns;
    uint64_t nap_ns;
    uint64_t idle_ns;           /* the last sta_ctx_progress_idle of this wait */
    uint64_t yield_ns;          /* BLOCK: how long the wait yields before it sleeps */
    unsigned polls;
    sta_wait_mode_t mode;
    const sta_ctx_t *ctx;       /* whose comms a sleeping wait progresses; NULL: none */
} sta_backoff_t;

/*
 * A wait of ctx: past its spin phase, before it yields or sleeps (at most every
 * STA_IDLE_PROGRESS_NS), each step also progresses every comm of ctx
 * (sta_ctx_progress_idle), since a peer's send may wait for this end's comm even while
 * this rank has nothing posted on it (a tcp virtual NIC's failover, transport.h).
 */
void sta_backoff_start(sta_backoff_t *b, const sta_ctx_t *ctx);
/* That progress of the context's comms, for a wait that blocks its own way (a futex). */
void sta_backoff_idle(sta_backoff_t *b);
/* The same without a context: the wait's deadline and how it waits. */
void sta_backoff_init(sta_backoff_t *b, uint64_t timeout_ns, sta_wait_mode_t mode);

/*
 * A BLOCK wait for peers that move `bytes` before they answer (a shared-memory round's
 * copies) yields for about the time that takes before it sleeps, instead of the short
 * yield phase tuned for small messages: 20 µs up to 1 ms, at STA_WAIT_YIELD_BYTES_PER_NS.
 * Other modes are left as they are.
 */
#define STA_WAIT_YIELD_BYTES_PER_NS 4
void sta_backoff_expect(sta_backoff_t *b, size_t bytes);
strata_status_t sta_backoff_step(sta_backoff_t *b);

/* True while the backoff is still in its spin phase (the next step returns at once). */
int sta_backoff_spinning(const sta_backoff_t *b);

/*
 * True once the backoff is past spinning (and, unless STA_WAIT_BLOCK, past
 * yielding): a caller with its own way to block (a futex) should block now.
 * STRATA_ERR_TIMEOUT in *status_p past the deadline.
 */
int sta_backoff_should_block(const sta_backoff_t *b, strata_status_t *status_p);

/*
 * As sta_backoff_step, but the sleep phase blocks in poll() on the given
 * descriptors (from the transport's poll_fds), so a message wakes the waiter
 * at once instead of at the end of a nap. nfds 0 behaves as sta_backoff_step.
 */
struct pollfd;
strata_status_t sta_backoff_step_fds(sta_backoff_t *b, struct pollfd *fds, int nfds);

/*
 * Adds the descriptors of a comm the caller waits on (a request in flight) to a wait's set
 * of n, fds[n .. max): the new count, or -1 once any comm of the set named none (stt_poll_fds'
 * 0: staged bytes or events test() can use at once, a set too large). Then the caller naps
 * (sta_backoff_step_fds with 0): a sleep on the other comms' descriptors alone could last
 * its whole 2 ms while this comm's completion waits. n < 0 stays -1.
 */
int sta_wait_fds_add(stt_comm_t *comm, struct pollfd *fds, int n, int max);

/*
 * Point to point over the transport: sends sbytes to rank `to` and receives
 * exactly rbytes from rank `from` concurrently (either may be -1 to skip), and
 * waits for both. A size other than rbytes is STRATA_ERR_MISMATCH.
 */
strata_status_t sta_sendrecv(sta_ctx_t *ctx, int to, const void *sbuf, size_t sbytes, int from,
                             void *rbuf, size_t rbytes);

/* Block i of `count` elements split `parts` ways: the first count % parts blocks get one more. */
static inline void sta_block(size_t count, int parts, int i, size_t *off_p, size_t *len_p)
{
    size_t base = count / (size_t)parts, rem = count % (size_t)parts;
    size_t idx = (size_t)i;
    *off_p = idx * base + (idx < rem ? idx : rem);
    *len_p = base + (idx < rem ? 1 : 0);
}

#endif /* STA_CTX_H */

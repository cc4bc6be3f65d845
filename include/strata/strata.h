/*
 * Strata's collective library: allreduce, reduce-scatter, allgather,
 * broadcast, reduce and barrier over host memory, across processes and nodes.
 *
 * Ranks of one node (same host identity, or the same STRATA_NODE_ID) share
 * memory; ranks of different nodes talk through one of the library's
 * transports, chosen by STRATA_TRANSPORT (auto: ib where an RDMA port is
 * active, else tcp; ucx when named). Which transports a build has depends on
 * what make found (libibverbs, ucx); `strata-params` prints them. Each
 * collective picks ring, recursive doubling, hierarchical (intra-node
 * reduce-scatter over shared memory, one inter-node ring per rail, intra-node
 * allgather) or leader per message size from an α-β model; see
 * docs/algorithms.md. STRATA_ALGO forces one.
 *
 * Conventions, for every call:
 *   - Collective: every rank of the communicator makes the same calls in the
 *     same order with matching count, type, op and root. A rank whose
 *     arguments disagree gets STRATA_ERR_MISMATCH where it can be detected.
 *   - Blocking calls return when this rank's part is done and its buffers
 *     may be reused. Non-blocking calls (strata_i*) return a request at once;
 *     the buffers belong to Strata until strata_test reports done or
 *     strata_wait returns. A communicator runs its collectives one at a time,
 *     in call order; a blocking call waits for earlier non-blocking ones.
 *   - In place: allreduce, broadcast, reduce with sendbuf == recvbuf;
 *     reduce_scatter with sendbuf == recvbuf - ...: pass sendbuf such that
 *     recvbuf == sendbuf + rank * recvcount elements (NCCL's convention);
 *     allgather with sendbuf == recvbuf + rank * sendcount elements.
 *   - Counts of any size, including 0; counts need not divide by the rank count.
 *   - Errors: a negative strata_status_t; strata_comm_error() describes the
 *     last one. A rank that dies makes the other ranks' pending collectives
 *     fail (STRATA_ERR_REMOTE or STRATA_ERR_TIMEOUT) within STRATA_TIMEOUT,
 *     never hang. After an error the communicator can only be destroyed.
 *   - Threads: one thread at a time per communicator. A communicator that has
 *     non-blocking collectives in flight runs them on its own worker thread.
 *
 * Linking: `pkg-config --cflags --libs strata` gives libstrata.so (exports
 * only strata_*); libstrata.a is the same library for static links (add
 * `pkg-config --static --libs strata`'s extra libraries).
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <stddef.h>

#include "strata/status.h"
#include "strata/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header. The Makefile's VERSION is the one source: make
 * stops when these lines disagree with it. STRATA_VERSION(x, y, z) orders
 * versions as one integer (minor and patch stay below 100), so a program can
 * write `#if STRATA_VERSION_CODE >= STRATA_VERSION(0, 2, 0)`.
 */
#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1
#define STRATA_VERSION_PATCH 0
#define STRATA_VERSION_STRING "0.1.0"
#define STRATA_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define STRATA_VERSION_CODE \
    STRATA_VERSION(STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR, STRATA_VERSION_PATCH)

/*
 * The STRATA_VERSION_CODE of the library this program runs with (which may be
 * newer than the header it was compiled with). Thread-safe, never fails.
 */
STRATA_API int strata_version(void);

typedef struct strata_comm strata_comm_t;
typedef struct strata_request strata_request_t;

/* Explicit arguments for strata_comm_init_config; -1 / NULL mean "from the environment". */
typedef struct strata_comm_config {
    int rank;               /* 0 .. nranks-1 */
    int nranks;
    const char *node_id;    /* ranks with equal node ids share memory; NULL: hostname */
    const char *root_addr;  /* "host:port" of rank 0's rendezvous; NULL: environment */
    int root_fd;            /* rank 0: an already listening socket to use, or -1; init
                               takes ownership (closes it) whatever it returns */
    int timeout_ms;         /* bound on init and on each collective; 0: STRATA_TIMEOUT */
    const void *job_secret; /* the bytes every rank of the job shares (16..4096), or NULL:
                               STRATA_JOB_SECRET_FD / _FILE / STRATA_JOB_SECRET, or on one
                               host the user's own secret file (docs/reliability.md) */
    size_t job_secret_len;
} strata_comm_config_t;

/* A config with every field "from the environment". */
STRATA_API void strata_comm_config_init(strata_comm_config_t *config);

/*
 * Creates a communicator from the environment: rank and size from STRATA_RANK /
 * STRATA_NRANKS, or OpenMPI's OMPI_COMM_WORLD_RANK / _SIZE, or Slurm's
 * SLURM_PROCID / SLURM_NTASKS, or torchrun's RANK / WORLD_SIZE; the rendezvous
 * at STRATA_ROOT_ADDR or MASTER_ADDR:MASTER_PORT. Blocks until every rank
 * joined, or fails with STRATA_ERR_TIMEOUT naming the missing ranks. Only
 * processes that hold the job's secret can join or connect to a rank (a run
 * across hosts needs one: STRATA_JOB_SECRET_FILE; strata-run makes its own);
 * a rank with another secret fails with STRATA_ERR_AUTH. A malformed or
 * out-of-range STRATA_* variable fails init with STRATA_ERR_INVALID.
 * On success *comm_p owns a communicator to destroy with strata_comm_destroy.
 */
STRATA_API strata_status_t strata_comm_init(strata_comm_t **comm_p);
STRATA_API strata_status_t strata_comm_init_config(const strata_comm_config_t *config,
                                                   strata_comm_t **comm_p);

/* Frees everything (connections, shared memory, threads). NULL is ignored. */
STRATA_API void strata_comm_destroy(strata_comm_t *comm);

STRATA_API int strata_comm_rank(const strata_comm_t *comm);
STRATA_API int strata_comm_nranks(const strata_comm_t *comm);
STRATA_API int strata_comm_local_rank(const strata_comm_t *comm);
STRATA_API int strata_comm_local_size(const strata_comm_t *comm);
STRATA_API int strata_comm_node(const strata_comm_t *comm); /* index of this rank's node */
STRATA_API int strata_comm_nnodes(const strata_comm_t *comm);

/* The message of the last error on this communicator ("" if none). Valid until the next call. */
STRATA_API const char *strata_comm_error(const strata_comm_t *comm);

/*
 * The algorithm the selector would use on this comm for a collective of this
 * many bytes (allreduce, broadcast, reduce: count * type size; reduce_scatter
 * and allgather: the whole buffer, count * type size * nranks).
 *   coll:    "allreduce", "reduce_scatter", "allgather", "broadcast" or "reduce"
 *            (the barrier always runs recursive doubling).
 *   returns: "ring" (a ring; for broadcast and reduce a pipelined chain),
 *            "recursive" (recursive doubling; for broadcast and reduce a
 *            binomial tree), "hierarchical" or "leader" (allreduce only);
 *            "?" for a NULL comm or a name not listed above. A static string.
 * STRATA_ALGO forces one algorithm where it applies; this reports the result.
 */
STRATA_API const char *strata_comm_algo_for(const strata_comm_t *comm, const char *coll,
                                            size_t bytes);

STRATA_API strata_status_t strata_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                            strata_dtype_t dtype, strata_op_t op,
                                            strata_comm_t *comm);
STRATA_API strata_status_t strata_reduce_scatter(const void *sendbuf, void *recvbuf,
                                                 size_t recvcount, strata_dtype_t dtype,
                                                 strata_op_t op, strata_comm_t *comm);
STRATA_API strata_status_t strata_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                            strata_dtype_t dtype, strata_comm_t *comm);
STRATA_API strata_status_t strata_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                            strata_dtype_t dtype, int root, strata_comm_t *comm);
STRATA_API strata_status_t strata_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                         strata_dtype_t dtype, strata_op_t op, int root,
                                         strata_comm_t *comm);
STRATA_API strata_status_t strata_barrier(strata_comm_t *comm);

/* Non-blocking forms: *req_p is set on success and must be finished with test or wait. */
STRATA_API strata_status_t strata_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                             strata_dtype_t dtype, strata_op_t op,
                                             strata_comm_t *comm, strata_request_t **req_p);
STRATA_API strata_status_t strata_ireduce_scatter(const void *sendbuf, void *recvbuf,
                                                  size_t recvcount, strata_dtype_t dtype,
                                                  strata_op_t op, strata_comm_t *comm,
                                                  strata_request_t **req_p);
STRATA_API strata_status_t strata_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                             strata_dtype_t dtype, strata_comm_t *comm,
                                             strata_request_t **req_p);
STRATA_API strata_status_t strata_ibroadcast(const void *sendbuf, void *recvbuf, size_t count,
                                             strata_dtype_t dtype, int root, strata_comm_t *comm,
                                             strata_request_t **req_p);
STRATA_API strata_status_t strata_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                          strata_dtype_t dtype, strata_op_t op, int root,
                                          strata_comm_t *comm, strata_request_t **req_p);

/*
 * Never blocks: *done = 1 when the collective has finished, and then the
 * request is freed and its status returned; *done = 0 and STRATA_OK while it
 * runs. The communicator's worker thread makes the progress, so a caller that
 * never tests still completes.
 */
STRATA_API strata_status_t strata_test(strata_request_t *req, int *done);
/*
 * Blocks until the request has finished, frees it and returns the
 * collective's status. The caller sleeps on a condition variable that the
 * worker thread signals; it does not spin. (The thread that runs a collective,
 * the caller's for blocking calls and the worker for strata_i*, busy-polls
 * for at most 50 µs per wait, yields, then sleeps: in poll() on the
 * transport's descriptors, or on a futex for shared memory. STRATA_TIMEOUT
 * bounds every wait.)
 */
STRATA_API strata_status_t strata_wait(strata_request_t *req);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */

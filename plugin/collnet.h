/*
 * The software CollNet: NCCL's collective network (ncclCollNetPlugin_v11 / _v12), run by
 * the plugin over Strata's own transport. NCCL reduces inside each node and hands each
 * node's partial result to one collComm per head; the members of a collComm (one head per
 * node) run the inter-node collective with the ring or recursive-doubling schedules of
 * algos/sched.h, chosen per size by the cost model (algos/select.h), and reduce on the CPU
 * with algos/reduce.h. docs/collnet-protocol.md describes the wire; the header comments of
 * include/nccl/net_v11.h how NCCL drives each call.
 *
 * Files: collnet_tables.c (ncclCollNetPlugin_v11 and _v12: init, devices, finalize),
 * collnet_compat.c (_v10 and _v9, adapters on the net adapters' context),
 * collnet_props.c (the devices mirror the net's; v12 rail and plane), collnet_wire.c
 * (handle, hello and agreement record bytes), collnet_listen.c, collnet_connect.c (the group
 * and its agreement), collnet_mr.c (registrations), the executor (its insides in
 * collnet_exec.h: collnet_exec.c the progress loop, collnet_run.c runs, collnet_unit.c units,
 * collnet_flight.c transport requests in flight, collnet_stage.c GPU staging, collnet_idle.c
 * the wait), collnet_ops.c (iallreduce, iallgather, ireducescatter, iflush, test,
 * reduceSupport), collnet_select.c (the model's table).
 *
 * Threads (as NCCL 2.28.9 calls): listen, connect, regMr, deregMr and closeColl on the proxy
 * service thread; iallreduce, iallgather, ireducescatter, iflush and test on the progress
 * thread; reduceSupport, devices and getProperties on the init thread. A collComm's
 * executor state is touched by the data-path calls only; registrations are guarded by a
 * mutex because NCCL may register a user buffer while collectives run.
 */
#ifndef STP_COLLNET_H
#define STP_COLLNET_H

#include <pthread.h>
#include <stdint.h>

#include "algos/cost_model.h"
#include "algos/ctx.h"
#include "algos/sched.h"
#include "algos/select.h"
#include "plugin/collnet_load.h"
#include "plugin/collnet_props.h"
#include "plugin/plugin.h"
#include "strata/types.h"

/* ------------------------------------------------------------------ limits */

/*
 * Requests a collComm holds at once: NCCL keeps at most ceil(nsubs / 8) x 8 in flight per
 * collComm, 64 with 64 channels (COLLNET_GROUP_NSUBS 8, NCCL_STEPS 8, src/transport/coll_net.cc
 * of v2.28.9-1). A 65th call gets a NULL request (back-pressure).
 */
#define STP_CN_MAX_REQUESTS 64
/* Collectives the executor runs at once: the next one starts sending while the previous one
 * drains (2 is enough to hide the drain; 4 leaves room for small calls). */
#define STP_CN_ACTIVE 4
/* The smallest piece STRATA_COLLNET_CHUNK sets (0 aside: the model's): below 4 KiB a piece
 * costs more in per-message overhead than it hides (util/param_table.c). */
#define STP_CN_MIN_PIECE 4096
/* Pieces a ring step is cut into at most (a piece is at least STRATA_COLLNET_CHUNK). */
#define STP_CN_MAX_PIECES 16
/* (step, piece) units per collective at most: bounds the executor's state per collective
 * (2 bytes a unit), whatever the group size; with many members the pieces shrink first. */
#define STP_CN_MAX_UNITS 32768
/* Transport requests in flight per collComm: every active collective's pieces, both ways. */
#define STP_CN_MAX_INFLIGHT (2 * STP_CN_ACTIVE * STP_CN_MAX_PIECES)
/* Descriptors one comm may name for the wait (tcp: one per socket, STRATA_SOCKET_NSOCKS <= 8;
 * ucx: 2); a comm that needs more names none, and the wait naps instead. */
#define STP_CN_POLL_FDS_PER_COMM 8

/* The CollNet's handle: the transport's listen bytes, then ours (collnet_wire.c). */
#define STP_CN_HANDLE_XPORT_BYTES 64    /* what the transports' listen writes (<= 64 each) */
#define STP_CN_HELLO_BYTES 32
#define STP_CN_RECORD_BYTES 128

/* ------------------------------------------------------------------ wire (collnet_wire.c) */

/* Our half of the handle (bytes 64..127). */
typedef struct stp_cn_handle {
    uint64_t nonce;          /* random, per listen: a member recognises its own handle */
    int32_t dev;             /* the net device listen was called with */
} stp_cn_handle_t;

/* The first message on each connection: who is calling whom in which group. */
typedef struct stp_cn_hello {
    uint64_t group;          /* hash of every member's nonce, in handle order */
    uint32_t from, to;       /* positions */
    uint32_t nranks;
} stp_cn_hello_t;

/* One member's entry of the agreement at the end of connect. */
typedef struct stp_cn_record {
    uint16_t ok;             /* 1: this member built every connection */
    uint64_t group;
    uint32_t rank;           /* the rank NCCL gave this member (data layout of AG/RS) */
    uint32_t nranks;
    double model[STA_FIELD_COUNT];   /* member 0's cost model is everyone's */
    int32_t intra;           /* the model's sta_intra_t */
    int32_t forced;          /* member 0's STRATA_COLLNET_ALGO (sta_algo_t) */
    uint32_t chunk;          /* member 0's STRATA_COLLNET_CHUNK */
    uint64_t host;           /* stp_cn_host_id of the member's host name: members on one
                                host share its cores */
    uint32_t cores;          /* cores online on the member's host (0: unknown) */
    uint32_t stripe_min;     /* the transport's stt_props_t.stripe_min on this member's device
                                (bytes, at most UINT32_MAX); 0: it never splits a message */
    uint32_t flags;          /* STP_CN_REC_* */
} stp_cn_record_t;

/* stp_cn_record_t.flags */
#define STP_CN_REC_CPU_COPIES 0x1u   /* the transport's bytes are copied by the host's cores
                                        (stt_props_t.cpu_copies) */
#define STP_CN_REC_CHUNK_AUTO 0x2u   /* STRATA_COLLNET_CHUNK is unset: the piece rule may
                                        raise the pieces (collnet_select.c) */
#define STP_CN_REC_ORDER_STEP 0x4u   /* STRATA_COLLNET_ORDER=step (member 0's is used) */
#define STP_CN_REC_ORDER_PIECE 0x8u  /* STRATA_COLLNET_ORDER=piece; neither: auto */
#define STP_CN_REC_FLAGS (STP_CN_REC_CPU_COPIES | STP_CN_REC_CHUNK_AUTO | \
                          STP_CN_REC_ORDER_STEP | STP_CN_REC_ORDER_PIECE)

/* Writes the handle (NCCL_NET_HANDLE_MAXSIZE bytes): xport's listen bytes, then ours.
 * STRATA_ERR_INTERNAL if the transport wrote past its 64 bytes. */
strata_status_t stp_cn_handle_encode(void *buf, const void *xport, const stp_cn_handle_t *h);
/* STRATA_ERR_INVALID (with a warning naming index) for a handle that is not ours. */
strata_status_t stp_cn_handle_decode(const void *buf, int index, stp_cn_handle_t *h);

void stp_cn_hello_encode(void *buf, const stp_cn_hello_t *h);
strata_status_t stp_cn_hello_decode(const void *buf, stp_cn_hello_t *h);
void stp_cn_record_encode(void *buf, const stp_cn_record_t *r);
strata_status_t stp_cn_record_decode(const void *buf, stp_cn_record_t *r);

/*
 * A peer's bytes checked against this member, before anything else uses them (every field
 * a peer sends is checked here, once; tests/fuzz/fuzz_collnet_wire.c holds them to it).
 * hello_check: the hello opening an accepted connection names this group, this member
 * (pos) as its target, the group's size and a member in it; STRATA_ERR_REMOTE otherwise,
 * *h filled with what was read (for the caller's message) when the bytes decoded.
 * record_check: a member's agreement record: STRATA_ERR_REMOTE when garbled,
 * STRATA_ERR_INVALID when the member says it cannot take part, STRATA_ERR_MISMATCH for
 * another group, size or an NCCL rank out of range; with lead (member 0's record, whose
 * model, algorithm and chunk every member uses) STRATA_ERR_REMOTE also for a model that
 * sta_model_check refuses, an algorithm other than auto, ring or recursive, or a chunk
 * outside STRATA_COLLNET_CHUNK's range. *why (static text) says which; *r is filled when
 * the bytes decoded.
 */
strata_status_t stp_cn_hello_check(const void *buf, uint64_t group, int pos, int nranks,
                                   stp_cn_hello_t *h);
strata_status_t stp_cn_record_check(const void *buf, uint64_t group, int nranks, int lead,
                                    stp_cn_record_t *r, const char **why);
/* The cost model a record carries (the fields it does not carry at their defaults). */
void stp_cn_record_model(const stp_cn_record_t *r, sta_model_t *m);

/* FNV-1a over the nonces of n handles: equal on every member given the same handles. */
uint64_t stp_cn_group_id(const uint64_t *nonces, int n);
/* FNV-1a over a host name's bytes (never 0 in practice: 0 is what an older member sends). */
uint64_t stp_cn_host_id(const char *host);

/* ------------------------------------------------------------------ objects */

#define STP_CN_LISTEN_MAGIC 0x53544e434c495354ull   /* "STNCLIST" */
#define STP_CN_COMM_MAGIC 0x53544e43434f4d4dull     /* "STNCCOMM" */
#define STP_CN_MR_MAGIC 0x53544e434d52ull           /* "STNCMR" */
#define STP_CN_REQ_MAGIC 0x53544e43524551ull        /* "STNCREQ" */

typedef struct stp_cn_listen {
    uint64_t magic;
    stt_listen_t *listen;
    const stt_ops_t *ops;
    int dev;
    uint64_t nonce;
    uint64_t comm_id;        /* the NCCL communicator, for logs */
} stp_cn_listen_t;

/* A connection both ways to one member. */
typedef struct stp_cn_link {
    int pos;                 /* the member's position (handle order) */
    stt_comm_t *send;
    stt_comm_t *recv;
    /* scratch of the executor's walks over its flights (a stamp of stp_cn_comm_t's pass):
     * an older request of the send (recv) comm is unfinished, or its descriptors are in */
    unsigned send_mark, recv_mark;
} stp_cn_link_t;

/*
 * A registration, shared by every regMr of the same (address, size, type) on the collComm
 * (NCCL registers its staging region 2 x nChannels times): one transport handle per link and
 * direction, mh[2 * link + 0] on its send comm, mh[2 * link + 1] on its recv comm.
 */
typedef struct stp_cn_mr {
    uint64_t magic;
    struct stp_cn_comm *comm;
    struct stp_cn_mr *next;
    uintptr_t addr;
    size_t size;
    int type;
    int refs;
    void *mh[];
} stp_cn_mr_t;

typedef enum stp_cn_req_state {
    STP_CN_REQ_FREE = 0,
    STP_CN_REQ_QUEUED,       /* waiting for an executor slot */
    STP_CN_REQ_RUNNING,
    STP_CN_REQ_DONE,
    STP_CN_REQ_FLUSH,        /* an iflush of GPU memory waiting on the transport */
} stp_cn_req_state_t;

/* Which of a run's buffers a region names (sta_sched_buf_t), and the staging area. */
#define STP_CN_BUF_STAGE 4
#define STP_CN_NBUF 5

struct stp_cn_comm;

typedef struct stp_cn_req {
    uint64_t magic;
    struct stp_cn_comm *comm;
    stp_cn_req_state_t state;
    uint64_t seq;            /* order of the call on this collComm */
    sta_coll_t coll;
    sta_sched_kind_t kind;   /* the schedule, chosen at submission */
    strata_dtype_t dtype;    /* allgather: STRATA_UINT8 (bytes) */
    strata_op_t op;
    size_t bytes;            /* allreduce: the vector; AG/RS: the window */
    uint8_t *src, *dst;      /* NCCL's buffers */
    stp_cn_mr_t *src_mr, *dst_mr;
    size_t bytes_per_rank, window_off;  /* AG/RS */
    stt_req_t *flush;        /* STP_CN_REQ_FLUSH: the transport's flush */
} stp_cn_req_t;

/*
 * A run's phases. GPU memory (a registration of type NCCL_PTR_CUDA, where the transport takes
 * it: ib with peer memory) is staged through host buffers over the self link, a connection
 * of the transport to this member itself: IN copies the GPU input to host memory, RUN runs
 * the schedule on host memory (the CPU reduces), OUT copies the result back. Host memory goes
 * straight to RUN and skips OUT. Written for verbs; untested here (no GPU on these machines).
 */
enum { STP_CN_PH_IN = 0, STP_CN_PH_RUN, STP_CN_PH_OUT, STP_CN_PH_DONE };

/* One collective on the executor. */
typedef struct stp_cn_run {
    stp_cn_req_t *req;       /* NULL: the slot is free */
    int phase;               /* STP_CN_PH_* */
    int stage_posted;        /* IN / OUT: self-link transfers posted (the send, then the
                                receive) */
    int stage_done;          /* ... and completed; the phase ends at 2 and 2 */
    size_t src_len, dst_len; /* bytes of NCCL's buffers this run reads and writes */
    sta_sched_t sched;
    int npieces, nunits, left;
    int send_unit, recv_unit;   /* cursors: how many units were posted, in the comm's order
                                   (stp_cn_unit_at) */
    uint8_t *sdone;          /* [units] 1: this unit's send is complete (or has none) */
    uint8_t *rstate;         /* [units] STP_CN_R_* */
    size_t *blk_off, *blk_len;  /* [nranks] AG/RS blocks, by position */
    uint8_t *buf[STP_CN_NBUF];  /* indexed by sta_sched_buf_t, then the staging area */
    stp_cn_mr_t *mr[STP_CN_NBUF];
    uint8_t *work, *stage;   /* owned scratch, kept across collectives (grow only) */
    size_t work_size, stage_size;
    stp_cn_mr_t *work_mr, *stage_mr;
    uint8_t *bounce[2];      /* host copies of GPU input [0] and output [1] (grow only) */
    size_t bounce_size[2];
    stp_cn_mr_t *bounce_mr[2];
    int stage_src;           /* 1: REDUCE_SRC receives are staged (SRC and DST overlap) */
    uint64_t last_ns;        /* last progress, for the timeout */
} stp_cn_run_t;

/* Receive state of a unit. */
enum { STP_CN_R_IDLE = 0, STP_CN_R_POSTED, STP_CN_R_ARRIVED, STP_CN_R_DONE };

/* A transport request in flight. */
typedef struct stp_cn_flight {
    stt_req_t *req;
    int run, unit, is_send, peer;   /* unit -1: a self-link staging transfer */
    int link;                /* index in links (nlinks: the self link) */
    size_t len;              /* bytes expected */
} stp_cn_flight_t;

/* What test() does when nothing moved (STRATA_COLLNET_WAIT, collnet_idle.c). */
typedef enum {
    STP_CN_WAIT_SPIN,    /* return at once */
    STP_CN_WAIT_POLL,    /* sleep in poll() on the links' descriptors */
    STP_CN_WAIT_LOAD,    /* either, by the host's load (collnet_load.h) */
} stp_cn_wait_t;

typedef struct stp_cn_comm {
    uint64_t magic;
    const stt_ops_t *ops;
    int dev;
    int nranks;
    int pos;                 /* this member's position: the index of its handle */
    int rank;                /* the rank NCCL gave this member */
    uint64_t comm_id, group;
    int *rank_of;            /* [nranks] NCCL rank of each position */
    int *pos_of;             /* [nranks] position of each NCCL rank */
    int identity;            /* rank_of is the identity */
    int nlinks;              /* links to peers, sorted by position */
    int nconn;               /* nlinks, plus the self link (GPU staging) when the device
                                takes GPU memory: links[nlinks] connects to this member */
    stp_cn_link_t *links;
    int stage_all;           /* STRATA_COLLNET_STAGE: host buffers staged like GPU memory */
    int *link_of;            /* [nranks] index in links, or -1 */
    sta_select_t table;
    size_t chunk;            /* piece size of the ring steps (0: the model's per step) */
    size_t piece_min;        /* no piece below this (0: none): the transport's striping size
                                where the host's cores bound the net (stp_cn_piece_min) */
    int pieces_in_turn;      /* 1: runs post every step of a piece before the next piece
                                (stp_cn_pieces_in_turn); 0: every piece of a step first */
    uint64_t timeout_ns;
    size_t inflight_max;     /* STRATA_COLLNET_INFLIGHT: bytes of runs at once (0: no cap) */

    pthread_mutex_t mr_lock;
    stp_cn_mr_t *mrs;

    /* data path (progress thread) */
    stp_cn_req_t reqs[STP_CN_MAX_REQUESTS];
    uint64_t next_seq, run_seq;  /* sequence numbers issued, and the next to start running */
    stp_cn_run_t runs[STP_CN_ACTIVE];
    int run_head;            /* index of the oldest running collective */
    int nrunning;
    stp_cn_flight_t flights[STP_CN_MAX_INFLIGHT];   /* in posting order */
    int nflights;
    unsigned pass;           /* walks over the flights, for stp_cn_link_t's marks */
    int moved;               /* the last stp_cn_exec_progress changed something */
    /* waiting (collnet_idle.c): a test() that finds nothing to do returns at once or sleeps
     * on the links' descriptors (STRATA_COLLNET_WAIT: spin, poll, or, by default where the
     * members on this host outnumber its cores, by the host's load) */
    stp_cn_wait_t wait;
    stp_cn_load_t load;      /* STP_CN_WAIT_LOAD's probes */
    int idle;                /* backoff runs: no progress since it started */
    sta_backoff_t backoff;
    struct pollfd *pfds;     /* [2 x nconn x STP_CN_POLL_FDS_PER_COMM], for the wait */
    strata_status_t failed;  /* sticky */
} stp_cn_comm_t;

/* ------------------------------------------------------------------ entry points */

/* collnet_listen.c / collnet_connect.c */
ncclResult_t stp_cn_listen(void *ctx, int dev, void *handle, void **listen_comm);
ncclResult_t stp_cn_close_listen(void *listen_comm);
ncclResult_t stp_cn_connect(void *handles[], int nranks, int rank, void *listen_comm,
                            void **coll_comm);
ncclResult_t stp_cn_close_coll(void *coll_comm);
/* Frees a collComm's links and memory (connect's failure path and closeColl). */
void stp_cn_comm_free(stp_cn_comm_t *c);

/* collnet_mr.c */
ncclResult_t stp_cn_reg_mr(void *coll_comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t stp_cn_reg_mr_dmabuf(void *coll_comm, void *data, size_t size, int type,
                                  uint64_t offset, int fd, void **mhandle);
ncclResult_t stp_cn_dereg_mr(void *coll_comm, void *mhandle);
/* Internal buffers: register on every link (refs 1) / release. */
strata_status_t stp_cn_mr_get(stp_cn_comm_t *c, void *data, size_t size, int type,
                              stp_cn_mr_t **mr_p);
void stp_cn_mr_put(stp_cn_comm_t *c, stp_cn_mr_t *mr);
/* mhandle as NCCL passed it, checked to be this comm's and to cover [data, data + size). */
strata_status_t stp_cn_mr_check(const stp_cn_comm_t *c, void *mhandle, const void *data,
                                size_t size, const char *what);

/* the executor (collnet_exec.c, collnet_run.c, collnet_idle.c) */
/* Allocates the executor's per-collective state for c->nranks members (connect). */
strata_status_t stp_cn_exec_init(stp_cn_comm_t *c);
/* Queues a filled request; it runs when an executor slot frees. */
void stp_cn_exec_submit(stp_cn_comm_t *c, stp_cn_req_t *req);
/* Moves every collective as far as it can go now; the comm's sticky status. Never blocks. */
strata_status_t stp_cn_exec_progress(stp_cn_comm_t *c);
/* Runs one request to completion, polling, until the deadline (connect's agreement). */
strata_status_t stp_cn_exec_wait(stp_cn_comm_t *c, stp_cn_req_t *req, uint64_t deadline_ns);
/*
 * test() found its request unfinished: after a progress call that moved nothing on a host
 * whose cores the members fill (or STRATA_COLLNET_WAIT=poll), waits on the links'
 * descriptors (at most a few ms); otherwise returns at once (collnet_idle.c).
 */
void stp_cn_exec_idle(stp_cn_comm_t *c);
/* Releases the executor's scratch (closeColl). */
void stp_cn_exec_fini(stp_cn_comm_t *c);

/* collnet_ops.c */
ncclResult_t stp_cn_iallreduce(void *coll_comm, void *send_data, void *recv_data, size_t count,
                               ncclDataType_t data_type, ncclRedOp_t red_op, void *send_mhandle,
                               void *recv_mhandle, void **request);
ncclResult_t stp_cn_iallgather(void *coll_comm, void *send_data, int nrecv_parts,
                               ncclNetSGE_v11_t *recv_parts, size_t bytes_per_rank,
                               size_t window_offset, size_t window_bytes, void *send_mhandle,
                               void **request);
ncclResult_t stp_cn_ireducescatter(void *coll_comm, int nsend_parts, ncclNetSGE_v11_t *send_parts,
                                   void *recv_data, size_t bytes_per_rank, size_t window_offset,
                                   size_t window_bytes, ncclDataType_t data_type,
                                   ncclRedOp_t red_op, void *recv_mhandle, void **request);
ncclResult_t stp_cn_iflush(void *coll_comm, void *data, int size, void *mhandle,
                           void **request);
ncclResult_t stp_cn_test(void *request, int *done, int *size);
ncclResult_t stp_cn_reduce_support(ncclDataType_t data_type, ncclRedOp_t red_op,
                                   int *supported);
/* A free request slot of c, or NULL when all STP_CN_MAX_REQUESTS are taken. */
stp_cn_req_t *stp_cn_req_alloc(stp_cn_comm_t *c);

/* collnet_select.c */
/* This member's part of the agreement: its cost model and knobs. */
/* STRATA_COLLNET_ALGO as an algorithm (auto, ring or recursive; anything else: auto, warned). */
sta_algo_t stp_cn_forced_algo(void);
strata_status_t stp_cn_record_local(stp_cn_record_t *r);
/*
 * The dims of the CollNet's group from every member's record (nranks records of
 * STP_CN_RECORD_BYTES in recs): one member per node, and the host terms by the library's rule
 * (sta_dims_set_host): the most members on one host, that host's cores (the fewest its
 * members report), net_cpu when `transport` is tcp. A garbled record counts as a host alone.
 */
void stp_cn_dims(const uint8_t *recs, int nranks, const char *transport, sta_dims_t *dims);
/* Builds c->table from member 0's record (dec[0] of every member's decoded, in position
 * order) and the group's dims (stp_cn_dims over the encoded recs), sets the pieces (chunk and
 * stp_cn_piece_min's floor) and the order (stp_cn_pieces_in_turn) and logs them at INFO. */
strata_status_t stp_cn_select_build(stp_cn_comm_t *c, const uint8_t *recs,
                                    const stp_cn_record_t *dec);
/*
 * The piece rule: the smallest piece of a ring step, from every member's record (n of them,
 * in position order) and the group's model (member 0's). Where member 0 left
 * STRATA_COLLNET_CHUNK unset, every member's transport copies through the host's cores and
 * on some host the members' streams get less than the link from its cores
 * (sta_cost_net_cpu_bound over that host's members and cores), pieces are raised to the
 * largest size from which the members' transports split a message across their streams
 * (tcp: sockets), so that every piece is spread over several streams instead of one;
 * 0 (no floor) otherwise. The same on every member given the same records.
 */
size_t stp_cn_piece_min(const stp_cn_record_t *recs, int n, const sta_model_t *model);
/*
 * The order rule: 1 when a run posts its pieces in turn (all the steps of piece 0, then of
 * piece 1, ...), 0 when step by step (every piece of step 0, then of step 1, ...). Member 0's
 * STRATA_COLLNET_ORDER decides when it is step or piece; auto is piece where every member's
 * transport copies through the host's cores and some host runs more members than it has
 * cores (docs/collnet-protocol.md, "Order of pieces"). The same on every member given the
 * same records (n, in position order: recs[0] is member 0's).
 */
int stp_cn_pieces_in_turn(const stp_cn_record_t *recs, int n);
/* The schedule for a collective of `bytes` (AG: the window) on c. */
sta_sched_kind_t stp_cn_select(const stp_cn_comm_t *c, sta_coll_t coll, size_t bytes);

#endif /* STP_COLLNET_H */

/*
 * The CollNet's data-path entry points: arguments checked against NCCL's contract and the
 * registrations, a request slot taken (none free: a NULL request, NCCL's back-pressure), the
 * schedule chosen by size, and the executor moved. test() moves every collective of the
 * collComm, since a member may need this one to forward data whatever NCCL waits for.
 */
#include <limits.h>
#include <string.h>

#include "plugin/collnet.h"
#include "util/compiler.h"
#include "util/log.h"

/* NCCL's element types and operators (include/nccl/common.h) as Strata's. Avg and the
 * PreMulSum operators never reach a CollNet: NCCL sends them as Sum and scales on the GPU. */
static const strata_dtype_t ops_dtype[ncclNumTypes] = {
    [ncclInt8] = STRATA_INT8,       [ncclUint8] = STRATA_UINT8,
    [ncclInt32] = STRATA_INT32,     [ncclUint32] = STRATA_UINT32,
    [ncclInt64] = STRATA_INT64,     [ncclUint64] = STRATA_UINT64,
    [ncclFloat16] = STRATA_FP16,    [ncclFloat32] = STRATA_FP32,
    [ncclFloat64] = STRATA_FP64,    [ncclBfloat16] = STRATA_BF16,
    [ncclFloat8e4m3] = STRATA_FP8_E4M3, [ncclFloat8e5m2] = STRATA_FP8_E5M2,
};
#define OPS_NUM_REDUCE_OPS 4          /* Sum, Prod, Max, Min */
static const strata_op_t ops_op[OPS_NUM_REDUCE_OPS] = {
    [ncclSum] = STRATA_SUM, [ncclProd] = STRATA_PROD, [ncclMax] = STRATA_MAX,
    [ncclMin] = STRATA_MIN,
};

#define OPS_CHECK(cond, ...)                                                                  \
    do {                                                                                      \
        if (STU_UNLIKELY(!(cond))) {                                                          \
            STU_WARN("collnet: " __VA_ARGS__);                                                \
            return stp_status_to_nccl(STRATA_ERR_INVALID);                                    \
        }                                                                                     \
    } while (0)

ncclResult_t stp_cn_reduce_support(ncclDataType_t data_type, ncclRedOp_t red_op,
                                   int *supported)
{
    OPS_CHECK(supported != NULL, "reduceSupport: NULL output");
    /* Every type with every operator NCCL asks about; anything else gets "no", never an
     * error (an error on one head hangs NCCL's init, src/transport/coll_net.cc). */
    *supported = (unsigned)data_type < ncclNumTypes && (unsigned)red_op < OPS_NUM_REDUCE_OPS;
    return ncclSuccess;
}

stp_cn_req_t *stp_cn_req_alloc(stp_cn_comm_t *c)
{
    for (int i = 0; i < STP_CN_MAX_REQUESTS; i++) {
        stp_cn_req_t *q = &c->reqs[i];
        if (q->state == STP_CN_REQ_FREE) {
            memset(q, 0, sizeof(*q));
            q->magic = STP_CN_REQ_MAGIC;
            q->comm = c;
            return q;
        }
    }
    return NULL;
}

static int comm_ok(const stp_cn_comm_t *c)
{
    return c != NULL && c->magic == STP_CN_COMM_MAGIC;
}

/*
 * Submits q and moves the executor once; the request goes back to NCCL. A failure found on
 * the way is the collComm's from now on and reaches NCCL through test(), like any other.
 */
static ncclResult_t ops_submit(stp_cn_comm_t *c, stp_cn_req_t *q, void **request)
{
    stp_cn_exec_submit(c, q);
    (void)stp_cn_exec_progress(c);
    *request = q;
    return ncclSuccess;
}

ncclResult_t stp_cn_iallreduce(void *coll_comm, void *send_data, void *recv_data, size_t count,
                               ncclDataType_t data_type, ncclRedOp_t red_op, void *send_mhandle,
                               void *recv_mhandle, void **request)
{
    stp_cn_comm_t *c = coll_comm;

    OPS_CHECK(comm_ok(c) && request != NULL, "iallreduce: %s",
              request == NULL ? "NULL request" : "not a Strata collComm");
    *request = NULL;
    if (c->failed != STRATA_OK)
        return stp_status_to_nccl(c->failed);
    OPS_CHECK((unsigned)data_type < ncclNumTypes && (unsigned)red_op < OPS_NUM_REDUCE_OPS,
              "iallreduce: type %d / operator %d not supported (reduceSupport said no)",
              (int)data_type, (int)red_op);
    strata_dtype_t dt = ops_dtype[data_type];
    size_t esize = strata_dtype_size(dt);
    OPS_CHECK(count <= SIZE_MAX / esize, "iallreduce: %zu elements overflow", count);
    size_t bytes = count * esize;
    if (stp_cn_mr_check(c, send_mhandle, send_data, bytes, "iallreduce send") != STRATA_OK ||
        stp_cn_mr_check(c, recv_mhandle, recv_data, bytes, "iallreduce receive") != STRATA_OK)
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    stp_cn_req_t *q = stp_cn_req_alloc(c);
    if (q == NULL)
        return ncclSuccess;                        /* back-pressure: NCCL calls again */
    q->coll = STA_COLL_ALLREDUCE;
    q->kind = stp_cn_select(c, STA_COLL_ALLREDUCE, bytes);
    q->dtype = dt;
    q->op = ops_op[red_op];
    q->bytes = bytes;
    q->src = send_data;
    q->dst = recv_data;
    q->src_mr = send_mhandle;
    q->dst_mr = recv_mhandle;
    return ops_submit(c, q, request);
}

/* This member's block of a window: bytes [rank x bpr, (rank+1) x bpr) within it. */
static size_t ops_own_block(const stp_cn_comm_t *c, size_t bpr, size_t wo, size_t wb)
{
    size_t lo = (size_t)c->rank * bpr, hi = lo + bpr;
    lo = STU_MIN(STU_MAX(lo, wo), wo + wb);
    hi = STU_MIN(STU_MAX(hi, wo), wo + wb);
    return hi - lo;
}

/* The window lies in the nranks x bytesPerRank buffer (no overflow). */
static int ops_window_ok(const stp_cn_comm_t *c, size_t bpr, size_t wo, size_t wb)
{
    if (bpr > SIZE_MAX / (size_t)c->nranks)
        return 0;
    size_t total = bpr * (size_t)c->nranks;
    return wo <= total && wb <= total - wo;
}

ncclResult_t stp_cn_iallgather(void *coll_comm, void *send_data, int nrecv_parts,
                               ncclNetSGE_v11_t *recv_parts, size_t bytes_per_rank,
                               size_t window_offset, size_t window_bytes, void *send_mhandle,
                               void **request)
{
    stp_cn_comm_t *c = coll_comm;

    OPS_CHECK(comm_ok(c) && request != NULL, "iallgather: %s",
              request == NULL ? "NULL request" : "not a Strata collComm");
    *request = NULL;
    if (c->failed != STRATA_OK)
        return stp_status_to_nccl(c->failed);
    OPS_CHECK(nrecv_parts == 1 && recv_parts != NULL, "iallgather: %d receive parts (NCCL"
              " passes exactly one)", nrecv_parts);
    OPS_CHECK(ops_window_ok(c, bytes_per_rank, window_offset, window_bytes) &&
              recv_parts[0].size >= window_bytes, "iallgather: window %zu+%zu outside %d x %zu"
              " bytes, or a receive part of %zu bytes", window_offset, window_bytes, c->nranks,
              bytes_per_rank, recv_parts[0].size);
    size_t mine = ops_own_block(c, bytes_per_rank, window_offset, window_bytes);
    if (stp_cn_mr_check(c, send_mhandle, send_data, mine, "iallgather send") != STRATA_OK ||
        stp_cn_mr_check(c, recv_parts[0].mhandle, recv_parts[0].address, window_bytes,
                        "iallgather receive") != STRATA_OK)
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    stp_cn_req_t *q = stp_cn_req_alloc(c);
    if (q == NULL)
        return ncclSuccess;
    q->coll = STA_COLL_ALLGATHER;
    q->kind = stp_cn_select(c, STA_COLL_ALLGATHER, window_bytes);
    q->dtype = STRATA_UINT8;
    q->bytes = window_bytes;
    q->bytes_per_rank = bytes_per_rank;
    q->window_off = window_offset;
    q->src = send_data;
    q->dst = recv_parts[0].address;
    q->src_mr = send_mhandle;
    q->dst_mr = recv_parts[0].mhandle;
    return ops_submit(c, q, request);
}

ncclResult_t stp_cn_ireducescatter(void *coll_comm, int nsend_parts, ncclNetSGE_v11_t *send_parts,
                                   void *recv_data, size_t bytes_per_rank, size_t window_offset,
                                   size_t window_bytes, ncclDataType_t data_type,
                                   ncclRedOp_t red_op, void *recv_mhandle, void **request)
{
    stp_cn_comm_t *c = coll_comm;

    OPS_CHECK(comm_ok(c) && request != NULL, "ireducescatter: %s",
              request == NULL ? "NULL request" : "not a Strata collComm");
    *request = NULL;
    if (c->failed != STRATA_OK)
        return stp_status_to_nccl(c->failed);
    OPS_CHECK(nsend_parts == 1 && send_parts != NULL, "ireducescatter: %d send parts (NCCL"
              " passes exactly one)", nsend_parts);
    OPS_CHECK((unsigned)data_type < ncclNumTypes && (unsigned)red_op < OPS_NUM_REDUCE_OPS,
              "ireducescatter: type %d / operator %d not supported", (int)data_type,
              (int)red_op);
    strata_dtype_t dt = ops_dtype[data_type];
    size_t esize = strata_dtype_size(dt);
    OPS_CHECK(ops_window_ok(c, bytes_per_rank, window_offset, window_bytes) &&
              send_parts[0].size >= window_bytes, "ireducescatter: window %zu+%zu outside %d x"
              " %zu bytes, or a send part of %zu bytes", window_offset, window_bytes,
              c->nranks, bytes_per_rank, send_parts[0].size);
    OPS_CHECK(bytes_per_rank % esize == 0 && window_offset % esize == 0 &&
              window_bytes % esize == 0, "ireducescatter: window %zu+%zu or %zu bytes per rank"
              " is not in whole %zu-byte elements", window_offset, window_bytes, bytes_per_rank,
              esize);
    size_t mine = ops_own_block(c, bytes_per_rank, window_offset, window_bytes);
    if (stp_cn_mr_check(c, send_parts[0].mhandle, send_parts[0].address, window_bytes,
                        "ireducescatter send") != STRATA_OK ||
        stp_cn_mr_check(c, recv_mhandle, recv_data, mine, "ireducescatter receive") !=
            STRATA_OK)
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    stp_cn_req_t *q = stp_cn_req_alloc(c);
    if (q == NULL)
        return ncclSuccess;
    q->coll = STA_COLL_REDUCE_SCATTER;
    q->kind = stp_cn_select(c, STA_COLL_REDUCE_SCATTER, window_bytes);
    q->dtype = dt;
    q->op = ops_op[red_op];
    q->bytes = window_bytes;
    q->bytes_per_rank = bytes_per_rank;
    q->window_off = window_offset;
    q->src = send_parts[0].address;
    q->dst = recv_data;
    q->src_mr = send_parts[0].mhandle;
    q->dst_mr = recv_mhandle;
    return ops_submit(c, q, request);
}

ncclResult_t stp_cn_iflush(void *coll_comm, void *data, int size, void *mhandle,
                           void **request)
{
    stp_cn_comm_t *c = coll_comm;

    OPS_CHECK(comm_ok(c) && request != NULL && size >= 0, "iflush: bad collComm, request or"
              " size %d", size);
    *request = NULL;       /* NULL is "done": host memory the CPU wrote needs no flush */
    if (stp_cn_mr_check(c, mhandle, data, (size_t)size, "iflush") != STRATA_OK)
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    const stp_cn_mr_t *mr = mhandle;
    if (mr->type == NCCL_PTR_HOST || size == 0)
        return ncclSuccess;
    /* GPU memory the self link wrote (collnet_stage.c's OUT phase): the transport's flush
     * (ib: a loopback RDMA read) on that link. Untested here: no GPU. */
    stp_cn_req_t *q = stp_cn_req_alloc(c);
    if (q == NULL) {       /* a NULL flush request means "done": no back-pressure here */
        STU_WARN("collnet: iflush: all %d requests are in use", STP_CN_MAX_REQUESTS);
        return stp_status_to_nccl(STRATA_ERR_NO_RESOURCE);
    }
    stt_comm_t *self = c->links[c->nlinks].recv;
    void *mh = mr->mh[2 * c->nlinks + 1];
    strata_status_t status = stt_iflush(self, 1, &data, &size, &mh, &q->flush);
    if (status != STRATA_OK || q->flush == NULL) {
        q->state = STP_CN_REQ_FREE;
        return stp_status_to_nccl(status);
    }
    q->state = STP_CN_REQ_FLUSH;
    *request = q;
    return ncclSuccess;
}

ncclResult_t stp_cn_test(void *request, int *done, int *size)
{
    stp_cn_req_t *q = request;

    OPS_CHECK(q != NULL && done != NULL && q->magic == STP_CN_REQ_MAGIC &&
              q->state != STP_CN_REQ_FREE && comm_ok(q->comm), "test: %s",
              done == NULL ? "NULL done" : "not a live Strata CollNet request");
    *done = 0;
    if (q->state == STP_CN_REQ_FLUSH) {
        strata_status_t status = stt_test(q->flush, done, NULL);
        if (status != STRATA_OK || *done)
            q->state = STP_CN_REQ_FREE;
        if (*done && size != NULL)
            *size = 0;
        return stp_status_to_nccl(status);
    }
    strata_status_t status = stp_cn_exec_progress(q->comm);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    if (q->state != STP_CN_REQ_DONE) {
        stp_cn_exec_idle(q->comm);      /* returns at once unless it polls (collnet_idle.c) */
        return ncclSuccess;
    }
    *done = 1;
    if (size != NULL)
        *size = (int)STU_MIN(q->bytes, (size_t)INT_MAX);
    q->state = STP_CN_REQ_FREE;
    return ncclSuccess;
}

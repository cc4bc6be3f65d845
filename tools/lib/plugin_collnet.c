/*
 * The CollNet tables of a loaded plugin (ncclCollNetPlugin_v11 and _v12), driven
 * as NCCL's proxy drives them; see tools/lib/plugin_collnet.h.
 */
#include "tools/lib/plugin_collnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/net_v12.h"
#include "tools/lib/tool_util.h"

/* The entry points the two versions share, with v11's types (v12's are the same types). */
typedef struct stb_collnet_ops {
    ncclResult_t (*init)(void **, uint64_t, ncclDebugLogger_t);
    ncclResult_t (*devices)(int *);
    ncclResult_t (*listen)(void *, int, void *, void **);
    ncclResult_t (*connect)(void **, int, int, void *, void **);
    ncclResult_t (*reduceSupport)(ncclDataType_t, ncclRedOp_t, int *);
    ncclResult_t (*regMr)(void *, void *, size_t, int, void **);
    ncclResult_t (*deregMr)(void *, void *);
    ncclResult_t (*iallreduce)(void *, void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               void *, void *, void **);
    ncclResult_t (*iallgather)(void *, void *, int, ncclNetSGE_v11_t *, size_t, size_t, size_t,
                               void *, void **);
    ncclResult_t (*ireducescatter)(void *, int, ncclNetSGE_v11_t *, void *, size_t, size_t,
                                   size_t, ncclDataType_t, ncclRedOp_t, void *, void **);
    ncclResult_t (*iflush)(void *, void *, int, void *, void **);
    ncclResult_t (*test)(void *, int *, int *);
    ncclResult_t (*closeColl)(void *);
    ncclResult_t (*closeListen)(void *);
    ncclResult_t (*finalize)(void *);
} stb_collnet_ops_t;

struct stb_collnet {
    stb_plugin_t *plugin;
    int version;
    stb_collnet_ops_t call;
    const ncclCollNet_v11_t *v11;
    const ncclCollNet_v12_t *v12;
    void *ctx;
};

#define STB_COLLNET_OPS_FROM(t)                                                               \
    {.init = (t)->init, .devices = (t)->devices, .listen = (t)->listen,                       \
     .connect = (t)->connect, .reduceSupport = (t)->reduceSupport, .regMr = (t)->regMr,       \
     .deregMr = (t)->deregMr, .iallreduce = (t)->iallreduce, .iallgather = (t)->iallgather,   \
     .ireducescatter = (t)->ireducescatter, .iflush = (t)->iflush, .test = (t)->test,         \
     .closeColl = (t)->closeColl, .closeListen = (t)->closeListen,                            \
     .finalize = (t)->finalize}

strata_status_t stb_collnet_open(stb_plugin_t *plugin, int version, uint64_t comm_id,
                                 stb_collnet_t **cn_p)
{
    char sym[64];
    stb_collnet_t *cn = calloc(1, sizeof(*cn));

    if (cn == NULL)
        return STRATA_ERR_NO_MEMORY;
    snprintf(sym, sizeof(sym), "ncclCollNetPlugin_v%d", version);
    const void *table = (version == 11 || version == 12) ? stb_plugin_dlsym(plugin, sym) : NULL;
    if (table == NULL) {
        stb_log_err("%s exports no %s", stb_plugin_path(plugin), sym);
        free(cn);
        return STRATA_ERR_NOT_FOUND;
    }
    cn->plugin = plugin;
    cn->version = version;
    if (version == 12) {
        cn->v12 = table;
        cn->call = (stb_collnet_ops_t)STB_COLLNET_OPS_FROM(cn->v12);
    } else {
        cn->v11 = table;
        cn->call = (stb_collnet_ops_t)STB_COLLNET_OPS_FROM(cn->v11);
    }
    strata_status_t status = stb_plugin_check(cn->call.init(&cn->ctx, comm_id, stb_plugin_logger()),
                                           "collnet init");
    if (status != STRATA_OK) {
        cn->call.finalize(cn->ctx);
        free(cn);
        return status;
    }
    *cn_p = cn;
    return STRATA_OK;
}

void stb_collnet_close(stb_collnet_t *cn)
{
    if (cn == NULL)
        return;
    stb_plugin_check(cn->call.finalize(cn->ctx), "collnet finalize");
    free(cn);
}

strata_status_t stb_collnet_devices(stb_collnet_t *cn, int *ndev_p)
{
    return stb_plugin_check(cn->call.devices(ndev_p), "collnet devices");
}

strata_status_t stb_collnet_props_get(stb_collnet_t *cn, int dev, stb_plugin_props_t *props,
                                      int *rail_p, int *plane_p)
{
    ncclResult_t res;

    if (cn->v12 != NULL) {
        ncclNetProperties_v12_t p;
        memset(&p, 0x5a, sizeof(p));     /* a member the plugin forgot shows */
        res = cn->v12->getProperties(dev, &p);
        if (res == ncclSuccess)
            stb_plugin_props_v12(props, &p);
    } else {
        ncclNetProperties_v11_t p;
        memset(&p, 0x5a, sizeof(p));
        res = cn->v11->getProperties(dev, &p);
        if (res == ncclSuccess)
            stb_plugin_props_v11(props, &p);
    }
    strata_status_t status = stb_plugin_check(res, "collnet getProperties");
    if (status != STRATA_OK)
        return status;
    *rail_p = props->rail_id;
    *plane_p = props->plane_id;
    return STRATA_OK;
}

strata_status_t stb_collnet_listen(stb_collnet_t *cn, int dev, void *handle, void **lcomm_p)
{
    return stb_plugin_check(cn->call.listen(cn->ctx, dev, handle, lcomm_p), "collnet listen");
}

strata_status_t stb_collnet_connect(stb_collnet_t *cn, void *const *handles, int nranks,
                                    int rank, void *lcomm, void **ccomm_p)
{
    return stb_plugin_check(cn->call.connect((void **)handles, nranks, rank, lcomm, ccomm_p),
                         "collnet connect");
}

strata_status_t stb_collnet_reduce_support(stb_collnet_t *cn, int nccl_type, int nccl_op,
                                           int *supported_p)
{
    return stb_plugin_check(cn->call.reduceSupport((ncclDataType_t)nccl_type, (ncclRedOp_t)nccl_op,
                                               supported_p), "collnet reduceSupport");
}

int stb_collnet_nccl_type(strata_dtype_t dtype)
{
    static const int map[STRATA_DTYPE_COUNT] = {
        [STRATA_INT8] = ncclInt8, [STRATA_UINT8] = ncclUint8, [STRATA_INT32] = ncclInt32,
        [STRATA_UINT32] = ncclUint32, [STRATA_INT64] = ncclInt64, [STRATA_UINT64] = ncclUint64,
        [STRATA_FP16] = ncclFloat16, [STRATA_BF16] = ncclBfloat16, [STRATA_FP32] = ncclFloat32,
        [STRATA_FP64] = ncclFloat64, [STRATA_FP8_E4M3] = ncclFloat8e4m3,
        [STRATA_FP8_E5M2] = ncclFloat8e5m2,
    };
    return (unsigned)dtype < STRATA_DTYPE_COUNT ? map[dtype] : -1;
}

int stb_collnet_nccl_op(strata_op_t op)
{
    static const int map[STRATA_OP_COUNT] = {
        [STRATA_SUM] = ncclSum, [STRATA_PROD] = ncclProd, [STRATA_MIN] = ncclMin,
        [STRATA_MAX] = ncclMax, [STRATA_AVG] = ncclAvg,
    };
    return (unsigned)op < STRATA_OP_COUNT ? map[op] : -1;
}

strata_status_t stb_collnet_reg(stb_collnet_t *cn, void *ccomm, void *buf, size_t size,
                                void **mhandle_p)
{
    return stb_plugin_check(cn->call.regMr(ccomm, buf, size, NCCL_PTR_HOST, mhandle_p),
                         "collnet regMr");
}

strata_status_t stb_collnet_dereg(stb_collnet_t *cn, void *ccomm, void *mhandle)
{
    return stb_plugin_check(cn->call.deregMr(ccomm, mhandle), "collnet deregMr");
}

strata_status_t stb_collnet_iallreduce(stb_collnet_t *cn, void *ccomm, void *send, void *recv,
                                       size_t count, strata_dtype_t dtype, strata_op_t op,
                                       void *send_mh, void *recv_mh, void **req_p)
{
    return stb_plugin_check(cn->call.iallreduce(ccomm, send, recv, count,
                                            (ncclDataType_t)stb_collnet_nccl_type(dtype),
                                            (ncclRedOp_t)stb_collnet_nccl_op(op), send_mh,
                                            recv_mh, req_p), "collnet iallreduce");
}

strata_status_t stb_collnet_iallgather(stb_collnet_t *cn, void *ccomm, void *send, void *send_mh,
                                       void *recv, void *recv_mh, size_t bytes_per_rank,
                                       size_t window_off, size_t window_bytes, void **req_p)
{
    ncclNetSGE_v11_t part = {.mhandle = recv_mh, .address = recv, .size = window_bytes};

    return stb_plugin_check(cn->call.iallgather(ccomm, send, 1, &part, bytes_per_rank, window_off,
                                            window_bytes, send_mh, req_p), "collnet iallgather");
}

strata_status_t stb_collnet_ireducescatter(stb_collnet_t *cn, void *ccomm, void *send,
                                           void *send_mh, void *recv, void *recv_mh,
                                           size_t bytes_per_rank, size_t window_off,
                                           size_t window_bytes, strata_dtype_t dtype,
                                           strata_op_t op, void **req_p)
{
    ncclNetSGE_v11_t part = {.mhandle = send_mh, .address = send, .size = window_bytes};

    return stb_plugin_check(cn->call.ireducescatter(ccomm, 1, &part, recv, bytes_per_rank,
                                                window_off, window_bytes,
                                                (ncclDataType_t)stb_collnet_nccl_type(dtype),
                                                (ncclRedOp_t)stb_collnet_nccl_op(op), recv_mh,
                                                req_p), "collnet ireducescatter");
}

strata_status_t stb_collnet_iflush(stb_collnet_t *cn, void *ccomm, void *data, int size,
                                   void *mh, void **req_p)
{
    return stb_plugin_check(cn->call.iflush(ccomm, data, size, mh, req_p), "collnet iflush");
}

strata_status_t stb_collnet_test(stb_collnet_t *cn, void *req, int *done_p, int *size_p)
{
    return stb_plugin_check(cn->call.test(req, done_p, size_p), "collnet test");
}

void stb_collnet_close_coll(stb_collnet_t *cn, void *ccomm)
{
    if (ccomm != NULL)
        stb_plugin_check(cn->call.closeColl(ccomm), "collnet closeColl");
}

void stb_collnet_close_listen(stb_collnet_t *cn, void *lcomm)
{
    if (lcomm != NULL)
        stb_plugin_check(cn->call.closeListen(lcomm), "collnet closeListen");
}

/*
 * The NCCL net plugin ABI, version 11 (first in NCCL 2.28): the version
 * Strata implements natively (plugin/net_v11.c). Older versions are
 * adapters over this one (plugin/net_v10.c ... net_v6.c).
 *
 * What v11 changed from v10: init runs once per communicator and returns a
 * context, which listen and connect receive; the traffic class moved from
 * connect into init's comm config; finalize(ctx) and setNetAttr(ctx) were
 * added; properties gained maxMultiRequestSize; CollNet gained a context too.
 *
 * The contract of each entry point is written out here once; the older
 * headers only say how they differ.
 */
#ifndef STRATA_NCCL_NET_V11_H
#define STRATA_NCCL_NET_V11_H

#include "nccl/common.h"
#include "nccl/net_device.h"

/* The physical devices a (virtual) NIC is made of. A physical NIC lists itself. */
typedef struct {
    int ndevs;
    int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_v11_t;

/* Per-communicator settings passed to init. */
typedef struct {
    int trafficClass;   /* plugin-defined; NCCL_NET_TRAFFIC_CLASS_UNDEF if unset */
} ncclNetCommConfig_v11_t;

/*
 * One device as getProperties describes it. The string pointers stay owned by
 * the plugin and must remain valid while the plugin is loaded.
 */
typedef struct {
    char *name;                     /* for logs; fused NICs are often "a+b" */
    char *pciPath;                  /* sysfs path of the PCI device, NULL if virtual */
    uint64_t guid;                  /* equal guids mean one physical port */
    int ptrSupport;                 /* NCCL_PTR_* mask regMr accepts */
    int regIsGlobal;                /* 1: registrations are valid on every comm */
    int forceFlush;                 /* 1: NCCL must iflush every GPU receive */
    int speed;                      /* Mbit/s */
    int port;
    float latency;                  /* microseconds, added to NCCL's network latency */
    int maxComms;                   /* comms the device can hold open */
    int maxRecvs;                   /* buffers one irecv may group */
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    ncclNetVDeviceProps_v11_t vProps;
    size_t maxP2pBytes;             /* largest isend/irecv; NCCL splits above it */
    size_t maxCollBytes;            /* largest CollNet operation */
    int maxMultiRequestSize;        /* requests one multi-request may carry; 1 = none */
} ncclNetProperties_v11_t;

/*
 * Hints NCCL may give a context through setNetAttr: how many peers and flows
 * per peer the coming operations use, and which collective, algorithm and
 * protocol they belong to. Every field may be NCCL_NET_ATTR_UNDEF.
 */
#define NCCL_NET_ATTR_UNDEF (-1)

typedef struct {
    int32_t maxConcurrentPeers;
    int32_t minConcurrentPeers;
    int32_t maxFlowsPerPeer;
    int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

typedef struct {
    ncclNetCommAttr_v11_t sendCommAttr;
    ncclNetCommAttr_v11_t recvCommAttr;
    uint32_t op;
    uint32_t algo;
    uint32_t proto;
} ncclNetAttr_v11_t;

/* An initialiser that leaves every attribute undefined. */
#define NCCL_NET_ATTR_INIT                                                              \
    {                                                                                   \
        .sendCommAttr = { NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, \
                          NCCL_NET_ATTR_UNDEF },                                        \
        .recvCommAttr = { NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, \
                          NCCL_NET_ATTR_UNDEF },                                        \
        .op = (uint32_t)NCCL_NET_ATTR_UNDEF,                                            \
        .algo = (uint32_t)NCCL_NET_ATTR_UNDEF,                                          \
        .proto = (uint32_t)NCCL_NET_ATTR_UNDEF,                                         \
    }

/*
 * The point-to-point network. NCCL looks the table up as `ncclNetPlugin_v11`.
 *
 * Nothing blocks. connect and accept succeed with a NULL comm until the
 * connection is ready and are then called again with the same arguments.
 * isend/irecv/iflush succeed with a NULL *request when they cannot start the
 * operation now; test() drives progress. Every comm is used by one NCCL
 * thread at a time, but different comms are used from different threads.
 */
typedef struct {
    /* Matched case-insensitively against NCCL_NET; also shown in NCCL's logs. */
    const char *name;

    /*
     * Called once per communicator, with that communicator's id and config.
     * Returns in *ctx the context later passed to listen/connect/finalize.
     * logFunction/profFunction may be used until the plugin is unloaded.
     */
    ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
                         ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
    /* Number of devices. 0 makes NCCL skip this plugin. */
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
    /*
     * Starts listening on dev. Fills `handle` (NCCL_NET_HANDLE_MAXSIZE bytes),
     * which NCCL carries to the peer out of band. *listenComm is non-NULL on
     * success.
     */
    ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
    /*
     * Connects to the peer whose listen produced `handle`. *sendComm stays
     * NULL until ready. If NCCL stores a non-NULL pointer in *sendDevComm it
     * asks for device offload and the plugin fills that handle.
     */
    ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
                            ncclNetDeviceHandle_v11_t **sendDevComm);
    /* The receiving end of connect; *recvComm stays NULL until ready. */
    ncclResult_t (*accept)(void *listenComm, void **recvComm,
                           ncclNetDeviceHandle_v11_t **recvDevComm);
    /*
     * Registers memory on a send or receive comm (or on every comm when
     * regIsGlobal). `type` is one NCCL_PTR_* value.
     */
    ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
    /* Same, for memory exported as a DMA-BUF file descriptor. */
    ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *comm, void *mhandle);
    /*
     * Starts sending `size` bytes. `tag` picks the receive buffer within a
     * grouped receive; `phandle` is the profiler handle of the operation.
     */
    ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                          void *phandle, void **request);
    /*
     * Posts one receive of n buffers (n <= maxRecvs). Sends match receives in
     * posting order; a buffer may be larger than what arrives. *request may
     * hold an NCCL_NET_* hint on entry and must be overwritten.
     */
    ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                          void **mhandles, void **phandles, void **request);
    /* Makes data received into GPU memory visible to the GPU. */
    ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                           void **request);
    /*
     * Progresses and tests a request. When *done is set, the request is freed
     * and, if sizes is non-NULL, sizes[i] holds the bytes sent or received.
     */
    ncclResult_t (*test)(void *request, int *done, int *sizes);
    ncclResult_t (*closeSend)(void *sendComm);
    ncclResult_t (*closeRecv)(void *recvComm);
    ncclResult_t (*closeListen)(void *listenComm);
    /* Device offload only (NULL for host plugins): device view of a registration. */
    ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
    /* Device offload only (NULL for host plugins): the GPU consumed a receive. */
    ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
    /*
     * Fuses the physical devices in props into a new virtual device and
     * returns its index in *d. NULL: the plugin does not fuse NICs.
     */
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v11_t *props);
    /*
     * Ends a context from init. Mandatory: NCCL calls it without a NULL check,
     * and also after a failed init, so it must accept a NULL or partial ctx.
     */
    ncclResult_t (*finalize)(void *ctx);
    /* Optional (may be NULL): usage hints for the context. */
    ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v11_t *netAttr);
} ncclNet_v11_t;

/* One piece of a scattered CollNet buffer. */
typedef struct {
    void *mhandle;
    void *address;
    size_t size;
} ncclNetSGE_v11_t;

/*
 * The collective network (in-network reduction, e.g. SHARP). NCCL looks the
 * table up as `ncclCollNetPlugin_v11`; it is optional, and devices() returning
 * 0 disables it while keeping the net plugin.
 */
typedef struct {
    const char *name;
    ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
    ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
    /* Builds the group from every rank's listen handle; `rank` is ours. */
    ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
                            void **collComm);
    /* *supported = 1 if the network reduces this type with this operator. */
    ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
    ncclResult_t (*regMr)(void *collComm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
                                uint64_t offset, int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *collComm, void *mhandle);
    ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, size_t count,
                               ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
                               void *recvMhandle, void **request);
    /*
     * Gathers bytesPerRank from every rank into recvParts; only the window
     * [windowOffset, windowOffset + windowBytes) of the result is produced.
     */
    ncclResult_t (*iallgather)(void *collComm, void *sendData, int nRecvParts,
                               ncclNetSGE_v11_t *recvParts, size_t bytesPerRank,
                               size_t windowOffset, size_t windowBytes, void *sendMhandle,
                               void **request);
    /* Reduces sendParts across ranks and scatters; window as in iallgather. */
    ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v11_t *sendParts,
                                   void *recvData, size_t bytesPerRank, size_t windowOffset,
                                   size_t windowBytes, ncclDataType_t dataType,
                                   ncclRedOp_t redOp, void *recvMhandle, void **request);
    ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
    ncclResult_t (*test)(void *request, int *done, int *size);
    ncclResult_t (*closeColl)(void *collComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v11_t *props);
    ncclResult_t (*finalize)(void *ctx);
} ncclCollNet_v11_t;

STP_ABI_CHECK_SIZE(ncclNetVDeviceProps_v11_t, 20);
STP_ABI_CHECK_OFFSET(ncclNetVDeviceProps_v11_t, devs, 4);
STP_ABI_CHECK_SIZE(ncclNetCommConfig_v11_t, 4);

STP_ABI_CHECK_SIZE(ncclNetProperties_v11_t, 112);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, pciPath, 8);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, guid, 16);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, regIsGlobal, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, forceFlush, 32);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, speed, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, port, 40);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, latency, 44);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, maxComms, 48);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, maxRecvs, 52);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, netDeviceType, 56);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, netDeviceVersion, 60);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, vProps, 64);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, maxP2pBytes, 88);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, maxCollBytes, 96);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v11_t, maxMultiRequestSize, 104);

STP_ABI_CHECK_SIZE(ncclNetCommAttr_v11_t, 16);
STP_ABI_CHECK_OFFSET(ncclNetCommAttr_v11_t, minConcurrentPeers, 4);
STP_ABI_CHECK_OFFSET(ncclNetCommAttr_v11_t, maxFlowsPerPeer, 8);
STP_ABI_CHECK_OFFSET(ncclNetCommAttr_v11_t, minFlowsPerPeer, 12);
STP_ABI_CHECK_SIZE(ncclNetAttr_v11_t, 44);
STP_ABI_CHECK_OFFSET(ncclNetAttr_v11_t, recvCommAttr, 16);
STP_ABI_CHECK_OFFSET(ncclNetAttr_v11_t, op, 32);
STP_ABI_CHECK_OFFSET(ncclNetAttr_v11_t, algo, 36);
STP_ABI_CHECK_OFFSET(ncclNetAttr_v11_t, proto, 40);

STP_ABI_CHECK_SIZE(ncclNetSGE_v11_t, 24);
STP_ABI_CHECK_OFFSET(ncclNetSGE_v11_t, size, 16);

/* The tables are arrays of pointers: a name and 21 (net) or 18 (CollNet) entries. */
STP_ABI_CHECK_SIZE(ncclNet_v11_t, 176);
STP_ABI_CHECK_OFFSET(ncclNet_v11_t, getProperties, 24);
STP_ABI_CHECK_OFFSET(ncclNet_v11_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v11_t, makeVDevice, 152);
STP_ABI_CHECK_OFFSET(ncclNet_v11_t, finalize, 160);
STP_ABI_CHECK_OFFSET(ncclNet_v11_t, setNetAttr, 168);
STP_ABI_CHECK_SIZE(ncclCollNet_v11_t, 152);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, connect, 40);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, reduceSupport, 48);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, iallreduce, 80);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, iallgather, 88);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, iflush, 104);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, test, 112);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, closeColl, 120);
STP_ABI_CHECK_OFFSET(ncclCollNet_v11_t, finalize, 144);

#endif /* STRATA_NCCL_NET_V11_H */

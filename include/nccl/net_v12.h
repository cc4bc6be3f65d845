/*
 * The NCCL net plugin ABI, version 12 (first in NCCL 2.30; 2.28 does not look for it).
 *
 * Against v11 (include/nccl/net_v11.h, which documents each entry point): the properties end
 * with railId and planeId, and a virtual NIC may fuse up to 8 physical devices instead of 4.
 * Every entry point keeps v11's signature with the v12 types; the CollNet table is v11's.
 *
 * railId: the rail the device is on. NCCL 2.30's graph search keeps a ring on one rail when
 * both ends have one (crossNic = 0), and NCCL_NET_MERGE_POLICY=RAIL fuses only NICs of one
 * rail. planeId: the network plane; NCCL never connects across planes. Either may be
 * NCCL_NET_ID_UNDEF. NCCL 2.30 shims v11 and older plugins with both undefined.
 */
#ifndef STRATA_NCCL_NET_V12_H
#define STRATA_NCCL_NET_V12_H

#include "nccl/common.h"
#include "nccl/net_device.h"
#include "nccl/net_v11.h"

/* Physical devices one virtual NIC may fuse from v12 on. */
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8

/* railId / planeId of a device that has none. */
#define NCCL_NET_ID_UNDEF (-1)

typedef struct {
    int ndevs;
    int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

typedef ncclNetCommConfig_v11_t ncclNetCommConfig_v12_t;
typedef ncclNetDeviceHandle_v11_t ncclNetDeviceHandle_v12_t;
typedef ncclNetCommAttr_v11_t ncclNetCommAttr_v12_t;
typedef ncclNetAttr_v11_t ncclNetAttr_v12_t;
typedef ncclNetSGE_v11_t ncclNetSGE_v12_t;

/* v11's properties with the wider vProps, then the rail and the plane. */
typedef struct {
    char *name;
    char *pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    ncclNetVDeviceProps_v12_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
    int maxMultiRequestSize;
    int16_t railId;                 /* NCCL_NET_ID_UNDEF: no rail */
    int16_t planeId;                /* NCCL_NET_ID_UNDEF: no plane */
} ncclNetProperties_v12_t;

/* The point-to-point network, looked up as `ncclNetPlugin_v12`: v11's entry points. */
typedef struct {
    const char *name;
    ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v12_t *config,
                         ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
    ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
                            ncclNetDeviceHandle_v12_t **sendDevComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm,
                           ncclNetDeviceHandle_v12_t **recvDevComm);
    ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *comm, void *mhandle);
    ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                          void *phandle, void **request);
    ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                          void **mhandles, void **phandles, void **request);
    ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                           void **request);
    ncclResult_t (*test)(void *request, int *done, int *sizes);
    ncclResult_t (*closeSend)(void *sendComm);
    ncclResult_t (*closeRecv)(void *recvComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
    ncclResult_t (*finalize)(void *ctx);
    ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v12_t *netAttr);
} ncclNet_v12_t;

/*
 * The collective network, looked up as `ncclCollNetPlugin_v12`: v11's entry points with the
 * v12 properties. How NCCL drives each call is written at ncclCollNet_v11_t.
 */
typedef struct {
    const char *name;
    ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
    ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
                            void **collComm);
    ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
    ncclResult_t (*regMr)(void *collComm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
                                uint64_t offset, int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *collComm, void *mhandle);
    ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, size_t count,
                               ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
                               void *recvMhandle, void **request);
    ncclResult_t (*iallgather)(void *collComm, void *sendData, int nRecvParts,
                               ncclNetSGE_v12_t *recvParts, size_t bytesPerRank,
                               size_t windowOffset, size_t windowBytes, void *sendMhandle,
                               void **request);
    ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v12_t *sendParts,
                                   void *recvData, size_t bytesPerRank, size_t windowOffset,
                                   size_t windowBytes, ncclDataType_t dataType,
                                   ncclRedOp_t redOp, void *recvMhandle, void **request);
    ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
    ncclResult_t (*test)(void *request, int *done, int *size);
    ncclResult_t (*closeColl)(void *collComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
    ncclResult_t (*finalize)(void *ctx);
} ncclCollNet_v12_t;

STP_ABI_CHECK_SIZE(ncclNetVDeviceProps_v12_t, 36);
STP_ABI_CHECK_OFFSET(ncclNetVDeviceProps_v12_t, devs, 4);

/* v11's offsets up to vProps; from there on they move by the 16 more bytes of devs[]. */
STP_ABI_CHECK_SIZE(ncclNetProperties_v12_t, 128);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, pciPath, 8);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, guid, 16);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, regIsGlobal, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, forceFlush, 32);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, speed, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, port, 40);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, latency, 44);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, maxComms, 48);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, maxRecvs, 52);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, netDeviceType, 56);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, netDeviceVersion, 60);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, vProps, 64);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, maxP2pBytes, 104);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, maxCollBytes, 112);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, railId, 124);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v12_t, planeId, 126);
_Static_assert(sizeof(((ncclNetProperties_v12_t *)0)->railId) == 2, "railId is an int16_t");

/* The tables: a name and 21 (net) or 18 (CollNet) entries, as v11. */
STP_ABI_CHECK_SIZE(ncclNet_v12_t, 176);
STP_ABI_CHECK_OFFSET(ncclNet_v12_t, getProperties, 24);
STP_ABI_CHECK_OFFSET(ncclNet_v12_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v12_t, makeVDevice, 152);
STP_ABI_CHECK_OFFSET(ncclNet_v12_t, setNetAttr, 168);
STP_ABI_CHECK_SIZE(ncclCollNet_v12_t, 152);
STP_ABI_CHECK_OFFSET(ncclCollNet_v12_t, reduceSupport, 48);
STP_ABI_CHECK_OFFSET(ncclCollNet_v12_t, iallreduce, 80);
STP_ABI_CHECK_OFFSET(ncclCollNet_v12_t, iallgather, 88);
STP_ABI_CHECK_OFFSET(ncclCollNet_v12_t, test, 112);
STP_ABI_CHECK_OFFSET(ncclCollNet_v12_t, finalize, 144);

#endif /* STRATA_NCCL_NET_V12_H */

/*
 * The NCCL net plugin ABI, version 9 (first in NCCL 2.24).
 *
 * Against v10 (include/nccl/net_v10.h): init takes no profiler callback,
 * connect takes no comm config, and isend/irecv take no profiler handles.
 * v9 is the first version with size_t transfer sizes, forceFlush, virtual
 * NICs (vProps, makeVDevice) and the maxP2pBytes/maxCollBytes limits.
 */
#ifndef STRATA_NCCL_NET_V9_H
#define STRATA_NCCL_NET_V9_H

#include "nccl/common.h"
#include "nccl/net_device.h"

typedef struct {
    int ndevs;
    int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_v9_t;

/* The same members as v10's properties. */
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
    ncclNetVDeviceProps_v9_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
} ncclNetProperties_v9_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                            ncclNetDeviceHandle_v9_t **sendDevComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm,
                           ncclNetDeviceHandle_v9_t **recvDevComm);
    ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *comm, void *mhandle);
    ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                          void **request);
    ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                          void **mhandles, void **request);
    ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                           void **request);
    ncclResult_t (*test)(void *request, int *done, int *sizes);
    ncclResult_t (*closeSend)(void *sendComm);
    ncclResult_t (*closeRecv)(void *recvComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclNet_v9_t;

typedef struct {
    void *mhandle;
    void *address;
    size_t size;            /* uint32_t in v8 */
} ncclNetSGE_v9_t;

/* As v10's CollNet; iallreduce's count became size_t in v9. */
typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
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
                               ncclNetSGE_v9_t *recvParts, size_t bytesPerRank,
                               size_t windowOffset, size_t windowBytes, void *sendMhandle,
                               void **request);
    ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v9_t *sendParts,
                                   void *recvData, size_t bytesPerRank, size_t windowOffset,
                                   size_t windowBytes, ncclDataType_t dataType,
                                   ncclRedOp_t redOp, void *recvMhandle, void **request);
    ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
    ncclResult_t (*test)(void *request, int *done, int *size);
    ncclResult_t (*closeColl)(void *collComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v9_t *props);
} ncclCollNet_v9_t;

STP_ABI_CHECK_SIZE(ncclNetVDeviceProps_v9_t, 20);

STP_ABI_CHECK_SIZE(ncclNetProperties_v9_t, 104);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, regIsGlobal, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, forceFlush, 32);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, speed, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, latency, 44);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, maxRecvs, 52);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, netDeviceType, 56);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, netDeviceVersion, 60);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, vProps, 64);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, maxP2pBytes, 88);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v9_t, maxCollBytes, 96);

STP_ABI_CHECK_SIZE(ncclNetSGE_v9_t, 24);
STP_ABI_CHECK_SIZE(ncclNet_v9_t, 160);
STP_ABI_CHECK_OFFSET(ncclNet_v9_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v9_t, makeVDevice, 152);
STP_ABI_CHECK_SIZE(ncclCollNet_v9_t, 144);
STP_ABI_CHECK_OFFSET(ncclCollNet_v9_t, makeVDevice, 136);

#endif /* STRATA_NCCL_NET_V9_H */

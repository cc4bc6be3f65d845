/*
 * The NCCL net plugin ABI, version 8 (first in NCCL 2.20).
 *
 * Against v9 (include/nccl/net_v9.h): isend/irecv sizes are int, there is no
 * forceFlush, no virtual NIC (vProps, makeVDevice) and no maxP2pBytes /
 * maxCollBytes: NCCL assumes MAX_NET_SIZE and MAX_COLLNET_SIZE. regMr already
 * takes a size_t. v8 introduced regIsGlobal and CollNet's iallgather /
 * ireducescatter.
 */
#ifndef STRATA_NCCL_NET_V8_H
#define STRATA_NCCL_NET_V8_H

#include "nccl/common.h"
#include "nccl/net_device.h"

/* regIsGlobal sits between ptrSupport and speed. */
typedef struct {
    char *name;
    char *pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                            ncclNetDeviceHandle_v8_t **sendDevComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm,
                           ncclNetDeviceHandle_v8_t **recvDevComm);
    ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *comm, void *mhandle);
    ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
                          void **request);
    ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
                          void **mhandles, void **request);
    ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                           void **request);
    ncclResult_t (*test)(void *request, int *done, int *sizes);
    ncclResult_t (*closeSend)(void *sendComm);
    ncclResult_t (*closeRecv)(void *recvComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v8_t;

typedef struct {
    void *mhandle;
    void *address;
    uint32_t size;
} ncclNetSGE_v8_t;

/* iallreduce's count is an int; no makeVDevice. */
typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
                            void **collComm);
    ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
    ncclResult_t (*regMr)(void *collComm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
                                uint64_t offset, int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *collComm, void *mhandle);
    ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, int count,
                               ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
                               void *recvMhandle, void **request);
    ncclResult_t (*iallgather)(void *collComm, void *sendData, int nRecvParts,
                               ncclNetSGE_v8_t *recvParts, size_t bytesPerRank,
                               size_t windowOffset, size_t windowBytes, void *sendMhandle,
                               void **request);
    ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v8_t *sendParts,
                                   void *recvData, size_t bytesPerRank, size_t windowOffset,
                                   size_t windowBytes, ncclDataType_t dataType,
                                   ncclRedOp_t redOp, void *recvMhandle, void **request);
    ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
    ncclResult_t (*test)(void *request, int *done, int *size);
    ncclResult_t (*closeColl)(void *collComm);
    ncclResult_t (*closeListen)(void *listenComm);
} ncclCollNet_v8_t;

STP_ABI_CHECK_SIZE(ncclNetProperties_v8_t, 64);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, regIsGlobal, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, speed, 32);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, port, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, latency, 40);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, maxComms, 44);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, maxRecvs, 48);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, netDeviceType, 52);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v8_t, netDeviceVersion, 56);

STP_ABI_CHECK_SIZE(ncclNetSGE_v8_t, 24);
STP_ABI_CHECK_OFFSET(ncclNetSGE_v8_t, size, 16);
STP_ABI_CHECK_SIZE(ncclNet_v8_t, 152);
STP_ABI_CHECK_OFFSET(ncclNet_v8_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v8_t, irecvConsumed, 144);
STP_ABI_CHECK_SIZE(ncclCollNet_v8_t, 136);

#endif /* STRATA_NCCL_NET_V8_H */

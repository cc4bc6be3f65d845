/*
 * The NCCL net plugin ABI, version 6: the oldest version NCCL 2.28 loads
 * (it refuses a library that exports only v5 or older).
 *
 * Against v7 (include/nccl/net_v7.h): no device offload at all, so no
 * netDeviceType/netDeviceVersion, connect/accept have no device handle, and
 * there is no getDeviceMr / irecvConsumed. Every size is an int except
 * regMrDmaBuf's.
 */
#ifndef STRATA_NCCL_NET_V6_H
#define STRATA_NCCL_NET_V6_H

#include "nccl/common.h"

typedef struct {
    char *name;
    char *pciPath;
    uint64_t guid;
    int ptrSupport;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
} ncclNetProperties_v6_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm);
    ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
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
} ncclNet_v6_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(void *handles[], int nranks, int rank, void *listenComm,
                            void **collComm);
    ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int *supported);
    ncclResult_t (*regMr)(void *collComm, void *data, int size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *collComm, void *data, size_t size, int type,
                                uint64_t offset, int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *collComm, void *mhandle);
    ncclResult_t (*iallreduce)(void *collComm, void *sendData, void *recvData, int count,
                               ncclDataType_t dataType, ncclRedOp_t redOp, void *sendMhandle,
                               void *recvMhandle, void **request);
    ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
    ncclResult_t (*test)(void *request, int *done, int *size);
    ncclResult_t (*closeColl)(void *collComm);
    ncclResult_t (*closeListen)(void *listenComm);
} ncclCollNet_v6_t;

STP_ABI_CHECK_SIZE(ncclNetProperties_v6_t, 48);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, pciPath, 8);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, guid, 16);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, speed, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, port, 32);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, latency, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, maxComms, 40);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v6_t, maxRecvs, 44);

STP_ABI_CHECK_SIZE(ncclNet_v6_t, 136);
STP_ABI_CHECK_OFFSET(ncclNet_v6_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v6_t, closeListen, 128);
STP_ABI_CHECK_SIZE(ncclCollNet_v6_t, 120);

#endif /* STRATA_NCCL_NET_V6_H */

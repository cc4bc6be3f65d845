/*
 * The NCCL net plugin ABI, version 7 (first in NCCL 2.19).
 *
 * Against v8 (include/nccl/net_v8.h): no regIsGlobal, regMr takes an int
 * size, and CollNet has no iallgather / ireducescatter. v7 introduced device
 * offload: netDeviceType/netDeviceVersion, the device handles of connect and
 * accept, getDeviceMr and irecvConsumed.
 */
#ifndef STRATA_NCCL_NET_V7_H
#define STRATA_NCCL_NET_V7_H

#include "nccl/common.h"
#include "nccl/net_device.h"

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
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
} ncclNetProperties_v7_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                            ncclNetDeviceHandle_v7_t **sendDevComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm,
                           ncclNetDeviceHandle_v7_t **recvDevComm);
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
    ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v7_t;

/* v6's CollNet, with v7 properties. */
typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
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
} ncclCollNet_v7_t;

STP_ABI_CHECK_SIZE(ncclNetProperties_v7_t, 56);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v7_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v7_t, speed, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v7_t, latency, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v7_t, maxRecvs, 44);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v7_t, netDeviceType, 48);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v7_t, netDeviceVersion, 52);

STP_ABI_CHECK_SIZE(ncclNet_v7_t, 152);
STP_ABI_CHECK_OFFSET(ncclNet_v7_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v7_t, irecvConsumed, 144);
STP_ABI_CHECK_SIZE(ncclCollNet_v7_t, 120);

#endif /* STRATA_NCCL_NET_V7_H */

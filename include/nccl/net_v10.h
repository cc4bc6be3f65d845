/*
 * The NCCL net plugin ABI, version 10 (first in NCCL 2.26; 2.28 still loads it).
 *
 * Against v11 (include/nccl/net_v11.h, which documents each entry point):
 * init runs once per process and takes no context; listen/connect take no
 * context; connect takes the comm config (traffic class) itself; there is no
 * finalize, setNetAttr or maxMultiRequestSize.
 */
#ifndef STRATA_NCCL_NET_V10_H
#define STRATA_NCCL_NET_V10_H

#include "nccl/common.h"
#include "nccl/net_device.h"

typedef struct {
    int ndevs;
    int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_v10_t;

/* Passed to each connect (v11 moved it to init). */
typedef struct {
    int trafficClass;   /* NCCL_NET_TRAFFIC_CLASS_UNDEF if unset */
} ncclNetCommConfig_v10_t;

/* v11's properties without maxMultiRequestSize. */
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
    ncclNetVDeviceProps_v10_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
} ncclNetProperties_v10_t;

typedef struct {
    const char *name;
    /* Once per process. profFunction is new in v10. */
    ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
    ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
    ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t *config, void *handle,
                            void **sendComm, ncclNetDeviceHandle_v10_t **sendDevComm);
    ncclResult_t (*accept)(void *listenComm, void **recvComm,
                           ncclNetDeviceHandle_v10_t **recvDevComm);
    ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
    ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle);
    ncclResult_t (*deregMr)(void *comm, void *mhandle);
    /* phandle / phandles (profiler handles) are new in v10. */
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
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclNet_v10_t;

typedef struct {
    void *mhandle;
    void *address;
    size_t size;
} ncclNetSGE_v10_t;

/* v11's CollNet without the context: init takes only the logger, no finalize. */
typedef struct {
    const char *name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int *ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
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
                               ncclNetSGE_v10_t *recvParts, size_t bytesPerRank,
                               size_t windowOffset, size_t windowBytes, void *sendMhandle,
                               void **request);
    ncclResult_t (*ireducescatter)(void *collComm, int nSendParts, ncclNetSGE_v10_t *sendParts,
                                   void *recvData, size_t bytesPerRank, size_t windowOffset,
                                   size_t windowBytes, ncclDataType_t dataType,
                                   ncclRedOp_t redOp, void *recvMhandle, void **request);
    ncclResult_t (*iflush)(void *collComm, void *data, int size, void *mhandle, void **request);
    ncclResult_t (*test)(void *request, int *done, int *size);
    ncclResult_t (*closeColl)(void *collComm);
    ncclResult_t (*closeListen)(void *listenComm);
    ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v10_t *props);
} ncclCollNet_v10_t;

STP_ABI_CHECK_SIZE(ncclNetVDeviceProps_v10_t, 20);
STP_ABI_CHECK_SIZE(ncclNetCommConfig_v10_t, 4);

STP_ABI_CHECK_SIZE(ncclNetProperties_v10_t, 104);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, ptrSupport, 24);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, regIsGlobal, 28);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, forceFlush, 32);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, speed, 36);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, latency, 44);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, maxRecvs, 52);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, netDeviceType, 56);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, netDeviceVersion, 60);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, vProps, 64);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, maxP2pBytes, 88);
STP_ABI_CHECK_OFFSET(ncclNetProperties_v10_t, maxCollBytes, 96);

STP_ABI_CHECK_SIZE(ncclNetSGE_v10_t, 24);
STP_ABI_CHECK_SIZE(ncclNet_v10_t, 160);
STP_ABI_CHECK_OFFSET(ncclNet_v10_t, isend, 80);
STP_ABI_CHECK_OFFSET(ncclNet_v10_t, makeVDevice, 152);
STP_ABI_CHECK_SIZE(ncclCollNet_v10_t, 144);
STP_ABI_CHECK_OFFSET(ncclCollNet_v10_t, makeVDevice, 136);

#endif /* STRATA_NCCL_NET_V10_H */

/*
 * What a net plugin hands NCCL's profiler callback (init's profFunction, v10 and later)
 * for its network events, written from NCCL's ext-profiler ABI (2.24 to 2.30): the
 * plugin id says which plugin kind and descriptor version sent the event, and extData
 * points at that kind's descriptor. Strata reports its ib traffic in the IB shape (per QP
 * work request) and the other transports' in the socket shape (per request).
 */
#ifndef STRATA_NCCL_PROFILER_NET_H
#define STRATA_NCCL_PROFILER_NET_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/common.h"

/* pluginId = kind | descriptor version; the kind sits above the low 16 bits. */
#define NCCL_PROFILER_NET_VER_BITS 16
#define NCCL_PROFILER_NET_TYPE_IB (1u << NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_SOCK (2u << NCCL_PROFILER_NET_VER_BITS)

#define NCCL_PROFILER_NET_IB_VER 1
enum { ncclProfileQp = 1 << 0 };       /* the IB descriptor's event type */

/* The IB descriptor, version 1: one work request on one QP. */
typedef struct {
    uint8_t type;            /* ncclProfileQp */
    union {
        struct {
            int device;      /* the port within the (virtual) device: its member index */
            uint64_t wr_id;
            int opcode;      /* the work request's ibv opcode */
            int qpNum;
            size_t length;   /* its payload bytes */
        } qp;
    };
} ncclProfilerNetIbDescr_v1_t;

STP_ABI_CHECK_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.device, 8);
STP_ABI_CHECK_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.wr_id, 16);
STP_ABI_CHECK_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.opcode, 24);
STP_ABI_CHECK_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.qpNum, 28);
STP_ABI_CHECK_OFFSET(ncclProfilerNetIbDescr_v1_t, qp.length, 32);
STP_ABI_CHECK_SIZE(ncclProfilerNetIbDescr_v1_t, 40);

#define NCCL_PROFILER_NET_SOCKET_VER 1
enum { ncclProfileSocket = 1 << 0 };   /* the socket descriptor's event type */

/* The socket descriptor, version 1. */
typedef struct {
    uint8_t type;            /* ncclProfileSocket */
    union {
        struct {
            int fd;
            int op;          /* 0 send, 1 receive */
            size_t length;
        } sock;
    };
} ncclProfilerNetSockDescr_v1_t;

STP_ABI_CHECK_OFFSET(ncclProfilerNetSockDescr_v1_t, sock.fd, 8);
STP_ABI_CHECK_OFFSET(ncclProfilerNetSockDescr_v1_t, sock.op, 12);
STP_ABI_CHECK_OFFSET(ncclProfilerNetSockDescr_v1_t, sock.length, 16);
STP_ABI_CHECK_SIZE(ncclProfilerNetSockDescr_v1_t, 24);

#endif /* STRATA_NCCL_PROFILER_NET_H */

/*
 * The ib transport: InfiniBand and RoCE over libibverbs, the design of
 * NCCL's IB transport (NVIDIA/nccl, src/transport/net_ib) in Strata's own
 * code. Reliable-connected QPs set up over a TCP side channel; the receiver
 * publishes each receive into the sender's FIFO with an RDMA write; the sender
 * RDMA-writes the payload and completes with a write with immediate.
 * docs/ib-protocol.md describes the wire protocol.
 *
 * Devices are the ACTIVE ports (IB or Ethernet link layer) that pass
 * STRATA_IB_HCA. Built only when pkg-config finds libibverbs.
 */
#ifndef STT_IB_H
#define STT_IB_H

#include "transport/transport.h"

extern const stt_ops_t stt_ib_ops;

#endif /* STT_IB_H */

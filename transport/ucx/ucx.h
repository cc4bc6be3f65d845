/*
 * The UCX transport: UCP tagged messages, one UCP worker and one endpoint
 * per comm, connections set up over a TCP side channel that exchanges worker
 * addresses and then stays open as a liveness check. See
 * docs/ucx-protocol.md for the design and ucx_internal.h for the objects.
 *
 * Devices are network interfaces (netif.h: STRATA_SOCKET_IFNAME,
 * STRATA_SOCKET_FAMILY); they carry the side channel. Which UCX transports
 * move the data is UCX's choice, steered by the user's own UCX_* variables.
 */
#ifndef STT_UCX_H
#define STT_UCX_H

#include "transport/transport.h"

extern const stt_ops_t stt_ucx_ops;

#endif /* STT_UCX_H */

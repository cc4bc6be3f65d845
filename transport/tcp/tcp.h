/*
 * The TCP transport: kernel sockets, one or more per connection, progressed
 * inline from isend/irecv/test (no threads). See tcp_internal.h for the
 * objects and tcp_wire.h for the wire format.
 *
 * Devices are network interfaces, chosen with STRATA_SOCKET_IFNAME and
 * STRATA_SOCKET_FAMILY; loopback is used when nothing else qualifies.
 */
#ifndef STT_TCP_H
#define STT_TCP_H

#include "transport/transport.h"

extern const stt_ops_t stt_tcp_ops;

#endif /* STT_TCP_H */

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

/*
 * The striping size of a connection made now over a device of `members` NICs (>= 1): a
 * message of STRATA_SOCKET_STRIPE_MIN bytes or more (at least 1) is split across its sockets
 * where STRATA_SOCKET_NSOCKS gives it two or more; 0 where one socket carries everything.
 * The devices' stt_props_t.stripe_min, and what strata-plan charges for tcp, which has no
 * device.
 */
size_t stt_tcp_stripe_bytes(int members);

#endif /* STT_TCP_H */

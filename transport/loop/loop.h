/*
 * The loop transport: an in-process transport where a "connection" is a
 * shared channel between two comms of the same process and a message moves by
 * memcpy. It always runs, so the conformance suite and the collective
 * library's tests have a transport that exercises the full contract (pending
 * connect/accept, grouped receives, truncation, a closed peer) without a
 * network. It has one device, "loop0". Never chosen by "auto".
 */
#ifndef STT_LOOP_H
#define STT_LOOP_H

#include "transport/transport.h"

extern const stt_ops_t stt_loop_ops;

#endif /* STT_LOOP_H */

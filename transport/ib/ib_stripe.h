/*
 * How one send spreads over the QPs of a connection (pure logic, unit-tested
 * in tests/unit/test_ib_vnic.c). On a virtual device QP q runs on member port
 * q % nmembers, so the same plan stripes a large message over every member
 * and sends small ones whole, round robin, member after member.
 *
 *   bytes >= split_min (and nqps > 1, bytes > 0): striped, one chunk per QP,
 *     chunk q = [q * per, min((q + 1) * per, bytes)) with per = ceil(bytes /
 *     nqps) rounded up to STT_IB_SPLIT_ALIGN; a QP past the end carries nothing
 *   otherwise: whole on QP rr % nqps (also a 0-byte send: that QP carries its
 *     immediate)
 *
 * The receiver needs none of it: every chunk is an RDMA write to its own
 * offset of the posted buffer, and the receive completes when every QP the
 * first immediate announces delivered its immediate (RC writes on one QP land
 * in order), so reassembly is the NIC's placement plus a count.
 */
#ifndef STT_IB_STRIPE_H
#define STT_IB_STRIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/ib/ib_wire.h"

#define STT_IB_SPLIT_ALIGN 128u          /* chunk boundaries across QPs (LL128 lines) */

typedef struct stt_ib_stripe {
    uint32_t qmask;                      /* QPs that take part (payload or immediate) */
    uint64_t off[STT_IB_MAX_QPS];
    uint64_t len[STT_IB_MAX_QPS];        /* 0: no payload on that QP */
} stt_ib_stripe_t;

/* Fills *out for a send of bytes on nqps QPs (1..STT_IB_MAX_QPS); true when striped. */
bool stt_ib_stripe_plan(uint64_t bytes, int nqps, uint64_t split_min, uint32_t rr,
                        stt_ib_stripe_t *out);

#endif /* STT_IB_STRIPE_H */

/* The striping plan of one send over a connection's QPs (ib_stripe.h). */
#include <string.h>

#include "transport/ib/ib_stripe.h"

bool stt_ib_stripe_plan(uint64_t bytes, int nqps, uint64_t split_min, uint32_t rr,
                        stt_ib_stripe_t *out)
{
    memset(out, 0, sizeof(*out));
    if (nqps <= 1 || bytes == 0 || bytes < split_min) {
        int q = nqps <= 1 ? 0 : (int)(rr % (uint32_t)nqps);
        out->qmask = 1u << q;
        out->len[q] = bytes;
        return false;
    }
    uint64_t per = (bytes + (uint64_t)nqps - 1) / (uint64_t)nqps;
    per = (per + STT_IB_SPLIT_ALIGN - 1) & ~(uint64_t)(STT_IB_SPLIT_ALIGN - 1);
    for (int q = 0; q < nqps; q++) {
        uint64_t start = per * (uint64_t)q;
        if (start >= bytes)
            break;
        out->off[q] = start;
        out->len[q] = bytes - start < per ? bytes - start : per;
        out->qmask |= 1u << q;
    }
    return true;
}

/* Request slots shared by the transports (slots.h). */
#include "transport/base/slots.h"
#include "util/log.h"

void stt_slots_bind(stt_slots_t *slots, void *reqs, size_t stride, int cap, stt_comm_t *comm)
{
    for (int i = 0; i < cap; i++) {
        stt_slot_t *slot = (stt_slot_t *)((char *)reqs + (size_t)i * stride);
        slot->base.comm = comm;
        slot->state = STT_SLOT_FREE;
        slot->index = (uint16_t)i;
    }
    if (slots == NULL)
        return;
    slots->first = reqs;
    slots->stride = (uint32_t)stride;
    slots->cap = (uint16_t)cap;
    slots->nfree = (uint16_t)cap;
    for (int i = 0; i < cap; i++)
        slots->free[i] = (uint16_t)(cap - 1 - i);
}

strata_status_t stt_slots_test_bad(const stt_ops_t *ops, const stt_req_t *req, const int *done)
{
    STU_WARN("%s: test called with %s", ops->name,
             req == NULL    ? "a NULL request"
             : done == NULL ? "a NULL done output"
                            : "a request of another transport's comm");
    return STRATA_ERR_INVALID;
}

strata_status_t stt_slots_stale(const stt_ops_t *ops, const stt_req_t *req)
{
    STU_WARN("%s: test on a request %p that is not pending on its comm (released already?)",
             ops->name, (const void *)req);
    return STRATA_ERR_INVALID;
}

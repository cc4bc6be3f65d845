/*
 * Request slots: the requests a comm preallocates, and a stack of the free
 * ones, shared by every transport. Taking and giving a slot cost a load and a
 * store: no allocation, lock or system call on the data path.
 *
 * Every request type starts with a stt_slot_t (which starts with the
 * contract's stt_req_t), and a comm keeps its requests in one array that a
 * stt_slots_t hands out. The state byte holds STT_SLOT_FREE, ACTIVE or DONE,
 * or states a transport adds from STT_SLOT_OWN on. A request is free again
 * once test() reported it (or the comm closed).
 *
 * Thread safety: none; a comm and its requests are used by one thread at a time.
 */
#ifndef STT_BASE_SLOTS_H
#define STT_BASE_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "util/compiler.h"

/* The largest pool: the contract's send budget (a comm's receive budget is smaller). */
#define STT_SLOTS_MAX STT_MAX_SEND_REQUESTS

enum {
    STT_SLOT_FREE = 0,   /* in the free stack */
    STT_SLOT_ACTIVE,     /* posted, not complete */
    STT_SLOT_DONE,       /* complete (status says how), waiting for test */
    STT_SLOT_OWN,        /* first state a transport may define for itself */
};

typedef struct stt_slot {
    stt_req_t base;          /* the contract's request: first */
    uint8_t state;           /* STT_SLOT_* */
    uint8_t n;               /* buffers: 1 for a send, n for a receive, 0 for a flush */
    uint16_t index;          /* position in its comm's array */
    strata_status_t status;  /* once DONE: STRATA_OK or how it failed */
} stt_slot_t;

typedef struct stt_slots {
    char *first;             /* request 0 */
    uint32_t stride;         /* bytes from one request to the next */
    uint16_t cap;
    uint16_t nfree;
    uint16_t free[STT_SLOTS_MAX];
} stt_slots_t;

/*
 * Binds cap requests of stride bytes each, starting at reqs, to comm (their
 * base.comm) and to their index, all FREE, and stacks them so that request 0
 * is taken first. The slots pool may be NULL for an array whose requests are
 * picked by position (ib's receives); cap <= STT_SLOTS_MAX.
 */
void stt_slots_bind(stt_slots_t *slots, void *reqs, size_t stride, int cap, stt_comm_t *comm);

static inline stt_slot_t *stt_slots_at(const stt_slots_t *slots, int index)
{
    return (stt_slot_t *)(slots->first + (size_t)index * slots->stride);
}

/* A free request, now ACTIVE with n buffers and status OK; NULL when none is free. */
static inline stt_slot_t *stt_slots_take(stt_slots_t *slots, int n)
{
    if (slots->nfree == 0)
        return NULL;
    stt_slot_t *slot = stt_slots_at(slots, slots->free[--slots->nfree]);
    slot->state = STT_SLOT_ACTIVE;
    slot->n = (uint8_t)n;
    slot->status = STRATA_OK;
    slot->base.nsizes = n;
    return slot;
}

static inline void stt_slots_give(stt_slots_t *slots, stt_slot_t *slot)
{
    slot->state = STT_SLOT_FREE;
    slots->free[slots->nfree++] = slot->index;
}

/* True when no request of the pool is taken. */
static inline bool stt_slots_idle(const stt_slots_t *slots)
{
    return slots->nfree == slots->cap;
}

/*
 * The request of an array of cap requests (stride bytes each, from first)
 * that req points at, if it is one and not free; NULL otherwise.
 */
static inline stt_slot_t *stt_slot_find(const void *first, size_t stride, int cap,
                                        const stt_req_t *req)
{
    uintptr_t off = (uintptr_t)req - (uintptr_t)first;

    /* off < stride * cap fits 32 bits (a comm's requests take well under 4 GiB). */
    if ((uintptr_t)req < (uintptr_t)first || off >= stride * (size_t)cap ||
        (uint32_t)off % (uint32_t)stride != 0)
        return NULL;
    stt_slot_t *slot = (stt_slot_t *)req;
    return slot->state == STT_SLOT_FREE ? NULL : slot;
}

static inline stt_slot_t *stt_slots_find(const stt_slots_t *slots, const stt_req_t *req)
{
    return stt_slot_find(slots->first, slots->stride, slots->cap, req);
}

/* The warning of stt_slots_test_check for bad arguments; returns STRATA_ERR_INVALID. */
strata_status_t stt_slots_test_bad(const stt_ops_t *ops, const stt_req_t *req, const int *done);

/*
 * test()'s own arguments: a request of a comm of ops and a done output.
 * STRATA_ERR_INVALID with a warning otherwise.
 */
static inline strata_status_t stt_slots_test_check(const stt_ops_t *ops, const stt_req_t *req,
                                                   const int *done)
{
    if (STU_LIKELY(req != NULL && done != NULL && req->comm != NULL &&
                   req->comm->ops == ops))
        return STRATA_OK;
    return stt_slots_test_bad(ops, req, done);
}

/* The warning for a test() on a request its comm does not hold; returns STRATA_ERR_INVALID. */
strata_status_t stt_slots_stale(const stt_ops_t *ops, const stt_req_t *req);

#endif /* STT_BASE_SLOTS_H */

/* FIFO entries (clear-to-send): filled by the receiver, checked by the sender. */
#include <string.h>

#include "transport/ib/ib_wire.h"

void stt_ib_fifo_fill(stt_ib_fifo_slot_t *slot, uint32_t seq, int n, void *const *data,
                      const size_t *sizes, const int *tags,
                      const uint32_t (*rkeys)[STT_IB_MAX_MEMBERS], int nmembers)
{
    for (int i = 0; i < n; i++) {
        stt_ib_fifo_entry_t *e = &slot->e[i];
        for (int j = 0; j < STT_IB_MAX_MEMBERS; j++)
            slot->xkeys[i][j] = j < nmembers ? rkeys[i][j] : 0;
        e->addr = (uint64_t)(uintptr_t)data[i];
        e->size = sizes[i];
        e->rkey = rkeys[i][0];
        e->tag = tags[i];
        e->n = (uint8_t)n;
        e->index = (uint8_t)i;
        e->epoch = 0;
        e->reserved = 0;
        e->seq = seq + 1;
    }
}

strata_status_t stt_ib_fifo_check(const volatile stt_ib_fifo_slot_t *slot, uint32_t seq,
                                  int *n_p, const char **why_p)
{
    uint32_t want = seq + 1;

    if (slot->e[0].seq != want)
        return STRATA_INPROGRESS;
    /* seq is read before the other fields; the NIC wrote the whole entry by then. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    int n = slot->e[0].n;
    if (n < 1 || n > STT_MAX_RECVS) {
        *why_p = "buffer count outside 1..STT_MAX_RECVS";
        return STRATA_ERR_REMOTE;
    }
    for (int i = 0; i < n; i++) {
        const volatile stt_ib_fifo_entry_t *e = &slot->e[i];
        if (e->seq != want)
            return STRATA_INPROGRESS;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (e->n != n) {
            *why_p = "entries of one receive disagree on the buffer count";
            return STRATA_ERR_REMOTE;
        }
        if (e->index != i) {
            *why_p = "entry index does not match its position";
            return STRATA_ERR_REMOTE;
        }
        if (e->size > 0 && e->addr == 0) {
            *why_p = "NULL buffer address with a non-zero size";
            return STRATA_ERR_REMOTE;
        }
        if (e->addr + e->size < e->addr) {
            *why_p = "buffer wraps around the address space";
            return STRATA_ERR_REMOTE;
        }
    }
    *n_p = n;
    return STRATA_OK;
}

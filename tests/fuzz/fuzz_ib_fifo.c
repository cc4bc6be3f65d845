/*
 * The ib transport's clear-to-send entries (transport/ib/ib_fifo.c): what a
 * receiver RDMA-writes into the sender's FIFO, so every byte is the peer's.
 * A slot the check accepts must be consistent (buffer count in range, every
 * entry of this receive at its place, no buffer wrapping the address space);
 * a slot filled by stt_ib_fifo_fill from sane arguments must be accepted.
 */
#include "fuzz.h"
#include "transport/ib/ib_wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

static void fuzz_check_slot(fuzz_in_t *in)
{
    stt_ib_fifo_slot_t slot;
    uint32_t seq = fuzz_u32(in);
    const char *why = NULL;
    int n = -1;

    fuzz_take(in, &slot, sizeof(slot));
    strata_status_t st = stt_ib_fifo_check(&slot, seq, &n, &why);
    if (st == STRATA_ERR_REMOTE) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    if (st != STRATA_OK) {
        FUZZ_CHECK(st == STRATA_INPROGRESS);
        return;
    }
    FUZZ_CHECK(n >= 1 && n <= STT_MAX_RECVS);
    for (int i = 0; i < n; i++) {
        const stt_ib_fifo_entry_t *e = &slot.e[i];
        FUZZ_CHECK(e->seq == seq + 1 && e->n == n && e->index == i);
        FUZZ_CHECK(e->size == 0 || e->addr != 0);
        FUZZ_CHECK(e->addr + e->size >= e->addr);
    }
}

static void fuzz_fill_then_check(fuzz_in_t *in)
{
    stt_ib_fifo_slot_t slot;
    void *data[STT_MAX_RECVS];
    size_t sizes[STT_MAX_RECVS];
    int tags[STT_MAX_RECVS];
    uint32_t rkeys[STT_MAX_RECVS][STT_IB_MAX_MEMBERS];
    uint32_t seq = fuzz_u32(in);
    int n = 1 + fuzz_u8(in) % STT_MAX_RECVS, got = 0;
    const char *why = NULL;

    memset(&slot, 0, sizeof(slot));
    for (int i = 0; i < n; i++) {
        data[i] = (void *)((uintptr_t)0x1000 + (fuzz_u32(in) & 0xfffff000u));
        sizes[i] = fuzz_u32(in);
        tags[i] = (int)fuzz_u32(in);
        for (int j = 0; j < STT_IB_MAX_MEMBERS; j++)
            rkeys[i][j] = fuzz_u32(in);
    }
    int nmembers = 1 + fuzz_u8(in) % STT_IB_MAX_MEMBERS;
    stt_ib_fifo_fill(&slot, seq, n, data, sizes, tags,
                     (const uint32_t(*)[STT_IB_MAX_MEMBERS])rkeys, nmembers);
    FUZZ_CHECK(slot.e[0].rkey == rkeys[0][0] && slot.xkeys[n - 1][nmembers - 1] ==
               rkeys[n - 1][nmembers - 1]);
    FUZZ_CHECK(stt_ib_fifo_check(&slot, seq, &got, &why) == STRATA_OK && got == n);
    FUZZ_CHECK(stt_ib_fifo_check(&slot, seq + 1, &got, &why) == STRATA_INPROGRESS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    if (fuzz_u8(&in) & 1)
        fuzz_check_slot(&in);
    else
        fuzz_fill_then_check(&in);
    return 0;
}

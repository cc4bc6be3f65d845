/* The registration cache: a small array of ranges searched linearly (ib_mrcache.h). */
#include "transport/ib/ib_mrcache.h"

#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define MRC_INITIAL_CAP 16

void stt_ib_mrc_init(stt_ib_mrc_t *cache, const stt_ib_mrc_ops_t *ops, void *ctx, size_t page,
                     int keep)
{
    memset(cache, 0, sizeof(*cache));
    cache->ops = ops;
    cache->ctx = ctx;
    cache->page = page;
    cache->keep = keep < 0 ? 0 : keep;
}

static void mrc_remove_at(stt_ib_mrc_t *cache, int i)
{
    stt_ib_mrc_entry_t *e = cache->entries[i];

    cache->ops->dereg(cache->ctx, e->mr);
    e->magic = 0;
    free(e);
    cache->entries[i] = cache->entries[--cache->count];
}

void stt_ib_mrc_clear(stt_ib_mrc_t *cache)
{
    while (cache->count > 0)
        mrc_remove_at(cache, cache->count - 1);
    free(cache->entries);
    cache->entries = NULL;
    cache->cap = 0;
}

int stt_ib_mrc_owns(const stt_ib_mrc_t *cache, const stt_ib_mrc_entry_t *entry)
{
    /* Compare pointers first: a stale handle must not be dereferenced. */
    for (int i = 0; i < cache->count; i++)
        if (cache->entries[i] == entry)
            return entry->magic == STT_IB_MRC_MAGIC && entry->cache == cache;
    return 0;
}

static strata_status_t mrc_grow(stt_ib_mrc_t *cache)
{
    if (cache->count < cache->cap)
        return STRATA_OK;
    int cap = cache->cap ? cache->cap * 2 : MRC_INITIAL_CAP;
    stt_ib_mrc_entry_t **grown = realloc(cache->entries, (size_t)cap * sizeof(*grown));
    if (grown == NULL) {
        STU_WARN("ib: no memory to grow the registration cache to %d entries", cap);
        return STRATA_ERR_NO_MEMORY;
    }
    cache->entries = grown;
    cache->cap = cap;
    return STRATA_OK;
}

strata_status_t stt_ib_mrc_acquire(stt_ib_mrc_t *cache, const void *addr, size_t len,
                                   stt_ib_mrc_entry_t **entry_p)
{
    strata_status_t status;
    uintptr_t a = (uintptr_t)addr;
    size_t span = len > 0 ? len : 1;

    if (a + span < a || a + span > UINTPTR_MAX - cache->page) {
        STU_WARN("ib: cannot register %p + %zu bytes: the range wraps", addr, len);
        return STRATA_ERR_INVALID;
    }
    uintptr_t start = a & ~(uintptr_t)(cache->page - 1);
    uintptr_t end = (a + span + cache->page - 1) & ~(uintptr_t)(cache->page - 1);

    cache->tick++;
    for (int i = 0; i < cache->count; i++) {
        stt_ib_mrc_entry_t *e = cache->entries[i];
        if (e->start <= start && end <= e->end) {
            e->refs++;
            e->last_use = cache->tick;
            cache->hits++;
            *entry_p = e;
            return STRATA_OK;
        }
    }
    cache->misses++;
    status = mrc_grow(cache);
    if (status != STRATA_OK)
        return status;
    stt_ib_mrc_entry_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        STU_WARN("ib: no memory for a registration cache entry");
        return STRATA_ERR_NO_MEMORY;
    }
    status = cache->ops->reg(cache->ctx, start, (size_t)(end - start), &e->mr, &e->lkey,
                             &e->rkey);
    if (status != STRATA_OK)
        goto err_free;
    e->magic = STT_IB_MRC_MAGIC;
    e->cache = cache;
    e->start = start;
    e->end = end;
    e->refs = 1;
    e->last_use = cache->tick;
    cache->entries[cache->count++] = e;
    *entry_p = e;
    return STRATA_OK;

err_free:
    free(e);
    return status;
}

strata_status_t stt_ib_mrc_insert(stt_ib_mrc_t *cache, uintptr_t start, size_t len, void *mr,
                                  uint32_t lkey, uint32_t rkey, stt_ib_mrc_entry_t **entry_p)
{
    strata_status_t status = mrc_grow(cache);
    if (status != STRATA_OK)
        return status;
    stt_ib_mrc_entry_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        STU_WARN("ib: no memory for a registration cache entry");
        return STRATA_ERR_NO_MEMORY;
    }
    *e = (stt_ib_mrc_entry_t){.magic = STT_IB_MRC_MAGIC, .cache = cache, .start = start,
                              .end = start + len, .refs = 1, .last_use = ++cache->tick,
                              .mr = mr, .lkey = lkey, .rkey = rkey};
    cache->entries[cache->count++] = e;
    *entry_p = e;
    return STRATA_OK;
}

/* Deregisters the least recently used unreferenced entries beyond the keep budget. */
static void mrc_trim(stt_ib_mrc_t *cache)
{
    for (;;) {
        int idle = 0, oldest = -1;
        for (int i = 0; i < cache->count; i++) {
            if (cache->entries[i]->refs > 0)
                continue;
            idle++;
            if (oldest < 0 || cache->entries[i]->last_use < cache->entries[oldest]->last_use)
                oldest = i;
        }
        if (idle <= cache->keep)
            return;
        mrc_remove_at(cache, oldest);
    }
}

void stt_ib_mrc_release(stt_ib_mrc_t *cache, stt_ib_mrc_entry_t *entry)
{
    if (entry->refs <= 0) {
        STU_WARN("ib: registration %p released more often than acquired", (void *)entry);
        return;
    }
    if (--entry->refs == 0)
        mrc_trim(cache);
}

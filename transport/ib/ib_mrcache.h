/*
 * The registration cache of the ib transport: page-aligned address ranges
 * with reference counts, per protection domain. Pure logic: the verbs calls
 * come in through two callbacks, so tests drive the cache with fakes.
 *
 * acquire(addr, len) returns an entry whose range covers the pages of
 * [addr, addr + len): an existing one (a hit, refs + 1) or a new registration
 * of exactly those pages. release drops a reference; an entry that reaches
 * zero is deregistered at once, or, with keep > 0, kept (up to keep
 * unreferenced entries, least recently used evicted first) for a later hit.
 * Keeping is only safe for buffers that are never freed while registered:
 * a registration pins the pages it was made on, so a new buffer at the same
 * address would hit an entry that points at the old pages.
 *
 * Entries are allocated one by one, so their addresses (the memory handles
 * handed out) stay stable. Not thread-safe: the caller holds its lock.
 */
#ifndef STT_IB_MRCACHE_H
#define STT_IB_MRCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STT_IB_MRC_MAGIC 0x4d425453u   /* "STBM" */

typedef struct stt_ib_mrc stt_ib_mrc_t;

typedef struct stt_ib_mrc_entry {
    uint32_t magic;
    stt_ib_mrc_t *cache;
    uintptr_t start;          /* page aligned */
    uintptr_t end;            /* page aligned, exclusive */
    int refs;
    uint64_t last_use;        /* cache tick of the last acquire */
    void *mr;                 /* the callback's registration (struct ibv_mr *) */
    uint32_t lkey;
    uint32_t rkey;
} stt_ib_mrc_entry_t;

typedef struct stt_ib_mrc_ops {
    /* Registers [start, start + len); fills *mr_p and the keys. Logs its own errors. */
    strata_status_t (*reg)(void *ctx, uintptr_t start, size_t len, void **mr_p,
                           uint32_t *lkey_p, uint32_t *rkey_p);
    void (*dereg)(void *ctx, void *mr);
} stt_ib_mrc_ops_t;

struct stt_ib_mrc {
    const stt_ib_mrc_ops_t *ops;
    void *ctx;
    size_t page;
    int keep;
    uint64_t tick;
    int count;
    int cap;
    stt_ib_mrc_entry_t **entries;
    /* statistics, for tests and logs */
    uint64_t hits;
    uint64_t misses;
};

/* page: a power of two; keep: unreferenced entries kept for reuse (0: none). */
void stt_ib_mrc_init(stt_ib_mrc_t *cache, const stt_ib_mrc_ops_t *ops, void *ctx, size_t page,
                     int keep);

/* Deregisters and frees every entry, referenced or not (teardown). */
void stt_ib_mrc_clear(stt_ib_mrc_t *cache);

/* len 0 is treated as one byte. STRATA_ERR_INVALID for a range that wraps. */
strata_status_t stt_ib_mrc_acquire(stt_ib_mrc_t *cache, const void *addr, size_t len,
                                   stt_ib_mrc_entry_t **entry_p);

void stt_ib_mrc_release(stt_ib_mrc_t *cache, stt_ib_mrc_entry_t *entry);

/*
 * Adds a registration made outside the cache (DMA-BUF) as an entry with one
 * reference, covering [start, start + len) as given. Release deregisters it
 * through the callback like any other.
 */
strata_status_t stt_ib_mrc_insert(stt_ib_mrc_t *cache, uintptr_t start, size_t len, void *mr,
                                  uint32_t lkey, uint32_t rkey, stt_ib_mrc_entry_t **entry_p);

/* Is entry one of this cache's live entries? (validates a handle from a caller) */
int stt_ib_mrc_owns(const stt_ib_mrc_t *cache, const stt_ib_mrc_entry_t *entry);

#endif /* STT_IB_MRCACHE_H */

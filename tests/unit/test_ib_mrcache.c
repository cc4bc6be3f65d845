/*
 * The ib registration cache's logic with fake register/deregister callbacks:
 * page-aligned ranges, sub-range hits, reference counts, immediate release or
 * bounded keeping (LRU), inserted (DMA-BUF) entries, handle validation and
 * failures of the register callback.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/ib/ib_mrcache.h"

#define PAGE 4096u

typedef struct fake {
    int regs;
    int deregs;
    int live;
    bool fail;
    uintptr_t last_start;
    size_t last_len;
} fake_t;

static strata_status_t fake_reg(void *ctx, uintptr_t start, size_t len, void **mr_p,
                                uint32_t *lkey_p, uint32_t *rkey_p)
{
    fake_t *f = ctx;

    if (f->fail)
        return STRATA_ERR_IO;
    f->regs++;
    f->live++;
    f->last_start = start;
    f->last_len = len;
    *mr_p = (void *)(uintptr_t)(0x1000 + f->regs);
    *lkey_p = (uint32_t)f->regs;
    *rkey_p = (uint32_t)f->regs + 100;
    return STRATA_OK;
}

static void fake_dereg(void *ctx, void *mr)
{
    fake_t *f = ctx;
    f->deregs++;
    f->live--;
}

static const stt_ib_mrc_ops_t fake_ops = {.reg = fake_reg, .dereg = fake_dereg};

static void test_alignment_and_hits(void **state)
{
    fake_t f = {0};
    stt_ib_mrc_t c;
    stt_ib_mrc_entry_t *a, *b, *d;
    uint8_t *base = (uint8_t *)(uintptr_t)0x10000000;

    stt_ib_mrc_init(&c, &fake_ops, &f, PAGE, 0);
    assert_int_equal(stt_ib_mrc_acquire(&c, base + 100, 3 * PAGE, &a), STRATA_OK);
    assert_int_equal(f.last_start, (uintptr_t)base);
    assert_int_equal(f.last_len, 4 * PAGE);           /* 100 + 3 pages spans 4 pages */
    assert_int_equal(a->refs, 1);
    /* Any sub-range is a hit on the same entry. */
    assert_int_equal(stt_ib_mrc_acquire(&c, base + PAGE, 10, &b), STRATA_OK);
    assert_ptr_equal(a, b);
    assert_int_equal(a->refs, 2);
    assert_int_equal(stt_ib_mrc_acquire(&c, base, 4 * PAGE, &b), STRATA_OK);
    assert_ptr_equal(a, b);
    assert_int_equal(f.regs, 1);
    assert_int_equal(c.hits, 2);
    /* Overlapping but larger: a new registration. */
    assert_int_equal(stt_ib_mrc_acquire(&c, base + 2 * PAGE, 4 * PAGE, &d), STRATA_OK);
    assert_ptr_not_equal(a, d);
    assert_int_equal(f.regs, 2);
    /* Zero bytes still name a page. */
    stt_ib_mrc_entry_t *z;
    assert_int_equal(stt_ib_mrc_acquire(&c, base + 5, 0, &z), STRATA_OK);
    assert_ptr_equal(z, a);
    stt_ib_mrc_release(&c, z);
    stt_ib_mrc_release(&c, b);
    stt_ib_mrc_release(&c, a);
    assert_int_equal(f.deregs, 0);                    /* one reference left */
    stt_ib_mrc_release(&c, a);
    assert_int_equal(f.deregs, 1);                    /* keep 0: gone at once */
    assert_false(stt_ib_mrc_owns(&c, a));
    stt_ib_mrc_release(&c, d);
    assert_int_equal(f.live, 0);
    assert_int_equal(c.count, 0);
    stt_ib_mrc_clear(&c);
}

static void test_keep_lru(void **state)
{
    fake_t f = {0};
    stt_ib_mrc_t c;
    stt_ib_mrc_entry_t *e[4], *again;
    uint8_t *base = (uint8_t *)(uintptr_t)0x20000000;

    stt_ib_mrc_init(&c, &fake_ops, &f, PAGE, 2);
    for (int i = 0; i < 4; i++)
        assert_int_equal(stt_ib_mrc_acquire(&c, base + (size_t)i * 16 * PAGE, PAGE, &e[i]),
                         STRATA_OK);
    /* Use entry 0 again so entry 1 is the least recently used. */
    assert_int_equal(stt_ib_mrc_acquire(&c, base, 8, &again), STRATA_OK);
    stt_ib_mrc_release(&c, again);
    for (int i = 0; i < 4; i++)
        stt_ib_mrc_release(&c, e[i]);
    assert_int_equal(f.live, 2);                      /* two idle ones kept */
    assert_false(stt_ib_mrc_owns(&c, e[1]));         /* the LRU ones went */
    assert_false(stt_ib_mrc_owns(&c, e[2]));
    assert_true(stt_ib_mrc_owns(&c, e[0]));
    assert_true(stt_ib_mrc_owns(&c, e[3]));
    assert_int_equal(stt_ib_mrc_acquire(&c, base + 3 * 16 * PAGE + 9, 1, &again), STRATA_OK);
    assert_ptr_equal(again, e[3]);                    /* a kept entry is a hit */
    stt_ib_mrc_release(&c, again);
    stt_ib_mrc_clear(&c);
    assert_int_equal(f.live, 0);
}

static void test_failures_and_insert(void **state)
{
    fake_t f = {0};
    stt_ib_mrc_t c;
    stt_ib_mrc_entry_t *e, *d;

    stt_ib_mrc_init(&c, &fake_ops, &f, PAGE, 0);
    f.fail = true;
    assert_int_equal(stt_ib_mrc_acquire(&c, (void *)(uintptr_t)0x30000000, 10, &e),
                     STRATA_ERR_IO);
    assert_int_equal(c.count, 0);
    f.fail = false;
    assert_int_equal(stt_ib_mrc_acquire(&c, (void *)(UINTPTR_MAX - 10), 100, &e),
                     STRATA_ERR_INVALID);
    /* More entries than the initial capacity. */
    stt_ib_mrc_entry_t *many[40];
    for (int i = 0; i < 40; i++)
        assert_int_equal(stt_ib_mrc_acquire(&c, (void *)(uintptr_t)(0x40000000 +
                                            (uintptr_t)i * 2 * PAGE), PAGE, &many[i]),
                         STRATA_OK);
    for (int i = 0; i < 40; i++)
        assert_true(stt_ib_mrc_owns(&c, many[i]));
    for (int i = 0; i < 40; i++)
        stt_ib_mrc_release(&c, many[i]);
    assert_int_equal(f.live, 0);
    /* A DMA-BUF registration joins the cache with the caller's range, unaligned. */
    assert_int_equal(stt_ib_mrc_insert(&c, 0x50000010, 100, (void *)1, 7, 8, &d), STRATA_OK);
    assert_int_equal(d->lkey, 7);
    assert_int_equal(d->start, 0x50000010);
    assert_true(stt_ib_mrc_owns(&c, d));
    stt_ib_mrc_release(&c, d);
    assert_int_equal(f.deregs, 41);
    assert_false(stt_ib_mrc_owns(&c, NULL));
    stt_ib_mrc_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alignment_and_hits),
        cmocka_unit_test(test_keep_lru),
        cmocka_unit_test(test_failures_and_insert),
    };
    return cmocka_run_group_tests_name("ib_mrcache", tests, NULL, NULL);
}

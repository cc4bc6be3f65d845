/*
 * The step schedules of algos/sched.h, run for every member of groups of 1..17 over buffers in
 * memory: a send at step i must meet the receive of the same length at step i on its peer;
 * results must equal the reduction (allreduce: uint32 sums, exact; fp32: the same bits on
 * every member), the gathered blocks, or each member's reduced block; nothing outside DST
 * changes; chunkable schedules send at step i+1 what they received at step i; every peer
 * lies in sta_sched_peers' set, which is symmetric. Windows with empty and uneven blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algos/reduce.h"
#include "algos/sched.h"

#define PMAX 17

typedef struct member {
    sta_sched_t s;
    uint8_t *buf[4];            /* indexed by sta_sched_buf_t; [0] unused */
    size_t size[4];
} member_t;

static uint8_t *region_ptr(member_t *m, const sta_sched_region_t *r)
{
    assert_true(r->buf >= STA_SCHED_SRC && r->buf <= STA_SCHED_WORK);
    assert_true(r->off + r->len <= m->size[r->buf]);
    return m->buf[r->buf] + r->off;
}

/* Runs every member's schedule in lockstep (all sends of a step read before any receive of it
 * lands, as the executor guarantees) with the given element type and op. */
static void simulate(member_t *m, int P, strata_dtype_t dt)
{
    const int nsteps = m[0].s.nsteps;
    uint8_t *msg[PMAX];
    size_t msg_len[PMAX];
    int msg_to[PMAX];

    for (int p = 0; p < P; p++) {
        assert_int_equal(m[p].s.nsteps, nsteps);
        if (m[p].s.pre_copy.len > 0) {
            memcpy(region_ptr(&m[p], &m[p].s.pre_copy),
                   m[p].buf[STA_SCHED_SRC] + m[p].s.pre_copy_src_off, m[p].s.pre_copy.len);
        }
    }
    for (int i = 0; i < nsteps; i++) {
        sta_sched_step_t st[PMAX];
        for (int p = 0; p < P; p++) {
            sta_sched_step(&m[p].s, i, &st[p]);
            msg[p] = NULL;
            msg_to[p] = st[p].send_peer;
            if (st[p].send_peer >= 0) {
                msg_len[p] = st[p].send.len;
                msg[p] = malloc(msg_len[p] + 1);
                memcpy(msg[p], region_ptr(&m[p], &st[p].send), msg_len[p]);
            }
        }
        for (int p = 0; p < P; p++) {
            int from = st[p].recv_peer;
            if (from < 0)
                continue;
            if (msg_to[from] != p)
                fail_msg("step %d: member %d receives from %d, which sends to %d", i, p, from,
                         msg_to[from]);
            assert_int_equal(msg_len[from], st[p].recv.len);
            uint8_t *out = region_ptr(&m[p], &st[p].recv);
            size_t n = st[p].recv.len / m[p].s.esize;
            if (st[p].recv_kind == STA_SCHED_RECV_COPY)
                memcpy(out, msg[from], msg_len[from]);
            else if (st[p].recv_kind == STA_SCHED_RECV_REDUCE_SRC)
                sta_reduce(out, m[p].buf[STA_SCHED_SRC] + st[p].src_off, msg[from], n, dt,
                           STRATA_SUM);
            else
                sta_reduce(out, out, msg[from], n, dt, STRATA_SUM);
            msg_to[from] = -2;             /* consumed */
        }
        for (int p = 0; p < P; p++) {
            if (st[p].send_peer >= 0)
                assert_int_equal(msg_to[p], -2);   /* every message was received */
            free(msg[p]);
        }
    }
}

static void members_free(member_t *m, int P)
{
    for (int p = 0; p < P; p++)
        for (int b = 1; b < 4; b++)
            free(m[p].buf[b]);
}

/* A chunkable schedule sends at step i what it received at step i - 1. */
static void check_chunkable(const sta_sched_t *s)
{
    if (!s->chunkable)
        return;
    for (int i = 1; i < s->nsteps; i++) {
        sta_sched_step_t a, b;
        sta_sched_step(s, i - 1, &a);
        sta_sched_step(s, i, &b);
        if (b.send_peer < 0 || b.send.buf == STA_SCHED_SRC || a.recv_peer < 0)
            continue;
        assert_int_equal(b.send.buf, a.recv.buf);
        assert_int_equal(b.send.off, a.recv.off);
        assert_int_equal(b.send.len, a.recv.len);
    }
}

static void check_peers(const sta_sched_t *s)
{
    int peers[STA_SCHED_MAX_PEERS];
    int n = sta_sched_peers(s->size, s->pos, peers, STA_SCHED_MAX_PEERS);
    for (int i = 0; i < s->nsteps; i++) {
        sta_sched_step_t st;
        sta_sched_step(s, i, &st);
        int want[2] = {st.send_peer, st.recv_peer};
        for (int k = 0; k < 2; k++) {
            int found = want[k] < 0;
            for (int j = 0; j < n && !found; j++)
                found = peers[j] == want[k];
            if (!found)
                fail_msg("P=%d pos %d step %d: peer %d is not in the peer set", s->size,
                         s->pos, i, want[k]);
        }
    }
}

static void allreduce_case(sta_sched_kind_t kind, int P, size_t count, strata_dtype_t dt)
{
    member_t m[PMAX];
    size_t es = strata_dtype_size(dt), bytes = count * es;
    uint64_t x = 0x9e3779b97f4a7c15ull + (uint64_t)P * 7919 + count;

    memset(m, 0, sizeof(m));
    for (int p = 0; p < P; p++) {
        assert_int_equal(sta_sched_allreduce(&m[p].s, kind, P, p, bytes, es), STRATA_OK);
        check_chunkable(&m[p].s);
        check_peers(&m[p].s);
        for (int b = 1; b < 4; b++) {
            m[p].size[b] = b == STA_SCHED_WORK ? 0 : bytes;
            m[p].buf[b] = malloc(bytes + 1);
            memset(m[p].buf[b], 0xee, bytes + 1);
        }
        for (size_t i = 0; i < count; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (dt == STRATA_FP32) {
                float f = (float)(int32_t)(x % 2001 - 1000) / 7.0f;
                memcpy(m[p].buf[STA_SCHED_SRC] + i * es, &f, es);
            } else {
                uint32_t u = (uint32_t)x;
                memcpy(m[p].buf[STA_SCHED_SRC] + i * es, &u, es);
            }
        }
    }
    simulate(m, P, dt);
    for (int p = 0; p < P; p++) {
        assert_int_equal(m[p].buf[STA_SCHED_DST][bytes], 0xee);   /* nothing past the end */
        if (dt == STRATA_FP32) {                                    /* bitwise the same */
            if (memcmp(m[p].buf[STA_SCHED_DST], m[0].buf[STA_SCHED_DST], bytes) != 0)
                fail_msg("%s P=%d count %zu: member %d's fp32 result differs from member 0's",
                         sta_sched_kind_name(kind), P, count, p);
            continue;
        }
        for (size_t i = 0; i < count; i++) {
            uint32_t want = 0, got, v;
            for (int q = 0; q < P; q++) {
                memcpy(&v, m[q].buf[STA_SCHED_SRC] + i * es, es);
                want += v;
            }
            memcpy(&got, m[p].buf[STA_SCHED_DST] + i * es, es);
            if (got != want)
                fail_msg("%s P=%d count %zu: member %d element %zu is %u, want %u",
                         sta_sched_kind_name(kind), P, count, p, i, got, want);
        }
    }
    members_free(m, P);
}

static void test_allreduce(void **state)
{
    static const size_t counts[] = {0, 1, 5, 64, 1001};
    for (int P = 1; P <= PMAX; P++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
            allreduce_case(STA_SCHED_RING_ALLREDUCE, P, counts[c], STRATA_UINT32);
            allreduce_case(STA_SCHED_RD_ALLREDUCE, P, counts[c], STRATA_UINT32);
            allreduce_case(STA_SCHED_RING_ALLREDUCE, P, counts[c], STRATA_FP32);
            allreduce_case(STA_SCHED_RD_ALLREDUCE, P, counts[c], STRATA_FP32);
        }
}

/* Block p of a window: uneven lengths, some empty; tiled (contiguous) or with gaps. */
static void window_blocks(int P, int variant, size_t es, size_t *off, size_t *len)
{
    size_t at = 0;
    for (int p = 0; p < P; p++) {
        len[p] = variant == 0 ? 3 * es : ((size_t)(p * 7 + variant) % 5) * es;
        if (variant == 2 && p == P - 1)
            len[p] = 0;
        off[p] = at;
        at += len[p];
    }
}

static void blocks_case(sta_sched_kind_t kind, int P, int variant)
{
    member_t m[PMAX];
    size_t off[PMAX], len[PMAX], es = 4, total;

    window_blocks(P, variant, es, off, len);
    total = off[P - 1] + len[P - 1];
    memset(m, 0, sizeof(m));
    for (int p = 0; p < P; p++) {
        assert_int_equal(sta_sched_blocks(&m[p].s, kind, P, p, off, len, es), STRATA_OK);
        check_chunkable(&m[p].s);
        check_peers(&m[p].s);
        int rs = kind == STA_SCHED_RING_REDUCE_SCATTER;
        m[p].size[STA_SCHED_SRC] = rs ? total : len[p];
        m[p].size[STA_SCHED_DST] = rs ? len[p] : total;
        m[p].size[STA_SCHED_WORK] = rs ? total : 0;
        for (int b = 1; b < 4; b++) {
            m[p].buf[b] = malloc(m[p].size[b] + 1);
            memset(m[p].buf[b], 0xee, m[p].size[b] + 1);
        }
        for (size_t i = 0; i < m[p].size[STA_SCHED_SRC] / es; i++) {
            uint32_t v = (uint32_t)(p * 1000003 + i * 31 + 7);
            memcpy(m[p].buf[STA_SCHED_SRC] + i * es, &v, es);
        }
    }
    simulate(m, P, STRATA_UINT32);
    for (int p = 0; p < P; p++) {
        assert_int_equal(m[p].buf[STA_SCHED_DST][m[p].size[STA_SCHED_DST]], 0xee);
        if (kind == STA_SCHED_RING_REDUCE_SCATTER) {
            for (size_t i = 0; i < len[p] / es; i++) {
                uint32_t want = 0, got, v;
                for (int q = 0; q < P; q++) {
                    memcpy(&v, m[q].buf[STA_SCHED_SRC] + off[p] + i * es, es);
                    want += v;
                }
                memcpy(&got, m[p].buf[STA_SCHED_DST] + i * es, es);
                if (got != want)
                    fail_msg("reduce-scatter P=%d variant %d: member %d element %zu", P,
                             variant, p, i);
            }
            continue;
        }
        for (int q = 0; q < P; q++)
            if (memcmp(m[p].buf[STA_SCHED_DST] + off[q], m[q].buf[STA_SCHED_SRC], len[q]) != 0)
                fail_msg("%s P=%d variant %d: member %d holds a wrong block %d",
                         sta_sched_kind_name(kind), P, variant, p, q);
    }
    members_free(m, P);
}

static void test_blocks(void **state)
{
    for (int P = 1; P <= PMAX; P++)
        for (int v = 0; v < 3; v++) {
            blocks_case(STA_SCHED_RING_ALLGATHER, P, v);
            blocks_case(STA_SCHED_RING_REDUCE_SCATTER, P, v);
            if ((P & (P - 1)) == 0)
                blocks_case(STA_SCHED_RD_ALLGATHER, P, v);
        }
}

static void test_peers_symmetric(void **state)
{
    for (int P = 1; P <= 300; P++)
        for (int p = 0; p < P; p++) {
            int peers[STA_SCHED_MAX_PEERS], back[STA_SCHED_MAX_PEERS];
            int n = sta_sched_peers(P, p, peers, STA_SCHED_MAX_PEERS);
            assert_true(n <= STA_SCHED_MAX_PEERS);
            for (int i = 0; i < n; i++) {
                assert_true(peers[i] != p && peers[i] >= 0 && peers[i] < P);
                assert_true(i == 0 || peers[i - 1] < peers[i]);
                int m = sta_sched_peers(P, peers[i], back, STA_SCHED_MAX_PEERS), found = 0;
                for (int j = 0; j < m; j++)
                    found |= back[j] == p;
                assert_true(found);
            }
        }
    int peers[STA_SCHED_MAX_PEERS];
    assert_int_equal(sta_sched_peers(STA_SCHED_MAX_MEMBERS, 12345, peers, STA_SCHED_MAX_PEERS),
                     2 + 16 - 1);   /* ring neighbours, 16 partners, one of them a neighbour */
}

/* Pieces per step: ceil(most/piece), no piece under the floor, within 1..max; and the
 * pieces sta_sched_piece cuts at that count are never under the floor. */
static void test_npieces(void **state)
{
    const size_t K = 1024;
    (void)state;

    assert_int_equal(sta_sched_npieces(1024 * K, 128 * K, 0, 16), 8);
    assert_int_equal(sta_sched_npieces(1024 * K - 4, 128 * K, 0, 16), 8);
    assert_int_equal(sta_sched_npieces(1024 * K, 128 * K, 256 * K, 16), 4);
    /* a block a little short of 2 floors: one piece, not two under the floor */
    assert_int_equal(sta_sched_npieces(512 * K - 512, 128 * K, 256 * K, 16), 1);
    assert_int_equal(sta_sched_npieces(512 * K, 128 * K, 256 * K, 16), 2);
    assert_int_equal(sta_sched_npieces(100 * K, 128 * K, 256 * K, 16), 1);   /* under both */
    assert_int_equal(sta_sched_npieces(64 * 1024 * K, 128 * K, 256 * K, 16), 16);
    assert_int_equal(sta_sched_npieces(1024 * K, 512 * K, 256 * K, 16), 2);  /* floor moot */
    assert_int_equal(sta_sched_npieces(1024 * K, 0, 256 * K, 16), 1);
    assert_int_equal(sta_sched_npieces(0, 128 * K, 256 * K, 16), 1);
    assert_int_equal(sta_sched_npieces(1024 * K, 1, 0, 0), 1);
    for (size_t most = 4; most < 4 * 1024 * K; most = most * 3 + 4) {
        int n = sta_sched_npieces(most, 4 * K, 64 * K, 16);
        for (int c = 0; c < n && most >= 64 * K; c++) {
            size_t off, len;
            sta_sched_piece(most, 4, n, c, &off, &len);
            assert_true(len >= 64 * K);
        }
    }
}

static void test_bad_args(void **state)
{
    sta_sched_t s;
    size_t off[3] = {0, 4, 8}, len[3] = {4, 4, 4}, gap[2] = {0, 8};
    assert_int_equal(sta_sched_allreduce(&s, STA_SCHED_RING_ALLREDUCE, 0, 0, 8, 4),
                     STRATA_ERR_INVALID);
    assert_int_equal(sta_sched_allreduce(&s, STA_SCHED_RING_ALLREDUCE, 2, 2, 8, 4),
                     STRATA_ERR_INVALID);
    assert_int_equal(sta_sched_allreduce(&s, STA_SCHED_RING_ALLREDUCE, 2, 0, 6, 4),
                     STRATA_ERR_INVALID);
    assert_int_equal(sta_sched_allreduce(&s, STA_SCHED_RING_ALLGATHER, 2, 0, 8, 4),
                     STRATA_ERR_INVALID);
    assert_int_equal(sta_sched_blocks(&s, STA_SCHED_RD_ALLGATHER, 3, 0, off, len, 4),
                     STRATA_ERR_INVALID);                /* not a power of two */
    assert_int_equal(sta_sched_blocks(&s, STA_SCHED_RD_ALLGATHER, 2, 0, gap, len, 4),
                     STRATA_ERR_INVALID);                /* not tiled */
    assert_int_equal(sta_sched_blocks(&s, STA_SCHED_RING_ALLGATHER, 2, 0, off, len, 3),
                     STRATA_ERR_INVALID);                /* not whole elements */
    assert_int_equal(sta_sched_blocks(&s, STA_SCHED_RING_ALLREDUCE, 2, 0, off, len, 4),
                     STRATA_ERR_INVALID);
    size_t po, pl, sum = 0;
    for (int c = 0; c < 5; c++) {
        sta_sched_piece(44, 4, 5, c, &po, &pl);
        assert_int_equal(po, sum);
        assert_int_equal(pl % 4, 0);
        sum += pl;
    }
    assert_int_equal(sum, 44);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_peers_symmetric),
        cmocka_unit_test(test_npieces),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

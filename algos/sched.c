/*
 * Step schedules (see sched.h). The ring's blocks per step come from sta_ring_rs_step and
 * sta_ring_ag_step (algos/exec.h), the recursive doubling's pairing from the same rule as
 * algos/recursive.c: p2 = the largest power of two <= P, r = P - p2; members below 2r fold
 * (even into the next odd one), the others take part as pos - r; participant q's partner at
 * distance d is the member of participant q ^ d.
 */
#include "algos/sched.h"

#include "algos/ctx.h"
#include "algos/exec.h"

static const char *const kind_names[STA_SCHED_KIND_COUNT] = {
    [STA_SCHED_RING_ALLREDUCE] = "ring allreduce",
    [STA_SCHED_RD_ALLREDUCE] = "recursive allreduce",
    [STA_SCHED_RING_ALLGATHER] = "ring allgather",
    [STA_SCHED_RD_ALLGATHER] = "recursive allgather",
    [STA_SCHED_RING_REDUCE_SCATTER] = "ring reduce-scatter",
};

const char *sta_sched_kind_name(sta_sched_kind_t kind)
{
    return (int)kind >= 0 && kind < STA_SCHED_KIND_COUNT ? kind_names[kind] : "?";
}

static int sched_log2(int v)
{
    int k = 0;
    while ((1 << (k + 1)) <= v)
        k++;
    return k;
}

/* Position of recursive-doubling participant q. */
static int rd_member(int q, int r)
{
    return q < r ? 2 * q + 1 : q + r;
}

/* This member's participant index, or -1 for a member folded into its odd neighbour. */
static int rd_participant(int pos, int r)
{
    if (pos < 2 * r)
        return pos % 2 ? pos / 2 : -1;
    return pos - r;
}

static int sched_args_ok(int P, int pos, size_t esize)
{
    return P >= 1 && P <= STA_SCHED_MAX_MEMBERS && pos >= 0 && pos < P && esize > 0;
}

strata_status_t sta_sched_allreduce(sta_sched_t *s, sta_sched_kind_t kind, int P, int pos,
                                    size_t bytes, size_t esize)
{
    sta_sched_t t = {.kind = kind, .size = P, .pos = pos, .esize = esize, .bytes = bytes,
                     .chunkable = 1};

    if (!sched_args_ok(P, pos, esize) || bytes % esize != 0)
        return STRATA_ERR_INVALID;
    if (kind == STA_SCHED_RING_ALLREDUCE) {
        t.nsteps = 2 * (P - 1);
    } else if (kind == STA_SCHED_RD_ALLREDUCE) {
        int p2 = 1 << sched_log2(P);
        t.nsteps = sched_log2(p2) + (P > p2 ? 2 : 0);
    } else {
        return STRATA_ERR_INVALID;
    }
    if (P == 1) {
        t.pre_copy = (sta_sched_region_t){STA_SCHED_DST, 0, bytes};
        t.pre_copy_src_off = 0;
    }
    *s = t;
    return STRATA_OK;
}

strata_status_t sta_sched_blocks(sta_sched_t *s, sta_sched_kind_t kind, int P, int pos,
                                 const size_t *blk_off, const size_t *blk_len, size_t esize)
{
    sta_sched_t t = {.kind = kind, .size = P, .pos = pos, .esize = esize, .blk_off = blk_off,
                     .blk_len = blk_len};

    if (!sched_args_ok(P, pos, esize) || blk_off == NULL || blk_len == NULL)
        return STRATA_ERR_INVALID;
    for (int p = 0; p < P; p++) {
        if (blk_len[p] % esize != 0 || blk_off[p] + blk_len[p] < blk_off[p])
            return STRATA_ERR_INVALID;
        if (blk_off[p] + blk_len[p] > t.bytes)
            t.bytes = blk_off[p] + blk_len[p];
    }
    switch (kind) {
    case STA_SCHED_RING_ALLGATHER:
    case STA_SCHED_RING_REDUCE_SCATTER:
        t.nsteps = P - 1;
        t.chunkable = 1;
        break;
    case STA_SCHED_RD_ALLGATHER:
        if ((P & (P - 1)) != 0)
            return STRATA_ERR_INVALID;
        for (int p = 0; p < P; p++) {
            if (blk_off[p] != (p == 0 ? 0 : blk_off[p - 1] + blk_len[p - 1]))
                return STRATA_ERR_INVALID;
        }
        t.nsteps = sched_log2(P);
        break;
    default:
        return STRATA_ERR_INVALID;
    }
    if (kind == STA_SCHED_RING_REDUCE_SCATTER) {
        if (P == 1) {
            t.pre_copy = (sta_sched_region_t){STA_SCHED_DST, 0, blk_len[0]};
            t.pre_copy_src_off = blk_off[0];
        }
    } else {
        t.pre_copy = (sta_sched_region_t){STA_SCHED_DST, blk_off[pos], blk_len[pos]};
        t.pre_copy_src_off = 0;
    }
    *s = t;
    return STRATA_OK;
}

static sta_sched_region_t region(sta_sched_buf_t buf, size_t off, size_t len)
{
    return (sta_sched_region_t){buf, off, len};
}

/* Block b of the allreduce's vector, in bytes. */
static sta_sched_region_t ar_block(const sta_sched_t *s, sta_sched_buf_t buf, int b)
{
    size_t off, len;
    sta_block(s->bytes / s->esize, s->size, b, &off, &len);
    return region(buf, off * s->esize, len * s->esize);
}

static void step_ring_allreduce(const sta_sched_t *s, int i, sta_sched_step_t *st)
{
    const int P = s->size, p = s->pos;
    int sb, rb;

    st->send_peer = sta_mod(p + 1, P);
    st->recv_peer = sta_mod(p - 1, P);
    if (i < P - 1) {
        sta_ring_rs_step(P, p, i, &sb, &rb);
        st->send = ar_block(s, i == 0 ? STA_SCHED_SRC : STA_SCHED_DST, sb);
        st->recv = ar_block(s, STA_SCHED_DST, rb);
        st->recv_kind = STA_SCHED_RECV_REDUCE_SRC;
        st->src_off = st->recv.off;
    } else {
        sta_ring_ag_step(P, p, i - (P - 1), &sb, &rb);
        st->send = ar_block(s, STA_SCHED_DST, sb);
        st->recv = ar_block(s, STA_SCHED_DST, rb);
    }
}

static void step_rd_allreduce(const sta_sched_t *s, int i, sta_sched_step_t *st)
{
    const int P = s->size, p = s->pos;
    const int p2 = 1 << sched_log2(P), r = P - p2;
    const int q = rd_participant(p, r);
    const sta_sched_region_t all_src = region(STA_SCHED_SRC, 0, s->bytes);
    const sta_sched_region_t all_dst = region(STA_SCHED_DST, 0, s->bytes);

    if (r > 0 && (i == 0 || i == s->nsteps - 1)) {
        if (p >= 2 * r)
            return;                         /* not in a fold pair: idle */
        int fold = i == 0;
        if ((p % 2 == 0) == fold) {         /* even folds in, odd hands the result back */
            st->send_peer = p % 2 ? p - 1 : p + 1;
            st->send = fold ? all_src : all_dst;
        } else {
            st->recv_peer = p % 2 ? p - 1 : p + 1;
            st->recv = all_dst;
            st->recv_kind = fold ? STA_SCHED_RECV_REDUCE_SRC : STA_SCHED_RECV_COPY;
        }
        return;
    }
    if (q < 0)
        return;                             /* folded: idle until the result comes back */
    int k = r > 0 ? i - 1 : i;
    int peer = rd_member(q ^ (1 << k), r);
    int holds = k > 0 || p < 2 * r;         /* DST already holds a partial result */
    st->send_peer = st->recv_peer = peer;
    st->send = holds ? all_dst : all_src;
    st->recv = all_dst;
    st->recv_kind = holds ? STA_SCHED_RECV_REDUCE_OUT : STA_SCHED_RECV_REDUCE_SRC;
}

/* Blocks lo .. lo+n-1 of a tiled allgather, as one region of DST. */
static sta_sched_region_t tiled(const sta_sched_t *s, int lo, int n)
{
    return region(STA_SCHED_DST, s->blk_off[lo],
                  s->blk_off[lo + n - 1] + s->blk_len[lo + n - 1] - s->blk_off[lo]);
}

static void step_blocks(const sta_sched_t *s, int i, sta_sched_step_t *st)
{
    const int P = s->size, p = s->pos;
    int sb, rb;

    if (s->kind == STA_SCHED_RD_ALLGATHER) {
        int d = 1 << i, peer = p ^ d;
        st->send_peer = st->recv_peer = peer;
        st->send = tiled(s, p & ~(d - 1), d);
        st->recv = tiled(s, peer & ~(d - 1), d);
        return;
    }
    st->send_peer = sta_mod(p + 1, P);
    st->recv_peer = sta_mod(p - 1, P);
    if (s->kind == STA_SCHED_RING_ALLGATHER) {
        sta_ring_ag_step(P, p, i, &sb, &rb);
        st->send = region(STA_SCHED_DST, s->blk_off[sb], s->blk_len[sb]);
        st->recv = region(STA_SCHED_DST, s->blk_off[rb], s->blk_len[rb]);
        return;
    }
    sta_ring_rs_step(P, p, i, &sb, &rb);
    st->send = region(i == 0 ? STA_SCHED_SRC : STA_SCHED_WORK, s->blk_off[sb], s->blk_len[sb]);
    /* the last step's block is this member's own: it lands in DST */
    st->recv = i == P - 2 ? region(STA_SCHED_DST, 0, s->blk_len[rb])
                          : region(STA_SCHED_WORK, s->blk_off[rb], s->blk_len[rb]);
    st->recv_kind = STA_SCHED_RECV_REDUCE_SRC;
    st->src_off = s->blk_off[rb];
}

void sta_sched_step(const sta_sched_t *s, int i, sta_sched_step_t *st)
{
    *st = (sta_sched_step_t){.send_peer = -1, .recv_peer = -1};
    if (i < 0 || i >= s->nsteps)
        return;
    switch (s->kind) {
    case STA_SCHED_RING_ALLREDUCE: step_ring_allreduce(s, i, st); break;
    case STA_SCHED_RD_ALLREDUCE: step_rd_allreduce(s, i, st); break;
    default: step_blocks(s, i, st); break;
    }
}

void sta_sched_piece(size_t len, size_t esize, int npieces, int c, size_t *off_p, size_t *len_p)
{
    size_t off, n;
    sta_block(len / esize, npieces, c, &off, &n);
    *off_p = off * esize;
    *len_p = n * esize;
}

int sta_sched_npieces(size_t most, size_t piece, size_t min_piece, int max)
{
    if (piece == 0 || max < 1)
        return 1;
    size_t n = most / piece + (most % piece != 0);
    if (min_piece > 0 && n > most / min_piece)
        n = most / min_piece;
    if (n > (size_t)max)
        n = (size_t)max;
    return n < 1 ? 1 : (int)n;
}

static int peers_add(int *peers, int n, int max, int pos, int q)
{
    if (q == pos)
        return n;
    for (int i = 0; i < n; i++)
        if (peers[i] == q)
            return n;
    if (n < max)
        peers[n++] = q;
    return n;
}

int sta_sched_peers(int P, int pos, int *peers, int max)
{
    int n = 0;

    if (P < 2 || pos < 0 || pos >= P)
        return 0;
    n = peers_add(peers, n, max, pos, sta_mod(pos + 1, P));
    n = peers_add(peers, n, max, pos, sta_mod(pos - 1, P));
    int p2 = 1 << sched_log2(P), r = P - p2, q = rd_participant(pos, r);
    if (pos < 2 * r)
        n = peers_add(peers, n, max, pos, pos % 2 ? pos - 1 : pos + 1);
    if (q >= 0)
        for (int d = 1; d < p2; d <<= 1)
            n = peers_add(peers, n, max, pos, rd_member(q ^ d, r));
    for (int i = 1; i < n; i++)          /* insertion sort: a handful of entries */
        for (int j = i; j > 0 && peers[j - 1] > peers[j]; j--) {
            int t = peers[j];
            peers[j] = peers[j - 1];
            peers[j - 1] = t;
        }
    return n;
}

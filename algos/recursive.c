/*
 * Recursive doubling and binomial trees.
 *
 * Allreduce (any P): p2 = largest power of two <= P, r = P - p2. Members
 * below 2r pair up first: even positions send their buffer to the next odd
 * one, which reduces it and takes part as position/2; members at or above 2r
 * take part as position - r. The p2 participants exchange the whole buffer
 * with the participant at distance 1, 2, 4, ... and reduce; at the end odd
 * members below 2r send the result back to their even partner.
 *   t = Σ_{d=1,2..p2/2} [step(n, srd(d)) + n/γ] + [r > 0]·(2·step(n, sfold) + n/γ)
 * Allgather (P a power of two): step k exchanges the 2^k blocks gathered so far
 * with the member at distance d = 2^k.  t = Σ_{d=1,2..P/2} step(d·n/P, srd(d))
 * Binomial broadcast / reduce rooted at position root, over virtual positions
 * v = (p - root) mod P: ceil(log2 P) rounds of (step(n, s1) [+ n/γ]).
 * step(m, s), srd, sfold, s1: algos/cost_model.c. In node-major order a step at
 * distance d < L (2d dividing L) stays in the node; from d >= L all L ranks of a
 * node cross at once and share its NICs: α_n + (L/R)·m/β_n.
 */
#include "algos/exec.h"
#include <string.h>

#include "algos/reduce.h"

/* Position of participant q (0 <= q < p2) in the group. */
static int rd_member(int q, int r)
{
    return q < r ? 2 * q + 1 : q + r;
}

strata_status_t sta_rd_allreduce(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op)
{
    const int P = g->size, p = g->pos;
    const size_t bytes = count * strata_dtype_size(dtype);
    strata_status_t status;
    void *tmp;
    int p2 = 1;

    if (P == 1)
        return STRATA_OK;
    while (p2 * 2 <= P)
        p2 *= 2;
    const int r = P - p2;
    if ((status = sta_ctx_scratch(ctx, bytes, &tmp)) != STRATA_OK)
        return status;

    int q;   /* participant index, -1 for a member folded into its partner */
    if (p < 2 * r) {
        if (p % 2 == 0) {
            status = sta_sendrecv(ctx, g->ranks[p + 1], buf, bytes, -1, NULL, 0);
            q = -1;
        } else {
            status = sta_sendrecv(ctx, -1, NULL, 0, g->ranks[p - 1], tmp, bytes);
            if (status == STRATA_OK)
                sta_reduce(buf, buf, tmp, count, dtype, op);
            q = p / 2;
        }
        if (status != STRATA_OK)
            return status;
    } else {
        q = p - r;
    }
    if (q >= 0) {
        for (int mask = 1; mask < p2; mask <<= 1) {
            int peer = g->ranks[rd_member(q ^ mask, r)];
            status = sta_sendrecv(ctx, peer, buf, bytes, peer, tmp, bytes);
            if (status != STRATA_OK)
                return status;
            sta_reduce(buf, buf, tmp, count, dtype, op);
        }
    }
    if (p < 2 * r) {
        if (p % 2 == 1)
            status = sta_sendrecv(ctx, g->ranks[p - 1], buf, bytes, -1, NULL, 0);
        else
            status = sta_sendrecv(ctx, -1, NULL, 0, g->ranks[p + 1], buf, bytes);
    }
    return status;
}

strata_status_t sta_rd_allgather(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype)
{
    const int P = g->size, p = g->pos;
    const size_t esz = strata_dtype_size(dtype);

    if ((P & (P - 1)) != 0)
        return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "recursive allgather needs a power of two "
                            "group, not %d", P);
    /* After step k this member holds the 2^(k+1) blocks of its aligned group of positions. */
    for (int mask = 1; mask < P; mask <<= 1) {
        int peer = p ^ mask;
        int mine_lo = p & ~(mask - 1), theirs_lo = peer & ~(mask - 1);
        size_t a, b, alen, blen, tmp_off, tmp_len;
        sta_block(count, P, mine_lo, &a, &tmp_len);
        sta_block(count, P, mine_lo + mask - 1, &tmp_off, &alen);
        size_t mine_bytes = (tmp_off + alen - a) * esz;
        sta_block(count, P, theirs_lo, &b, &tmp_len);
        sta_block(count, P, theirs_lo + mask - 1, &tmp_off, &blen);
        size_t theirs_bytes = (tmp_off + blen - b) * esz;
        strata_status_t status = sta_sendrecv(ctx, g->ranks[peer], (char *)buf + a * esz,
                                              mine_bytes, g->ranks[peer], (char *)buf + b * esz,
                                              theirs_bytes);
        if (status != STRATA_OK)
            return status;
    }
    return STRATA_OK;
}

strata_status_t sta_binomial_bcast(sta_ctx_t *ctx, const sta_group_t *g, int root, void *buf,
                                   size_t count, strata_dtype_t dtype)
{
    const int P = g->size;
    const int v = sta_mod(g->pos - root, P);
    const size_t bytes = count * strata_dtype_size(dtype);
    strata_status_t status;
    int mask = 1;

    while (mask < P) {
        if (v & mask) {
            int from = g->ranks[sta_mod(g->pos - mask, P)];
            if ((status = sta_sendrecv(ctx, -1, NULL, 0, from, buf, bytes)) != STRATA_OK)
                return status;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (v + mask < P) {
            int to = g->ranks[sta_mod(g->pos + mask, P)];
            if ((status = sta_sendrecv(ctx, to, buf, bytes, -1, NULL, 0)) != STRATA_OK)
                return status;
        }
    }
    return STRATA_OK;
}

strata_status_t sta_binomial_reduce(sta_ctx_t *ctx, const sta_group_t *g, int root,
                                    const void *src, void *dst, size_t count,
                                    strata_dtype_t dtype, strata_op_t op)
{
    const int P = g->size;
    const int v = sta_mod(g->pos - root, P);
    const size_t bytes = count * strata_dtype_size(dtype);
    strata_status_t status;
    void *work, *tmp;

    /* Non-roots accumulate in scratch (their dst is not significant); the root in dst. */
    if ((status = sta_ctx_scratch(ctx, 2 * bytes, &tmp)) != STRATA_OK)
        return status;
    work = (v == 0) ? dst : tmp;
    tmp = (char *)tmp + bytes;
    if (work != src && bytes > 0)
        memmove(work, src, bytes);
    for (int mask = 1; mask < P; mask <<= 1) {
        if (v & mask) {
            int to = g->ranks[sta_mod(g->pos - mask, P)];
            return sta_sendrecv(ctx, to, work, bytes, -1, NULL, 0);
        }
        if (v + mask < P) {
            int from = g->ranks[sta_mod(g->pos + mask, P)];
            if ((status = sta_sendrecv(ctx, -1, NULL, 0, from, tmp, bytes)) != STRATA_OK)
                return status;
            sta_reduce(work, work, tmp, count, dtype, op);
        }
    }
    return STRATA_OK;
}

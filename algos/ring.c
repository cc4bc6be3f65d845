/*
 * Ring reduce-scatter and allgather, and allreduce as the two in a row.
 *
 * Terms: P members in ring order, this member at position p, blocks
 * B_i = sta_block(count, P, i). Reduce-scatter step s (0 <= s < P-1): send
 * B_(p-s-1) to p+1, receive B_(p-s-2) from p-1 and reduce it into buf; after
 * P-1 steps buf's B_p is fully reduced. Allgather step s: send B_(p-s), receive
 * B_(p-s-1) into buf. Indices mod P.
 *
 * Cost (n = count * element size; γ reduction rate; step(m, s) is one step of
 * m bytes with s ranks of a node crossing to another, algos/cost_model.c):
 *   reduce-scatter = (P-1)·step(n/P, s) + (P-1)/P·n/γ
 *   allgather      = (P-1)·step(n/P, s)
 *   allreduce      = 2(P-1)·step(n/P, s) + (P-1)/P·n/γ
 * In node-major order (the flat group; rank order when ranks are contiguous per
 * node) one rank per node sends off it each step, s = 1: α_n + (n/P)/β_n.
 */
#include "algos/exec.h"
#include "algos/reduce.h"

strata_status_t sta_ring_reduce_scatter(sta_ctx_t *ctx, const sta_group_t *g, void *buf,
                                        size_t count, strata_dtype_t dtype, strata_op_t op)
{
    const int P = g->size, p = g->pos;
    const size_t esz = strata_dtype_size(dtype);
    const int next = g->ranks[sta_mod(p + 1, P)], prev = g->ranks[sta_mod(p - 1, P)];
    strata_status_t status;
    size_t off0, len0;
    void *tmp;

    if (P == 1)
        return STRATA_OK;
    sta_block(count, P, 0, &off0, &len0);   /* block 0 is the largest */
    if ((status = sta_ctx_scratch(ctx, len0 * esz, &tmp)) != STRATA_OK)
        return status;
    for (int s = 0; s < P - 1; s++) {
        size_t soff, slen, roff, rlen;
        int sb, rb;
        sta_ring_rs_step(P, p, s, &sb, &rb);
        sta_block(count, P, sb, &soff, &slen);
        sta_block(count, P, rb, &roff, &rlen);
        status = sta_sendrecv(ctx, next, (char *)buf + soff * esz, slen * esz, prev, tmp,
                              rlen * esz);
        if (status != STRATA_OK)
            return status;
        char *dst = (char *)buf + roff * esz;
        sta_reduce(dst, dst, tmp, rlen, dtype, op);
    }
    return STRATA_OK;
}

strata_status_t sta_ring_allgather(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                   strata_dtype_t dtype)
{
    const int P = g->size, p = g->pos;
    const size_t esz = strata_dtype_size(dtype);
    const int next = g->ranks[sta_mod(p + 1, P)], prev = g->ranks[sta_mod(p - 1, P)];

    for (int s = 0; s < P - 1; s++) {
        size_t soff, slen, roff, rlen;
        int sb, rb;
        sta_ring_ag_step(P, p, s, &sb, &rb);
        sta_block(count, P, sb, &soff, &slen);
        sta_block(count, P, rb, &roff, &rlen);
        strata_status_t status = sta_sendrecv(ctx, next, (char *)buf + soff * esz, slen * esz,
                                              prev, (char *)buf + roff * esz, rlen * esz);
        if (status != STRATA_OK)
            return status;
    }
    return STRATA_OK;
}

strata_status_t sta_ring_allreduce(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                   strata_dtype_t dtype, strata_op_t op)
{
    strata_status_t status = sta_ring_reduce_scatter(ctx, g, buf, count, dtype, op);
    if (status != STRATA_OK)
        return status;
    return sta_ring_allgather(ctx, g, buf, count, dtype);
}

/*
 * Pipelined chains: broadcast flows root -> root+1 -> ... -> root+P-1, reduce
 * flows the other way, in chunks of c = STA_PIPELINE_CHUNK bytes so every
 * link works at once. A middle member forwards chunk k while receiving k+1.
 *   broadcast t = (P-2+k)·step(min(n,c), s1),  k = max(1, ceil(n/c))
 *   reduce    t = (P-2+k)·(step(min(n,c), s1) + min(n,c)/γ)
 * The chain runs in node-major order, so one rank per node sends off it: with
 * N > 1, step(m, s1) = α_n + m/β_n (algos/cost_model.c).
 */
#include <string.h>

#include "algos/exec.h"
#include "algos/reduce.h"

static void chain_chunk(size_t bytes, size_t chunk, size_t k, size_t *off_p, size_t *len_p)
{
    *off_p = k * chunk;
    *len_p = bytes - *off_p < chunk ? bytes - *off_p : chunk;
}

strata_status_t sta_chain_bcast(sta_ctx_t *ctx, const sta_group_t *g, int root, void *buf,
                                size_t count, strata_dtype_t dtype)
{
    const int P = g->size;
    const int v = sta_mod(g->pos - root, P);
    const size_t esz = strata_dtype_size(dtype);
    const size_t chunk = STA_PIPELINE_CHUNK / esz * esz;
    const size_t bytes = count * esz;
    const size_t nchunks = (bytes + chunk - 1) / chunk;
    const int next = v + 1 < P ? g->ranks[sta_mod(g->pos + 1, P)] : -1;
    const int prev = v > 0 ? g->ranks[sta_mod(g->pos - 1, P)] : -1;
    char *b = buf;
    strata_status_t status = STRATA_OK;

    if (P == 1 || bytes == 0)
        return STRATA_OK;
    size_t off, len, noff, nlen;
    if (prev >= 0) {
        chain_chunk(bytes, chunk, 0, &off, &len);
        if ((status = sta_sendrecv(ctx, -1, NULL, 0, prev, b + off, len)) != STRATA_OK)
            return status;
    }
    for (size_t k = 0; k < nchunks; k++) {
        chain_chunk(bytes, chunk, k, &off, &len);
        int from = (prev >= 0 && k + 1 < nchunks) ? prev : -1;
        if (from >= 0)
            chain_chunk(bytes, chunk, k + 1, &noff, &nlen);
        else
            noff = nlen = 0;
        if (next < 0 && from < 0)
            continue;
        status = sta_sendrecv(ctx, next, b + off, len, from, b + noff, nlen);
        if (status != STRATA_OK)
            return status;
    }
    return STRATA_OK;
}

strata_status_t sta_chain_reduce(sta_ctx_t *ctx, const sta_group_t *g, int root, const void *src,
                                 void *dst, size_t count, strata_dtype_t dtype, strata_op_t op)
{
    const int P = g->size;
    const int v = sta_mod(g->pos - root, P);
    const size_t esz = strata_dtype_size(dtype);
    const size_t chunk = STA_PIPELINE_CHUNK / esz * esz;
    const size_t bytes = count * esz;
    const size_t nchunks = (bytes + chunk - 1) / chunk;
    /* Data flows from the chain's tail (v = P-1) toward the root (v = 0). */
    const int down = v > 0 ? g->ranks[sta_mod(g->pos - 1, P)] : -1;        /* toward root */
    const int up = v + 1 < P ? g->ranks[sta_mod(g->pos + 1, P)] : -1;      /* from the tail */
    strata_status_t status;
    char *scratch;

    if (P == 1) {
        if (dst != src && bytes > 0)
            memmove(dst, src, bytes);
        return STRATA_OK;
    }
    if (bytes == 0)
        return STRATA_OK;
    /* Two received chunks and two outgoing partial results alternate (double buffering). */
    if ((status = sta_ctx_scratch(ctx, 4 * chunk, (void **)&scratch)) != STRATA_OK)
        return status;
    char *in[2] = {scratch, scratch + chunk};
    char *out[2] = {scratch + 2 * chunk, scratch + 3 * chunk};
    size_t off, len;

    if (up >= 0) {
        chain_chunk(bytes, chunk, 0, &off, &len);
        if ((status = sta_sendrecv(ctx, -1, NULL, 0, up, in[0], len)) != STRATA_OK)
            return status;
    }
    for (size_t k = 0; k < nchunks; k++) {
        chain_chunk(bytes, chunk, k, &off, &len);
        const char *mine = (const char *)src + off;
        char *res = (v == 0) ? (char *)dst + off : out[k & 1];
        if (up >= 0)
            sta_reduce(res, mine, in[k & 1], len / esz, dtype, op);
        else if (res != mine)
            memcpy(res, mine, len);
        size_t noff = 0, nlen = 0;
        int from = (up >= 0 && k + 1 < nchunks) ? up : -1;
        if (from >= 0)
            chain_chunk(bytes, chunk, k + 1, &noff, &nlen);
        if (down < 0 && from < 0)
            continue;
        status = sta_sendrecv(ctx, down, res, len, from, in[(k + 1) & 1], nlen);
        if (status != STRATA_OK)
            return status;
    }
    return STRATA_OK;
}

/*
 * The intra-node tier: ranks of one node exchange data through one shared
 * memory segment. Each local rank owns a slot of two halves (double
 * buffering) and two counters on their own cache lines: `written`, the rounds
 * whose data it has put in its slot, and `done`, the rounds it has finished
 * reading. Round r uses half r % 2; before writing round r a rank waits until
 * every rank finished round r - 2, then publishes, then waits only for the
 * writers it reads. All local ranks run the same sequence of rounds, so one
 * barrier per round suffices and no rank overwrites data still being read.
 *
 * Outputs of at least sta_reduce_nt_min_bytes are written to the user's
 * buffer with streaming stores (nothing reads them again in the call), unless
 * they overlap the input (in place: the call just brought those lines into the
 * caches, and plain stores to them are faster).
 *
 * Waits back off (spin, yield, sleep), keep the context's network work moving
 * (ctx->progress, while a pipelined chunk is in flight), watch the other local ranks' pids
 * (a dead one fails the operation with STRATA_ERR_REMOTE at once) and give up
 * at the context's timeout.
 *
 * Terms: L local ranks, c = STRATA_SHM_CHUNK bytes per slot half.
 * Costs (α_s per round, β_s memcpy bandwidth, γ reduction bandwidth):
 *   reduce_scatter: n/(c) rounds; each rank copies n in, reduces n/L from L slots.
 *   allgather: each rank copies its n/L in and n out.
 *   reduce: every rank copies n in, the root reduces n from L slots.
 *   bcast: the root copies n in, every other rank n out.
 */
#ifndef STA_NODE_SHM_H
#define STA_NODE_SHM_H

#include "algos/ctx.h"

/* Bytes the segment needs for local_size ranks with chunk-byte slot halves. */
size_t sta_node_segment_size(int local_size, size_t chunk_bytes);

/* Formats a fresh segment (the creator, before anyone attaches). */
void sta_node_segment_format(void *base, int local_size, size_t chunk_bytes);

/* Opens this rank's view; records its pid for the others' liveness checks. */
strata_status_t sta_node_open(void *base, size_t size, int local_rank, int local_size,
                              sta_node_t **node_p);
void sta_node_close(sta_node_t *node);

/*
 * Intra-node reduce-scatter: every local rank gives `count` elements of src;
 * local rank i ends with block i (sta_block(count, L, i)) of the reduction,
 * written at the same offset of dst (dst may equal src).
 */
strata_status_t sta_node_reduce_scatter(sta_ctx_t *ctx, const void *src, void *dst,
                                        size_t count, strata_dtype_t dtype, strata_op_t op);

/*
 * Intra-node allreduce of a small buffer in one round: every local rank
 * publishes all of src, then each reduces every slot, in local-rank order
 * (so every rank computes the same bits), into dst. For count * size up to
 * STA_NODE_SMALL_BYTES; one barrier instead of the two of reduce-scatter +
 * allgather. Up to 56 bytes the payload travels in one cache line with its
 * round number, so polling for it brings it.  t = α_s + n/β_s + (L+1)/3·n/γ
 */
#define STA_NODE_SMALL_BYTES 4096   /* 2-rank calls at <= 2 KiB lost to OpenMPI's 0.2-0.5 µs */
strata_status_t sta_node_allreduce_small(sta_ctx_t *ctx, const void *src, void *dst,
                                         size_t count, strata_dtype_t dtype, strata_op_t op);

/*
 * Intra-node allreduce of any size. In place (dst == src), or with more ranks than cores
 * and one piece per block: a reduce-scatter into dst, then an allgather (plain stores in
 * place). Otherwise the fused pass, piece by piece, one round per piece:
 * each rank copies its pieces of the other ranks' blocks into its slot, reduces its own
 * block's piece into its other half, and in the next round every rank copies all reduced
 * pieces into dst (streaming stores when the buffer outgrows the caches). Memory sees
 * src read once and dst written once per rank; the slots stay in cache.
 *   t = (ceil(n/c) + 1)·α_s + (L-1)/L·n/β_s + (L+1)/3·(n/L)/γ + n/β_s
 * ((L+1)/3: one pass over L inputs moves L + 1 streams, a pair's γ three; cost_model.c).
 */
strata_status_t sta_node_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                   strata_dtype_t dtype, strata_op_t op);

/* Intra-node allgather: block i of buf is valid on local rank i; afterwards buf is on all. */
strata_status_t sta_node_allgather(sta_ctx_t *ctx, void *buf, size_t count,
                                   strata_dtype_t dtype);

/* Reduces every local rank's src into dst on local rank `root` (dst may equal src). */
strata_status_t sta_node_reduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                strata_dtype_t dtype, strata_op_t op, int root);

/* Copies buf of local rank `root` into buf of every local rank. */
strata_status_t sta_node_bcast(sta_ctx_t *ctx, void *buf, size_t count, strata_dtype_t dtype,
                               int root);

/* Every local rank reached this point. */
strata_status_t sta_node_barrier(sta_ctx_t *ctx);

#endif /* STA_NODE_SHM_H */

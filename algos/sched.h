/*
 * Step schedules: the ring and recursive-doubling collectives as a list of steps, one list
 * per group member, for an executor that runs them without blocking (the CollNet,
 * plugin/collnet_exec.c). Pure logic: no transport, no memory touched; unit-tested by running
 * every member's schedule over buffers in memory (tests/unit/test_sched.c).
 *
 * Terms: a group of P members in positions 0..P-1; this member is at `pos`. Three buffers:
 * SRC (this member's input, only read), DST (the output) and WORK (scratch the executor
 * provides, the size of the whole vector; only the ring reduce-scatter uses it). A step sends
 * one region to one member and receives one region from one member (either may be absent);
 * what arrives is either the result (COPY) or one more contribution:
 *   REDUCE_SRC  out = incoming op SRC[src_off ..]   the block's first reduction here
 *   REDUCE_OUT  out = out op incoming               out already holds a partial result
 * REDUCE_SRC can land straight in `out` (SRC is another buffer); REDUCE_OUT cannot (out is
 * an operand), so the executor stages it. Reductions here are commutative, so every member
 * computes the same bits whatever the order of its two operands.
 *
 * Chunking: when sched.chunkable is set, the region a member sends at step s+1 is the region
 * it received at step s (same buffer offset and length) and every step's regions have the
 * same length as the previous step's receive, so an executor may split every region into the
 * same number of element-aligned pieces and let piece c of step s+1 go as soon as piece c of
 * step s is in; sta_sched_piece gives the split. Sends and receives between two members match
 * when both post them in one order, (step, piece) or (piece, step): either posts every
 * piece's step s-1 before its step s.
 *
 * Schedules (costs: algos/cost_model.c, the same formulas at L = 1):
 *   ring allreduce      2(P-1) steps: reduce-scatter into DST, then allgather within DST
 *   recursive allreduce fold (odd P), log2(p2) full-vector exchanges, unfold; as
 *                       sta_rd_allreduce (algos/recursive.c) pairs its members
 *   ring allgather      P-1 steps over DST (SRC copied in first, see pre_copy)
 *   recursive allgather log2(P) steps, P a power of two, blocks in position order and
 *                       contiguous in DST
 *   ring reduce-scatter P-1 steps; partial blocks in WORK, the last step into DST
 * Blocks of the allgather and reduce-scatter are given per position (any sizes, zero
 * included), so a window of NCCL's rank-major buffer maps onto them directly.
 */
#ifndef STA_SCHED_H
#define STA_SCHED_H

#include <stddef.h>

#include "strata/status.h"

typedef enum sta_sched_buf {
    STA_SCHED_NONE = 0,
    STA_SCHED_SRC,
    STA_SCHED_DST,
    STA_SCHED_WORK,
} sta_sched_buf_t;

typedef enum sta_sched_recv {
    STA_SCHED_RECV_COPY = 0,
    STA_SCHED_RECV_REDUCE_SRC,
    STA_SCHED_RECV_REDUCE_OUT,
} sta_sched_recv_t;

typedef enum sta_sched_kind {
    STA_SCHED_RING_ALLREDUCE = 0,
    STA_SCHED_RD_ALLREDUCE,
    STA_SCHED_RING_ALLGATHER,
    STA_SCHED_RD_ALLGATHER,
    STA_SCHED_RING_REDUCE_SCATTER,
    STA_SCHED_KIND_COUNT
} sta_sched_kind_t;

/* A byte range of one buffer. */
typedef struct sta_sched_region {
    sta_sched_buf_t buf;
    size_t off;
    size_t len;
} sta_sched_region_t;

typedef struct sta_sched_step {
    int send_peer;                  /* position, or -1: nothing to send */
    int recv_peer;                  /* position, or -1: nothing to receive */
    sta_sched_region_t send;
    sta_sched_region_t recv;        /* where the result lands: DST or WORK */
    sta_sched_recv_t recv_kind;
    size_t src_off;                 /* REDUCE_SRC: where this member's contribution is in SRC */
} sta_sched_step_t;

/* Largest group a schedule describes: the step counts stay far from INT_MAX. */
#define STA_SCHED_MAX_MEMBERS 65536

typedef struct sta_sched {
    sta_sched_kind_t kind;
    int size, pos;
    int nsteps;
    int chunkable;                  /* see above */
    size_t esize;                   /* pieces are whole elements of this size */
    size_t bytes;                   /* allreduce: the vector; allgather, reduce-scatter: the
                                       sum of the blocks (DST resp. SRC and WORK) */
    /* allgather / reduce-scatter: each position's block, bytes, in the caller's arrays */
    const size_t *blk_off, *blk_len;
    /* SRC bytes copied into DST before the first step (allgather: this member's block);
       len 0: none */
    sta_sched_region_t pre_copy;
    size_t pre_copy_src_off;
} sta_sched_t;

/* "ring allreduce", ...; "?" out of range. */
const char *sta_sched_kind_name(sta_sched_kind_t kind);

/*
 * An allreduce of `bytes` (a multiple of esize) over P members: kind RING_ALLREDUCE or
 * RD_ALLREDUCE. Blocks of the ring are sta_block's split of the elements. STRATA_ERR_INVALID
 * for P outside 1..STA_SCHED_MAX_MEMBERS, pos outside 0..P-1, esize 0 or bytes not a multiple
 * of it; *s is written only on success.
 */
strata_status_t sta_sched_allreduce(sta_sched_t *s, sta_sched_kind_t kind, int P, int pos,
                                    size_t bytes, size_t esize);

/*
 * An allgather (RING_ALLGATHER, RD_ALLGATHER) or reduce-scatter (RING_REDUCE_SCATTER) of the
 * blocks blk_off[p], blk_len[p] (bytes, one per position, kept by reference: they must
 * outlive the schedule). Allgather: SRC holds this member's block (at offset 0), DST all of
 * them. Reduce-scatter: SRC and WORK hold all blocks, DST gets this member's block (at
 * offset 0). RD_ALLGATHER needs P a power of two and blocks that tile DST in position order
 * (blk_off[p+1] = blk_off[p] + blk_len[p], blk_off[0] = 0). Block lengths must be multiples
 * of esize. STRATA_ERR_INVALID otherwise.
 */
strata_status_t sta_sched_blocks(sta_sched_t *s, sta_sched_kind_t kind, int P, int pos,
                                 const size_t *blk_off, const size_t *blk_len, size_t esize);

/* Step i (0 <= i < nsteps) of the schedule. */
void sta_sched_step(const sta_sched_t *s, int i, sta_sched_step_t *step);

/*
 * Piece c of npieces of a region of len bytes: offset and length within the region, whole
 * elements of esize (sta_block over the elements; empty pieces when there are fewer elements
 * than pieces).
 */
void sta_sched_piece(size_t len, size_t esize, int npieces, int c, size_t *off_p,
                     size_t *len_p);

/*
 * Pieces a chunkable step is cut into, its largest region `most` bytes: ceil(most/piece),
 * but fewer where a piece would fall below min_piece (at most most/min_piece of them; 0: no
 * such floor), within 1..max. piece 0 gives 1.
 */
int sta_sched_npieces(size_t most, size_t piece, size_t min_piece, int max);

/*
 * Every position this member exchanges data with in any schedule of a group of P (ring
 * neighbours, recursive-doubling and fold partners), sorted, without pos itself; the relation
 * is symmetric (q is in pos's set exactly when pos is in q's). Writes at most max entries and
 * returns the count (<= STA_SCHED_MAX_PEERS).
 */
#define STA_SCHED_MAX_PEERS 40
int sta_sched_peers(int P, int pos, int *peers, int max);

#endif /* STA_SCHED_H */

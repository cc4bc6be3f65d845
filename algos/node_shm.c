/* The intra-node shared-memory tier (see node_shm.h for the protocol). */
#include "algos/node_shm.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "algos/reduce.h"
#include "util/log.h"
#include "util/time.h"

#define NODE_MAGIC 0x53544e4f44453031ull     /* "STNODE01" */
#define NODE_LINE 64                         /* x86-64 cache line */
#define NODE_LIVENESS_NS 50000000ull         /* look for dead local ranks every 50 ms of waiting */
#define NODE_FUTEX_NS 1000000ull             /* a blocked wait re-checks time and liveness each 1 ms */
#define NODE_TINY_BYTES (NODE_LINE - sizeof(uint64_t))   /* a tiny round's payload: its line less the seq */

/*
 * A tiny round's line: the payload and the round that wrote it (round + 1) in one cache line,
 * so a reader's poll brings the data with it (one cross-core transfer, not two). Two per rank,
 * by round parity, like the slot halves.
 */
typedef struct node_tiny {
    uint64_t seq;
    char data[NODE_TINY_BYTES];
} node_tiny_t;

typedef struct node_ctl {
    uint64_t written;
    char pad0[NODE_LINE - sizeof(uint64_t)];
    uint64_t done;
    char pad1[NODE_LINE - sizeof(uint64_t)];
    int32_t pid;
    uint32_t event;       /* futex word: bumped after every publish of written, done or a tiny seq */
    uint32_t sleepers;    /* ranks blocked (or about to block) on event */
    char pad2[NODE_LINE - 3 * sizeof(uint32_t)];
    node_tiny_t tiny[2];
} node_ctl_t;

typedef struct node_hdr {
    uint64_t magic;
    uint64_t local_size;
    uint64_t chunk_bytes;
    char pad[NODE_LINE - 3 * sizeof(uint64_t)];
} node_hdr_t;

struct sta_node {
    node_ctl_t *ctl;
    char *slots;
    size_t chunk;
    int me;
    int nlocal;
    uint64_t round;
    uint64_t all_written;   /* every local rank is known to have published round all_written - 1 */
    size_t round_bytes;     /* what a round of the current call moves (node_expect) */
};

_Static_assert(sizeof(node_ctl_t) == 5 * NODE_LINE, "node_ctl_t layout");
_Static_assert(sizeof(node_tiny_t) == NODE_LINE, "node_tiny_t layout");
_Static_assert(sizeof(node_hdr_t) == NODE_LINE, "node_hdr_t layout");

static size_t chunk_round(size_t chunk_bytes)
{
    return (chunk_bytes + NODE_LINE - 1) / NODE_LINE * NODE_LINE;
}

size_t sta_node_segment_size(int local_size, size_t chunk_bytes)
{
    return sizeof(node_hdr_t) + (size_t)local_size * sizeof(node_ctl_t) +
           (size_t)local_size * 2 * chunk_round(chunk_bytes);
}

void sta_node_segment_format(void *base, int local_size, size_t chunk_bytes)
{
    node_hdr_t *hdr = base;
    memset(base, 0, sizeof(node_hdr_t) + (size_t)local_size * sizeof(node_ctl_t));
    hdr->local_size = (uint64_t)local_size;
    hdr->chunk_bytes = chunk_round(chunk_bytes);
    __atomic_store_n(&hdr->magic, NODE_MAGIC, __ATOMIC_RELEASE);
}

strata_status_t sta_node_open(void *base, size_t size, int local_rank, int local_size,
                              sta_node_t **node_p)
{
    node_hdr_t *hdr = base;

    if (__atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE) != NODE_MAGIC ||
        hdr->local_size != (uint64_t)local_size ||
        size < sta_node_segment_size(local_size, hdr->chunk_bytes)) {
        STU_WARN("node segment: bad header (magic %llx, %llu ranks, want %d)",
                 (unsigned long long)hdr->magic, (unsigned long long)hdr->local_size,
                 local_size);
        return STRATA_ERR_INTERNAL;
    }
    sta_node_t *node = calloc(1, sizeof(*node));
    if (node == NULL)
        return STRATA_ERR_NO_MEMORY;
    node->ctl = (node_ctl_t *)((char *)base + sizeof(node_hdr_t));
    node->slots = (char *)(node->ctl + local_size);
    node->chunk = hdr->chunk_bytes;
    node->me = local_rank;
    node->nlocal = local_size;
    __atomic_store_n(&node->ctl[local_rank].pid, (int32_t)getpid(), __ATOMIC_RELEASE);
    *node_p = node;
    return STRATA_OK;
}

void sta_node_close(sta_node_t *node)
{
    free(node);
}

static char *node_half(const sta_node_t *node, int k, uint64_t round)
{
    return node->slots + ((size_t)k * 2 + (round & 1)) * node->chunk;
}

/*
 * A local rank that no longer exists fails the wait at once, unless it reached
 * the counter first: a rank may publish its last round, finish and exit
 * between our look at the counter and this check.
 */
static strata_status_t node_check_alive(sta_ctx_t *ctx, sta_node_t *node, int k,
                                        const uint64_t *c, uint64_t target)
{
    pid_t pid = (pid_t)__atomic_load_n(&node->ctl[k].pid, __ATOMIC_ACQUIRE);
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH &&
        __atomic_load_n(c, __ATOMIC_ACQUIRE) < target)
        return sta_ctx_fail(ctx, STRATA_ERR_REMOTE, "local rank %d (pid %d) died", k, (int)pid);
    return STRATA_OK;
}

/*
 * Blocks until rank k's event word moves (or NODE_FUTEX_NS passes). The
 * sleepers count and sequentially consistent accesses pair with node_signal:
 * either the writer sees us and wakes us, or we see its new counter first.
 */
static void node_block(sta_node_t *node, int k, const uint64_t *c, uint64_t target)
{
    node_ctl_t *ctl = &node->ctl[k];
    uint32_t e = __atomic_load_n(&ctl->event, __ATOMIC_SEQ_CST);

    __atomic_add_fetch(&ctl->sleepers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(c, __ATOMIC_SEQ_CST) < target) {
        struct timespec ts = {0, (long)NODE_FUTEX_NS};
        syscall(SYS_futex, &ctl->event, FUTEX_WAIT, e, &ts, NULL, 0);
    }
    __atomic_sub_fetch(&ctl->sleepers, 1, __ATOMIC_SEQ_CST);
}

/* After publishing a counter: wake the ranks blocked on ours, if any (no syscall otherwise). */
static void node_signal(sta_node_t *node)
{
    node_ctl_t *ctl = &node->ctl[node->me];

    __atomic_add_fetch(&ctl->event, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ctl->sleepers, __ATOMIC_SEQ_CST) > 0)
        syscall(SYS_futex, &ctl->event, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Rank k's counter at byte offset `field` of its node_ctl_t (written, done, a tiny seq). */
static const uint64_t *node_counter(const sta_node_t *node, size_t field, int k)
{
    return (const uint64_t *)(const void *)((const char *)&node->ctl[k] + field);
}

/* Waits until the counter at offset `field` of every rank in [lo, hi) reaches target. */
static strata_status_t node_wait(sta_ctx_t *ctx, sta_node_t *node, size_t field, int lo, int hi,
                                 uint64_t target)
{
    sta_backoff_t b;
    int k = lo;

    /* Most waits are already satisfied: no clock read for them. */
    while (k < hi && __atomic_load_n(node_counter(node, field, k), __ATOMIC_ACQUIRE) >= target)
        k++;
    if (k == hi)
        return STRATA_OK;
    sta_backoff_start(&b, ctx);
    sta_backoff_expect(&b, node->round_bytes);
    uint64_t next_check = b.start_ns + NODE_LIVENESS_NS;   /* no syscall on a short wait */
    while (k < hi) {
        const uint64_t *c = node_counter(node, field, k);
        if (__atomic_load_n(c, __ATOMIC_ACQUIRE) >= target) {
            k++;
            continue;
        }
        if (ctx->progress != NULL) {
            strata_status_t status = ctx->progress(ctx, ctx->progress_arg);
            if (status != STRATA_OK)
                return status;
        }
        strata_status_t expired;
        if (sta_backoff_should_block(&b, &expired)) {
            sta_backoff_idle(&b);
            node_block(node, k, c, target);
        }
        else if (sta_backoff_step(&b) != STRATA_OK)
            expired = STRATA_ERR_TIMEOUT;
        if (expired != STRATA_OK)
            return sta_ctx_fail(ctx, STRATA_ERR_TIMEOUT,
                                "local rank %d did not reach shared-memory round %llu in time",
                                k, (unsigned long long)target);
        uint64_t now = stu_time_ns();
        if (now >= next_check) {
            next_check = now + NODE_LIVENESS_NS;
            strata_status_t status = node_check_alive(ctx, node, k, c, target);
            if (status != STRATA_OK)
                return status;
        }
    }
    return STRATA_OK;
}

/*
 * Before writing round r into half r % 2, every rank must have finished round
 * r - 2. A rank publishes round r - 1 only after it finished round r - 2, so
 * when the last round waited for every writer, nothing is left to check (and
 * the peers' `done` lines stay in their caches).
 */
static strata_status_t round_begin(sta_ctx_t *ctx, sta_node_t *node)
{
    if (node->round < 2 || node->all_written >= node->round)
        return STRATA_OK;
    return node_wait(ctx, node, offsetof(node_ctl_t, done), 0, node->nlocal, node->round - 1);
}

static void round_publish(sta_node_t *node)
{
    __atomic_store_n(&node->ctl[node->me].written, node->round + 1, __ATOMIC_SEQ_CST);
    node_signal(node);
}

static strata_status_t round_wait_writers(sta_ctx_t *ctx, sta_node_t *node, int lo, int hi)
{
    strata_status_t status = node_wait(ctx, node, offsetof(node_ctl_t, written), lo, hi,
                                       node->round + 1);
    if (status == STRATA_OK && lo == 0 && hi == node->nlocal)
        node->all_written = node->round + 1;
    return status;
}

static void round_end(sta_node_t *node)
{
    __atomic_store_n(&node->ctl[node->me].done, node->round + 1, __ATOMIC_SEQ_CST);
    node_signal(node);
    node->round++;
}

static size_t piece_len(size_t block_len, size_t t, size_t piece)
{
    size_t start = t * piece;
    if (start >= block_len)
        return 0;
    return block_len - start < piece ? block_len - start : piece;
}

/*
 * What each round of a call of `bytes` moves, at most a slot half: a wait for the peers'
 * round yields about as long as their copies take before it sleeps (sta_backoff_expect).
 */
static void node_expect(sta_node_t *node, size_t bytes)
{
    node->round_bytes = STU_MIN(bytes, node->chunk);
}

/* One round that carries nothing: when it returns, every local rank finished the rounds before. */
static strata_status_t node_round_barrier(sta_ctx_t *ctx, sta_node_t *node)
{
    strata_status_t status;

    if ((status = round_begin(ctx, node)) != STRATA_OK)
        return status;
    round_publish(node);
    if ((status = round_wait_writers(ctx, node, 0, node->nlocal)) != STRATA_OK)
        return status;
    round_end(node);
    return STRATA_OK;
}

/*
 * Whether a call's output goes to memory with streaming stores: when it is past the caches
 * and does not overlap the input. In place, the output's lines are the input's, which this
 * call just read into the caches: a streaming store to a cached line evicts it first, and
 * measured 1.3-1.4x slower than plain stores (2 ranks, 8 and 32 MiB in place).
 */
static int node_stream_output(const void *src, size_t src_bytes, const void *dst,
                              size_t dst_bytes)
{
    const char *s = src, *d = dst;
    if (dst_bytes < sta_reduce_nt_min_bytes())
        return 0;
    return d + dst_bytes <= s || s + src_bytes <= d;
}

/* Copies a piece out of the segment into the caller's buffer, streaming when asked. */
static void node_copy_out(void *to, const void *from, size_t bytes, int stream)
{
    if (stream)
        sta_copy_stream(to, from, bytes);
    else
        memcpy(to, from, bytes);
}

/*
 * Opens round r of piece t of a block-wise reduction: copies our piece t of
 * every other rank's block into our half r (slot j for block j), publishes it,
 * and waits for every rank's.
 */
static strata_status_t node_scatter_in(sta_ctx_t *ctx, sta_node_t *node, const void *src,
                                       size_t count, size_t esz, size_t t, size_t piece)
{
    const int L = node->nlocal, me = node->me;
    strata_status_t status;

    if ((status = round_begin(ctx, node)) != STRATA_OK)
        return status;
    char *mine = node_half(node, me, node->round);
    for (int j = 0; j < L; j++) {
        size_t off, len;
        sta_block(count, L, j, &off, &len);
        size_t n = piece_len(len, t, piece);
        if (j != me && n > 0)
            memcpy(mine + (size_t)j * piece * esz, (const char *)src + (off + t * piece) * esz,
                   n * esz);
    }
    round_publish(node);
    return round_wait_writers(ctx, node, 0, L);
}

/*
 * Reduces piece t of our block into out: our own src (no trip through shm)
 * and the other ranks' slot `me` of the open round, in local-rank order.
 */
static void node_reduce_piece(sta_node_t *node, const void *src, void *out, size_t count,
                              strata_dtype_t dtype, strata_op_t op, size_t t, size_t piece,
                              int stream)
{
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal, me = node->me;
    const void *srcs[L];
    size_t off, len;

    sta_block(count, L, me, &off, &len);
    size_t n = piece_len(len, t, piece);
    if (n == 0)
        return;
    srcs[0] = (const char *)src + (off + t * piece) * esz;
    for (int k = 0, s = 1; k < L; k++)
        if (k != me)
            srcs[s++] = node_half(node, k, node->round) + (size_t)me * piece * esz;
    if (stream)
        sta_reduce_n_stream(out, srcs, L, n, dtype, op);
    else
        sta_reduce_n(out, srcs, L, n, dtype, op);
}

strata_status_t sta_node_reduce_scatter(sta_ctx_t *ctx, const void *src, void *dst,
                                        size_t count, strata_dtype_t dtype, strata_op_t op)
{
    sta_node_t *node = ctx->node_tier;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal, me = node->me;
    strata_status_t status;

    if (L == 1) {
        if (dst != src && count > 0)
            memcpy(dst, src, count * esz);
        return STRATA_OK;
    }
    size_t piece = node->chunk / (size_t)L / esz;
    size_t off0, len0, my_off, my_len;
    sta_block(count, L, 0, &off0, &len0);
    sta_block(count, L, me, &my_off, &my_len);
    size_t rounds = (len0 + piece - 1) / piece;
    int stream = node_stream_output(src, count * esz, (char *)dst + my_off * esz, my_len * esz);
    node_expect(node, count * esz);
    for (size_t t = 0; t < rounds; t++) {
        if ((status = node_scatter_in(ctx, node, src, count, esz, t, piece)) != STRATA_OK)
            return status;
        node_reduce_piece(node, src, (char *)dst + (my_off + t * piece) * esz, count, dtype, op,
                          t, piece, stream);
        round_end(node);
    }
    return STRATA_OK;
}

/*
 * The small allreduce's round for a payload that fits a tiny line: the data and the seq go
 * out in one line and come in with the poll. The round counts like any other (written is
 * not bumped: the next rounds' waits look at their own counters, and all_written records
 * that every rank published this one).
 */
static strata_status_t node_allreduce_tiny(sta_ctx_t *ctx, sta_node_t *node, const void *src,
                                           void *dst, size_t count, strata_dtype_t dtype,
                                           strata_op_t op)
{
    const int L = node->nlocal;
    const size_t parity = (size_t)(node->round & 1);
    const size_t seq_field = offsetof(node_ctl_t, tiny) + parity * sizeof(node_tiny_t);
    node_tiny_t *mine = &node->ctl[node->me].tiny[parity];
    const void *srcs[L];
    strata_status_t status;

    memcpy(mine->data, src, count * strata_dtype_size(dtype));
    __atomic_store_n(&mine->seq, node->round + 1, __ATOMIC_SEQ_CST);
    node_signal(node);
    if ((status = node_wait(ctx, node, seq_field, 0, L, node->round + 1)) != STRATA_OK)
        return status;
    node->all_written = node->round + 1;
    for (int k = 0; k < L; k++)
        srcs[k] = node->ctl[k].tiny[parity].data;
    sta_reduce_n(dst, srcs, L, count, dtype, op);
    round_end(node);
    return STRATA_OK;
}

strata_status_t sta_node_allreduce_small(sta_ctx_t *ctx, const void *src, void *dst,
                                         size_t count, strata_dtype_t dtype, strata_op_t op)
{
    sta_node_t *node = ctx->node_tier;
    const size_t bytes = count * strata_dtype_size(dtype);
    const int L = node->nlocal;
    const void *srcs[L];
    strata_status_t status;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    if (bytes > node->chunk || bytes > STA_NODE_SMALL_BYTES)
        return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "small shm allreduce of %zu bytes", bytes);
    if (L == 1 || count == 0) {
        if (dst != src && bytes > 0)
            memmove(dst, src, bytes);
        return STRATA_OK;
    }
    node_expect(node, 0);
    if ((status = round_begin(ctx, node)) != STRATA_OK)
        return status;
    if (bytes <= NODE_TINY_BYTES)
        return node_allreduce_tiny(ctx, node, src, dst, count, dtype, op);
    memcpy(node_half(node, node->me, node->round), src, bytes);
    round_publish(node);
    if ((status = round_wait_writers(ctx, node, 0, L)) != STRATA_OK)
        return status;
    for (int k = 0; k < L; k++)
        srcs[k] = node_half(node, k, node->round);
    sta_reduce_n(dst, srcs, L, count, dtype, op);
    round_end(node);
    return STRATA_OK;
}

static strata_status_t node_allgather(sta_ctx_t *ctx, sta_node_t *node, void *buf, size_t count,
                                      strata_dtype_t dtype, int stream);

/*
 * Round r of the fused allreduce, for piece t. Every rank copies its piece t of
 * each other rank's block into its half r; slot `me` of that half already
 * holds its own block's reduced piece t - 1 (written during round r - 1). Once
 * every rank published r, each copies every block's reduced piece t - 1 out of
 * its owner's half r into dst, and reduces piece t of its own block into slot
 * `me` of its half r + 1 (free: every rank that published r finished r - 1).
 * One round per piece and one more to copy the last piece out.
 */
static strata_status_t node_allreduce_round(sta_ctx_t *ctx, sta_node_t *node, const void *src,
                                            void *dst, size_t count, strata_dtype_t dtype,
                                            strata_op_t op, size_t t, size_t piece, int stream)
{
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal, me = node->me;
    strata_status_t status;

    if ((status = node_scatter_in(ctx, node, src, count, esz, t, piece)) != STRATA_OK)
        return status;
    for (int i = 0; t > 0 && i < L; i++) {
        int k = (me + i) % L;   /* each rank starts at its own block: fewer readers per line */
        size_t off, len;
        sta_block(count, L, k, &off, &len);
        size_t m = piece_len(len, t - 1, piece);
        if (m > 0)
            node_copy_out((char *)dst + (off + (t - 1) * piece) * esz,
                          node_half(node, k, node->round) + (size_t)k * piece * esz, m * esz,
                          stream);
    }
    node_reduce_piece(node, src, node_half(node, me, node->round + 1) + (size_t)me * piece * esz,
                      count, dtype, op, t, piece, 0);
    round_end(node);
    return STRATA_OK;
}

strata_status_t sta_node_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                   strata_dtype_t dtype, strata_op_t op)
{
    sta_node_t *node = ctx->node_tier;
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal;
    strata_status_t status;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    if (L == 1) {
        if (dst != src && count > 0)
            memmove(dst, src, count * esz);
        return STRATA_OK;
    }
    size_t piece = node->chunk / (size_t)L / esz;
    size_t off0, len0;
    sta_block(count, L, 0, &off0, &len0);
    size_t rounds = (len0 + piece - 1) / piece;
    /* An output past the caches is not read again by this call: stream it to memory. */
    int stream = node_stream_output(src, count * esz, dst, count * esz);
    if (src == dst || (ctx->wait == STA_WAIT_BLOCK && rounds == 1)) {
        /*
         * A reduce-scatter into dst, then an allgather, where they measured faster than the
         * fused pass (docs/benchmarks.md, "The node's allreduce: the fused pass against
         * two phases"): in place (no streaming stores, the call has just read
         * those lines; 2 ranks, 2-32 MiB: 4-8 %) and, where the ranks outnumber the cores,
         * for a call of one piece per block (3 and 4 ranks on 2 cores, 32-128 KiB: 1.1-1.3x).
         */
        if ((status = sta_node_reduce_scatter(ctx, src, dst, count, dtype, op)) != STRATA_OK)
            return status;
        return node_allgather(ctx, node, dst, count, dtype, stream);
    }
    node_expect(node, count * esz);
    for (size_t t = 0; t <= rounds; t++)
        if ((status = node_allreduce_round(ctx, node, src, dst, count, dtype, op, t, piece,
                                           stream)) != STRATA_OK)
            return status;
    return STRATA_OK;
}

/* The allgather's rounds; `stream`: write the other blocks with streaming stores. */
static strata_status_t node_allgather(sta_ctx_t *ctx, sta_node_t *node, void *buf, size_t count,
                                      strata_dtype_t dtype, int stream)
{
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal, me = node->me;
    strata_status_t status;

    if (L == 1)
        return STRATA_OK;
    size_t piece = node->chunk / esz;
    size_t off0, len0, my_off, my_len;
    sta_block(count, L, 0, &off0, &len0);
    sta_block(count, L, me, &my_off, &my_len);
    size_t rounds = (len0 + piece - 1) / piece;
    node_expect(node, count * esz);
    for (size_t t = 0; t < rounds; t++) {
        if ((status = round_begin(ctx, node)) != STRATA_OK)
            return status;
        size_t n = piece_len(my_len, t, piece);
        if (n > 0)
            memcpy(node_half(node, me, node->round), (char *)buf + (my_off + t * piece) * esz,
                   n * esz);
        round_publish(node);
        if ((status = round_wait_writers(ctx, node, 0, L)) != STRATA_OK)
            return status;
        for (int k = 0; k < L; k++) {
            size_t off, len;
            sta_block(count, L, k, &off, &len);
            size_t m = piece_len(len, t, piece);
            if (k != me && m > 0)
                node_copy_out((char *)buf + (off + t * piece) * esz,
                              node_half(node, k, node->round), m * esz, stream);
        }
        round_end(node);
    }
    return STRATA_OK;
}

strata_status_t sta_node_allgather(sta_ctx_t *ctx, void *buf, size_t count,
                                   strata_dtype_t dtype)
{
    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    return node_allgather(ctx, ctx->node_tier, buf, count, dtype,
                          count * strata_dtype_size(dtype) >= sta_reduce_nt_min_bytes());
}

strata_status_t sta_node_reduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                strata_dtype_t dtype, strata_op_t op, int root)
{
    sta_node_t *node = ctx->node_tier;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal, me = node->me;
    const void *srcs[L];
    strata_status_t status;

    if (L == 1) {
        if (dst != src && count > 0)
            memcpy(dst, src, count * esz);
        return STRATA_OK;
    }
    size_t piece = node->chunk / esz;
    size_t rounds = (count + piece - 1) / piece;
    node_expect(node, count * esz);
    for (size_t t = 0; t < rounds; t++) {
        if ((status = round_begin(ctx, node)) != STRATA_OK)
            return status;
        size_t n = piece_len(count, t, piece);
        if (me != root)
            memcpy(node_half(node, me, node->round), (const char *)src + t * piece * esz,
                   n * esz);
        round_publish(node);
        if (me == root) {
            if ((status = round_wait_writers(ctx, node, 0, L)) != STRATA_OK)
                return status;
            srcs[0] = (const char *)src + t * piece * esz;
            for (int k = 0, s = 1; k < L; k++)
                if (k != me)
                    srcs[s++] = node_half(node, k, node->round);
            sta_reduce_n((char *)dst + t * piece * esz, srcs, L, n, dtype, op);
        }
        round_end(node);
    }
    return STRATA_OK;
}

strata_status_t sta_node_bcast(sta_ctx_t *ctx, void *buf, size_t count, strata_dtype_t dtype,
                               int root)
{
    sta_node_t *node = ctx->node_tier;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    const size_t esz = strata_dtype_size(dtype);
    const int L = node->nlocal, me = node->me;
    strata_status_t status;

    if (L == 1)
        return STRATA_OK;
    size_t piece = node->chunk / esz;
    size_t rounds = (count + piece - 1) / piece;
    node_expect(node, count * esz);
    for (size_t t = 0; t < rounds; t++) {
        if ((status = round_begin(ctx, node)) != STRATA_OK)
            return status;
        size_t n = piece_len(count, t, piece);
        char *half = node_half(node, root, node->round);
        if (me == root)
            memcpy(half, (char *)buf + t * piece * esz, n * esz);
        round_publish(node);
        if (me != root) {
            if ((status = round_wait_writers(ctx, node, root, root + 1)) != STRATA_OK)
                return status;
            memcpy((char *)buf + t * piece * esz, half, n * esz);
        }
        round_end(node);
    }
    return STRATA_OK;
}

strata_status_t sta_node_barrier(sta_ctx_t *ctx)
{
    sta_node_t *node = ctx->node_tier;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    if (node->nlocal == 1)
        return STRATA_OK;
    node_expect(node, 0);
    return node_round_barrier(ctx, node);
}

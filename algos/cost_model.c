/*
 * The α-β cost model. These formulas are the spec of the algorithms in algos/;
 * docs/algorithms.md ("The α-β model") explains each one.
 *
 * Terms: P ranks, N nodes, L = P/N ranks per node, R = nrails NICs per node,
 * n bytes (nccl-tests' size), c = STA_PIPELINE_CHUNK, k = max(1, ceil(n/c)),
 * x/β = x / (β·1e3) µs. α_s, β_s: shm; α_n, β_n: net (one NIC); γ: reduce rate.
 * p2 = the largest power of two <= P, r = P - p2, lg(x) = ceil(log2 x).
 *
 * Flat steps share the node's link. In a step of a flat algorithm (ring, recursive doubling,
 * chain, binomial tree) each rank moves m bytes to its partner; s of a node's L ranks have
 * their partner on another node. The step costs
 *   step(m, s) = α_n + 2·m/β_s               s = 0: every partner on the same node
 *              = α_n + σ(s)·m/β_n            s >= 1, σ(s) = max(1, s/R)
 * s = 0 still pays α_n: same-node partners are reached through the transport (the
 * connections coll/connect.c builds, not the shm tier), but the bytes never reach the wire:
 * TCP loopback copies them into the kernel's socket buffer and out again, two memcpys at
 * β_s each (an RDMA loopback is a DMA read and a DMA write). Measured, loopback TCP streams
 * at 3.5-4 GB/s where memcpy does 12 (docs/benchmarks.md): 2·m/β_s keeps a one-node flat
 * ring dearer than the shm tier's one copy per phase. With s >= 1 the step waits for its
 * slowest hop: s senders on R NICs get β_n·R/s each.
 * s per step (with N = 1, s = 0 for every step):
 *   s1        = 1: ring, chain and binomial tree in node-major order (the flat group).
 *               A ring or chain leaves a node at one rank; a binomial round's senders are
 *               2d apart and only one lies within d of its node's end. Tree roots are not
 *               known when tables are built, so every tree round counts as crossing.
 *   so        = s1 when dims->contiguous, else L: the rank-ordered rings (reduce_scatter,
 *               allgather); interleaved or unknown placement is costed as all L crossing.
 *   srd(d)    = 0 when 2d divides L (every aligned block of 2d positions lies in one node),
 *               the nodes are equal and the partners are q, q XOR d in node-major order;
 *               else L (exact for d >= L, conservative for a partial crossing d < L).
 *               Node-major means: the flat group with r = 0 (allreduce), rank order with
 *               dims->contiguous (allgather). With r > 0 participants are not aligned.
 *   sfold     = 0 when the nodes are equal and L is even, else 1: the fold pairs
 *               (2i, 2i+1) straddle a node boundary only at a node's last position.
 *
 * allreduce
 *   ring          2(P-1)·step(n/P, s1) + (P-1)/P·n/γ
 *   recursive     Σ_{d=1,2,4..p2/2} [step(n, srd(d)) + n/γ] + [r > 0]·(2·step(n, sfold) + n/γ)
 *   hierarchical  [α_s + n/β_s + (L-1)/L·n/γ]
 *                 + [2(N-1)α_n + 2(N-1)/N·n/(R·β_n) + (N-1)/N·(n/L)/γ] + [α_s + n/β_s]
 *   leader        [α_s + n/β_s + (L-1)·n/γ]
 *                 + [2(N-1)α_n + 2(N-1)/N·n/β_n + (N-1)/N·n/γ] + [α_s + n/β_s]
 * reduce_scatter
 *   ring          (P-1)·step(n/P, so) + (P-1)/P·n/γ
 *   hierarchical  n/β_s + [α_s + n/β_s + (L-1)/L·n/γ]
 *                 + [(N-1)α_n + (N-1)/N·n/(R·β_n) + (N-1)/N·(n/L)/γ]
 *                 (the first n/β_s: blocks permuted into rail-major order; 0 when that
 *                 is rank order: ranks contiguous and N = 1 or L = 1)
 * allgather
 *   ring          (P-1)·step(n/P, so)
 *   recursive     Σ_{d=1,2,4..P/2} step(d·n/P, srd(d))      (P a power of two)
 *   hierarchical  [(N-1)α_n + (N-1)/N·(n/L)/β_n·(L/R)] + [α_s + n/β_s] + n/β_s
 *                 (the last n/β_s: blocks permuted back into rank order; 0 as above)
 * broadcast
 *   ring          (P-2+k)·step(min(n,c), s1)
 *   recursive     lg(P)·step(n, s1)
 *   hierarchical  lg(N)·(α_n + n/β_n) + [α_s + n/β_s]
 * reduce
 *   ring          (P-2+k)·(step(min(n,c), s1) + min(n,c)/γ)
 *   recursive     lg(P)·(step(n, s1) + n/γ)
 *   hierarchical  [α_s + n/β_s + (L-1)·n/γ] + lg(N)·(α_n + n/β_n + n/γ)
 *
 * Two-tier algorithms already charge their sharing (L/R rings per NIC: the n/(R·β_n) and
 * L/R factors), so they need no step(). With N > 1, step(m, s1) = α_n + m/β_n: rings, chains
 * and trees in node-major order cost what a rank with its own NIC would pay.
 * P = 1 costs 0 for every algorithm (a local copy). N = 1 zeroes the net brackets by their
 * (N-1) and lg(N) factors. L = 1 keeps the shm brackets: a one-rank node still copies
 * through its shm stage, so hierarchical and leader never beat the flat ring there.
 * k is at least 1 so that an empty broadcast or reduce still costs one pass down the chain,
 * the limit of the formula as n -> 0+ (ceil(0/c) = 0 would make t(0) a lone outlier).
 */
#include "algos/cost_model.h"

#include <math.h>
#include <strings.h>

#include "util/compiler.h"

static const char *const coll_names[STA_COLL_COUNT] = {
    [STA_COLL_ALLREDUCE] = "allreduce",
    [STA_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [STA_COLL_ALLGATHER] = "allgather",
    [STA_COLL_BROADCAST] = "broadcast",
    [STA_COLL_REDUCE] = "reduce",
};

static const char *const algo_names[STA_ALGO_COUNT] = {
    [STA_ALGO_RING] = "ring",
    [STA_ALGO_RECURSIVE] = "recursive",
    [STA_ALGO_HIERARCHICAL] = "hierarchical",
    [STA_ALGO_LEADER] = "leader",
};

const char *sta_coll_name(sta_coll_t coll)
{
    if ((int)coll < 0 || coll >= STA_COLL_COUNT)
        return "?";
    return coll_names[coll];
}

const char *sta_algo_name(sta_algo_t algo)
{
    if (algo == STA_ALGO_AUTO)
        return "auto";
    if ((int)algo < 0 || algo >= STA_ALGO_COUNT)
        return "?";
    return algo_names[algo];
}

strata_status_t sta_algo_parse(const char *text, sta_algo_t *algo_p)
{
    if (text == NULL || *text == '\0' || strcasecmp(text, "auto") == 0) {
        *algo_p = STA_ALGO_AUTO;
        return STRATA_OK;
    }
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        if (strcasecmp(text, algo_names[a]) == 0) {
            *algo_p = (sta_algo_t)a;
            return STRATA_OK;
        }
    }
    return STRATA_ERR_INVALID;
}

void sta_dims_one_per_node(int nnodes, sta_dims_t *dims)
{
    *dims = (sta_dims_t){.nranks = nnodes, .nnodes = nnodes, .local_size = 1, .nrails = 1,
                         .unequal = 0, .contiguous = 1};
}

strata_status_t sta_dims_check(const sta_dims_t *dims)
{
    if (dims == NULL || dims->nranks < 1 || dims->nnodes < 1 || dims->local_size < 1)
        return STRATA_ERR_INVALID;
    if (dims->unequal ? (long long)dims->nnodes * dims->local_size < dims->nranks
                      : (long long)dims->nnodes * dims->local_size != dims->nranks)
        return STRATA_ERR_INVALID;
    if (dims->nrails < 1 || dims->nrails > dims->local_size)
        return STRATA_ERR_INVALID;
    return STRATA_OK;
}

static int alpha_ok(double a)
{
    return isfinite(a) && a >= 0.0;
}

static int rate_ok(double b)
{
    return isfinite(b) && b > 0.0;
}

strata_status_t sta_model_check(const sta_model_t *model)
{
    if (model == NULL || !alpha_ok(model->shm.alpha_us) || !rate_ok(model->shm.beta_gbps) ||
        !alpha_ok(model->net.alpha_us) || !rate_ok(model->net.beta_gbps) ||
        !rate_ok(model->gamma_gbps))
        return STRATA_ERR_INVALID;
    return STRATA_OK;
}

static int is_pow2(int v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* floor(log2 v) for v >= 1. */
static int log2_floor(int v)
{
    int k = 0;
    while (v > 1) {
        v >>= 1;
        k++;
    }
    return k;
}

/* ceil(log2 v) for v >= 1: the rounds of a binomial tree over v ranks. */
static int log2_ceil(int v)
{
    int k = log2_floor(v);
    return is_pow2(v) ? k : k + 1;
}

int sta_algo_applies(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo)
{
    if (sta_dims_check(dims) != STRATA_OK || (int)coll < 0 || coll >= STA_COLL_COUNT)
        return 0;
    switch (algo) {
    case STA_ALGO_RING:
    case STA_ALGO_HIERARCHICAL:
        return 1;
    case STA_ALGO_RECURSIVE:
        if (coll == STA_COLL_REDUCE_SCATTER)
            return 0;
        if (coll == STA_COLL_ALLGATHER)
            return is_pow2(dims->nranks);
        return 1;
    case STA_ALGO_LEADER:
        return coll == STA_COLL_ALLREDUCE;
    default:
        return 0;
    }
}

int sta_algo_selectable(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo)
{
    if (!sta_algo_applies(dims, coll, algo))
        return 0;
    if (algo == STA_ALGO_HIERARCHICAL || algo == STA_ALGO_LEADER) {
        if (dims->unequal)
            return 0;   /* two-tier algorithms need the same L on every node */
    }
    return 1;
}

/* The model's operands as doubles, so each formula reads like its comment. */
typedef struct terms {
    double P, N, L, R;
    double n;
    double a_s, b_s, a_n, b_n, g;
} terms_t;

/* Time to move (or reduce) `bytes` at `gbps`, in µs. */
static double xfer(double bytes, double gbps)
{
    return bytes / (gbps * STA_BYTES_PER_US_PER_GBPS);
}

/* σ(s) = max(1, s/R): how many of a node's senders share each of its R NICs. */
static double nic_share(const terms_t *t, double s)
{
    return s > t->R ? s / t->R : 1.0;
}

/* step(m, s): one flat step moving m bytes per rank, s ranks of a node crossing to another. */
static double flat_step(const terms_t *t, double m, double s)
{
    if (s <= 0.0)
        return t->a_n + 2 * xfer(m, t->b_s);   /* into the socket buffer and out */
    return t->a_n + xfer(nic_share(t, s) * m, t->b_n);
}

/* s1 (node_major = 1) or so (node_major = dims->contiguous): a ring, chain or tree step. */
static double ring_crossers(const sta_dims_t *d, int node_major)
{
    if (d->nnodes == 1)
        return 0.0;
    return node_major ? 1.0 : (double)d->local_size;
}

/* srd(dist): a recursive-doubling step; aligned = partners are q, q XOR dist in node-major
 * order. With 2·dist dividing L, q XOR dist stays in q's aligned block of 2·dist, so in q's
 * node. */
static double rd_crossers(const sta_dims_t *d, int dist, int aligned)
{
    if (d->nnodes == 1)
        return 0.0;
    if (aligned && !d->unequal && d->local_size % (2 * dist) == 0)
        return 0.0;
    return (double)d->local_size;
}

/* sfold: the pairs (2i, 2i+1) of a non-power-of-two recursive doubling. */
static double fold_crossers(const sta_dims_t *d)
{
    if (d->nnodes == 1 || (!d->unequal && d->local_size % 2 == 0))
        return 0.0;
    return 1.0;
}

/* One shm phase that only copies: α_s + n/β_s. */
static double shm_copy(const terms_t *t)
{
    return t->a_s + xfer(t->n, t->b_s);
}

static double cost_allreduce(const terms_t *t, const sta_dims_t *d, sta_algo_t algo)
{
    double P = t->P, N = t->N, L = t->L, n = t->n;

    switch (algo) {
    case STA_ALGO_RING:
        return 2 * (P - 1) * flat_step(t, n / P, ring_crossers(d, 1)) +
               (P - 1) / P * xfer(n, t->g);
    case STA_ALGO_RECURSIVE: {
        int p2 = 1 << log2_floor(d->nranks);
        int aligned = d->nranks == p2;   /* r > 0 shifts the participants off node blocks */
        double c = 0.0;
        for (int dist = 1; dist < p2; dist <<= 1)
            c += flat_step(t, n, rd_crossers(d, dist, aligned)) + xfer(n, t->g);
        if (d->nranks > p2)
            c += 2 * flat_step(t, n, fold_crossers(d)) + xfer(n, t->g);
        return c;
    }
    case STA_ALGO_HIERARCHICAL:
        return (shm_copy(t) + (L - 1) / L * xfer(n, t->g)) +
               (2 * (N - 1) * t->a_n + 2 * (N - 1) / N * xfer(n, t->R * t->b_n) +
                (N - 1) / N * xfer(n / L, t->g)) +
               shm_copy(t);
    case STA_ALGO_LEADER:
        return (shm_copy(t) + (L - 1) * xfer(n, t->g)) +
               (2 * (N - 1) * t->a_n + 2 * (N - 1) / N * xfer(n, t->b_n) +
                (N - 1) / N * xfer(n, t->g)) +
               shm_copy(t);
    default:
        return STA_COST_NA;
    }
}

/* Two-tier reduce-scatter and allgather permute P blocks (n/β_s) unless rail-major order is
 * already rank order: contiguous ranks on one node, or one rank a node. */
static double blocks_permute(const terms_t *t, const sta_dims_t *d)
{
    if (d->contiguous && (d->nnodes == 1 || d->local_size == 1))
        return 0.0;
    return xfer(t->n, t->b_s);
}

static double cost_reduce_scatter(const terms_t *t, const sta_dims_t *d, sta_algo_t algo)
{
    double P = t->P, N = t->N, L = t->L, n = t->n;

    switch (algo) {
    case STA_ALGO_RING:
        return (P - 1) * flat_step(t, n / P, ring_crossers(d, d->contiguous)) +
               (P - 1) / P * xfer(n, t->g);
    case STA_ALGO_HIERARCHICAL:
        return blocks_permute(t, d) + (shm_copy(t) + (L - 1) / L * xfer(n, t->g)) +
               ((N - 1) * t->a_n + (N - 1) / N * xfer(n, t->R * t->b_n) +
                (N - 1) / N * xfer(n / L, t->g));
    default:
        return STA_COST_NA;
    }
}

static double cost_allgather(const terms_t *t, const sta_dims_t *d, sta_algo_t algo)
{
    double P = t->P, N = t->N, L = t->L, n = t->n;

    switch (algo) {
    case STA_ALGO_RING:
        return (P - 1) * flat_step(t, n / P, ring_crossers(d, d->contiguous));
    case STA_ALGO_RECURSIVE: {
        /* rank order: node-major only when the placement is known to be contiguous */
        double c = 0.0;
        for (int dist = 1; dist < d->nranks; dist <<= 1)
            c += flat_step(t, dist * n / P, rd_crossers(d, dist, d->contiguous));
        return c;
    }
    case STA_ALGO_HIERARCHICAL:
        return ((N - 1) * t->a_n + (N - 1) / N * xfer(n / L, t->b_n) * (L / t->R)) +
               shm_copy(t) + blocks_permute(t, d);
    default:
        return STA_COST_NA;
    }
}

/* Broadcast (with_reduce = 0) and reduce (1) share their shapes; reduce adds the γ terms. */
static double cost_rooted(const terms_t *t, const sta_dims_t *d, sta_algo_t algo,
                          int with_reduce)
{
    double n = t->n, c = (double)STA_PIPELINE_CHUNK;
    double red = with_reduce ? 1.0 : 0.0;

    switch (algo) {
    case STA_ALGO_RING: {
        double k = ceil(n / c);
        double piece = STU_MIN(n, c);
        if (k < 1)
            k = 1;
        return (t->P - 2 + k) *
               (flat_step(t, piece, ring_crossers(d, 1)) + red * xfer(piece, t->g));
    }
    case STA_ALGO_RECURSIVE:
        return log2_ceil(d->nranks) *
               (flat_step(t, n, ring_crossers(d, 1)) + red * xfer(n, t->g));
    case STA_ALGO_HIERARCHICAL:
        return (shm_copy(t) + red * (t->L - 1) * xfer(n, t->g)) +
               log2_ceil(d->nnodes) * (t->a_n + xfer(n, t->b_n) + red * xfer(n, t->g));
    default:
        return STA_COST_NA;
    }
}

double sta_cost_us(const sta_model_t *model, const sta_dims_t *dims, sta_coll_t coll,
                   sta_algo_t algo, size_t bytes)
{
    if (sta_model_check(model) != STRATA_OK || !sta_algo_applies(dims, coll, algo))
        return STA_COST_NA;
    if (dims->nranks == 1)
        return 0.0;

    terms_t t = {
        .P = dims->nranks, .N = dims->nnodes, .L = dims->local_size, .R = dims->nrails,
        .n = (double)bytes,
        .a_s = model->shm.alpha_us, .b_s = model->shm.beta_gbps,
        .a_n = model->net.alpha_us, .b_n = model->net.beta_gbps, .g = model->gamma_gbps,
    };
    switch (coll) {
    case STA_COLL_ALLREDUCE:
        return cost_allreduce(&t, dims, algo);
    case STA_COLL_REDUCE_SCATTER:
        return cost_reduce_scatter(&t, dims, algo);
    case STA_COLL_ALLGATHER:
        return cost_allgather(&t, dims, algo);
    case STA_COLL_BROADCAST:
        return cost_rooted(&t, dims, algo, 0);
    case STA_COLL_REDUCE:
        return cost_rooted(&t, dims, algo, 1);
    default:
        return STA_COST_NA;
    }
}

double sta_tier_crossover_bytes(const sta_tier_t *tier)
{
    return tier->alpha_us * tier->beta_gbps * STA_BYTES_PER_US_PER_GBPS;
}

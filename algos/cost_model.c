/*
 * The α-β cost model. These formulas are the spec of the algorithms in algos/;
 * docs/algorithms.md ("The α-β model") explains each one.
 *
 * Terms: P ranks, N nodes, L = P/N ranks per node, R = nrails NICs per node,
 * n bytes (nccl-tests' size), c = STA_PIPELINE_CHUNK, k = max(1, ceil(n/c)),
 * x/β = x / (β·1e3) µs. α_s, β_s: shm; α_n, β_n: net (one NIC); γ: reduce rate.
 * On host shared memory β_s is the collective's own: a copy rate between the cache's β_llc and
 * the DRAM rate, by the share of the working set 2·S·n (S = max(L, host_ranks) ranks sharing
 * the host's cache) that the cache of C bytes holds (shm_beta; sta_cache_t). Every β_s below
 * is that one.
 * p2 = the largest power of two <= P, r = P - p2, lg(x) = ceil(log2 x).
 *
 * Flat steps share the node's link. In a step of a flat algorithm (ring, recursive doubling,
 * chain, binomial tree) each rank moves m bytes to its partner; s of a node's L ranks have
 * their partner on another node. The step waits for its slowest hop:
 *   step(m, s, ρ) = hop(m, ρ)                                 s = 0: every partner in the node
 *                 = max(hop(m, ρ), α_n + σ(s)·m/β_n)          0 < s < L
 *                 = α_n + σ(s)·m/β_n                          s = L: every partner elsewhere
 * σ(s) = max(1, s/R): s senders on R NICs get β_n·R/s each. A hop inside the node depends on
 * the intra-node kind (sta_intra_t):
 *   hop(m, ρ) = α_n + 2·m/β_s        shm: through the transport's loopback
 *             = α_s + m/β_s          switch: one copy, every rank at full β_s at once
 *             = α_s + ρ·m/β_s        pcie: ρ of the node's flows share the root link
 * shm pays α_n: same-node partners are reached through the transport (the connections
 * coll/connect.c builds, not the shm tier), but the bytes never reach the wire: TCP loopback
 * copies them into the kernel's socket buffer and out again, two memcpys at β_s each (an
 * RDMA loopback is a DMA read and a DMA write). Loopback TCP streams at a fraction of what
 * memcpy does (strata-netperf against strata-reduce's copy rate on the same host):
 * 2·m/β_s keeps a one-node flat ring dearer than the shm tier's one copy per phase. ρ (root
 * flows) is 1 for rings, chains and trees, which embed in a tree with one flow per link and
 * direction (an Euler tour of the tree); L/2 for recursive doubling at distance L/2, whose
 * pairs all straddle the two halves.
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
 * ρ is 1 wherever a formula omits it.
 *
 * Waiting. A rank that polls in vain spins briefly, yields, then blocks (algos/ctx.c). While
 * the ranks that take part in a phase fit the host's cores they meet while spinning; when
 * they outnumber the cores (dims->host_ranks > dims->host_cores: the busiest host, emulated
 * nodes sharing one included) a peer is off-core at most waits and must be woken: every
 * step and every shm phase then costs ω more.
 *   w   = ω when host_ranks > host_cores, else 0: flat steps (one ring of every rank)
 *   wl  = ω when ceil(host_ranks/L) > host_cores, else 0: the leaders' ring, and each of
 *         the hierarchical algorithms' per-rail rings: a rail's ring has ceil(host_ranks/L)
 *         ranks on a host, and the L rings interleave on its cores, a rank of one running
 *         while one of another waits (2 x 2 on 2 cores, allreduce at 8 B-32 KiB:
 *         hierarchical 64-98 µs measured, 140-166 modelled with w, 71-100 with wl)
 *   step(m, s, ρ) above gains w; shm(n) = α_s + ws + n/β_s is one shm phase and shmb(n) =
 *   α_s + wb + n/β_s a broadcast phase. With L = 1 (a one-rank node waits for nobody) or the
 *   ranks fitting the cores, ws = wb = 0. Oversubscribed: with N > 1 ws = wb = 0.75·w (a
 *   rank that waited out the other nodes blocked on a futex: STA_SHM_WAKE_RATIO); with
 *   N = 1 shm waits are short and yield instead of blocking (algos/ctx.c), so a round costs one turn of the ranks through the
 *   cores, ws = ω_y (model->yield_us), and a broadcast, whose root waits for nobody, half of
 *   it: wb = ω_y/2. The broadcast collective's BC_s pays ω_y/2 at any N: back to back its
 *   readers' waits overlap the next call and stay short.
 * Net bytes on the host's cores (dims->net_cpu, tcp): a stream with a core on each side
 * moves β_c = STA_NET_CPU_GBPS; S streams at once on C cores get β_c(S) = β_c·min(1, C/2S)
 * each. Every net transfer of allreduce, reduce_scatter and allgather takes the longer of
 * its NIC time (above) and its per-stream bytes at β_c(S): S = host_ranks for the flat
 * steps and the per-rail rings, the host's node heads for leader's ring. A rooted
 * collective over N > 1 nodes takes the longer of its path (below) and its hops' bytes at
 * the cores' share, S = min(host_ranks, P-1) streams (the node heads and N-1 for the tree
 * among the nodes): the work its hops give the host's cores, which back-to-back calls keep
 * busy. Without net_cpu or host_cores the term is absent.
 * Copies and sums on the host's cores: on host shared memory, where the host's ranks
 * outnumber its cores (host_ranks > host_cores), the node's copies and reductions run at
 * once on shared cores, each at C/S of a core: β_s and γ are taken times host_cores /
 * host_ranks (1 x 4 on 2 cores, 512 KiB-8 MiB: hierarchical allreduce, allgather and
 * reduce_scatter 36-53 % under their measured times with a core each, within 25 % with the
 * share).
 * Reductions on shm are one pass over k inputs: red_k(x) = (k+1)/3·x/γ (γ prices a pair:
 * two reads and a write), 0 for k < 2.
 *
 * Copies (shm only: the library's own case). The flat algorithms work in place on the
 * output buffer (coll/coll.c): an out-of-place allreduce first copies the input there
 * (cp = n/β_s), reduce_scatter copies the P blocks into a work buffer and its block out
 * ((1 + 1/P)·n/β_s), allgather its own block (n/P/β_s), broadcast's root its buffer
 * (n/β_s). The formulas are for out-of-place calls; off shm these copies are 0.
 *
 * allreduce
 *   ring          cp + 2(P-1)·step(n/P, s1) + (P-1)/P·n/γ
 *   recursive     cp + Σ_{d=1,2,4..p2/2} [step(n, srd(d), ρrd(d)) + n/γ]
 *                 + [r > 0]·(2·step(n, sfold) + n/γ)
 *   hierarchical  in + net + out + (K-1)·max(net, in + out), per chunk of c = n/K bytes:
 *                 in = RS_s, net = 2(N-1)(α_n + wl) + 2(N-1)/N·c/(R·β_n) + (N-1)/N·(c/L)/γ,
 *                 out = AG_s; K = max(1, n/c*), a real number (smooth in n); c* =
 *                 sqrt(n·a_b/r_o) (pipe_chunk: a_b the slower stage's fixed cost, r_o the
 *                 faster one's per byte), with either stage taken as the slower and the
 *                 cheaper kept
 *                 shm, N = 1, n <= STA_NODE_SMALL_BYTES: one round, shm(n) + red_L(n)
 *                 shm, N = 1, larger: one pass (sta_node_allreduce), c = STA_MODEL_SHM_CHUNK:
 *                   (max(1, ceil(n/c)) + 1)·(α_s + ws) + (L-1)/L·n/β_s + red_L(n/L) + n/β_s
 *   leader        the same pipeline with in = shm(c) + red_L(c),
 *                 net = 2(N-1)(α_n + wl) + 2(N-1)/N·c/β_n + (N-1)/N·c/γ, out = shmb(c)
 *                 (shm only)
 * reduce_scatter
 *   ring          (1 + 1/P)·cp + (P-1)·step(n/P, so) + (P-1)/P·n/γ
 *   hierarchical  perm + RS_s + [(N-1)(α_n + wl) + (N-1)/N·n/(R·β_n) + (N-1)/N·(n/L)/γ]
 *                 (perm = n/β_s: blocks permuted into rail-major order; 0 when that is rank
 *                 order, ranks contiguous and N = 1 or L = 1, and 0 off shm, where the
 *                 intra-node ring's block order does it)
 * allgather
 *   ring          cp/P + (P-1)·step(n/P, so)
 *   recursive     cp/P + Σ_{d=1,2,4..P/2} step(d·n/P, srd(d), ρrd(d))      (P a power of two)
 *   hierarchical  [(N-1)(α_n + wl) + (N-1)/N·(n/L)/β_n·(L/R)] + AG_s + perm
 *                 (perm: blocks permuted back into rank order; 0 as above)
 * Rooted collectives are costed as they run back to back (nccl-tests, strata-perf, a
 * training loop): a rank downstream of the root starts the next call while the root is
 * done, so a call costs what its busiest rank spends on it, not the path from the root to
 * the last rank. Waits then overlap the previous call and cost no w. With
 * lat = step(0, s1) - w (a flat step's latency, α_n on shm), bytes(m) = step(m, s1) -
 * step(0, s1), and h = 2 when a chain has a middle rank (P > 2: it receives and forwards
 * every chunk), else 1, and with cpu_h = n/β_c(min(host_ranks, P-1)) the hops' bytes on
 * the host's cores (cpu_t the same with the host's node heads and N-1; both 0 without
 * the cores' limit and for N = 1):
 * broadcast
 *   ring          cp + max(k·h·lat + bytes(n), cpu_h)           pipelined chain
 *   recursive     cp + max(lg(P)·(lat + bytes(n)), cpu_h)       the root sends lg(P) times
 *   hierarchical  cp + max(lg(N)·(α_n + n/β_n), cpu_t) + BC_s
 * reduce
 *   ring          max(k·(h·lat + min(n,c)/γ) + bytes(n), cpu_h)
 *   recursive     max(lg(P)·(lat + bytes(n) + n/γ), cpu_h)
 *   hierarchical  RD_s + max(lg(N)·(α_n + n/β_n + n/γ), cpu_t)
 * alltoall (pairwise exchange, m = n/P; not run by the library)
 *                 Σ_{k=1..P-1} step(m, sa(k), ρa(k))
 *
 * The node's phases of the two-tier algorithms:
 *                 shm (one shared segment)        switch, pcie (a ring of L, one copy a hop)
 *   RS_s          shm(n) + red_L(n/L)              (L-1)·α_s + (L-1)/L·(n/β_s + n/γ)
 *   AG_s          shm(n)                           (L-1)·α_s + (L-1)/L·n/β_s
 *   BC_s          shmb(n)                          [L > 1]·(L-2+k)·(α_s + min(n,c)/β_s)
 *   RD_s          shm(n) + red_L(n)                [L > 1]·(L-2+k)·(α_s + min(n,c)/β_s
 *                                                                  + min(n,c)/γ)
 * ρrd(d) = L/2 when 2d = L and the pairs are aligned (the pairs straddle the halves), else 1.
 * sa(k), with k = q·L + j (0 <= j < L), in node-major order: j when q = 0, L - j when
 * q = N-1, L otherwise (0 with N = 1; L for every k when the placement is not contiguous);
 * ρa(k) = max(1, min(j, L-j)), the same-node pairs of offset j that straddle the halves.
 *
 * Two-tier algorithms already charge their sharing (L/R rings per NIC: the n/(R·β_n) and
 * L/R factors), so they need no step(). With N > 1, step(m, s1) = α_n + m/β_n: rings, chains
 * and trees in node-major order cost what a rank with its own NIC would pay.
 * P = 1 costs 0 for every algorithm (a local copy). N = 1 zeroes the net brackets by their
 * (N-1) and lg(N) factors. L = 1 keeps the shm brackets on shm: a one-rank node still copies
 * through its shm stage, so hierarchical and leader never beat the flat ring there; off shm
 * a one-rank node's ring phases are empty.
 * k is at least 1 so that an empty broadcast or reduce still costs one pass down the chain,
 * the limit of the formula as n -> 0+ (ceil(0/c) = 0 would make t(0) a lone outlier).
 */
#include "algos/cost_model.h"

#include <math.h>

#include "algos/cost_terms.h"
#include "algos/node_shm.h"
#include "util/compiler.h"

/*
 * β_s for a collective of n bytes: the share f = min(1, C/W) of its working set W = 2·S·n
 * (S ranks sharing the host's cache, each touching a source and a destination of n) that
 * the cache holds is copied at β_llc, the rest at β_s: 1/β = f/β_llc + (1-f)/β_s. Beyond the
 * cache the time n/β grows at 1/β_s with a constant saving, so costs stay continuous and
 * increasing in n. Host shared memory only (a switch's or PCIe tree's β is a link's).
 */
static double shm_beta(const sta_model_t *model, const sta_dims_t *dims, double n)
{
    double S = STU_MAX(dims->local_size, dims->host_ranks);
    double w = 2.0 * S * n;

    if (model->intra != STA_INTRA_SHM || !(model->cache.bytes > 0.0))
        return model->shm.beta_gbps;
    double f = w <= model->cache.bytes ? 1.0 : model->cache.bytes / w;
    return 1.0 / (f / model->cache.beta_gbps + (1.0 - f) / model->shm.beta_gbps);
}

static terms_t terms_make(const sta_model_t *model, const sta_dims_t *dims, double bytes)
{
    terms_t t = {
        .P = dims->nranks, .N = dims->nnodes, .L = dims->local_size, .R = dims->nrails,
        .n = bytes,
        .a_s = model->shm.alpha_us, .b_s = shm_beta(model, dims, bytes),
        .a_n = model->net.alpha_us, .b_n = model->net.beta_gbps, .g = model->gamma_gbps,
        .kind = model->intra, .msg_min = (double)dims->net_msg_min, .y = model->yield_us,
    };
    if (dims->host_cores > 0) {
        int leaders = (dims->host_ranks + dims->local_size - 1) / dims->local_size;
        t.oversub = dims->host_ranks > dims->host_cores;
        t.w = t.oversub ? model->wake_us : 0.0;
        if (t.oversub && model->intra == STA_INTRA_SHM) {   /* copies and sums share cores */
            double share = (double)dims->host_cores / (double)dims->host_ranks;
            t.b_s *= share;
            t.g *= share;
        }
        t.wl = leaders > dims->host_cores ? model->wake_us : 0.0;
        if (dims->net_cpu && dims->host_ranks > 0) {
            t.c_all = cpu_stream_gbps(dims->host_cores, dims->host_ranks);
            t.c_lead = cpu_stream_gbps(dims->host_cores, leaders);
        }
    }
    return t;
}

/* cp: the out-of-place copy of x bytes the library makes before an in-place algorithm; only
 * on host shared memory (the library's own case). */
static double lib_copy(const terms_t *t, double x)
{
    return t->kind == STA_INTRA_SHM ? x / (t->b_s * STA_BYTES_PER_US_PER_GBPS) : 0.0;
}

/* hop(m, ρ): m bytes to a partner in the same node, ρ flows sharing a PCIe tree's root. */
static double intra_hop(const terms_t *t, double m, double rho)
{
    switch (t->kind) {
    case STA_INTRA_SWITCH:
        return t->a_s + xfer(m, t->b_s);
    case STA_INTRA_PCIE:
        return t->a_s + xfer(rho * m, t->b_s);
    default:
        return t->a_n + 2 * xfer(m, t->b_s);   /* into the socket buffer and out */
    }
}

/* step(m, s, ρ): one flat step moving m bytes per rank, s ranks of a node crossing to
 * another, ρ same-node flows on a PCIe tree's root; the slowest hop sets the pace. */
static double flat_step_rho(const terms_t *t, double m, double s, double rho)
{
    if (s <= 0.0)
        return t->w + intra_hop(t, m, rho);
    double net = t->a_n + net_xfer(nic_share(t, s) * m, t->b_n, m, t->c_all);
    if (s >= t->L)
        return t->w + net;
    return t->w + STU_MAX(net, intra_hop(t, m, rho));
}

static double flat_step(const terms_t *t, double m, double s)
{
    return flat_step_rho(t, m, s, 1.0);
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

/* ρrd(dist): with 2·dist = L the aligned pairs all straddle a PCIe tree's two halves. */
static double rd_root_flows(const sta_dims_t *d, int dist, int aligned)
{
    if (aligned && 2 * dist == d->local_size && d->local_size >= 2)
        return d->local_size / 2;
    return 1.0;
}

/* sfold: the pairs (2i, 2i+1) of a non-power-of-two recursive doubling. */
static double fold_crossers(const sta_dims_t *d)
{
    if (d->nnodes == 1 || (!d->unequal && d->local_size % 2 == 0))
        return 0.0;
    return 1.0;
}

/* Who waits in a shm phase, for shm_wait(). */
typedef enum shm_waiters {
    SHM_ALL = 0,                /* a round every rank waits in (a barrier, a reduction) */
    SHM_READERS,                /* a broadcast inside a call: the readers wait for the root */
    SHM_BACK_TO_BACK,           /* the broadcast collective's phase, calls back to back */
} shm_waiters_t;

/*
 * ws: what a wait of one shm phase adds. 0 with L = 1 (no rank of the node waits for
 * another) or while the ranks fit the cores (they meet spinning). Oversubscribed, a wait
 * shorter than the yield window (algos/ctx.c: 20 µs) yields and costs a turn of the ranks
 * through the cores, ω_y; a longer one blocks and costs ω:
 *   - back-to-back broadcasts: the readers' waits overlap the next call, ω_y/2, any N
 *     (1 x 4: hierarchical broadcast 4.2-4.5 µs, a barrier round 6.3-7.6; 2 x 2: 14-17 µs
 *     where the blocking ω made it 44);
 *   - N > 1 otherwise: a rank that waited out the other nodes blocked on a futex, which
 *     its writer wakes: STA_SHM_WAKE_RATIO·ω;
 *   - N = 1: ω_y for a round every rank waits in, ω_y/2 for a broadcast, whose root waits
 *     for nobody.
 */
static double shm_wait(const terms_t *t, shm_waiters_t who)
{
    if (t->L <= 1 || !t->oversub)
        return 0.0;
    if (who == SHM_BACK_TO_BACK)
        return t->y / 2;
    if (t->N > 1)
        return t->w * STA_SHM_WAKE_RATIO;
    return who == SHM_READERS ? t->y / 2 : t->y;
}

/* One shm phase that only copies: shm(n) = α_s + ws + n/β_s. */
static double shm_phase(const terms_t *t, shm_waiters_t who)
{
    return t->a_s + shm_wait(t, who) + xfer(t->n, t->b_s);
}

/* red_k(x): one pass reducing k inputs into x bytes, k + 1 streams where γ prices three;
 * 0 for k < 2 (nothing to combine). */
static double shm_reduce(const terms_t *t, double k, double x)
{
    if (k < 2.0)
        return 0.0;
    return (k + 1.0) / STA_REDUCE_PAIR_STREAMS * xfer(x, t->g);
}

/*
 * The one-node allreduce of any size (algos/node_shm.c, sta_node_allreduce): ceil(n/c) + 1
 * rounds, every rank waiting in each; each rank copies the (L-1)/L of src that other ranks
 * reduce into its slot, reduces its n/L block from L inputs, and copies all n out.
 */
static double node_allreduce(const terms_t *t)
{
    double rounds = STU_MAX(1.0, ceil(t->n / (double)STA_MODEL_SHM_CHUNK)) + 1.0;
    return rounds * (t->a_s + shm_wait(t, SHM_ALL)) + (t->L - 1) / t->L * xfer(t->n, t->b_s) +
           shm_reduce(t, t->L, t->n / t->L) + xfer(t->n, t->b_s);
}

/* (L-1) ring steps of n/L inside the node, one copy a hop (switch, pcie). */
static double intra_ring(const terms_t *t)
{
    return (t->L - 1) * t->a_s + (t->L - 1) / t->L * xfer(t->n, t->b_s);
}

/* RS_s: the node's reduce-scatter phase of a two-tier algorithm; on shm each rank reduces its
 * n/L block from L inputs in one pass, off shm a ring reduces a pair a hop. */
static double intra_rs(const terms_t *t)
{
    if (t->kind == STA_INTRA_SHM)
        return shm_phase(t, SHM_ALL) + shm_reduce(t, t->L, t->n / t->L);
    return intra_ring(t) + (t->L - 1) / t->L * xfer(t->n, t->g);
}

/* AG_s: the node's allgather phase (and the copy-out of hierarchical allreduce). */
static double intra_ag(const terms_t *t)
{
    return t->kind == STA_INTRA_SHM ? shm_phase(t, SHM_ALL) : intra_ring(t);
}

/* BC_s (with_reduce = 0) and RD_s (1): the node's broadcast or reduce phase; off shm a
 * pipelined chain of L. */
static double intra_rooted(const terms_t *t, int with_reduce)
{
    double red = with_reduce ? 1.0 : 0.0;
    if (t->kind == STA_INTRA_SHM)   /* the root reduces L inputs; a broadcast's root waits not */
        return with_reduce ? shm_phase(t, SHM_ALL) + shm_reduce(t, t->L, t->n)
                           : shm_phase(t, SHM_BACK_TO_BACK);
    if (t->L < 2)
        return 0.0;
    double c = (double)STA_PIPELINE_CHUNK, piece = STU_MIN(t->n, c);
    double k = STU_MAX(1.0, ceil(t->n / c));
    return (t->L - 2 + k) * (t->a_s + xfer(piece, t->b_s) + red * xfer(piece, t->g));
}

/*
 * A rail of two nodes exchanges its part m whole (one step: send m, receive m, reduce m)
 * where that beats the ring's two steps of m/2 (the same bytes on the wire): the step it
 * saves, α_n + ω_l, against the m/2 more it reduces, (m/2)/γ; so for m < 2·(α_n + ω_l)·γ.
 */
static int pair_exchange(const terms_t *t, double m)
{
    return t->N == 2.0 && t->a_n + t->wl > xfer(m / 2.0, t->g);
}

/* The rails' ring (or, on two nodes, the exchange) of a pipeline's chunk: `wire` the bytes
 * through the NIC(s) at `gbps`, `per` a stream's bytes at `cpu`, m each member's part. */
static double rail_net(const terms_t *t, double wire, double gbps, double per, double cpu,
                       double m)
{
    double N = t->N;

    if (pair_exchange(t, m))
        return t->a_n + t->wl + net_xfer(wire, gbps, per, cpu) + xfer(m, t->g);
    return 2 * (N - 1) * (t->a_n + t->wl) + 2 * (N - 1) / N * net_xfer(wire, gbps, per, cpu) +
           (N - 1) / N * xfer(m, t->g);
}

/*
 * One chunk's phases of a two-tier allreduce for t->n bytes: the node's first phase (in:
 * reduce-scatter, or reduce to local rank 0 for leader), the ring over the nodes (net), the
 * node's last phase (out: allgather, or broadcast).
 */
static void pipe_phases(const terms_t *t, sta_algo_t algo, double *in, double *net, double *out)
{
    double L = t->L, n = t->n;

    if (algo == STA_ALGO_LEADER) {
        *in = shm_phase(t, SHM_ALL) + shm_reduce(t, L, n);
        *net = rail_net(t, n, t->b_n, n, t->c_lead, n);
        *out = shm_phase(t, SHM_READERS);
        return;
    }
    *in = intra_rs(t);
    *net = rail_net(t, n, t->R * t->b_n, n / L, t->c_all, n / L);
    *out = intra_ag(t);
}

/* The phases of a chunk of c bytes. */
static void pipe_phases_at(const terms_t *t, sta_algo_t algo, double c, double *in, double *net,
                           double *out)
{
    terms_t tc = *t;
    tc.n = c;
    pipe_phases(&tc, algo, in, net, out);
}

/* The pipelined time of n bytes in K = n/c chunks (c clamped to 1..n; K real, so the cost
 * stays smooth in n and the selection's bisection finds its crossings, algos/select.c; the
 * run's K differs by under one): in(c) + net(c) + out(c) + (K-1)·max(net(c), in(c) + out(c)). */
static double pipe_time(const terms_t *t, sta_algo_t algo, double c)
{
    double in, net, out;

    c = STU_MIN(t->n, STU_MAX(c, 1.0));
    double K = STU_MAX(1.0, t->n / c);
    pipe_phases_at(t, algo, t->n / K, &in, &net, &out);
    return in + net + out + (K - 1) * STU_MAX(net, in + out);
}

/*
 * The chunk of the pipelined two-tier allreduce (algos/hier_pipe.c). Whichever stage (the
 * ring, or the node's two phases) is the slower runs K = n/c times, each paying its fixed
 * cost a_b; the faster one only fills and drains the pipe, at its per-byte cost r_o: t ≈ a_o
 * + r_o·c + (n/c)·a_b + n·r_b, least at c* = sqrt(n·a_b/r_o). Both stages are tried as the
 * slower one (which is slower depends on c: the ring's α_n against the node's bytes) and the
 * chunk of the lower pipe_time kept, so the cost is continuous in n where β_s varies with n
 * (the cache tier). No chunk smaller than each local rank's share of the shm tier's crossover
 * n*_s = α_s·β_s (below it a chunk's phases are latency), and none whose ring messages fall
 * just below the transport's striping size (pipe_msg_floor).
 */
/*
 * A chunk whose ring messages (a member's part of a rail's share) would fall in [m/2, m), m
 * = dims->net_msg_min, grows to messages of m, capped at n: unstriped messages of that band
 * stream slowly between namespaces where the cores bound the net (docs/algorithms.md).
 */
static double pipe_msg_floor(const terms_t *t, sta_algo_t algo, double c)
{
    double parts = t->N * (algo == STA_ALGO_LEADER ? 1.0 : t->L), m = c / parts;

    if (t->msg_min <= 0.0 || m < t->msg_min / 2.0 || m >= t->msg_min)
        return c;
    return STU_MIN(t->n, t->msg_min * parts);
}

static double pipe_chunk(const terms_t *t, sta_algo_t algo)
{
    const double probe = 1 << 20;   /* any size: the phases are linear in c */
    double in0, net0, out0, in1, net1, out1;

    pipe_phases_at(t, algo, 0.0, &in0, &net0, &out0);
    pipe_phases_at(t, algo, probe, &in1, &net1, &out1);
    double r_net = (net1 - net0) / probe, r_node = (in1 + out1 - in0 - out0) / probe;
    double c_min = t->L * t->a_s * t->b_s * STA_BYTES_PER_US_PER_GBPS;
    /* net the slower: its α per chunk against the node's bytes; and the other way round
     * (a_b = 0, no α anywhere: the finer the better; one byte is the limit) */
    double c_net = r_node > 0.0 ? sqrt(t->n * net0 / r_node) : t->n;
    double c_node = r_net > 0.0 ? sqrt(t->n * (in0 + out0) / r_net) : t->n;
    c_net = pipe_msg_floor(t, algo, STU_MIN(t->n, STU_MAX(STU_MAX(c_net, c_min), 1.0)));
    c_node = pipe_msg_floor(t, algo, STU_MIN(t->n, STU_MAX(STU_MAX(c_node, c_min), 1.0)));
    if (!(net0 > 0.0 || r_net > 0.0))
        return c_node;              /* no net stage (one node): nothing to overlap */
    return pipe_time(t, algo, c_node) < pipe_time(t, algo, c_net) ? c_node : c_net;
}

/*
 * The pipelined two-tier allreduce over N > 1 nodes: K = n/c chunks; chunk k's
 * ring overlaps the node's in-phase of chunk k+1 and out-phase of chunk k-1:
 *   t = in(c) + net(c) + out(c) + (K-1)·max(net(c), in(c) + out(c)),  c = n/K
 */
static double cost_hier_pipelined(const terms_t *t, sta_algo_t algo)
{
    double in, net, out;

    if (t->n <= 0.0) {
        pipe_phases(t, algo, &in, &net, &out);
        return in + net + out;
    }
    return pipe_time(t, algo, pipe_chunk(t, algo));
}

size_t sta_cost_hier_chunk_bytes(const sta_model_t *model, const sta_dims_t *dims,
                                 sta_algo_t algo, size_t bytes)
{
    if (sta_model_check(model) != STRATA_OK || sta_dims_check(dims) != STRATA_OK ||
        (algo != STA_ALGO_HIERARCHICAL && algo != STA_ALGO_LEADER) || bytes == 0)
        return bytes;
    terms_t t = terms_make(model, dims, (double)bytes);
    double c = pipe_chunk(&t, algo);
    return c >= 1.0 ? (size_t)c : 1;
}

int sta_cost_rail_exchange(const sta_model_t *model, const sta_dims_t *dims, size_t part_bytes)
{
    if (sta_model_check(model) != STRATA_OK || sta_dims_check(dims) != STRATA_OK)
        return 0;
    terms_t t = terms_make(model, dims, (double)part_bytes);
    return pair_exchange(&t, (double)part_bytes);
}

int sta_cost_net_cpu_bound(const sta_model_t *model, const sta_dims_t *dims)
{
    if (sta_model_check(model) != STRATA_OK || sta_dims_check(dims) != STRATA_OK ||
        !dims->net_cpu || dims->host_cores <= 0 || dims->host_ranks <= 0)
        return 0;
    return cpu_stream_gbps(dims->host_cores, dims->host_ranks) < model->net.beta_gbps;
}

static double cost_allreduce(const terms_t *t, const sta_dims_t *d, sta_algo_t algo)
{
    double P = t->P, L = t->L, n = t->n;

    switch (algo) {
    case STA_ALGO_RING:
        return lib_copy(t, n) + 2 * (P - 1) * flat_step(t, n / P, ring_crossers(d, 1)) +
               (P - 1) / P * xfer(n, t->g);
    case STA_ALGO_RECURSIVE: {
        int p2 = 1 << log2_floor(d->nranks);
        int aligned = d->nranks == p2;   /* r > 0 shifts the participants off node blocks */
        double c = lib_copy(t, n);       /* the input into the output buffer */
        for (int dist = 1; dist < p2; dist <<= 1)
            c += flat_step_rho(t, n, rd_crossers(d, dist, aligned),
                               rd_root_flows(d, dist, aligned)) + xfer(n, t->g);
        if (d->nranks > p2)
            c += 2 * flat_step(t, n, fold_crossers(d)) + xfer(n, t->g);
        return c;
    }
    case STA_ALGO_HIERARCHICAL:
        if (t->kind == STA_INTRA_SHM && d->nnodes == 1 && n <= (double)STA_NODE_SMALL_BYTES)
            return shm_phase(t, SHM_ALL) + shm_reduce(t, L, n);     /* one round */
        if (t->kind == STA_INTRA_SHM && d->nnodes == 1)
            return node_allreduce(t);                          /* one pass, no net phase */
        return cost_hier_pipelined(t, algo);
    case STA_ALGO_LEADER:
        if (t->kind != STA_INTRA_SHM)
            return STA_COST_NA;   /* it reduces in the node's shared segment */
        return cost_hier_pipelined(t, algo);
    default:
        return STA_COST_NA;
    }
}

/* Two-tier reduce-scatter and allgather permute P blocks (n/β_s) unless rail-major order is
 * already rank order: contiguous ranks on one node, or one rank a node. Off shm the node's
 * ring sends the blocks in rail-major order itself. */
static double blocks_permute(const terms_t *t, const sta_dims_t *d)
{
    if (t->kind != STA_INTRA_SHM || (d->contiguous && (d->nnodes == 1 || d->local_size == 1)))
        return 0.0;
    return xfer(t->n, t->b_s);
}

static double cost_reduce_scatter(const terms_t *t, const sta_dims_t *d, sta_algo_t algo)
{
    double P = t->P, N = t->N, L = t->L, n = t->n;

    switch (algo) {
    case STA_ALGO_RING:   /* the P blocks into a work buffer, this rank's block out */
        return (1 + 1 / P) * lib_copy(t, n) +
               (P - 1) * flat_step(t, n / P, ring_crossers(d, d->contiguous)) +
               (P - 1) / P * xfer(n, t->g);
    case STA_ALGO_HIERARCHICAL:
        return blocks_permute(t, d) + intra_rs(t) +
               ((N - 1) * (t->a_n + t->wl) +
                (N - 1) / N * net_xfer(n, t->R * t->b_n, n / L, t->c_all) +
                (N - 1) / N * xfer(n / L, t->g));
    default:
        return STA_COST_NA;
    }
}

static double cost_allgather(const terms_t *t, const sta_dims_t *d, sta_algo_t algo)
{
    double P = t->P, N = t->N, L = t->L, n = t->n;

    switch (algo) {
    case STA_ALGO_RING:   /* this rank's block into place first */
        return lib_copy(t, n / P) +
               (P - 1) * flat_step(t, n / P, ring_crossers(d, d->contiguous));
    case STA_ALGO_RECURSIVE: {
        /* rank order: node-major only when the placement is known to be contiguous */
        double c = lib_copy(t, n / P);
        for (int dist = 1; dist < d->nranks; dist <<= 1)
            c += flat_step_rho(t, dist * n / P, rd_crossers(d, dist, d->contiguous),
                               rd_root_flows(d, dist, d->contiguous));
        return c;
    }
    case STA_ALGO_HIERARCHICAL:
        return ((N - 1) * (t->a_n + t->wl) +
                (N - 1) / N * net_xfer(n / L * (L / t->R), t->b_n, n / L, t->c_all)) +
               intra_ag(t) + blocks_permute(t, d);
    default:
        return STA_COST_NA;
    }
}

/*
 * The least a rooted call of n bytes costs where the host's cores move the net bytes (c_all >
 * 0) and its hops cross nodes: back to back, every hop of a call streams while the hops of the
 * calls around it do (a chain's of one chunk as much as of many, a tree's levels too), so its
 * `hops` transfers take the cores' share of S = min(host_streams, hops) streams (4 x 1 on 2
 * cores, unshaped, the ring broadcast: 96-119 µs at 128 KiB and 347-398 at 512 KiB, one
 * chunk, against a path of 61 and 190 modelled; 3 hops at 3.6·2/6 GB/s take 109 and 437,
 * docs/benchmarks.md "Which points miss, and why"). 0 without the cores' limit, and on one
 * node, whose loopback hops the path already prices at β_s (intra_hop).
 */
static double rooted_cpu(const terms_t *t_all, const sta_dims_t *d, double host_streams,
                         double hops)
{
    if (!(t_all->c_all > 0.0) || hops < 1.0 || d->nnodes < 2)
        return 0.0;
    int streams = (int)STU_MAX(1.0, STU_MIN(host_streams, hops));
    return xfer(t_all->n, cpu_stream_gbps(d->host_cores, streams));
}

/* Broadcast (with_reduce = 0) and reduce (1) share their shapes; reduce adds the γ terms. A
 * call costs the longer of its busiest rank's path and its hops' bytes on the cores. */
static double cost_rooted(const terms_t *t_all, const sta_dims_t *d, sta_algo_t algo,
                          int with_reduce)
{
    terms_t tr = *t_all;
    const terms_t *t = &tr;
    tr.c_all = tr.c_lead = 0.0;   /* the path's transfers at the link's rate; the cores below */
    double n = t->n, c = (double)STA_PIPELINE_CHUNK;
    double red = with_reduce ? 1.0 : 0.0;
    double root_copy = with_reduce ? 0.0 : lib_copy(t, n);   /* broadcast: root's in -> out */
    double s1 = ring_crossers(d, 1);
    /* A flat step's latency without w (back-to-back calls overlap the waits), and its bytes. */
    double lat1 = flat_step(t, 0.0, s1) - t->w;
    double bytes_n = flat_step(t, n, s1) - flat_step(t, 0.0, s1);
    double flat_cpu = rooted_cpu(t_all, d, d->host_ranks, t->P - 1);

    switch (algo) {
    case STA_ALGO_RING: {
        double k = ceil(n / c);
        double piece = STU_MIN(n, c);
        double hops = t->P > 2 ? 2.0 : 1.0;   /* a middle rank receives and forwards */
        if (k < 1)
            k = 1;
        return root_copy +
               STU_MAX(k * (hops * lat1 + red * xfer(piece, t->g)) + bytes_n, flat_cpu);
    }
    case STA_ALGO_RECURSIVE:
        return root_copy +
               STU_MAX(log2_ceil(d->nranks) * (lat1 + bytes_n + red * xfer(n, t->g)), flat_cpu);
    case STA_ALGO_HIERARCHICAL: {
        /* the tree among the nodes: N - 1 transfers, a host carrying its heads' */
        double heads = ceil((double)d->host_ranks / t->L);
        double tree = log2_ceil(d->nnodes) * (t->a_n + xfer(n, t->b_n) + red * xfer(n, t->g));
        return root_copy + intra_rooted(t, with_reduce) +
               STU_MAX(tree, rooted_cpu(t_all, d, heads, t->N - 1));
    }
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

    terms_t t = terms_make(model, dims, (double)bytes);
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

double sta_cost_step_us(const sta_model_t *model, const sta_dims_t *dims, size_t bytes,
                        int crossers, int root_flows)
{
    if (sta_model_check(model) != STRATA_OK || sta_dims_check(dims) != STRATA_OK ||
        crossers < 0 || crossers > dims->local_size || root_flows < 1 ||
        (crossers > 0 && dims->nnodes < 2))
        return STA_COST_NA;
    terms_t t = terms_make(model, dims, (double)bytes);
    return flat_step_rho(&t, (double)bytes, crossers, root_flows);
}

double sta_cost_alltoall_us(const sta_model_t *model, const sta_dims_t *dims, size_t bytes)
{
    if (sta_model_check(model) != STRATA_OK || sta_dims_check(dims) != STRATA_OK)
        return STA_COST_NA;
    if (dims->nranks == 1)
        return 0.0;
    terms_t t = terms_make(model, dims, (double)bytes);
    double m = t.n / t.P, c = 0.0;
    int L = dims->local_size, N = dims->nnodes;

    if (N > 1 && (!dims->contiguous || dims->unequal))
        return (t.P - 1) * flat_step(&t, m, L);   /* placement unknown: every rank crosses */
    /* k = q·L + j. q = 0 (j >= 1): j ranks cross; q = N-1: L - j cross; otherwise all L. */
    for (int j = 1; j < L; j++) {
        double rho = STU_MAX(1, STU_MIN(j, L - j));
        c += flat_step_rho(&t, m, N > 1 ? j : 0, rho);
        if (N > 1)
            c += flat_step_rho(&t, m, L - j, rho);
    }
    if (N > 1)
        c += ((double)(N - 2) * L + 1) * flat_step(&t, m, L);   /* the middle q, and j = 0 */
    return c;
}

double sta_cost_shm_beta_gbps(const sta_model_t *model, const sta_dims_t *dims, size_t bytes)
{
    if (sta_model_check(model) != STRATA_OK || sta_dims_check(dims) != STRATA_OK)
        return model != NULL ? model->shm.beta_gbps : STA_COST_NA;
    return shm_beta(model, dims, (double)bytes);
}

/*
 * The α-β cost model: what a collective costs, per algorithm, on a two-tier
 * fabric (docs/algorithms.md, "The α-β model", has every formula).
 *
 * Terms: P ranks in N nodes of L ranks each (P = N·L), n bytes = the size
 * nccl-tests prints (allreduce/broadcast/reduce: the buffer; reduce_scatter:
 * the input; allgather: the output; alltoall: what one rank sends). Tiers: shm
 * (inside a node) and net (one NIC between nodes), each t(n) = α + n/β; γ is
 * the reduction's output rate. A node's L ranks share its R NICs: a flat step
 * in which s of them send off the node at once gives each β_n·min(1, R/s).
 * What the shm tier is made of (sta_intra_t) decides what a hop inside a node
 * costs: host shared memory (two copies per hop, the library's own case), a
 * non-blocking switch such as NVSwitch, or a PCIe tree.
 * Units: µs and GB/s (10^9 B/s), so n/β µs = n / (β·1e3). ω is the cost of waking a rank
 * that blocked in a wait, paid where more ranks wait than the host has cores.
 *
 * Everything here is pure arithmetic: no I/O, no allocation, no global state;
 * every function may be called from any thread.
 */
#ifndef STA_COST_MODEL_H
#define STA_COST_MODEL_H

#include <stddef.h>

#include "strata/status.h"

/* Chunk of the pipelined chains (ring broadcast and reduce): the algorithm's spec (issue);
 * 512 KiB is half of a core's 1 MiB L2 (docs/machines.md), so a chunk in flight stays there. */
#define STA_PIPELINE_CHUNK ((size_t)512 * 1024)

/*
 * A shm wait that outlasts its yields blocks on a futex (algos/ctx.c), and is woken by the
 * writer's publish, sooner than a transport's poll() is by readiness: such a wait costs this
 * share of ω. Fit: 2 x 2 on 2 cores (N > 1), 8 B, 6 tables (bench/model.sh, 2026-11-25):
 * leader 65-77 µs and hierarchical 124-146, whose two shm phases each took 26-27 µs past
 * their α terms where ω is 35.
 */
#define STA_SHM_WAKE_RATIO 0.75

/* The shm segment's slot half in the model: STRATA_SHM_CHUNK's default (util/param_table.c).
 * The one-node allreduce runs ceil(n/c) + 1 rounds of it; another chunk moves only α terms. */
#define STA_MODEL_SHM_CHUNK ((size_t)1 << 20)

/* Streams of a two-input reduction (two reads, one write): a one-pass reduction of k inputs
 * into x bytes moves k + 1 streams, (k + 1)/3 of the work γ prices for x bytes. */
#define STA_REDUCE_PAIR_STREAMS 3.0

/* One tcp stream with a core on each side: loopback, one stream, 1 MiB writes, 3.6-4.1
 * GB/s (the low end, as STA_DEFAULT_NET_BETA_GBPS). S streams at once on a host of C cores
 * get min(1, C/(2S)) of it each (cost_model.c); 4 x 1 and 2 x 2 unshaped, from 512
 * KiB, quiet machine (bench/model.sh, docs/benchmarks.md "Model vs measurement"). */
#define STA_NET_CPU_GBPS 3.6

/* Bytes per µs in one GB/s: 10^9 B/s / 10^6 µs/s (definition of the units). */
#define STA_BYTES_PER_US_PER_GBPS 1e3

/* What sta_cost_us() returns when an algorithm does not apply (any negative value means it). */
#define STA_COST_NA (-1.0)

typedef enum sta_coll {
    STA_COLL_ALLREDUCE = 0,
    STA_COLL_REDUCE_SCATTER,
    STA_COLL_ALLGATHER,
    STA_COLL_BROADCAST,
    STA_COLL_REDUCE,
    STA_COLL_COUNT
} sta_coll_t;

typedef enum sta_algo {
    STA_ALGO_AUTO = -1,         /* only as STRATA_ALGO's value: let the model choose */
    STA_ALGO_RING = 0,          /* flat ring / pipelined chain over the net tier */
    STA_ALGO_RECURSIVE,         /* flat recursive doubling / binomial tree over the net tier */
    STA_ALGO_HIERARCHICAL,      /* shm phase, per-rail net phase, shm phase */
    STA_ALGO_LEADER,            /* shm reduce, leaders' ring allreduce, shm broadcast */
    STA_ALGO_COUNT
} sta_algo_t;

/*
 * What connects the ranks of a node: the hardware behind the shm tier (docs/algorithms.md,
 * "Intra-node kinds"). Its β_s is per rank and per direction for a switch or a PCIe tree, the
 * memcpy rate for host shared memory.
 */
typedef enum sta_intra {
    STA_INTRA_SHM = 0,          /* host shared memory, the default and what coll/ runs on: a
                                   flat hop goes through the transport's loopback (two copies
                                   at β_s); two-tier phases copy through one shared segment */
    STA_INTRA_SWITCH,           /* a non-blocking switch (NVSwitch): every rank sends and
                                   receives β_s per direction, to any peer, all at once; one
                                   copy per hop */
    STA_INTRA_PCIE,             /* a PCIe tree: one copy per hop at β_s per direction; the
                                   node's ranks sit in two halves (two switches or sockets)
                                   joined by one root link as fast as a rank's own, which the
                                   flows between the halves share */
    STA_INTRA_COUNT
} sta_intra_t;

typedef struct sta_tier {
    double alpha_us;            /* latency of one step, µs (>= 0) */
    double beta_gbps;           /* bandwidth, GB/s = 10^9 B/s (> 0) */
} sta_tier_t;

/* The model's parameters, in the order of sta_model_t's source[] record. */
typedef enum sta_field {
    STA_FIELD_SHM_ALPHA = 0,
    STA_FIELD_SHM_BETA,
    STA_FIELD_NET_ALPHA,
    STA_FIELD_NET_BETA,
    STA_FIELD_GAMMA,
    STA_FIELD_WAKE,
    STA_FIELD_SHM_CACHE_BETA,
    STA_FIELD_SHM_CACHE_BYTES,
    STA_FIELD_YIELD,
    STA_FIELD_COUNT
} sta_field_t;

/* Where a parameter's value came from, lowest precedence first (algos/profile.h merges). */
typedef enum sta_source {
    STA_SRC_DEFAULT = 0,        /* a named constant in algos/profile.c */
    STA_SRC_CALIBRATED,         /* measured at init (STRATA_CALIBRATE=1) */
    STA_SRC_ENV,                /* a STRATA_* variable */
    STA_SRC_PROFILE,            /* the fabric profile file (STRATA_PROFILE) */
    STA_SRC_COUNT
} sta_source_t;

/*
 * The host's last-level cache as the shm tier sees it (host shared memory only): copies whose
 * working set fits `bytes` run at `beta_gbps` instead of the shm tier's β (a DRAM rate). A
 * collective of n bytes on a host whose S ranks share the cache touches W = 2·S·n bytes (each
 * rank's source and destination); the share f = min(1, bytes/W) of it stays cached and its
 * copies run at 1/β_eff = f/β_llc + (1-f)/β_s (cost_model.c). bytes = 0: no cache tier.
 */
typedef struct sta_cache {
    double beta_gbps;           /* β_llc: copy rate, GB/s, of a cache-resident working set (> 0
                                   where bytes > 0; unused where bytes = 0) */
    double bytes;               /* C: the working set it holds, bytes (>= 0; 0: none, what a
                                   zero-initialised model has) */
} sta_cache_t;

typedef struct sta_model {
    sta_tier_t shm;             /* intra-node shared memory; β = memcpy bandwidth */
    sta_cache_t cache;          /* the host's last-level cache, for the shm tier's copies */
    sta_tier_t net;             /* the transport between nodes, per NIC */
    double gamma_gbps;          /* reduction output rate, GB/s (> 0) */
    double wake_us;             /* ω: waking a rank that blocked, µs (>= 0); paid per wait
                                   only where more ranks run than the host has cores */
    double yield_us;            /* ω_y: one shm round where a node's ranks outnumber the host's
                                   cores and only shm lies between rounds, µs (>= 0) */
    sta_source_t source[STA_FIELD_COUNT];   /* zero-initialised = all defaults */
    sta_intra_t intra;          /* what the shm tier is; zero-initialised = host shm */
    sta_source_t intra_source;  /* where intra came from (default or profile) */
} sta_model_t;

typedef struct sta_dims {
    int nranks;                 /* P >= 1 */
    int nnodes;                 /* N >= 1, N·L == P */
    int local_size;             /* L >= 1, ranks per node (the model assumes equal L) */
    int nrails;                 /* distinct NICs a node's ranks use, 1..L (algos/rail.h) */
    int unequal;                /* 1: nodes hold different numbers of ranks (L = the largest,
                                   N·L >= P): no two-tier algorithm applies */
    int contiguous;             /* 1: ranks are numbered node by node (rank order is the flat
                                   group's node-major order); 0: unknown or interleaved, and
                                   the rank-ordered algorithms (reduce_scatter, allgather) are
                                   costed as if every rank of a node left it at every step */
    int host_ranks;             /* ranks sharing one host's cores (the most on any host;
                                   emulated nodes may share a host); 0: unknown */
    int host_cores;             /* that host's cores; 0: unknown. When the ranks that wait in
                                   a phase outnumber them, waits block: ω each (cost_model.c) */
    int net_cpu;                /* 1: the net transport's bytes are moved by the host's cores
                                   (tcp): streams at once share them (STA_NET_CPU_GBPS);
                                   0: by the NIC (RDMA) or unknown */
    size_t net_msg_min;         /* the transport's striping size where the hosts' cores bound
                                   the net (coll/comm.c): the two-tier pipeline cuts no ring
                                   message between half of it and it (cost_model.c,
                                   pipe_msg_floor); 0: no such rule */
} sta_dims_t;

/* "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"; "?" out of range. */
const char *sta_coll_name(sta_coll_t coll);

/* "auto", "ring", "recursive", "hierarchical", "leader"; "?" out of range. */
const char *sta_algo_name(sta_algo_t algo);

/* "shm", "switch", "pcie"; "?" out of range. */
const char *sta_intra_name(sta_intra_t intra);

/* Parses an intra-node kind: shm|switch|pcie (any case). OK, or STRATA_ERR_INVALID with
 * *intra_p untouched. */
strata_status_t sta_intra_parse(const char *text, sta_intra_t *intra_p);

/*
 * Parses STRATA_ALGO's value: auto|ring|recursive|hierarchical|leader (any case); NULL or ""
 * is auto. OK, or STRATA_ERR_INVALID with *algo_p untouched.
 */
strata_status_t sta_algo_parse(const char *text, sta_algo_t *algo_p);

/*
 * The dims of a group of one rank per node, nnodes >= 1 of them (P = N, L = 1, one rail,
 * contiguous): the inter-node stage of NCCL's CollNet, which the plugin's CollNet runs
 * (plugin/collnet_select.c) and the tuner costs, so both use the same formulas.
 */
void sta_dims_one_per_node(int nnodes, sta_dims_t *dims);

/*
 * The host terms of dims, by the one rule every consumer of the model uses (the library, the
 * CollNet's table, the tuner, strata-plan): host_ranks ranks share host_cores cores (0:
 * unknown), and net_cpu is set when the transport is tcp (its bytes move on the host's cores).
 * transport NULL: unknown, net_cpu 0.
 */
void sta_dims_set_host(sta_dims_t *dims, int host_ranks, int host_cores, const char *transport);

/* OK when P, N, L, nrails are consistent (see sta_dims_t); STRATA_ERR_INVALID otherwise. */
strata_status_t sta_dims_check(const sta_dims_t *dims);

/* OK when every α and ω is finite and >= 0, every β and γ finite and > 0 (the cache's β only
 * where its size is > 0), the cache's size finite and >= 0, and intra a kind. */
strata_status_t sta_model_check(const sta_model_t *model);

/*
 * Whether an algorithm exists for a collective on these dims: leader is allreduce only (and
 * costs STA_COST_NA unless the node is host shared memory, the segment it reduces in),
 * reduce_scatter has no recursive variant, recursive allgather needs P a power of two.
 * Returns 0 for invalid dims.
 */
int sta_algo_applies(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo);

/*
 * Applies, and the collective library implements it for these dims: what the
 * selector may pick. No two-tier algorithm runs on nodes of unequal size.
 */
int sta_algo_selectable(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo);

/*
 * Why algo is not selectable for coll on dims, as a static sentence for a
 * message ("reduce_scatter has no recursive variant"), or NULL when it is.
 */
const char *sta_algo_unfit(const sta_dims_t *dims, sta_coll_t coll, sta_algo_t algo);

/*
 * Predicted time in µs of one collective of `bytes` bytes, or a negative value (STA_COST_NA)
 * when the algorithm does not apply or the model or dims are invalid. 0 when P = 1.
 */
double sta_cost_us(const sta_model_t *model, const sta_dims_t *dims, sta_coll_t coll,
                   sta_algo_t algo, size_t bytes);

/*
 * The chunk, in bytes (1..bytes), the pipelined two-tier allreduce (algo hierarchical or
 * leader, N > 1 nodes: algos/hier_pipe.c) splits `bytes` into: the α-β optimum
 * c* = sqrt(n·a_b/r_o) of cost_model.c's pipe_chunk (a_b the slower stage's fixed cost per
 * chunk, r_o the faster stage's cost per byte), at least L·α_s·β_s. `bytes` for another
 * algorithm, invalid model or dims, or bytes = 0.
 */
size_t sta_cost_hier_chunk_bytes(const sta_model_t *model, const sta_dims_t *dims,
                                 sta_algo_t algo, size_t bytes);

/*
 * 1 where a rail of the pipelined two-tier allreduce over two nodes exchanges each member's
 * part of `part_bytes` whole in one step instead of the ring's two steps of half (cheaper
 * below 2·(α_n + ω_l)·γ: cost_model.c's pair_exchange), 0 otherwise (more nodes, invalid
 * model or dims). The same on every rank for the same model, dims and part.
 */
int sta_cost_rail_exchange(const sta_model_t *model, const sta_dims_t *dims, size_t part_bytes);

/*
 * The piece, in bytes (1..block), a pipelined ring step of `block` bytes is cut into when
 * each piece crosses the net (α_n + c/β_n) and is then reduced (c/γ) while the next one
 * crosses: the step costs (block/c)·α_n + block/β_n + c/γ, least at c* = sqrt(block·α_n·γ)
 * (pipe_chunk's sqrt(n·a_b/r_o) with a_b = α_n, r_o = 1/γ). The CollNet's pieces
 * (plugin/collnet_run.c). `block` for an invalid model or block = 0.
 */
size_t sta_cost_piece_bytes(const sta_model_t *model, size_t block);

/*
 * 1 when the host's cores, not the NIC, bound a net stream on these dims: the transport's
 * bytes are copied by the cores (net_cpu), and β_c(S) = STA_NET_CPU_GBPS·min(1, C/2S), with
 * S = host_ranks streams at once on C = host_cores cores, is below β_n (docs/algorithms.md,
 * "Net bytes on the host's cores"). 0 otherwise, and for an invalid model or dims or
 * unknown cores. The CollNet raises its pieces to the transport's striping size where it
 * holds (plugin/collnet_select.c).
 */
int sta_cost_net_cpu_bound(const sta_model_t *model, const sta_dims_t *dims);

/*
 * The smallest message worth handing the net on these dims, in bytes: `stripe` (the
 * transport's striping size, 0 where it does not stripe) where more than one node shares the
 * net and sta_cost_net_cpu_bound holds, since a message under it takes one stream of the
 * several the cores could run; 0 otherwise. The two-tier pipeline's sta_dims_t.net_msg_min
 * (coll/comm.c, strata-plan) and the CollNet's piece floor (plugin/collnet_select.c).
 */
size_t sta_cost_net_msg_min(const sta_model_t *model, const sta_dims_t *dims, size_t stripe);

/*
 * One step of a flat algorithm, in µs: every rank moves `bytes` to its partner, `crossers` of
 * a node's L ranks (0..L) have their partner on another node, and on a PCIe tree `root_flows`
 * (>= 1) of the node's same-node flows share the root link in each direction (1 for rings and
 * chains, which embed in any tree with one flow per link and direction). The step waits for
 * its slowest hop. STA_COST_NA for an invalid model, dims or argument.
 */
double sta_cost_step_us(const sta_model_t *model, const sta_dims_t *dims, size_t bytes,
                        int crossers, int root_flows);

/*
 * Predicted time in µs of an alltoall in which every rank sends `bytes` in all (bytes/P to
 * each rank, itself included), by pairwise exchange: P-1 flat steps, rank q sending to
 * q + k and receiving from q - k at step k (docs/algorithms.md). The collective library does
 * not run it; the training planner costs expert parallelism with it. STA_COST_NA for an
 * invalid model or dims; 0 when P = 1.
 */
double sta_cost_alltoall_us(const sta_model_t *model, const sta_dims_t *dims, size_t bytes);

/*
 * The shm tier's copy rate in GB/s for a collective of `bytes` on these dims: β_s blended
 * with the cache's β_llc by the share of the working set W = 2·S·bytes the cache holds (S =
 * max(L, host_ranks): the ranks sharing the host's cache), sta_cache_t. β_s itself off host
 * shared memory, without a cache (bytes 0), or for an invalid model or dims.
 */
double sta_cost_shm_beta_gbps(const sta_model_t *model, const sta_dims_t *dims, size_t bytes);

/* The tier's crossover n* = α·β in bytes: below it latency dominates, above it bandwidth. */
double sta_tier_crossover_bytes(const sta_tier_t *tier);

#endif /* STA_COST_MODEL_H */

/*
 * The tuner's costs: what each (algorithm, protocol) of NCCL's cost table
 * takes on Strata, in µs, from the library's α-β model (algos/cost_model.h)
 * and NCCL's own latency constants. Pure computation: no I/O, no globals;
 * built once per communicator at tuner init, read by getCollInfo.
 *
 * Terms: P = nRanks, N = nNodes, L = ranks per node (NCCL's largest), R = the
 * node's NICs in use (rails), n = NCCL's nBytes (allgather and reduce-scatter:
 * the whole P-block buffer). Tiers: net (α_n, β_n per NIC, from the model),
 * the reduction rate γ (model), the host staging link between a GPU and the
 * pinned host buffer of a host-memory CollNet (α_h, β_h, below), the
 * intra-node GPU link (NCCL's own hwLatencies[NVLINK or PCI] for α, β_i below).
 *
 * CollNet (Chain, Direct) and NVLS across nodes hand their inter-node stage to
 * Strata's CollNet: one call per step carries a piece of nc·c bytes (nc
 * channels of NCCL's chunk c, computed as NCCL computes it: 256 KiB for Chain,
 * 512 KiB for Direct, 32 KiB for NVLS, halved for small messages down to
 * 32 KiB; AllReduce pieces are not trimmed to the data, so an 8-byte
 * allreduce moves a whole piece). Each call is the library's allreduce
 * (allgather, reduce-scatter) among the N nodes, one member per node, with the
 * algorithm sta_select_build picks for those dims: the cost is
 * sta_cost_us(that algorithm, piece). With k = ceil(bytes per head / piece)
 * pieces through three pipelined stages (GPU into host memory, the network,
 * host memory back into the GPUs):
 *
 *   in  = piece/β_h + [L > 1]·piece/β_i         (intra-node reduce, D2H store)
 *   out = in                                    (H2D load, intra-node broadcast)
 *   net = sta_cost_us(best, piece)
 *   T   = lat + in + net + out + (k - 1)·max(in, net, out)
 *   lat = 2·α_h + Chain: 2(L-1)·hw_i[Chain]
 *                 Direct: 2·(min(1, L-1)·hw_i[Direct] + (L-1)·0.4)   (NCCL's arity term)
 *                 NVLS: hw_i[NVLS]
 *
 * Direct and NVLS split the data over H = min(L, R) heads, each with its own
 * collComm on its own NIC. NCCL's own model prices this stage as in-switch
 * reduction at the NIC's line rate (bwIntra, no γ, no staging); these
 * formulas replace that.
 *
 * STRATA_TUNER=2 also prices Ring and Tree with the net tier's α and β
 * instead of NCCL's idea of the NIC (its speed and latency properties):
 * f = 0.5 (LL), 120/128 (LL128), 1 (Simple) of β_n reaches the wire, and
 * hw_n, hw_i are NCCL's hwLatencies[NET] and [intra] of that algorithm and
 * protocol, base its baseLatencies:
 *   Ring  AllReduce    base + 2(N-1)·(hw_n + α_n) + 2(P-N)·hw_i + 2(P-1)/P·n/(R·f·β_n)
 *         AG, RS       base +  (N-1)·(hw_n + α_n) +  (P-N)·hw_i +  (P-1)/P·n/(R·f·β_n)
 *         Bcast, Red   base +  (N-1)·(hw_n + α_n) +  (P-N)·hw_i +  n/(R·f·β_n)
 *   Tree  AllReduce    base + 2·((L-1)·hw_i + lg(N)·(hw_n + α_n)) + 2·n/(R·f·β_n)
 * (Tree: NCCL's own bandwidth ratio of 1/2 for its double binary tree.)
 * NCCL's PAT and single-node NVLS entries are never touched.
 */
#ifndef STP_TUNER_COST_H
#define STP_TUNER_COST_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "algos/select.h"
#include "nccl/tuner.h"
#include "strata/status.h"

/* STRATA_TUNER's values. */
typedef enum stp_tuner_mode {
    STP_TUNER_OFF = 0,          /* NULL context: NCCL's own model decides */
    STP_TUNER_COLLNET = 1,      /* CollNet Chain/Direct and NVLS across nodes (the default) */
    STP_TUNER_ALL = 2,          /* those, and Ring and Tree from the net tier's α and β */
} stp_tuner_mode_t;

/* Host staging of a host-memory CollNet: a GPU kernel storing into (and loading from) pinned,
 * mapped host memory across PCIe Gen4 x16 (31.5 GB/s raw): ~20 GB/s is what such mapped
 * accesses sustain. An estimate until measured on a GPU host (docs/algorithms.md). */
#define STP_TUNER_HOST_BETA_GBPS 20.0
/* α_h: the proxy thread sees the GPU's step flag in host memory, and the GPU sees the result's:
 * one busy-polled PCIe round trip each, ~1 µs apiece. An estimate, as above. */
#define STP_TUNER_HOST_ALPHA_US 2.0
/* β_i: one NCCL channel over NVLink within a node: NCCL's per-channel tree ceiling on Hopper,
 * 36-41 GB/s (perChMaxTreeBws, src/graph/tuning.cc at v2.28.9-1). */
#define STP_TUNER_INTRA_BETA_GBPS 40.0
/* Channels NCCL's graph search puts on each NIC when the NIC bounds the rings (the "2 coll
 * channels" of a one-NIC node's INFO line): the channel count the CollNet pieces assume. */
#define STP_TUNER_CHANNELS_PER_NIC 2
/* NCCL's staging buffer (NCCL_BUFFSIZE's default, 4 MiB) over its 8 steps: a Simple step. */
#define STP_TUNER_NCCL_STEP_BYTES ((size_t)512 * 1024)
/* CollNet chunks (src/enqueue.cc calcCollChunking at v2.28.9-1): Chain starts at 256 KiB,
 * Direct at a step, NVLS across nodes at 32 KiB; all halve for small messages to 32 KiB
 * (NVLS to 16 KiB). */
#define STP_TUNER_CHAIN_CHUNK ((size_t)256 * 1024)
#define STP_TUNER_CHUNK_MIN ((size_t)32 * 1024)
#define STP_TUNER_NVLS_CHUNK ((size_t)32 * 1024)
#define STP_TUNER_NVLS_CHUNK_MIN ((size_t)16 * 1024)
/* NCCL's channel trimming for CollNet Chain and rings: a channel per 640 threads x 512 bytes
 * (NCCL_MAX_NTHREADS x the CollNet thread threshold, src/graph/tuning.cc). */
#define STP_TUNER_BYTES_PER_CHANNEL ((size_t)640 * 512)
/* NCCL's CollNet Direct arity serialisation, 0.4 µs per local rank (src/graph/tuning.cc). */
#define STP_TUNER_DIRECT_ARITY_US 0.4
/* Costs above this are written as this: a float holds it, and NCCL compares finite values. */
#define STP_TUNER_COST_MAX 1e30

/* What the tuner knows of one communicator: NCCL's arguments to init, and the rails. */
typedef struct stp_tuner_shape {
    int nranks;                 /* P >= 2 */
    int nnodes;                 /* N >= 2 */
    int ppn;                    /* L: NCCL's maxRanksPerNvlDomain, >= 1 */
    int nrails;                 /* R, 1..L: NICs the node's ranks use (algos/rail.h) */
    int host_cores;             /* this host's cores (0: unknown); NCCL's nodes are hosts, so
                                   the CollNet's members are one per host */
    const char *transport;      /* the net transport's name (NULL: unknown): over tcp its
                                   bytes move on the host's cores (sta_dims_set_host) */
} stp_tuner_shape_t;

typedef struct stp_tuner {
    stp_tuner_mode_t mode;
    stp_tuner_shape_t shape;
    sta_model_t model;          /* the α-β values (net tier, γ) */
    sta_select_t inter;         /* the CollNet's selection among N members, one per node */
    double base[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];     /* NCCL's baseLatencies */
    double hw_net[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];   /* hwLatencies[NET] */
    double hw_intra[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]; /* hwLatencies[NVLINK] */
    size_t chain_chunk;         /* Chain's largest chunk: 256 KiB, or a step with v6 */
    int forced[NCCL_NUM_FUNCTIONS];   /* NCCL_ALGO/NCCL_PROTO name it: leave it alone */
} stp_tuner_t;

/*
 * Fills *t for one communicator. constants are NCCL's (their latencies are read, never
 * written); forced_algo and forced_proto are NCCL_ALGO and NCCL_PROTO (NULL: unset);
 * chain_chunk is the largest CollNet Chain chunk NCCL will use (STP_TUNER_CHAIN_CHUNK, or
 * what getChunkSize raises it to). STRATA_ERR_INVALID for a shape outside the types above,
 * a mode that is not COLLNET or ALL, or an invalid model; *t is then untouched.
 */
strata_status_t stp_tuner_build(stp_tuner_t *t, stp_tuner_mode_t mode,
                                 const stp_tuner_shape_t *shape, const sta_model_t *model,
                                 sta_algo_t inter_forced, const ncclTunerConstants_v5_t *constants,
                                 const char *forced_algo, const char *forced_proto,
                                 size_t chain_chunk);

/*
 * Strata's cost in µs of func (0..NCCL_NUM_FUNCTIONS-1) run by NCCL as (algo, proto) on
 * nbytes, finite and in [0, STP_TUNER_COST_MAX]; or a negative value when the tuner has no
 * cost of its own for that entry (NCCL's stays).
 */
double stp_tuner_cost_us(const stp_tuner_t *t, int func, int algo, int proto, size_t nbytes);

/*
 * getCollInfo's work: replaces every entry of table that NCCL left usable (>= 0) and the
 * tuner prices; entries that are negative (NCCL_ALGO_PROTO_IGNORE) are never written, nor
 * any entry of a function the user forced. Returns the number of entries written.
 */
int stp_tuner_apply(const stp_tuner_t *t, int func, size_t nbytes,
                    float (*table)[NCCL_NUM_PROTOCOLS]);

/*
 * The chunk getChunkSize returns for CollNet Chain AllReduce: NCCL's largest Chain chunk
 * (256 KiB) raised to a whole staging step, so each call to Strata's CollNet carries twice
 * the bytes for the same α; every other case, and every smaller chunk, is returned as is.
 */
size_t stp_tuner_chunk(int func, int algo, int proto, size_t nccl_chunk);

/*
 * Which functions NCCL_ALGO and NCCL_PROTO (NCCL's syntax: "list" or "func:list;func:list",
 * a first entry without a prefix applying to all) constrain: forced[f] = 1 for each.
 * NULL or "" constrains nothing.
 */
void stp_tuner_forced_parse(const char *algo_env, const char *proto_env,
                            int forced[NCCL_NUM_FUNCTIONS]);

#endif /* STP_TUNER_COST_H */

/*
 * strata-plan train: what one training step costs on a given fabric, per parallel axis,
 * from the same α-β model and algorithm choice as the collective library
 * (algos/cost_model.h, algos/select.h). docs/planner.md has every formula and its source.
 *
 * Terms: Φ parameters (Φ_a active per token with MoE), ℓ layers, h hidden size, a heads,
 * s sequence length, b micro-batch (sequences), M micro-batches per step (per pipeline),
 * T = d·M·b·s tokens per step. Layout: TP t, PP p, DP d (t·p·d = GPUs), EP e (carved out of
 * DP), ZeRO stage z on the DP axis over shard groups of f ranks (f = d unless HSDP).
 * Rank order: TP innermost, then DP (EP inside it), then PP (Megatron-LM's default), nodes of
 * G GPUs taking consecutive ranks.
 *
 * Everything here is pure arithmetic on its arguments: no I/O, no global state; any thread.
 * Units: bytes, GB/s = 10^9 B/s, µs inside the α-β model and ms per step outside it.
 */
#ifndef STB_PLAN_TRAIN_H
#define STB_PLAN_TRAIN_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "strata/status.h"

/* Heads when not given: head dimension 128, the common choice of GPT-3 and Llama. */
#define STB_TRAIN_HEAD_DIM 128

/* Rows of communication a step can have (TP, PP, DP or its ZeRO pair, HSDP's replica sync,
 * dense and expert gradients, EP): 8 is every row at once. */
#define STB_TRAIN_MAX_COMMS 8
#define STB_TRAIN_MAX_WARNINGS 8
#define STB_TRAIN_WARNING_LEN 320

typedef enum stb_recompute {
    STB_RECOMPUTE_NONE = 0,
    STB_RECOMPUTE_SELECTIVE,    /* attention's softmax and dropout recomputed (Korthikanti) */
    STB_RECOMPUTE_FULL,         /* every layer's forward run again in its backward */
} stb_recompute_t;

typedef struct stb_train_model {
    double params;              /* Φ, all parameters (experts included) */
    int layers;                 /* ℓ */
    int hidden;                 /* h */
    int heads;                  /* a; 0 = h/STB_TRAIN_HEAD_DIM */
    int seq;                    /* s, tokens per sequence */
    int micro_batch;            /* b, sequences per micro-batch */
    int micro_batches;          /* M per step (gradient accumulation = pipeline micro-batches) */
    double value_bytes;         /* bytes per weight and activation value (2: bf16) */
    double grad_bytes;          /* bytes per gradient value reduced across DP */
    double optim_bytes;         /* optimizer bytes per parameter (12: fp32 master, Adam m, v) */
    int experts;                /* E; 0 = dense */
    int top_k;                  /* K experts per token */
    stb_recompute_t recompute;
} stb_train_model_t;

typedef struct stb_train_cluster {
    int nodes;                  /* N */
    int gpus_per_node;          /* G */
    int nics;                   /* R per node */
    sta_model_t fabric;         /* shm tier = the intra-node link per GPU per direction and
                                   its kind; net tier = one NIC per direction; γ */
    double oversub;             /* bandwidth oversubscription above a leaf switch, >= 1 */
    int leaf_nodes;             /* nodes under one leaf; 0 = every node (no oversubscription) */
    double gpu_mem_bytes;       /* HBM per GPU */
} stb_train_cluster_t;

typedef struct stb_train_compute {
    double peak_tflops;         /* per GPU, dense, at the training precision; 0 = unknown */
    double achieved;            /* fraction of peak the kernels reach, (0, 1] */
    double compute_ms;          /* > 0: measured compute per step per GPU (no comm, no bubble),
                                   used instead of peak × achieved */
} stb_train_compute_t;

typedef struct stb_train_layout {
    int tp, pp, dp, ep;
    int zero;                   /* 0 (DDP), 1, 2, 3 (FSDP) */
    int zero_group;             /* f: ranks a ZeRO shard spans; 0 = dp (f < dp is HSDP) */
    int buckets;                /* gradient buckets overlapping backward; 0 = the best */
    int micro_batches;          /* M for this layout; 0 = the model's */
} stb_train_layout_t;

/* One collective of the step: which axis, what it moves, where, and what it costs. */
typedef struct stb_train_comm {
    const char *axis;           /* "tp", "pp", "dp", "ep" */
    const char *what;           /* "activations", "gradients", "parameters", "tokens", ... */
    const char *coll;           /* "allreduce", "reduce_scatter", "allgather", "send/recv",
                                   "alltoall" */
    const char *algo;           /* the model's choice: "ring", "recursive", "hierarchical",
                                   "pairwise", "p2p" */
    const char *tier;           /* "intra", "inter", "intra+inter" */
    int group;                  /* ranks in the group */
    int group_nodes;            /* nodes the group spans */
    double calls;               /* per step, per GPU */
    double call_bytes;          /* n of one call, nccl-tests' convention */
    double gpu_bytes;           /* bytes one GPU sends per step */
    double call_ms;             /* one call */
    double total_ms;            /* calls × call_ms */
    double exposed_ms;          /* what it adds to the step */
} stb_train_comm_t;

typedef struct stb_train_result {
    stb_train_layout_t layout;  /* as evaluated (dp, f, M and buckets resolved) */
    int ngpus;
    stb_train_comm_t comm[STB_TRAIN_MAX_COMMS];
    int ncomm;
    double active_params;       /* Φ_a */
    double tokens;              /* T per step */
    double model_flops;         /* 6·Φ_a·T */
    double hw_flops;            /* with recomputation: 8·Φ_a·T for full */
    double compute_ms;          /* per GPU per step, no comm, no bubble */
    double bubble_fraction;     /* (p-1)/(M+p-1) */
    double bubble_1f1b;         /* (p-1)/M */
    double pipeline_efficiency; /* M/(M+p-1) */
    double bubble_ms;           /* (p-1) slots of the pipeline */
    double step_ms;
    double mfu, hfu;            /* < 0 when no peak was given */
    double mem_weights, mem_grads, mem_optim, mem_act, mem_total;   /* bytes per GPU */
    double act_layer_bytes;     /* one layer's activations for one micro-batch, per GPU */
    int act_inflight;           /* micro-batches whose activations stage 0 holds at once */
    int fits;                   /* mem_total <= the GPU's memory */
    double stage_gbps_avg;      /* per direction: a boundary's bytes in the compute time */
    double stage_gbps_hide;     /* per direction: one transfer under one micro-batch's fwd */
    int buckets_best;           /* the bucket count with the least exposed gradient sync */
    char warnings[STB_TRAIN_MAX_WARNINGS][STB_TRAIN_WARNING_LEN];
    int nwarnings;
} stb_train_result_t;

/*
 * The layout's missing pieces filled in (dp = GPUs/(t·p) when 0, f = dp when 0, M = the
 * model's when 0), then checked: t·p·d = N·G, p divides ℓ, t divides h and a, e divides d and
 * E, f divides d, ZeRO 0..3, E >= K >= 1 when MoE, a sensible model and fabric. OK, or
 * STRATA_ERR_INVALID with a one-line reason in err.
 */
strata_status_t stb_train_resolve(const stb_train_model_t *model,
                                  const stb_train_cluster_t *cluster,
                                  const stb_train_compute_t *compute, stb_train_layout_t *layout,
                                  char *err, size_t errlen);

/* Evaluates a resolved layout: every row, the step, memory, warnings. */
strata_status_t stb_train_eval(const stb_train_model_t *model, const stb_train_cluster_t *cluster,
                               const stb_train_compute_t *compute,
                               const stb_train_layout_t *layout, stb_train_result_t *result);

/* One collective on a group: the time of the model's choice at `bytes`, its name. */
typedef double (*stb_train_cost_fn)(const void *ctx, double bytes);

/*
 * Gradient buckets: G bytes become ready evenly over a backward window of `window_ms`, in k
 * buckets of G/k (k = 1..kmax); bucket i is ready at i·window/k, the syncs run one after the
 * other, each costing cost(G/k) ms. What is left after the window:
 *   exposed(k) = max(c, window/k + k·c - window),  c = cost(G/k).
 * Returns the k with the least exposed time (the smallest k among equals) and that time in
 * *exposed_p. kmax >= 1.
 */
int stb_train_buckets_best(stb_train_cost_fn cost, const void *ctx, double grad_bytes,
                           double window_ms, int kmax, double *exposed_p);

/* exposed(k) of the formula above, for one k. */
double stb_train_buckets_exposed(stb_train_cost_fn cost, const void *ctx, double grad_bytes,
                                 double window_ms, int k);

/* Korthikanti et al. 2022, with sequence parallelism: one layer's activation bytes per GPU
 * for one micro-batch, at the model's value width. */
double stb_train_act_layer_bytes(const stb_train_model_t *model, int tp);

/* "none", "selective", "full". */
const char *stb_train_recompute_name(stb_recompute_t recompute);

/* The sum over a result's rows of one axis ("tp", "pp", "dp", "ep"): their exposed ms
 * (exposed = 1) or their whole ms per step (0). */
double stb_train_axis_ms(const stb_train_result_t *result, const char *axis, int exposed);

/* The attention heads: the model's, or h/STB_TRAIN_HEAD_DIM. */
int stb_train_heads(const stb_train_model_t *model);

/* Parameters that every token uses: Φ minus the experts it does not route to. */
double stb_train_active_params(const stb_train_model_t *model);

/* Expert parameters (E experts of 8h² in every layer); 0 for a dense model. */
double stb_train_expert_params(const stb_train_model_t *model);

#endif /* STB_PLAN_TRAIN_H */

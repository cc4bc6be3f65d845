/*
 * Private to algos/cost_model.c: the cost model's operands and unit helpers, the terms of one
 * shape and size as doubles, so each formula reads like its comment. Nothing else includes
 * it (the names are short and unprefixed).
 */
#ifndef STA_COST_TERMS_H
#define STA_COST_TERMS_H

#include "algos/cost_model.h"
#include "util/compiler.h"

static inline int is_pow2(int v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* floor(log2 v) for v >= 1. */
static inline int log2_floor(int v)
{
    int k = 0;
    while (v > 1) {
        v >>= 1;
        k++;
    }
    return k;
}

/* ceil(log2 v) for v >= 1: the rounds of a binomial tree over v ranks. */
static inline int log2_ceil(int v)
{
    int k = log2_floor(v);
    return is_pow2(v) ? k : k + 1;
}

/* The model's operands as doubles, so each formula reads like its comment. */
typedef struct terms {
    double P, N, L, R;
    double n;
    double a_s, b_s, a_n, b_n, g;
    double c_all, c_lead;       /* a stream's rate where the host's cores carry the net
                                   transport (dims->net_cpu): every rank of the host streaming
                                   at once, resp. one rank per node; 0: no such limit */
    sta_intra_t kind;
    double w, wl;               /* ω where every rank, resp. ceil(host_ranks/L) a host (the
                                   leaders' ring, a rail's ring), waits, or 0 */
    double y;                   /* ω_y (model->yield_us) */
    int oversub;                /* the busiest host runs more ranks than it has cores */
    double msg_min;             /* dims->net_msg_min */
} terms_t;

/*
 * A stream's rate where the host's cores move the transport's bytes (tcp): one stream with a
 * core on each side reaches STA_NET_CPU_GBPS; S streams at once on C cores share them,
 * β_c(S) = STA_NET_CPU_GBPS·min(1, C/(2S)).
 */
static inline double cpu_stream_gbps(int cores, int streams)
{
    double share = (double)cores / (2.0 * (double)streams);
    return STA_NET_CPU_GBPS * (share < 1.0 ? share : 1.0);
}

/* Time to move (or reduce) `bytes` at `gbps`, in µs. */
static inline double xfer(double bytes, double gbps)
{
    return bytes / (gbps * STA_BYTES_PER_US_PER_GBPS);
}

/* A net transfer: `nic` bytes through the NIC(s) at `gbps`, and each stream's `per` bytes
 * through the host's cores at `cpu` (0: no such limit); the slower sets the time. */
static inline double net_xfer(double nic, double gbps, double per, double cpu)
{
    double t = xfer(nic, gbps);
    return cpu > 0.0 ? STU_MAX(t, xfer(per, cpu)) : t;
}

/* σ(s) = max(1, s/R): how many of a node's senders share each of its R NICs. */
static inline double nic_share(const terms_t *t, double s)
{
    return s > t->R ? s / t->R : 1.0;
}

#endif

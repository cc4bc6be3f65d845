/*
 * The communicator of one parallel axis as the α-β model sees it: `size` ranks `stride`
 * apart in rank order (nodes of G consecutive ranks), its dims (P, N, L, rails) and its
 * fabric (the cluster's, with the NIC share of the group and the oversubscription of the
 * leaf uplinks it crosses). Every rank of a node belongs to some group of each axis and the
 * groups of one axis communicate at the same time, so the node's R NICs are shared by its
 * G/L groups: R·L/G NICs each.
 *
 * Pure functions on their arguments; any thread.
 */
#ifndef STB_PLAN_TRAIN_GROUP_H
#define STB_PLAN_TRAIN_GROUP_H

#include "algos/cost_model.h"
#include "tools/plan/plan_train.h"

typedef struct stb_train_group {
    int size;                   /* ranks */
    int stride;                 /* rank distance between consecutive members */
    int nodes;                  /* nodes it spans */
    int extent;                 /* nodes from its first member's to its last one's */
    sta_dims_t dims;
    sta_model_t fabric;
} stb_train_group_t;

/* The group of `size` ranks `stride` apart, from rank 0. size >= 1, stride >= 1. */
void stb_train_group_make(const stb_train_cluster_t *cluster, int size, int stride,
                          stb_train_group_t *group);

/* "intra" (one node), "inter" (one rank a node), "intra+inter". */
const char *stb_train_group_tier(const stb_train_group_t *group);

/*
 * One collective of `bytes` (nccl-tests' n) on the group: the library's choice
 * (sta_select_best) and its time in ms; *algo_p gets the algorithm's name. 0 ms and "-" for a
 * group of one. Negative when the model has no applicable algorithm.
 */
double stb_train_group_coll_ms(const stb_train_group_t *group, sta_coll_t coll, double bytes,
                               const char **algo_p);

/* A pairwise alltoall in which each rank sends `bytes` in all, ms. */
double stb_train_group_alltoall_ms(const stb_train_group_t *group, double bytes);

/* What one rank sends in one call of coll on P ranks, per byte of n: allreduce 2(P-1)/P,
 * reduce_scatter, allgather and alltoall (P-1)/P. */
double stb_train_sent_per_byte(const char *coll, int nranks);

/*
 * One pipeline hand-off: every GPU sends `bytes` to the GPU `stride` ranks on, the next
 * stage; `stages` stages in all. The node's crossing GPUs share its NICs; the transfer runs
 * at the pace of the slowest boundary. Sets *tier_p ("intra", "inter", "intra+inter").
 */
double stb_train_pp_step_ms(const stb_train_cluster_t *cluster, int stride, int stages,
                            double bytes, const char **tier_p);

#endif /* STB_PLAN_TRAIN_GROUP_H */

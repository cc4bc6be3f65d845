/*
 * NCCL's own values, read from the nccl.h a CUDA toolkit installs
 * (/usr/local/cuda/include; the Makefile compiles sts_cuda_nccl.c against it
 * when it exists), for tests that cross-check include/nccl/ against them.
 * This file never includes either header, so both sides can be compared.
 */
#ifndef STS_CUDA_NCCL_H
#define STS_CUDA_NCCL_H

typedef struct sts_cuda_nccl {
    int results[8];                     /* ncclSuccess .. ncclInProgress */
    int num_results;
    int types[12];                      /* ncclInt8 .. ncclFloat8e5m2 */
    int num_types;
    int ops[5];                         /* ncclSum .. ncclAvg */
    int num_ops;
    long long max_red_op;
    int enum_size;                      /* sizeof(ncclResult_t) */
} sts_cuda_nccl_t;

/* 1 and *v filled when this build found CUDA's nccl.h; 0 (nothing to compare) otherwise. */
int sts_cuda_nccl_values(sts_cuda_nccl_t *v);

#endif /* STS_CUDA_NCCL_H */

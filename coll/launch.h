/*
 * Where a rank learns who it is: explicit configuration, STRATA_* variables,
 * or the launcher that started it (OpenMPI's mpirun, Slurm's srun, torchrun).
 * Pure logic over an injectable environment lookup, so tests can feed any
 * environment without touching the process's own.
 */
#ifndef STC_LAUNCH_H
#define STC_LAUNCH_H

#include "strata/status.h"

#define STC_ADDR_LEN 256
#define STC_NODE_ID_LEN 64

typedef struct stc_launch {
    int rank;
    int nranks;
    char root_addr[STC_ADDR_LEN];    /* "host:port" */
    char node_id[STC_NODE_ID_LEN];   /* STRATA_NODE_ID, else the host name */
    const char *source;              /* "STRATA", "OpenMPI", "Slurm" or "torchrun" */
    int single_host;                 /* 1: the launcher says every rank is on this node */
} stc_launch_t;

/* Returns the value of an environment variable, or NULL when unset. */
typedef const char *(*stc_env_fn)(const char *name);

/* The process's environment; STRATA_* names go through the parameter table. */
const char *stc_env_process(const char *name);

/*
 * Fills *launch from env. Rank/size: STRATA_RANK/STRATA_NRANKS, else
 * OMPI_COMM_WORLD_RANK/_SIZE, else SLURM_PROCID/SLURM_NTASKS, else
 * RANK/WORLD_SIZE (the first pair that is set wins; both halves must be).
 * Root: STRATA_ROOT_ADDR, else MASTER_ADDR + MASTER_PORT. Node id:
 * STRATA_NODE_ID, else the host name. single_host: OMPI_COMM_WORLD_LOCAL_SIZE
 * equal to OMPI_COMM_WORLD_SIZE, SLURM_STEP_NUM_NODES (else SLURM_NNODES) of
 * 1, or LOCAL_WORLD_SIZE equal to WORLD_SIZE, for the source that gave the
 * rank. STRATA_ERR_INVALID with a message naming the variable for anything
 * missing or malformed.
 */
strata_status_t stc_launch_detect(stc_env_fn env, stc_launch_t *launch);

#endif /* STC_LAUNCH_H */

/* Launcher detection: STRATA_*, OpenMPI, Slurm, torchrun. */
#include "coll/launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/param.h"

/*
 * local: the ranks on this node, compared with size; nodes: the node count, compared with 1
 * (the first of the two names that is set). NULL: the launcher does not say.
 */
static const struct {
    const char *source;
    const char *rank;
    const char *size;
    const char *local;
    const char *nodes[2];
} launch_sources[] = {
    {"STRATA", "STRATA_RANK", "STRATA_NRANKS", NULL, {NULL, NULL}},
    {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
     {NULL, NULL}},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", NULL, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES"}},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", {NULL, NULL}},
};

const char *stc_env_process(const char *name)
{
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        if (strcmp(stu_param_def((stu_param_id_t)i)->name, name) == 0)
            return stu_param_env((stu_param_id_t)i);
    return getenv(name);
}

static strata_status_t launch_int(stc_env_fn env, const char *name, int lo, int *out)
{
    const char *text = env(name);
    char *end;

    if (text == NULL || *text == '\0') {
        STU_WARN("launch: %s is not set", name);
        return STRATA_ERR_INVALID;
    }
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > 1 << 24) {
        STU_WARN("launch: %s='%s' is not an integer >= %d", name, text, lo);
        return STRATA_ERR_INVALID;
    }
    *out = (int)v;
    return STRATA_OK;
}

strata_status_t stc_launch_detect(stc_env_fn env, stc_launch_t *launch)
{
    stc_launch_t l;
    strata_status_t status;
    size_t i;

    memset(&l, 0, sizeof(l));
    for (i = 0; i < sizeof(launch_sources) / sizeof(launch_sources[0]); i++)
        if (env(launch_sources[i].rank) != NULL || env(launch_sources[i].size) != NULL)
            break;
    if (i == sizeof(launch_sources) / sizeof(launch_sources[0])) {
        STU_WARN("launch: no rank found: set STRATA_RANK and STRATA_NRANKS, or start the "
                 "ranks with mpirun, srun or torchrun");
        return STRATA_ERR_INVALID;
    }
    l.source = launch_sources[i].source;
    if ((status = launch_int(env, launch_sources[i].size, 1, &l.nranks)) != STRATA_OK ||
        (status = launch_int(env, launch_sources[i].rank, 0, &l.rank)) != STRATA_OK)
        return status;
    if (l.rank >= l.nranks) {
        STU_WARN("launch: rank %d is not below the size %d (%s)", l.rank, l.nranks, l.source);
        return STRATA_ERR_INVALID;
    }
    const char *local = launch_sources[i].local ? env(launch_sources[i].local) : NULL;
    const char *nodes = launch_sources[i].nodes[0] ? env(launch_sources[i].nodes[0]) : NULL;
    if (nodes == NULL && launch_sources[i].nodes[1] != NULL)
        nodes = env(launch_sources[i].nodes[1]);
    l.single_host = (local != NULL && strcmp(local, env(launch_sources[i].size)) == 0) ||
                    (nodes != NULL && strcmp(nodes, "1") == 0);

    const char *root = env("STRATA_ROOT_ADDR");
    if (root != NULL && *root != '\0') {
        if (strlen(root) >= sizeof(l.root_addr)) {
            STU_WARN("launch: STRATA_ROOT_ADDR is too long");
            return STRATA_ERR_INVALID;
        }
        strcpy(l.root_addr, root);
    } else {
        const char *host = env("MASTER_ADDR"), *port = env("MASTER_PORT");
        if (host != NULL && port != NULL && *host != '\0' && *port != '\0') {
            int n = strchr(host, ':') != NULL
                        ? snprintf(l.root_addr, sizeof(l.root_addr), "[%s]:%s", host, port)
                        : snprintf(l.root_addr, sizeof(l.root_addr), "%s:%s", host, port);
            if (n < 0 || (size_t)n >= sizeof(l.root_addr)) {
                STU_WARN("launch: MASTER_ADDR:MASTER_PORT is too long");
                return STRATA_ERR_INVALID;
            }
        }
    }

    const char *node = env("STRATA_NODE_ID");
    if (node != NULL && *node != '\0') {
        if (strlen(node) >= sizeof(l.node_id)) {
            STU_WARN("launch: STRATA_NODE_ID is longer than %zu characters",
                     sizeof(l.node_id) - 1);
            return STRATA_ERR_INVALID;
        }
        strcpy(l.node_id, node);
    } else if (gethostname(l.node_id, sizeof(l.node_id) - 1) != 0) {
        strcpy(l.node_id, "localhost");
    }
    *launch = l;
    return STRATA_OK;
}

/*
 * Communicator lifecycle: who am I (launch.c), rendezvous (bootstrap.c),
 * which node am I on, the node's shared memory, the transport and its
 * connections (connect.c), and the α-β selection tables.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "algos/node_shm.h"
#include "algos/profile.h"
#include "algos/rail.h"
#include "coll/calibrate.h"
#include "coll/comm.h"
#include "coll/launch.h"
#include "coll/secret.h"
#include "coll/worker.h"
#include "util/log.h"
#include "util/hmac.h"
#include "util/param.h"
#include "util/sock.h"
#include "util/time.h"

/* The node segment's tag, as /proc/<pid>/fd shows it (util/shm.h). */
#define COMM_SHM_TAG "strata-node"

/* What every rank tells every other at the first all-gather. */
typedef struct rank_info {
    char node_id[STC_NODE_ID_LEN];
    char host[STC_NODE_ID_LEN];    /* the real host: emulated nodes may share one */
    int32_t pid;
    int32_t ndev;
    int32_t ncpu; /* cores online on this rank's host */
} rank_info_t;

/* What each rank says after making (local rank 0) or not making its node's segment. */
typedef struct shm_info {
    int32_t status;
    int32_t pid;
    int32_t fd; /* local rank 0: its descriptor of the segment; others -1 */
} shm_info_t;

void strata_comm_config_init(strata_comm_config_t *config)
{
    memset(config, 0, sizeof(*config));
    config->rank = -1;
    config->nranks = -1;
    config->root_fd = -1;
    config->job_secret = NULL;
    config->job_secret_len = 0;
}

/* Node index by first appearance in rank order, local rank by order within the node. */
static strata_status_t comm_topology(strata_comm_t *comm, const rank_info_t *info)
{
    const int P = comm->ctx.nranks;
    int nnodes = 0, counts[P];

    memset(counts, 0, sizeof(counts));

    comm->node_of = calloc((size_t)P, sizeof(int));
    comm->local_of = calloc((size_t)P, sizeof(int));
    comm->flat_ranks = calloc((size_t)P, sizeof(int));
    comm->byrank_ranks = calloc((size_t)P, sizeof(int));
    comm->flat_pos_of = calloc((size_t)P, sizeof(int));
    comm->ctx.peers = calloc((size_t)P, sizeof(sta_peer_conn_t));
    if (!comm->node_of || !comm->local_of || !comm->flat_ranks || !comm->byrank_ranks ||
        !comm->flat_pos_of || !comm->ctx.peers)
        return STRATA_ERR_NO_MEMORY;
    for (int r = 0; r < P; r++) {
        int n;
        for (n = 0; n < r; n++)
            if (strcmp(info[n].node_id, info[r].node_id) == 0)
                break;
        if (n == r) {
            comm->node_of[r] = nnodes;
            counts[nnodes++] = 0;
        } else {
            comm->node_of[r] = comm->node_of[n];
        }
        comm->local_of[r] = counts[comm->node_of[r]]++;
        comm->byrank_ranks[r] = r;
    }
    sta_ctx_t *ctx = &comm->ctx;
    ctx->nnodes = nnodes;
    ctx->node = comm->node_of[ctx->rank];
    ctx->local_rank = comm->local_of[ctx->rank];
    ctx->local_size = counts[ctx->node];
    ctx->uniform = 1;
    for (int n = 0; n < nnodes; n++)
        ctx->uniform &= counts[n] == ctx->local_size;
    /* flat: node-major, so a ring crosses each node boundary once */
    int at = 0;
    for (int n = 0; n < nnodes; n++)
        for (int r = 0; r < P; r++)
            if (comm->node_of[r] == n)
                comm->flat_ranks[at++] = r;
    if (ctx->uniform) {
        comm->rank_of = calloc((size_t)P, sizeof(int));
        if (comm->rank_of == NULL)
            return STRATA_ERR_NO_MEMORY;
        for (int r = 0; r < P; r++)
            comm->rank_of[(size_t)comm->node_of[r] * ctx->local_size + comm->local_of[r]] = r;
    }
    comm->flat = (sta_group_t){.ranks = comm->flat_ranks, .size = P};
    comm->byrank = (sta_group_t){.ranks = comm->byrank_ranks, .size = P, .pos = ctx->rank};
    for (int i = 0; i < P; i++)
        comm->flat_pos_of[comm->flat_ranks[i]] = i;
    comm->flat.pos = comm->flat_pos_of[ctx->rank];
    ctx->node_of = comm->node_of;
    ctx->local_of = comm->local_of;
    ctx->rank_of = comm->rank_of;
    /* Ranks that share this host's cores, emulated nodes (STRATA_NODE_ID) included. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int on_host = 0;
    for (int r = 0; r < P; r++)
        on_host += strcmp(info[r].host, info[ctx->rank].host) == 0;
    ctx->wait = ncpu > 0 && on_host > ncpu ? STA_WAIT_BLOCK : STA_WAIT_SPIN;
    /* For the model, the same on every rank: the busiest host and its cores (fewest on a tie). */
    comm->host_ranks = 0;
    comm->host_cores = 0;
    for (int r = 0; r < P; r++) {
        int n = 0;
        for (int q = 0; q < P; q++)
            n += strcmp(info[q].host, info[r].host) == 0;
        if (n > comm->host_ranks || (n == comm->host_ranks && info[r].ncpu < comm->host_cores)) {
            comm->host_ranks = n;
            comm->host_cores = info[r].ncpu > 0 ? info[r].ncpu : 0;
        }
    }
    return STRATA_OK;
}

/* All-gathers each rank's status: the first failure (or a bootstrap failure) wins everywhere. */
static strata_status_t comm_agree(strata_comm_t *comm, strata_status_t mine)
{
    int32_t s = (int32_t)mine, all[comm->ctx.nranks];
    strata_status_t status = stc_boot_allgather(&comm->boot, &s, all, sizeof(s));
    if (status != STRATA_OK)
        return status;
    for (int i = 0; i < comm->ctx.nranks; i++)
        if (all[i] != STRATA_OK)
            return (strata_status_t)all[i];
    return STRATA_OK;
}

/* The rank that makes the node's segment: local rank 0 of `node`. */
static int comm_node_leader(const strata_comm_t *comm, int node)
{
    for (int r = 0; r < comm->ctx.nranks; r++)
        if (comm->node_of[r] == node && comm->local_of[r] == 0)
            return r;
    return -1;
}

/*
 * The node's segment: local rank 0 makes it (no name: util/shm.h), every rank learns its
 * node leader's pid and descriptor, the others map it, then the leader lets its
 * descriptor go. Ranks killed anywhere in between leave nothing behind.
 */
static strata_status_t comm_shm(strata_comm_t *comm)
{
    sta_ctx_t *ctx = &comm->ctx;
    strata_status_t status = STRATA_OK;
    shm_info_t mine = {.pid = (int32_t)getpid(), .fd = -1};

    size_t chunk = (size_t)stu_param_int(STU_PARAM_SHM_CHUNK);
    if (chunk < 4096 * (size_t)ctx->local_size)
        chunk = 4096 * (size_t)ctx->local_size;   /* room for one page per rank per round */
    size_t size = sta_node_segment_size(ctx->local_size, chunk);
    if (ctx->local_rank == 0) {
        status = stu_shm_create(COMM_SHM_TAG, size, &comm->shm);
        if (status == STRATA_OK) {
            sta_node_segment_format(comm->shm.base, ctx->local_size, chunk);
            mine.fd = comm->shm.fd;
        }
    }
    mine.status = (int32_t)status;
    shm_info_t *all = calloc((size_t)ctx->nranks, sizeof(*all));
    if (all == NULL)
        return STRATA_ERR_NO_MEMORY;
    /* Everyone learns whether every node's segment exists before anyone maps one. */
    status = stc_boot_allgather(&comm->boot, &mine, all, sizeof(mine));
    for (int r = 0; status == STRATA_OK && r < ctx->nranks; r++)
        if (all[r].status != STRATA_OK)
            status = (strata_status_t)all[r].status;
    if (status == STRATA_OK && ctx->local_rank != 0) {
        const shm_info_t *lead = &all[comm_node_leader(comm, ctx->node)];
        status = stu_shm_attach(lead->pid, lead->fd, COMM_SHM_TAG, size, &comm->shm);
    }
    free(all);
    status = comm_agree(comm, status);
    stu_shm_release(&comm->shm); /* everyone mapped it or failed */
    if (status == STRATA_OK)
        status = sta_node_open(comm->shm.base, comm->shm.size, ctx->local_rank, ctx->local_size,
                               &ctx->node_tier);
    return status;
}

/* Transport, rail device, listen, all-gather of the handles, connections. */
static strata_status_t comm_transport(strata_comm_t *comm)
{
    sta_ctx_t *ctx = &comm->ctx;
    strata_status_t status;
    sta_rail_map_t map;
    int ndev = 0;
    char handle[STT_HANDLE_SIZE];

    status = stt_registry_select(stu_param_str(STU_PARAM_TRANSPORT), &comm->ops, &ndev);
    if (status != STRATA_OK)
        return sta_ctx_fail(ctx, status, "no transport (STRATA_TRANSPORT=%s)",
                            stu_param_str(STU_PARAM_TRANSPORT));
    status = sta_rail_map_parse(stu_param_str(STU_PARAM_RAIL_MAP), ctx->local_size, ndev, &map);
    if (status != STRATA_OK)
        return sta_ctx_fail(ctx, status, "bad STRATA_RAIL_MAP '%s'",
                            stu_param_str(STU_PARAM_RAIL_MAP));
    comm->dev = sta_rail_device(ctx->local_rank, ndev, &map);
    comm->nrails = sta_rail_count(ctx->local_size, ndev, &map);
    memset(handle, 0, sizeof(handle));
    if ((status = stt_listen(comm->ops, comm->dev, handle, &comm->listen)) != STRATA_OK)
        return sta_ctx_fail(ctx, status, "listening on %s device %d", stt_name(comm->ops),
                            comm->dev);
    char *handles = malloc((size_t)ctx->nranks * STT_HANDLE_SIZE);
    if (handles == NULL)
        return STRATA_ERR_NO_MEMORY;
    status = stc_boot_allgather(&comm->boot, handle, handles, STT_HANDLE_SIZE);
    if (status == STRATA_OK)
        status = stc_connect_peers(comm, handles);
    free(handles);
    if (status == STRATA_OK)
        status = stc_boot_barrier(&comm->boot);
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_INIT, "rank %d/%d node %d/%d local %d/%d: transport %s device %d, "
                 "%d rail(s)", ctx->rank, ctx->nranks, ctx->node, ctx->nnodes, ctx->local_rank,
                 ctx->local_size, stt_name(comm->ops), comm->dev, comm->nrails);
    return status;
}

/*
 * The two-tier pipeline's smallest ring message (sta_dims_t.net_msg_min,
 * sta_cost_net_msg_min): the transport's striping size where its bytes are the host's cores'
 * and they bound the net, 0 elsewhere. It comes from the transport's parameters, which every
 * rank must share: the tables' hash covers it.
 */
static size_t comm_net_msg_min(const strata_comm_t *comm, const sta_dims_t *dims)
{
    stt_props_t props;

    if (comm->ops == NULL || stt_get_props(comm->ops, comm->dev, &props) != STRATA_OK)
        return 0;
    return sta_cost_net_msg_min(&comm->model, dims, props.cpu_copies ? props.stripe_min : 0);
}

static strata_status_t comm_select(strata_comm_t *comm)
{
    sta_ctx_t *ctx = &comm->ctx;
    sta_algo_t forced;
    strata_status_t status;

    sta_model_default(&comm->model);
    if ((status = sta_model_load(&comm->model)) != STRATA_OK)
        return sta_ctx_fail(ctx, status, "cost model parameters (STRATA_PROFILE / STRATA_*)");
    if (stu_param_int(STU_PARAM_CALIBRATE) && (status = stc_calibrate(comm)) != STRATA_OK)
        return sta_ctx_fail(ctx, status, "calibrating the model (STRATA_CALIBRATE=1)");
    if ((status = sta_algo_parse(stu_param_str(STU_PARAM_ALGO), &forced)) != STRATA_OK)
        return sta_ctx_fail(ctx, status, "STRATA_ALGO='%s'", stu_param_str(STU_PARAM_ALGO));
    sta_dims_t dims = {.nranks = ctx->nranks, .nnodes = ctx->nnodes,
                       .local_size = ctx->local_size, .nrails = comm->nrails};
    sta_dims_set_host(&dims, comm->host_ranks, comm->host_cores, stt_name(comm->ops));
    dims.net_msg_min = comm_net_msg_min(comm, &dims);
    /* rank order is node-major (the launchers' default): rank-ordered rings cross once */
    dims.contiguous = 1;
    for (int i = 0; i < ctx->nranks; i++)
        dims.contiguous &= comm->flat_ranks[i] == i;
    if (!ctx->uniform) {
        /* unequal nodes: only flat algorithms; describe the largest node */
        dims.unequal = 1;
        for (int r = 0; r < ctx->nranks; r++)
            if (comm->local_of[r] + 1 > dims.local_size)
                dims.local_size = comm->local_of[r] + 1;
        if (dims.nrails > dims.local_size)
            dims.nrails = dims.local_size;
    }
    status = sta_select_build(&comm->model, &dims, forced, &comm->select);
    if (status != STRATA_OK)
        return sta_ctx_fail(ctx, status, "building the selection tables");
    /* the pipelined two-tier allreduce sizes its chunks from the same model and dims */
    ctx->model = &comm->select.model;
    ctx->dims = &comm->select.dims;
    ctx->hier_chunk = (size_t)stu_param_int(STU_PARAM_HIER_CHUNK);
    if (ctx->rank == 0)
        sta_select_log(&comm->select);   /* the model's tiers, n*, and the thresholds */
    return STRATA_OK;
}

/*
 * Ranks pick their transport, rails and model from their own environment; if
 * two ranks disagree they would run different algorithms for one call. Each
 * rank hashes its selection tables and transport name; all must match rank 0.
 */
static strata_status_t comm_check_same_tables(strata_comm_t *comm)
{
    const int P = comm->ctx.nranks;
    /* FNV-1a over the values (not the bytes: struct padding is not initialised) */
    uint64_t h = 1469598103934665603ull;
#define COMM_HASH(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
    for (const char *c = stt_name(comm->ops); *c != '\0'; c++)
        COMM_HASH((unsigned char)*c);
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        COMM_HASH(comm->select.nranges[c]);
        for (int i = 0; i < comm->select.nranges[c]; i++) {
            COMM_HASH(comm->select.ranges[c][i].upper);
            COMM_HASH(comm->select.ranges[c][i].algo);
        }
    }
    /* the two-tier pipeline's chunks (model and STRATA_HIER_CHUNK): a node's ranks must run
     * the same shm rounds */
    sta_model_t m = comm->select.model;
    for (int f = 0; f < STA_FIELD_COUNT; f++) {
        uint64_t bits;
        memcpy(&bits, sta_model_field(&m, (sta_field_t)f), sizeof(bits));
        COMM_HASH(bits);
    }
    COMM_HASH(comm->ctx.hier_chunk);
    COMM_HASH(comm->select.dims.net_msg_min);
#undef COMM_HASH
    uint64_t *all = calloc((size_t)P, sizeof(*all));
    if (all == NULL)
        return STRATA_ERR_NO_MEMORY;
    strata_status_t status = stc_boot_allgather(&comm->boot, &h, all, sizeof(h));
    for (int r = 1; status == STRATA_OK && r < P; r++) {
        if (all[r] != all[0])
            status = sta_ctx_fail(&comm->ctx, STRATA_ERR_MISMATCH,
                                  "rank %d chose a different transport or algorithm tables than "
                                  "rank 0 (differing STRATA_* settings, profiles or NICs?)", r);
    }
    free(all);
    return status;
}

static void comm_free(strata_comm_t *comm)
{
    stc_disconnect_peers(comm);
    if (comm->listen != NULL)
        stt_close_listen(comm->listen);
    if (comm->ops != NULL)
        stt_fini(comm->ops);
    if (comm->ctx.node_tier != NULL)
        sta_node_close(comm->ctx.node_tier);
    stu_shm_detach(&comm->shm);
    stc_boot_fini(&comm->boot);
    free(comm->ctx.scratch);
    free(comm->ctx.peers);
    free(comm->node_of);
    free(comm->local_of);
    free(comm->rank_of);
    free(comm->flat_ranks);
    free(comm->byrank_ranks);
    free(comm->flat_pos_of);
    free(comm);
}

/*
 * Whether every rank certainly runs on this host: the rendezvous is at a loopback address
 * (rank 0 may only have the launcher's listening socket).
 */
static int comm_root_is_local(const char *root_addr, int root_fd)
{
    stu_addr_t a;
    if (root_addr[0] != '\0')
        return stu_addr_parse(root_addr, &a) == STRATA_OK && stu_addr_is_loopback(&a);
    a.len = sizeof(a.ss);
    return root_fd >= 0 && getsockname(root_fd, (struct sockaddr *)&a.ss, &a.len) == 0 &&
           stu_addr_is_loopback(&a);
}

strata_status_t strata_comm_init_config(const strata_comm_config_t *config,
                                        strata_comm_t **comm_p)
{
    stc_launch_t launch;
    strata_status_t status;
    strata_comm_t *comm;

    if (config == NULL || comm_p == NULL) {
        if (config != NULL && config->root_fd >= 0)
            close(config->root_fd);   /* Strata owns the descriptor from here on */
        return STRATA_ERR_INVALID;
    }
    if ((status = stu_param_reload()) != STRATA_OK) {
        STU_WARN("comm init: fix the STRATA_* variables above");
        if (config->root_fd >= 0)
            close(config->root_fd);
        return status;
    }
    int need_env = config->rank < 0 || config->nranks < 0 ||
                   (config->root_addr == NULL && config->root_fd < 0) || config->node_id == NULL;
    memset(&launch, 0, sizeof(launch));
    if (need_env && (status = stc_launch_detect(stc_env_process, &launch)) != STRATA_OK &&
        (config->rank < 0 || config->nranks < 0)) {
        if (config->root_fd >= 0)
            close(config->root_fd);
        return status;
    }
    if (config->rank >= 0)
        launch.rank = config->rank;
    if (config->nranks >= 0)
        launch.nranks = config->nranks;
    if (config->root_addr != NULL)
        snprintf(launch.root_addr, sizeof(launch.root_addr), "%s", config->root_addr);
    if (config->node_id != NULL)
        snprintf(launch.node_id, sizeof(launch.node_id), "%s", config->node_id);
    else if (launch.node_id[0] == '\0' && gethostname(launch.node_id, STC_NODE_ID_LEN - 1) != 0)
        strcpy(launch.node_id, "localhost");
    if (launch.nranks < 1 || launch.rank < 0 || launch.rank >= launch.nranks) {
        STU_WARN("comm init: rank %d of %d is out of range", launch.rank, launch.nranks);
        if (config->root_fd >= 0)
            close(config->root_fd);
        return STRATA_ERR_INVALID;
    }

    /* A launcher (strata-run) may hand rank 0 an already listening socket. */
    int root_fd = config->root_fd;
    if (root_fd < 0 && launch.rank == 0) {
        int64_t fd = stu_param_int(STU_PARAM_ROOT_FD);
        int listening = 0;
        socklen_t len = sizeof(listening);
        if (fd >= 0 && fd <= INT32_MAX &&
            getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening)
            root_fd = (int)fd;
        else if (fd >= 0)
            STU_WARN("comm init: STRATA_ROOT_FD=%lld is not a listening socket; ignored",
                     (long long)fd);
    }

    stc_job_key_t key;
    status = stc_job_key_load(
        config->job_secret, config->job_secret_len,
        launch.single_host || comm_root_is_local(launch.root_addr, root_fd), &key);
    if (status != STRATA_OK) {
        if (root_fd >= 0)
            close(root_fd);
        return status;
    }
    if ((comm = calloc(1, sizeof(*comm))) == NULL) {
        if (root_fd >= 0)
            close(root_fd);
        return STRATA_ERR_NO_MEMORY;
    }
    for (int c = 0; c < STA_COLL_COUNT; c++)
        comm->last_algo[c] = STA_ALGO_AUTO;    /* nothing ran yet */
    comm->shm = STU_SHM_NONE;
    sta_ctx_t *ctx = &comm->ctx;
    ctx->rank = launch.rank;
    ctx->nranks = launch.nranks;
    /* STRATA_TIMEOUT is 1 ms .. a week (util/param_table.c); an int of ms fits either way */
    int64_t timeout_ms = config->timeout_ms > 0 ? config->timeout_ms
                                                : stu_param_int(STU_PARAM_TIMEOUT);
    ctx->timeout_ns = (uint64_t)timeout_ms * 1000000ull;

    status = stc_boot_init(&comm->boot, launch.root_addr, root_fd, ctx->rank, ctx->nranks,
                           ctx->timeout_ns, key.key);
    stu_secure_zero(&key, sizeof(key));
    if (status != STRATA_OK) {
        sta_ctx_fail(ctx, status, "rendezvous at '%s' failed", launch.root_addr);
        goto err_comm;
    }
    rank_info_t mine, *all = calloc((size_t)ctx->nranks, sizeof(rank_info_t));
    if (all == NULL) {
        status = STRATA_ERR_NO_MEMORY;
        goto err_comm;
    }
    memset(&mine, 0, sizeof(mine));
    snprintf(mine.node_id, sizeof(mine.node_id), "%s", launch.node_id);
    mine.pid = (int32_t)getpid();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    mine.ncpu = ncpu > 0 && ncpu < INT32_MAX ? (int32_t)ncpu : 0;
    if (gethostname(mine.host, sizeof(mine.host) - 1) != 0)
        strcpy(mine.host, "localhost");
    status = stc_boot_allgather(&comm->boot, &mine, all, sizeof(mine));
    if (status == STRATA_OK)
        status = comm_topology(comm, all);
    free(all);
    if (status != STRATA_OK)
        goto err_comm;
    if ((status = comm_shm(comm)) != STRATA_OK) {
        sta_ctx_fail(ctx, status, "node shared memory");
        goto err_comm;
    }
    if ((status = comm_transport(comm)) != STRATA_OK)
        goto err_comm;
    status = comm_select(comm);
    /* Every rank returns the same answer, and runs the same algorithm for the same call. */
    status = comm_agree(comm, status);
    if (status == STRATA_OK)
        status = comm_check_same_tables(comm);
    if (status != STRATA_OK)
        goto err_comm;
    *comm_p = comm;
    return STRATA_OK;
err_comm:
    comm_free(comm);
    return status;
}

strata_status_t strata_comm_init(strata_comm_t **comm_p)
{
    strata_comm_config_t config;
    strata_comm_config_init(&config);
    return strata_comm_init_config(&config, comm_p);
}

void strata_comm_destroy(strata_comm_t *comm)
{
    if (comm == NULL)
        return;
    stc_worker_stop(comm);
    comm_free(comm);
}

int strata_comm_rank(const strata_comm_t *comm) { return comm->ctx.rank; }
int strata_comm_nranks(const strata_comm_t *comm) { return comm->ctx.nranks; }
int strata_comm_local_rank(const strata_comm_t *comm) { return comm->ctx.local_rank; }
int strata_comm_local_size(const strata_comm_t *comm) { return comm->ctx.local_size; }
int strata_comm_node(const strata_comm_t *comm) { return comm->ctx.node; }
int strata_comm_nnodes(const strata_comm_t *comm) { return comm->ctx.nnodes; }

const char *strata_comm_error(const strata_comm_t *comm)
{
    return comm != NULL ? comm->ctx.errmsg : "no communicator";
}

/* The parameter table and its cache. */
#include "util/param.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static const stu_param_def_t param_table[STU_PARAM_COUNT] = {
    [STU_PARAM_DEBUG] = {"STRATA_DEBUG", STU_PARAM_TYPE_STR, "WARN",
        "log level: NONE, VERSION, WARN, INFO or TRACE (NCCL's logger is used when NCCL loaded us)"},
    [STU_PARAM_TRANSPORT] = {"STRATA_TRANSPORT", STU_PARAM_TYPE_STR, "auto",
        "transport: auto (the first built-in one that probes and has a device; ib, then tcp),"
        " ib, tcp, ucx (when built with UCX; never chosen by auto, see docs/ucx-protocol.md),"
        " or loop (in-process, for tests)"},
    [STU_PARAM_ABORT_ON_ERROR] = {"STRATA_ABORT_ON_ERROR", STU_PARAM_TYPE_INT, "0",
        "1: abort() at the first error returned to NCCL, for a core dump at the cause"},
    [STU_PARAM_SOCKET_IFNAME] = {"STRATA_SOCKET_IFNAME", STU_PARAM_TYPE_STR, "",
        "interfaces for the TCP and UCX transports (UCX: its side channel; UCX picks its own"
        " data devices, see UCX_NET_DEVICES): prefixes 'eth,ib', '^' excludes, '=' exact names;"
        " empty: every up interface except loopback and docker, loopback if nothing else"},
    [STU_PARAM_SOCKET_FAMILY] = {"STRATA_SOCKET_FAMILY", STU_PARAM_TYPE_STR, "",
        "address family of TCP and UCX devices: AF_INET, AF_INET6, or empty for either (IPv4"
        " first)"},
    [STU_PARAM_SOCKET_NSOCKS] = {"STRATA_SOCKET_NSOCKS", STU_PARAM_TYPE_INT, "4",
        "TCP sockets per connection (1..8); large messages are striped across them."
        " Default 4, kept after re-measuring 4 MiB messages (helper_tcp_stream, 10 interleaved"
        " rounds on the shared 2-core VM, load 7-13): 4 beat 2 and 1 in 10 of 10 rounds on"
        " loopback and on a veth between namespaces; medians 1 : 2 : 4 = 1 : 1.8 : 3.2 (lo)"
        " and 1 : 1.7 : 2.8 (veth). More sockets keep more data in flight in the kernel and"
        " ride out the peer's scheduling stalls (1 socket with 4 MiB buffers closes less than"
        " half the gap); 8 gave nothing over 4. See docs/tcp-protocol.md"},
    [STU_PARAM_SOCKET_STRIPE_MIN] = {"STRATA_SOCKET_STRIPE_MIN", STU_PARAM_TYPE_INT, "256K",
        "messages below this many bytes travel on one socket, larger ones are striped"},
    [STU_PARAM_SOCKET_BUFSIZE] = {"STRATA_SOCKET_BUFSIZE", STU_PARAM_TYPE_INT, "0",
        "SO_SNDBUF/SO_RCVBUF in bytes; 0 keeps the kernel's autotuning"},
    [STU_PARAM_SOCKET_USER_TIMEOUT] = {"STRATA_SOCKET_USER_TIMEOUT", STU_PARAM_TYPE_INT, "30000",
        "ms after which unacknowledged data or failed keepalives declare a TCP peer dead"},
    [STU_PARAM_CONNECT_TIMEOUT] = {"STRATA_CONNECT_TIMEOUT", STU_PARAM_TYPE_INT, "30000",
        "ms a connection handshake may take before connect/accept fail"},
    [STU_PARAM_RANK] = {"STRATA_RANK", STU_PARAM_TYPE_STR, "",
        "this process's rank (else OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK)"},
    [STU_PARAM_NRANKS] = {"STRATA_NRANKS", STU_PARAM_TYPE_STR, "",
        "number of ranks (else OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or WORLD_SIZE)"},
    [STU_PARAM_ROOT_ADDR] = {"STRATA_ROOT_ADDR", STU_PARAM_TYPE_STR, "",
        "host:port of rank 0's rendezvous (else MASTER_ADDR:MASTER_PORT)"},
    [STU_PARAM_ROOT_FD] = {"STRATA_ROOT_FD", STU_PARAM_TYPE_INT, "-1",
        "rank 0 only: an inherited descriptor already listening at STRATA_ROOT_ADDR, used for"
        " the rendezvous instead of binding (set by strata-run); -1: none"},
    [STU_PARAM_NODE_ID] = {"STRATA_NODE_ID", STU_PARAM_TYPE_STR, "",
        "ranks with the same id share memory as one node; empty: the host name"},
    [STU_PARAM_TIMEOUT] = {"STRATA_TIMEOUT", STU_PARAM_TYPE_INT, "120000",
        "ms bound on communicator init and on each collective; a dead rank fails them by then"},
    [STU_PARAM_SHM_CHUNK] = {"STRATA_SHM_CHUNK", STU_PARAM_TYPE_INT, "1M",
        "bytes per rank and pipeline stage in the intra-node shared-memory segment"},
    [STU_PARAM_ALGO] = {"STRATA_ALGO", STU_PARAM_TYPE_STR, "auto",
        "collective algorithm: auto (the cost model picks per size), ring, recursive,"
        " hierarchical or leader; where it does not apply the model's choice is used"},
    [STU_PARAM_PROFILE] = {"STRATA_PROFILE", STU_PARAM_TYPE_STR, "",
        "fabric profile file ('key = value' lines: shm.alpha_us, shm.beta_gbps, net.alpha_us,"
        " net.beta_gbps, gamma_gbps); its values win over every other source"},
    [STU_PARAM_SHM_ALPHA_US] = {"STRATA_SHM_ALPHA_US", STU_PARAM_TYPE_STR, "",
        "cost model: shared-memory step latency in us (a decimal); empty: profile,"
        " calibration or default"},
    [STU_PARAM_SHM_BETA_GBPS] = {"STRATA_SHM_BETA_GBPS", STU_PARAM_TYPE_STR, "",
        "cost model: shared-memory copy bandwidth in GB/s (a decimal); empty: profile,"
        " calibration or default"},
    [STU_PARAM_NET_ALPHA_US] = {"STRATA_NET_ALPHA_US", STU_PARAM_TYPE_STR, "",
        "cost model: inter-node step latency in us (a decimal); empty: profile,"
        " calibration or default"},
    [STU_PARAM_NET_BETA_GBPS] = {"STRATA_NET_BETA_GBPS", STU_PARAM_TYPE_STR, "",
        "cost model: inter-node bandwidth per NIC in GB/s (a decimal); empty: profile,"
        " calibration or default"},
    [STU_PARAM_GAMMA_GBPS] = {"STRATA_GAMMA_GBPS", STU_PARAM_TYPE_STR, "",
        "cost model: reduction output rate in GB/s (a decimal); empty: profile or default"},
    [STU_PARAM_WAKE_US] = {"STRATA_WAKE_US", STU_PARAM_TYPE_STR, "",
        "cost model: waking a rank that blocked in a wait, in us (a decimal), paid per wait"
        " where more ranks wait than the host has cores; empty: profile or default"},
    [STU_PARAM_CALIBRATE] = {"STRATA_CALIBRATE", STU_PARAM_TYPE_INT, "0",
        "1: measure shm and net alpha/beta at init and use them where neither the profile nor"
        " a STRATA_* variable set the value"},
    [STU_PARAM_RAIL_MAP] = {"STRATA_RAIL_MAP", STU_PARAM_TYPE_STR, "",
        "NIC index per local rank, comma-separated ('0,1,0,1'); empty: local rank mod the"
        " number of devices"},
    [STU_PARAM_TUNER] = {"STRATA_TUNER", STU_PARAM_TYPE_INT, "1",
        "NCCL tuner in the plugin: 0 off (NCCL's own model), 1 CollNet and NVLS across nodes"
        " costed as Strata's CollNet runs them, 2 also Ring and Tree from the net tier's alpha"
        " and beta; the same value on every rank (docs/algorithms.md, 'The NCCL tuner')"},
    [STU_PARAM_IB_HCA] = {"STRATA_IB_HCA", STU_PARAM_TYPE_STR, "",
        "verbs devices and ports for the ib transport, NCCL_IB_HCA's syntax: 'mlx5_0:1,mlx5_1'"
        " prefixes, '^' excludes, '=' exact names, 'hca:port:rail:plane' also sets the v12"
        " railId and planeId; empty: every ACTIVE IB or RoCE port"},
    [STU_PARAM_IB_GID_INDEX] = {"STRATA_IB_GID_INDEX", STU_PARAM_TYPE_INT, "-1",
        "RoCE GID index; -1 chooses automatically (RoCE v2, STRATA_IB_ADDR_FAMILY,"
        " STRATA_IB_ADDR_RANGE, then non-link-local; see docs/ib-protocol.md)"},
    [STU_PARAM_IB_ADDR_FAMILY] = {"STRATA_IB_ADDR_FAMILY", STU_PARAM_TYPE_STR, "AF_INET",
        "address family the automatic RoCE GID choice prefers: AF_INET or AF_INET6"},
    [STU_PARAM_IB_ADDR_RANGE] = {"STRATA_IB_ADDR_RANGE", STU_PARAM_TYPE_STR, "",
        "subnet the automatic RoCE GID choice prefers, as 'addr/prefixlen'; empty: any"},
    [STU_PARAM_IB_TIMEOUT] = {"STRATA_IB_TIMEOUT", STU_PARAM_TYPE_INT, "20",
        "QP local ack timeout exponent: 4.096 us * 2^value per try (NCCL_IB_TIMEOUT's default)"},
    [STU_PARAM_IB_RETRY_CNT] = {"STRATA_IB_RETRY_CNT", STU_PARAM_TYPE_INT, "7",
        "QP transport retries before a work request fails (0..7)"},
    [STU_PARAM_IB_SL] = {"STRATA_IB_SL", STU_PARAM_TYPE_INT, "-1",
        "InfiniBand service level of the QPs; -1: 0"},
    [STU_PARAM_IB_TC] = {"STRATA_IB_TC", STU_PARAM_TYPE_INT, "-1",
        "traffic class of the QPs; -1: the comm's traffic class if the caller set one, else 0"},
    [STU_PARAM_IB_QPS_PER_CONNECTION] = {"STRATA_IB_QPS_PER_CONNECTION", STU_PARAM_TYPE_INT, "1",
        "RC QPs per connection (1..8); messages of STRATA_IB_SPLIT_MIN bytes or more are split"
        " across all of them"},
    [STU_PARAM_IB_SPLIT_MIN] = {"STRATA_IB_SPLIT_MIN", STU_PARAM_TYPE_INT, "64K",
        "with several QPs per connection, smaller messages travel whole on one QP (round robin)"},
    [STU_PARAM_IB_ADAPTIVE_ROUTING] = {"STRATA_IB_ADAPTIVE_ROUTING", STU_PARAM_TYPE_INT, "-1",
        "1: adaptive-routing-safe completions (payload, then a separate 0-byte write with"
        " immediate) above STRATA_IB_AR_THRESHOLD; 0: off; -1: on for IB link layer only"},
    [STU_PARAM_IB_AR_THRESHOLD] = {"STRATA_IB_AR_THRESHOLD", STU_PARAM_TYPE_INT, "8192",
        "message size above which adaptive-routing-safe completions are used"},
    [STU_PARAM_IB_MR_KEEP] = {"STRATA_IB_MR_KEEP", STU_PARAM_TYPE_INT, "0",
        "1: keep registrations made on the fly for buffers passed without a handle after their"
        " last use (faster, but only safe when such buffers are never freed and reused while"
        " the library runs); 0: deregister them when their last request completes"},
    [STU_PARAM_IB_FLUSH] = {"STRATA_IB_FLUSH", STU_PARAM_TYPE_INT, "-1",
        "iflush after receives: 1: a 1-byte loopback RDMA read of the last buffer, host memory"
        " too; 0: complete at once (NCCL_GDR_FLUSH_DISABLE=1); -1: read when the device takes"
        " GPU memory"},
    [STU_PARAM_COLLNET] = {"STRATA_COLLNET", STU_PARAM_TYPE_INT, "1",
        "1: the plugin offers NCCL a CollNet (used with NCCL_COLLNET_ENABLE=1) with the net's"
        " devices; 0: it reports 0 CollNet devices (set it the same on every rank)"},
    [STU_PARAM_COLLNET_ALGO] = {"STRATA_COLLNET_ALGO", STU_PARAM_TYPE_STR, "auto",
        "the CollNet's inter-node algorithm: auto (the cost model picks per size, over nodes"
        " of one rank), ring or recursive; member 0's value is used by all"},
    [STU_PARAM_COLLNET_CHUNK] = {"STRATA_COLLNET_CHUNK", STU_PARAM_TYPE_INT, "128K",
        "bytes per pipelined piece of a CollNet ring step (see docs/collnet-protocol.md);"
        " member 0's value is used by all"},
    [STU_PARAM_COLLNET_STAGE] = {"STRATA_COLLNET_STAGE", STU_PARAM_TYPE_INT, "0",
        "1: the CollNet stages host buffers through its self link as it stages GPU memory"
        " (slower; for tests of that path on machines without GPUs)"},
};

typedef struct param_value {
    int loaded;
    int from_env;
    int64_t ival;
    char *sval;
} param_value_t;

static param_value_t param_values[STU_PARAM_COUNT];
static pthread_mutex_t param_lock = PTHREAD_MUTEX_INITIALIZER;

const stu_param_def_t *stu_param_def(stu_param_id_t id)
{
    return &param_table[id];
}

strata_status_t stu_param_parse_int(const char *text, int64_t *value_p)
{
    char *end;
    long long v;

    if (text == NULL || *text == '\0')
        return STRATA_ERR_INVALID;
    errno = 0;
    v = strtoll(text, &end, 0);
    if (errno != 0 || end == text)
        return STRATA_ERR_INVALID;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return STRATA_ERR_INVALID;
    if (shift != 0 && (v > (INT64_MAX >> shift) || v < (INT64_MIN >> shift)))
        return STRATA_ERR_INVALID;
    *value_p = (int64_t)v * ((int64_t)1 << shift);
    return STRATA_OK;
}

/* Called with param_lock held. */
static void param_load(stu_param_id_t id)
{
    const stu_param_def_t *def = &param_table[id];
    param_value_t *pv = &param_values[id];
    const char *env = getenv(def->name);
    const char *text = (env != NULL) ? env : def->dflt;

    free(pv->sval);
    pv->sval = strdup(text);
    pv->from_env = (env != NULL);
    pv->ival = 0;
    if (def->type == STU_PARAM_TYPE_INT) {
        if (stu_param_parse_int(text, &pv->ival) != STRATA_OK) {
            STU_WARN("param: %s='%s' is not an integer, using the default %s", def->name, text,
                     def->dflt);
            stu_param_parse_int(def->dflt, &pv->ival);
            pv->from_env = 0;
        }
    }
    __atomic_store_n(&pv->loaded, 1, __ATOMIC_RELEASE);
}

static param_value_t *param_get(stu_param_id_t id)
{
    param_value_t *pv = &param_values[id];
    if (!__atomic_load_n(&pv->loaded, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&param_lock);
        if (!pv->loaded)
            param_load(id);
        pthread_mutex_unlock(&param_lock);
    }
    return pv;
}

int64_t stu_param_int(stu_param_id_t id)
{
    return param_get(id)->ival;
}

const char *stu_param_str(stu_param_id_t id)
{
    const char *s = param_get(id)->sval;
    return s != NULL ? s : "";
}

const char *stu_param_env(stu_param_id_t id)
{
    return getenv(param_table[id].name);
}

void stu_param_reload(void)
{
    pthread_mutex_lock(&param_lock);
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        param_load((stu_param_id_t)i);
    pthread_mutex_unlock(&param_lock);
}

void stu_param_release(void)
{
    pthread_mutex_lock(&param_lock);
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        __atomic_store_n(&param_values[i].loaded, 0, __ATOMIC_RELEASE);
        free(param_values[i].sval);
        param_values[i].sval = NULL;
    }
    pthread_mutex_unlock(&param_lock);
}

void stu_param_log_all(void)
{
    if (stu_log_level < STU_LOG_INFO)
        return;
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        param_value_t *pv = param_get((stu_param_id_t)i);
        STU_INFO(STU_LOG_ENV, "param %s=%s (%s)", param_table[i].name, pv->sval ? pv->sval : "",
                 pv->from_env ? "environment" : "default");
    }
}

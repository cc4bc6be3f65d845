/*
 * The one table of STRATA_* variables: name, type, default, help, and what
 * each accepts. Ranges come from what the value feeds (a socket option, a
 * verbs field, a nanosecond deadline) and are enforced by util/param.c.
 */
#include "util/param.h"

#include <stdio.h>
#include <string.h>

#include "util/fuse.h"
#include "util/name_filter.h"

/* Timeouts in ms: a week is past any job's wall clock and keeps ms * 1e6 far from overflow. */
#define PARAM_TIMEOUT_MAX_MS (7 * 24 * 3600 * 1000ll)
/*
 * STRATA_SOCKET_USER_TIMEOUT: the tcp transport spreads it over 3 keepalive probes
 * (transport/tcp/tcp_sock.c), and Linux takes TCP_KEEPIDLE and TCP_KEEPINTVL of at most
 * 32767 s (MAX_TCP_KEEPIDLE, include/net/tcp.h).
 */
#define PARAM_USER_TIMEOUT_MAX_MS (32767ll * 3 * 1000)
/* NCCL_MAX_NET_SIZE_BYTES: the largest message NCCL hands a net plugin. */
#define PARAM_MSG_MAX (1ll << 40)
/* SO_SNDBUF/SO_RCVBUF: the kernel doubles the int it is given. */
#define PARAM_SOCKBUF_MAX (1ll << 30)
/* STRATA_SHM_CHUNK: two halves per rank of a 1 GiB chunk is already far past L3. */
#define PARAM_SHM_CHUNK_MAX (1ll << 30)
/* STRATA_HIER_CHUNK: a chunk of 1 GiB already leaves nothing to overlap below 2 GiB. */
#define PARAM_HIER_CHUNK_MAX (1ll << 30)
/* The GID index goes into ibv_global_route.sgid_index, a uint8_t (infiniband/verbs.h). */
#define PARAM_GID_INDEX_MAX 255

/* STRATA_SOCKET_IFNAME and STRATA_IB_HCA: the filter syntax of util/name_filter.h. */
static strata_status_t param_check_filter(const char *value, char *why, size_t len)
{
    stu_name_filter_t f;
    if (stu_name_filter_parse(value, &f) == STRATA_OK)
        return STRATA_OK;
    snprintf(why, len, "a list of up to %d names or prefixes, each shorter than %d characters,"
             " with an optional :port", STU_NAME_FILTER_MAX, STU_NAME_FILTER_NAMELEN);
    return STRATA_ERR_INVALID;
}

/* STRATA_STATS: a file path; the plugin expands "%p" and "%h" (plugin/net_stats.c). */
#define PARAM_STATS_PATH_MAX 4095
static strata_status_t param_check_stats(const char *value, char *why, size_t len)
{
    size_t n = strlen(value);
    const char *bad = NULL;

    if (n > PARAM_STATS_PATH_MAX)
        bad = "a path of at most 4095 bytes";
    else if (n > 0 && value[n - 1] == '/')
        bad = "a file path, not a directory";
    for (const char *p = value; bad == NULL && *p != '\0'; p++)
        if (p[0] == '%' && p[1] != 'p' && p[1] != 'h')
            bad = "a path where '%' only starts %p (the process id) or %h (the host name)";
    if (bad == NULL)
        return STRATA_OK;
    snprintf(why, len, "%s", bad);
    return STRATA_ERR_INVALID;
}

/* STRATA_NET_FUSE: util/fuse.h's syntax. */
static strata_status_t param_check_fuse(const char *value, char *why, size_t len)
{
    stu_fuse_t f;
    char what[128];

    if (stu_fuse_parse(value, &f, what, sizeof(what)) == STRATA_OK)
        return STRATA_OK;
    snprintf(why, len, "auto, off, all or ';'-separated groups of 2..8 ','-separated device"
             " names (wanted %s)", what);
    return STRATA_ERR_INVALID;
}

static const stu_param_def_t param_table[STU_PARAM_COUNT] = {
    [STU_PARAM_DEBUG] = {"STRATA_DEBUG", STU_PARAM_TYPE_STR, "WARN",
        "log level: NONE, VERSION, WARN, INFO or TRACE (NCCL's logger is used when NCCL loaded us)",
        .choices = "NONE|VERSION|WARN|INFO|ABORT|TRACE"},
    [STU_PARAM_TRANSPORT] = {"STRATA_TRANSPORT", STU_PARAM_TYPE_STR, "auto",
        "transport: auto (the first built-in one that probes and has a device; ib, then tcp),"
        " ib, tcp, ucx (when built with UCX; never chosen by auto, see docs/ucx-protocol.md),"
        " or loop (in-process, for tests)"},
    [STU_PARAM_ABORT_ON_ERROR] = {"STRATA_ABORT_ON_ERROR", STU_PARAM_TYPE_INT, "0",
        "1: abort() at the first error returned to NCCL, for a core dump at the cause",
        .min = 0, .max = 1},
    [STU_PARAM_SOCKET_IFNAME] = {"STRATA_SOCKET_IFNAME", STU_PARAM_TYPE_STR, "",
        "interfaces for the TCP and UCX transports (UCX: its side channel; UCX picks its own"
        " data devices, see UCX_NET_DEVICES): prefixes 'eth,ib', '^' excludes, '=' exact names;"
        " empty: every up interface except loopback and docker, loopback if nothing else",
        .check = param_check_filter},
    [STU_PARAM_SOCKET_FAMILY] = {"STRATA_SOCKET_FAMILY", STU_PARAM_TYPE_STR, "",
        "address family of TCP and UCX devices: AF_INET, AF_INET6, or empty for either (IPv4"
        " first)",
        .choices = "|AF_INET|AF_INET6|ipv4|ipv6"},
    [STU_PARAM_SOCKET_NSOCKS] = {"STRATA_SOCKET_NSOCKS", STU_PARAM_TYPE_INT, "4",
        "TCP sockets per connection (1..8); large messages are striped across them."
        " Default 4, kept after re-measuring 4 MiB messages (helper_tcp_stream, 10 interleaved"
        " rounds on the shared 2-core VM, load 7-13): 4 beat 2 and 1 in 10 of 10 rounds on"
        " loopback and on a veth between namespaces; medians 1 : 2 : 4 = 1 : 1.8 : 3.2 (lo)"
        " and 1 : 1.7 : 2.8 (veth). More sockets keep more data in flight in the kernel and"
        " ride out the peer's scheduling stalls (1 socket with 4 MiB buffers closes less than"
        " half the gap); 8 gave nothing over 4. See docs/tcp-protocol.md",
        .min = 1, .max = 8},
    [STU_PARAM_SOCKET_STRIPE_MIN] = {"STRATA_SOCKET_STRIPE_MIN", STU_PARAM_TYPE_INT, "256K",
        "messages below this many bytes travel on one socket (tcp) or member (a ucx virtual"
        " device), larger ones are striped",
        .min = 0, .max = PARAM_MSG_MAX},
    [STU_PARAM_SOCKET_BUFSIZE] = {"STRATA_SOCKET_BUFSIZE", STU_PARAM_TYPE_INT, "0",
        "SO_SNDBUF/SO_RCVBUF in bytes; 0 keeps the kernel's autotuning",
        .min = 0, .max = PARAM_SOCKBUF_MAX},
    [STU_PARAM_SOCKET_USER_TIMEOUT] = {"STRATA_SOCKET_USER_TIMEOUT", STU_PARAM_TYPE_INT, "30000",
        "ms after which unacknowledged data or failed keepalives declare a TCP peer dead",
        .min = 0, .max = PARAM_USER_TIMEOUT_MAX_MS},
    [STU_PARAM_CONNECT_TIMEOUT] = {"STRATA_CONNECT_TIMEOUT", STU_PARAM_TYPE_INT, "30000",
        "ms a connection handshake may take before connect/accept fail",
        .min = 1, .max = PARAM_TIMEOUT_MAX_MS},
    [STU_PARAM_RANK] = {"STRATA_RANK", STU_PARAM_TYPE_STR, "",
        "this process's rank (else OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK)"},
    [STU_PARAM_NRANKS] = {"STRATA_NRANKS", STU_PARAM_TYPE_STR, "",
        "number of ranks (else OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or WORLD_SIZE)"},
    [STU_PARAM_ROOT_ADDR] = {"STRATA_ROOT_ADDR", STU_PARAM_TYPE_STR, "",
        "host:port of rank 0's rendezvous (else MASTER_ADDR:MASTER_PORT)"},
    [STU_PARAM_ROOT_FD] = {"STRATA_ROOT_FD", STU_PARAM_TYPE_INT, "-1",
        "rank 0 only: an inherited descriptor already listening at STRATA_ROOT_ADDR, used for"
        " the rendezvous instead of binding (set by strata-run); -1: none",
        .min = -1, .max = INT32_MAX},
    [STU_PARAM_NODE_ID] = {"STRATA_NODE_ID", STU_PARAM_TYPE_STR, "",
        "ranks with the same id share memory as one node; empty: the host name"},
    [STU_PARAM_TIMEOUT] = {"STRATA_TIMEOUT", STU_PARAM_TYPE_INT, "120000",
        "ms bound on communicator init and on each collective; a dead rank fails them by then",
        .min = 1, .max = PARAM_TIMEOUT_MAX_MS},
    [STU_PARAM_SHM_CHUNK] = {"STRATA_SHM_CHUNK", STU_PARAM_TYPE_INT, "1M",
        "bytes per rank and pipeline stage in the intra-node shared-memory segment",
        .min = 1, .max = PARAM_SHM_CHUNK_MAX},
    [STU_PARAM_HIER_CHUNK] = {"STRATA_HIER_CHUNK", STU_PARAM_TYPE_INT, "0",
        "bytes per chunk of the pipelined two-tier allreduce over several nodes (a chunk's"
        " shared-memory phases overlap the network phase of the next); 0: the cost model's"
        " optimum, sqrt(n x per-chunk latency / per-byte fill cost); the same on every rank",
        .min = 0, .max = PARAM_HIER_CHUNK_MAX},
    [STU_PARAM_ALGO] = {"STRATA_ALGO", STU_PARAM_TYPE_STR, "auto",
        "collective algorithm: auto (the cost model picks per size), ring, recursive,"
        " hierarchical or leader; where it does not apply the model's choice is used"},
    [STU_PARAM_PROFILE] = {"STRATA_PROFILE", STU_PARAM_TYPE_STR, "",
        "fabric profile file ('key = value' lines: shm.alpha_us, shm.beta_gbps, net.alpha_us,"
        " net.beta_gbps, gamma_gbps, wake_us, yield_us, shm.cache_beta_gbps, shm.cache_bytes,"
        " shm.kind;"
        " a regular file of at most 64 KiB); its values win over"
        " every other source; a bad file fails init"},
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
    [STU_PARAM_YIELD_US] = {"STRATA_YIELD_US", STU_PARAM_TYPE_STR, "",
        "cost model: one shared-memory round where a node's ranks outnumber the host's cores"
        " and wait yielding, in us (a decimal); empty: profile, calibration or default"},
    [STU_PARAM_SHM_CACHE_BETA_GBPS] = {"STRATA_SHM_CACHE_BETA_GBPS", STU_PARAM_TYPE_STR, "",
        "cost model: shared-memory copy bandwidth in GB/s (a decimal) while a collective's"
        " working set fits STRATA_SHM_CACHE_BYTES; empty: profile or default"},
    [STU_PARAM_SHM_CACHE_BYTES] = {"STRATA_SHM_CACHE_BYTES", STU_PARAM_TYPE_STR, "",
        "cost model: the working set, in bytes (a decimal), that the host's last-level cache"
        " holds for shared-memory copies; 0: no cache tier; empty: profile or default"},
    [STU_PARAM_CALIBRATE] = {"STRATA_CALIBRATE", STU_PARAM_TYPE_INT, "0",
        "1: measure shm and net alpha/beta at init and use them where neither the profile nor"
        " a STRATA_* variable set the value",
        .min = 0, .max = 1},
    [STU_PARAM_RAIL_MAP] = {"STRATA_RAIL_MAP", STU_PARAM_TYPE_STR, "",
        "NIC index per local rank, comma-separated ('0,1,0,1'); empty: local rank mod the"
        " number of devices"},
    [STU_PARAM_TUNER] = {"STRATA_TUNER", STU_PARAM_TYPE_INT, "1",
        "NCCL tuner in the plugin: 0 off (NCCL's own model), 1 CollNet and NVLS across nodes"
        " costed as Strata's CollNet runs them, 2 also Ring and Tree from the net tier's alpha"
        " and beta; the same value on every rank (docs/algorithms.md, 'The NCCL tuner')",
        .min = 0, .max = 2},
    [STU_PARAM_IB_HCA] = {"STRATA_IB_HCA", STU_PARAM_TYPE_STR, "",
        "verbs devices and ports for the ib transport, NCCL_IB_HCA's syntax: 'mlx5_0:1,mlx5_1'"
        " prefixes, '^' excludes, '=' exact names, 'hca:port:rail:plane' also sets the v12"
        " railId and planeId; empty: every ACTIVE IB or RoCE port",
        .check = param_check_filter},
    [STU_PARAM_IB_GID_INDEX] = {"STRATA_IB_GID_INDEX", STU_PARAM_TYPE_INT, "-1",
        "RoCE GID index; -1 chooses automatically (RoCE v2, STRATA_IB_ADDR_FAMILY,"
        " STRATA_IB_ADDR_RANGE, then non-link-local; see docs/ib-protocol.md)",
        .min = -1, .max = PARAM_GID_INDEX_MAX},
    [STU_PARAM_IB_ADDR_FAMILY] = {"STRATA_IB_ADDR_FAMILY", STU_PARAM_TYPE_STR, "AF_INET",
        "address family the automatic RoCE GID choice prefers: AF_INET or AF_INET6",
        .choices = "AF_INET|AF_INET6|ipv4|ipv6"},
    [STU_PARAM_IB_ADDR_RANGE] = {"STRATA_IB_ADDR_RANGE", STU_PARAM_TYPE_STR, "",
        "subnet the automatic RoCE GID choice prefers, as 'addr/prefixlen'; empty: any"},
    [STU_PARAM_IB_TIMEOUT] = {"STRATA_IB_TIMEOUT", STU_PARAM_TYPE_INT, "20",
        "QP local ack timeout exponent: 4.096 us * 2^value per try (NCCL_IB_TIMEOUT's default)",
        .min = 1, .max = 31},
    [STU_PARAM_IB_RETRY_CNT] = {"STRATA_IB_RETRY_CNT", STU_PARAM_TYPE_INT, "7",
        "QP transport retries before a work request fails (0..7)",
        .min = 0, .max = 7},
    [STU_PARAM_IB_SL] = {"STRATA_IB_SL", STU_PARAM_TYPE_INT, "-1",
        "InfiniBand service level of the QPs; -1: 0",
        .min = -1, .max = 15},
    [STU_PARAM_IB_TC] = {"STRATA_IB_TC", STU_PARAM_TYPE_INT, "-1",
        "traffic class of the QPs; -1: the comm's traffic class if the caller set one, else 0",
        .min = -1, .max = 255},
    [STU_PARAM_IB_QPS_PER_CONNECTION] = {"STRATA_IB_QPS_PER_CONNECTION", STU_PARAM_TYPE_INT, "1",
        "RC QPs per connection (1..8); messages of STRATA_IB_SPLIT_MIN bytes or more are split"
        " across all of them",
        .min = 1, .max = 8},
    [STU_PARAM_IB_SPLIT_MIN] = {"STRATA_IB_SPLIT_MIN", STU_PARAM_TYPE_INT, "64K",
        "with several QPs per connection, smaller messages travel whole on one QP (round robin)",
        .min = 0, .max = INT32_MAX},
    [STU_PARAM_IB_ADAPTIVE_ROUTING] = {"STRATA_IB_ADAPTIVE_ROUTING", STU_PARAM_TYPE_INT, "-1",
        "1: adaptive-routing-safe completions (payload, then a separate 0-byte write with"
        " immediate) above STRATA_IB_AR_THRESHOLD; 0: off; -1: on for IB link layer only",
        .min = -1, .max = 1},
    [STU_PARAM_IB_AR_THRESHOLD] = {"STRATA_IB_AR_THRESHOLD", STU_PARAM_TYPE_INT, "8192",
        "message size above which adaptive-routing-safe completions are used",
        .min = 0, .max = INT32_MAX},
    [STU_PARAM_IB_MR_KEEP] = {"STRATA_IB_MR_KEEP", STU_PARAM_TYPE_INT, "0",
        "1: keep registrations made on the fly for buffers passed without a handle after their"
        " last use (faster, but only safe when such buffers are never freed and reused while"
        " the library runs); 0: deregister them when their last request completes",
        .min = 0, .max = 1},
    [STU_PARAM_IB_FLUSH] = {"STRATA_IB_FLUSH", STU_PARAM_TYPE_INT, "-1",
        "iflush after receives: 1: a 1-byte loopback RDMA read of the last buffer, host memory"
        " too; 0: complete at once (NCCL_GDR_FLUSH_DISABLE=1); -1: read when the device takes"
        " GPU memory",
        .min = -1, .max = 1},
    [STU_PARAM_JOB_SECRET] = {"STRATA_JOB_SECRET", STU_PARAM_TYPE_STR, "",
        "the job's shared secret itself (16 to 4096 bytes, e.g. `openssl rand -hex 32`), for"
        " launchers that forward variables (mpirun -x, srun --export); visible to the user's"
        " own processes and to anything that prints the environment, so prefer"
        " STRATA_JOB_SECRET_FILE. See docs/reliability.md",
        .flags = STU_PARAM_SECRET},
    [STU_PARAM_JOB_SECRET_FILE] = {"STRATA_JOB_SECRET_FILE", STU_PARAM_TYPE_STR, "",
        "a file holding the job's shared secret (16 to 4096 bytes; a regular file owned by the"
        " user, mode 600): every rank of the collective library must read the same bytes;"
        " required for multi-host runs that strata-run did not start"},
    [STU_PARAM_JOB_SECRET_FD] = {"STRATA_JOB_SECRET_FD", STU_PARAM_TYPE_INT, "-1",
        "an inherited descriptor of a file holding the job's secret (set by strata-run, which"
        " makes a new random one per run); -1: none",
        .min = -1, .max = INT32_MAX},
    [STU_PARAM_COLLNET] = {"STRATA_COLLNET", STU_PARAM_TYPE_INT, "1",
        "1: the plugin offers NCCL a CollNet (used with NCCL_COLLNET_ENABLE=1) with the net's"
        " devices; 0: it reports 0 CollNet devices (set it the same on every rank)",
        .min = 0, .max = 1},
    [STU_PARAM_COLLNET_ALGO] = {"STRATA_COLLNET_ALGO", STU_PARAM_TYPE_STR, "auto",
        "the CollNet's inter-node algorithm: auto (the cost model picks per size, over nodes"
        " of one rank), ring or recursive; member 0's value is used by all",
        .choices = "auto|ring|recursive"},
    /* Below 4 KiB a piece costs more in per-message overhead than it hides (the tcp
     * transport's alpha is ~9 us, 4 KiB take ~1 us at 3.6 GB/s); above 64 MiB it no longer
     * pipelines anything NCCL sends (calls are at most 4 MiB, docs/collnet-protocol.md). */
    [STU_PARAM_COLLNET_CHUNK] = {"STRATA_COLLNET_CHUNK", STU_PARAM_TYPE_INT, "128K",
        "bytes per pipelined piece of a CollNet ring step, 4K..64M, or 0: the cost model's"
        " optimum per step, sqrt(block x net alpha x gamma) (see docs/collnet-protocol.md);"
        " member 0's value is used by all. Unset, pieces are also never below the size from"
        " which the transport stripes a message over its sockets where the model says the"
        " hosts' cores, not the link, bound the net",
        .min = 0, .max = 64 << 20},
    /* One NCCL call (CollNet Chain: 8 channels x 256 KiB) at a time, several smaller ones:
     * docs/collnet-protocol.md, "Bytes in flight". */
    [STU_PARAM_COLLNET_INFLIGHT] = {"STRATA_COLLNET_INFLIGHT", STU_PARAM_TYPE_INT, "2M",
        "bytes of collectives the CollNet runs at once: a call starts while those running"
        " and its own stay within it (the oldest always runs), up to 4 at once; 0: 4 at once"
        " whatever their size",
        .min = 0, .max = INT32_MAX},
    /* Why pieces go in turn where heads outnumber cores: docs/collnet-protocol.md, "Order
     * of pieces". */
    [STU_PARAM_COLLNET_ORDER] = {"STRATA_COLLNET_ORDER", STU_PARAM_TYPE_STR, "auto",
        "the order in which a CollNet ring posts its pieces: step (every piece of a step, then"
        " the next step), piece (every step of a piece, then the next piece), or auto (piece"
        " where some host runs more heads than it has cores and the transports copy through"
        " them, else step); member 0's value is used by all",
        .choices = "auto|step|piece"},
    [STU_PARAM_COLLNET_STAGE] = {"STRATA_COLLNET_STAGE", STU_PARAM_TYPE_INT, "0",
        "1: the CollNet stages host buffers through its self link as it stages GPU memory"
        " (slower; for tests of that path on machines without GPUs)",
        .min = 0, .max = 1},
    [STU_PARAM_COLLNET_WAIT] = {"STRATA_COLLNET_WAIT", STU_PARAM_TYPE_STR, "auto",
        "what the CollNet's test() does when nothing moved: spin (return at once, as NCCL's"
        " proxy expects), poll (sleep on the connections' sockets, up to 2 ms), or auto (spin"
        " where the heads on this host fit its cores; where they outnumber them, poll while"
        " the host's running count shows other work, else spin)",
        .choices = "auto|spin|poll"},
    [STU_PARAM_STATS] = {"STRATA_STATS", STU_PARAM_TYPE_STR, "",
        "file the net plugin writes its counters to as JSON at each finalize (per device and"
        " per connection: bytes, messages, errors, reconnects, time blocked on back-pressure;"
        " docs/multirail.md); %p becomes the process id, %h the host name; empty: none",
        .check = param_check_stats},
    [STU_PARAM_NET_FUSE] = {"STRATA_NET_FUSE", STU_PARAM_TYPE_STR, "auto",
        "virtual NICs (docs/multirail.md): auto (makeVDevice offered: NCCL's merge level"
        " decides), off (never fuse; makeVDevice not offered to NCCL), all (fuse every"
        " interface of the tcp or ucx transport into one device), or groups such as"
        " 'eth1,eth2;eth3,eth4' fused at init in place of their members",
        .check = param_check_fuse},
};

const stu_param_def_t *stu_param_def(stu_param_id_t id)
{
    return &param_table[id];
}

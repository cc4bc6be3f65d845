/*
 * The one net-plugin loader of the tools, benchmarks and functional tests: a
 * plugin loaded the way NCCL loads it (dlopen(RTLD_NOW | RTLD_LOCAL), dlsym
 * of "ncclNetPlugin_v<N>") and driven through one interface whatever ABI
 * version it exports, as NCCL adapts older versions to its newest. Only the
 * public ABI is used, so a tool measures and a test checks what NCCL gets.
 *
 * Versions: v6 to v11, and v12 when include/nccl/net_v12.h exists (NCCL
 * 2.30). What differs is confined to plugin_loader.c: v11 and later take a
 * per-communicator context in init/listen/connect and have finalize; v10
 * takes the traffic class in connect and a profiler callback in init; v7+
 * pass device handles to connect/accept; v6..v8 use int sizes (a size_t that
 * does not fit is refused here, before the call, with ncclInvalidArgument).
 * Adding a version is one row of the loader's table, its properties' copy,
 * and, if its calls changed, a case in the calls that changed.
 *
 * Results are the plugin's own ncclResult_t: the functional tests check
 * them exactly. A tool turns one into a strata_status_t, logged once with the
 * call's name, with stb_plugin_check. This header and plugin_loader.c are
 * the tools' only includers of the NCCL ABI (make lint); a tool includes no
 * nccl/ header itself.
 *
 * The non-blocking contract is NCCL's: connect/accept return ncclSuccess
 * with a NULL comm until ready, isend/irecv with a NULL request for "try
 * again". Thread safety: one thread drives one stb_plugin_t and its comms;
 * the WARN counter is process-wide.
 */
#ifndef STB_PLUGIN_LOADER_H
#define STB_PLUGIN_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/net.h"
#include "strata/status.h"

#define STB_PLUGIN_HANDLE_SIZE NCCL_NET_HANDLE_MAXSIZE
#define STB_PLUGIN_MAX_REQUESTS NCCL_NET_MAX_REQUESTS  /* receives in flight per comm */
#define STB_PLUGIN_MAX_RECVS 8      /* buffers one grouped irecv may carry (NCCL's maximum) */
#define STB_PLUGIN_NEWEST 0         /* as a version: the newest one the library exports */

typedef struct stb_plugin stb_plugin_t;

/* getProperties of any version, copied; -1 (0 for sizes) where the version has no such field. */
typedef struct stb_plugin_props {
    char name[64];
    char pci_path[256];         /* "" when the plugin gave NULL */
    int has_pci_path;
    uint64_t guid;
    int ptr_support;            /* NCCL_PTR_* bits: 1 host, 2 cuda, 4 dmabuf */
    int speed_mbps;
    int port;
    float latency_us;
    int max_comms;
    int max_recvs;
    int reg_is_global;          /* v8+ */
    int force_flush;            /* v9+ */
    int net_device_type;        /* v7+ */
    int net_device_version;     /* v7+ */
    int vprops_ndevs;           /* v9+ */
    int vprops_dev0;
    size_t max_p2p_bytes;       /* v9+ */
    size_t max_coll_bytes;
    int max_multi_request;      /* v11+ */
    int rail_id;                /* v12 */
    int plane_id;
} stb_plugin_props_t;

/*
 * dlopen(path) (NULL: the plugin this tree built) and dlsym of
 * ncclNetPlugin_v<version> (STB_PLUGIN_NEWEST: the newest the library
 * exports). verbose: the logger handed to init prints INFO lines too at 1,
 * INFO and TRACE at 2 (WARN always). STRATA_ERR_NOT_FOUND or STRATA_ERR_INVALID with the reason in err.
 */
strata_status_t stb_plugin_load(const char *path, int version, int verbose,
                                stb_plugin_t **plugin_p, char *err, size_t errlen);
/* dlclose and free. The caller finalizes and closes its comms first. NULL is a no-op. */
void stb_plugin_unload(stb_plugin_t *plugin);
/*
 * Frees the loader's object and leaves the library loaded: for a process
 * about to exit with a pre-v11 plugin (no finalize), whose state must stay
 * reachable for the leak checker.
 */
void stb_plugin_forget(stb_plugin_t *plugin);

int stb_plugin_version(const stb_plugin_t *plugin);
const char *stb_plugin_symbol(const stb_plugin_t *plugin);    /* "ncclNetPlugin_v11" */
const char *stb_plugin_name(const stb_plugin_t *plugin);      /* the table's name */
const void *stb_plugin_table(const stb_plugin_t *plugin);     /* the exported table itself */
void *stb_plugin_ctx(const stb_plugin_t *plugin);             /* v11+: init's context */
/* Another symbol of the loaded library (a table it exports, looked up as NCCL does), or NULL. */
const void *stb_plugin_dlsym(const stb_plugin_t *plugin, const char *symbol);

/*
 * init for the version: v11+ init(&ctx, comm_id, {trafficClass undef},
 * logger, profiler), v10 init(logger, profiler), older init(logger).
 * finalize is v11+'s finalize(ctx); a no-op before (those versions have none).
 */
ncclResult_t stb_plugin_init(stb_plugin_t *plugin, uint64_t comm_id);
ncclResult_t stb_plugin_finalize(stb_plugin_t *plugin);

ncclResult_t stb_plugin_devices(stb_plugin_t *plugin, int *ndev);
ncclResult_t stb_plugin_props(stb_plugin_t *plugin, int dev, stb_plugin_props_t *props);
/*
 * makeVDevice: fuses devs[0..ndevs-1] into a new device, *vdev. v11 takes up to
 * NCCL_NET_MAX_DEVS_PER_NIC (4) members, v12 up to 8; ncclInvalidUsage for a
 * version without makeVDevice (v10 and older) or more members than it takes.
 */
#define STB_PLUGIN_MAX_VDEV_MEMBERS 8
ncclResult_t stb_plugin_make_vdev(stb_plugin_t *plugin, int ndevs, const int *devs, int *vdev);

/* handle: STB_PLUGIN_HANDLE_SIZE bytes, to carry to the peer. */
ncclResult_t stb_plugin_listen(stb_plugin_t *plugin, int dev, void *handle, void **listen);
ncclResult_t stb_plugin_connect(stb_plugin_t *plugin, int dev, void *handle, void **send);
ncclResult_t stb_plugin_accept(stb_plugin_t *plugin, void *listen, void **recv);
ncclResult_t stb_plugin_reg_mr(stb_plugin_t *plugin, void *comm, void *data, size_t size,
                               int type, void **mh);
ncclResult_t stb_plugin_dereg_mr(stb_plugin_t *plugin, void *comm, void *mh);
ncclResult_t stb_plugin_isend(stb_plugin_t *plugin, void *comm, void *data, size_t size,
                              int tag, void *mh, void **req);
/* n (1..STB_PLUGIN_MAX_RECVS) grouped receives. */
ncclResult_t stb_plugin_irecv(stb_plugin_t *plugin, void *comm, int n, void **data,
                              const size_t *sizes, const int *tags, void **mhs, void **req);
/* sizes: one per buffer of the request, or NULL. */
ncclResult_t stb_plugin_test(stb_plugin_t *plugin, void *req, int *done, int *sizes);
/* iflush (the same in every version); *req NULL means nothing to wait for. */
ncclResult_t stb_plugin_iflush(stb_plugin_t *plugin, void *comm, int n, void **data,
                               int *sizes, void **mhs, void **req);
ncclResult_t stb_plugin_close_send(stb_plugin_t *plugin, void *comm);
ncclResult_t stb_plugin_close_recv(stb_plugin_t *plugin, void *comm);
ncclResult_t stb_plugin_close_listen(stb_plugin_t *plugin, void *listen);

/*
 * Polls connect (to handle) and accept (on listen) alternately until both
 * comms are ready: ncclSuccess, the plugin's error (whichever comm was ready
 * is closed again), or ncclInternalError at the deadline (util/time.h) or when
 * give_up(arg) (may be NULL) says the peer is gone.
 */
ncclResult_t stb_plugin_connect_accept(stb_plugin_t *plugin, int dev, void *handle,
                                       void *listen, uint64_t deadline_ns,
                                       int (*give_up)(void *arg), void *arg, void **send,
                                       void **recv);

/*
 * Profiler net events (v10+): stb_plugin_prof_record(1) makes isend and irecv pass a
 * profiler handle, as NCCL does while a profiler wants net events, and counts the
 * events the plugin reports for it through init's callback (reset at each call);
 * stb_plugin_prof_get copies the counts. Process-wide, like the WARN counter.
 */
typedef struct stb_plugin_prof {
    int starts, stops;
    int sock_events;            /* starts with a socket descriptor (ncclProfileSocket) */
    int64_t plugin_id;          /* of the last start */
    uint64_t bytes[2];          /* lengths of started receives [0] and sends [1] */
    int last_fd;
    int qp_events;              /* starts with an IB descriptor (ncclProfileQp) */
    uint64_t qp_bytes;          /* their lengths */
    int qp_bad;                 /* of those, with QP number 0 or a device outside 0..7 */
    int qp_devices;             /* bit per device (member) they named */
} stb_plugin_prof_t;
void stb_plugin_prof_record(int on);
void stb_plugin_prof_get(stb_plugin_prof_t *out);

/* WARN lines the plugin logged through the loader's logger since the process started. */
int stb_plugin_warnings(void);

/* "ncclRemoteError", for messages. */
const char *stb_plugin_result_str(ncclResult_t res);

/*
 * A tool's view of a result: STRATA_OK for ncclSuccess; otherwise the failure
 * is logged ("plugin <call> failed: ncclSystemError") and translated
 * (ncclSystemError IO, ncclInvalidArgument and ncclInvalidUsage INVALID,
 * ncclRemoteError REMOTE, anything else INTERNAL).
 */
strata_status_t stb_plugin_check(ncclResult_t res, const char *call);

/* A tool's plugin: load (newest version) and init; a failure is logged. */
strata_status_t stb_plugin_open(const char *path, uint64_t comm_id, int verbose,
                                stb_plugin_t **plugin_p);
/* finalize and unload. NULL is a no-op. */
void stb_plugin_close(stb_plugin_t *plugin);

/*
 * The tuner in the same library, as NCCL finds it when no tuner library is named: the net
 * plugin's file opened again (the same loaded image, so it shares the net's state) and
 * ncclTunerPlugin_v<version> looked up (5 or 6). Open it after stb_plugin_open (whose init
 * made the net context a Strata tuner looks for) and close it before stb_plugin_close.
 * Failures are logged and translated as stb_plugin_check does.
 */
typedef struct stb_tuner stb_tuner_t;

strata_status_t stb_tuner_open(const stb_plugin_t *plugin, int version, stb_tuner_t **tuner_p);
/* finalize (if init ran) and dlclose. NULL is a no-op. */
void stb_tuner_close(stb_tuner_t *tuner);
const char *stb_tuner_name(const stb_tuner_t *tuner);

/*
 * init(&ctx, comm_id, nranks, nnodes, logger, {nnodes, min_ppn, max_ppn}, constants), as
 * NCCL calls it; constants is an ncclTunerConstants_v5_t (tools/lib/nccl_model.h), in and
 * out. *active_p = 0 when the tuner opted out with a NULL context.
 */
strata_status_t stb_tuner_init(stb_tuner_t *tuner, uint64_t comm_id, size_t nranks, size_t nnodes,
                               int min_ppn, int max_ppn, void *constants, int *active_p);
/* getCollInfo on table, NCCL's float[7][3] (passed cast to float**, as NCCL does). */
strata_status_t stb_tuner_coll_info(stb_tuner_t *tuner, int func, size_t nbytes, int pipe_ops,
                                    float *table, int reg_buff, int *nchannels_p);
/* v6's getChunkSize; a v5 tuner, or a v6 one without it, leaves *chunk_p. */
strata_status_t stb_tuner_chunk(stb_tuner_t *tuner, int func, size_t nbytes, int algo, int proto,
                                int nchannels, size_t *chunk_p);

/* The logger the loader hands the plugin's tables (NCCL's signature), for sibling tables. */
ncclDebugLogger_t stb_plugin_logger(void);
/* A version's properties as the loader reports them (rail and plane undefined before v12). */
void stb_plugin_props_v11(stb_plugin_props_t *out, const ncclNetProperties_v11_t *p);
void stb_plugin_props_v12(stb_plugin_props_t *out, const ncclNetProperties_v12_t *p);
/* The path the plugin was loaded from. */
const char *stb_plugin_path(const stb_plugin_t *plugin);

/* The last WARN line the plugin logged through the loader's logger ("" if none); thread-safe. */
void stb_plugin_last_warning(char *buf, size_t len);

#endif /* STB_PLUGIN_LOADER_H */

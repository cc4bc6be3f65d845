/*
 * A net plugin loaded the way NCCL loads it: dlopen(RTLD_NOW | RTLD_LOCAL),
 * dlsym("ncclNetPlugin_v11"), one init per "communicator", finalize and
 * dlclose at the end. Only the public ABI is used, so a bench measures what
 * NCCL gets.
 *
 * This is the one bench file that includes the NCCL ABI headers; callers see
 * Strata types. Every wrapper returns a strata_status_t translated from the
 * plugin's ncclResult_t and logs a failure with the entry point's name. The
 * non-blocking contract is NCCL's: connect/accept return STRATA_OK with a NULL
 * comm until ready, isend/irecv with a NULL request for "try again".
 *
 * One stb_plugin_t per process; its comms are used by one thread.
 */
#ifndef STB_PLUGIN_H
#define STB_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

#define STB_PLUGIN_HANDLE_SIZE 128     /* NCCL_NET_HANDLE_MAXSIZE */
#define STB_PLUGIN_MAX_REQUESTS 32     /* NCCL_NET_MAX_REQUESTS: receives in flight per comm */
#define STB_PLUGIN_SYMBOL "ncclNetPlugin_v11"

typedef struct stb_plugin stb_plugin_t;

/* What getProperties reported, copied into fixed storage. */
typedef struct stb_plugin_props {
    char name[64];
    char pci_path[256];     /* "" when the plugin gave NULL */
    uint64_t guid;
    int ptr_support;        /* NCCL_PTR_* bits: 1 host, 2 cuda, 4 dmabuf */
    int reg_is_global;
    int force_flush;
    int speed_mbps;
    int port;
    float latency_us;
    int max_comms;
    int max_recvs;
    int net_device_type;
    int net_device_version;
    size_t max_p2p_bytes;
    size_t max_coll_bytes;
    int max_multi_request_size;
} stb_plugin_props_t;

/*
 * Loads path, resolves ncclNetPlugin_v11 and calls init(&ctx, comm_id, {-1},
 * logger, profiler) with a logger that prints WARN lines on stderr (and INFO
 * with verbose).
 */
strata_status_t stb_plugin_open(const char *path, uint64_t comm_id, int verbose,
                                stb_plugin_t **plugin_p);
/* finalize(ctx), dlclose. Comms must be closed first. NULL is a no-op. */
void stb_plugin_close(stb_plugin_t *plugin);

/* The plugin's own name (ncclNet_v11_t.name). */
const char *stb_plugin_name(const stb_plugin_t *plugin);

strata_status_t stb_plugin_devices(stb_plugin_t *plugin, int *ndev_p);
strata_status_t stb_plugin_props_get(stb_plugin_t *plugin, int dev, stb_plugin_props_t *props);

/* handle: STB_PLUGIN_HANDLE_SIZE bytes, to carry to the peer. */
strata_status_t stb_plugin_listen(stb_plugin_t *plugin, int dev, void *handle, void **lcomm_p);
/* Non-blocking: *scomm_p / *rcomm_p stay NULL until the connection is ready. */
strata_status_t stb_plugin_connect(stb_plugin_t *plugin, int dev, void *handle, void **scomm_p);
strata_status_t stb_plugin_accept(stb_plugin_t *plugin, void *lcomm, void **rcomm_p);

/* Host memory registration on a send or receive comm. */
strata_status_t stb_plugin_reg(stb_plugin_t *plugin, void *comm, void *buf, size_t size,
                               void **mhandle_p);
strata_status_t stb_plugin_dereg(stb_plugin_t *plugin, void *comm, void *mhandle);

/* One-buffer isend/irecv; *req_p NULL means "try again after testing". */
strata_status_t stb_plugin_isend(stb_plugin_t *plugin, void *scomm, void *buf, size_t size,
                                 int tag, void *mhandle, void **req_p);
strata_status_t stb_plugin_irecv(stb_plugin_t *plugin, void *rcomm, void *buf, size_t size,
                                 int tag, void *mhandle, void **req_p);
/* *done_p 1 when complete; then *size_p is the size the plugin reported. */
strata_status_t stb_plugin_test(stb_plugin_t *plugin, void *req, int *done_p, size_t *size_p);

void stb_plugin_close_send(stb_plugin_t *plugin, void *scomm);
void stb_plugin_close_recv(stb_plugin_t *plugin, void *rcomm);
void stb_plugin_close_listen(stb_plugin_t *plugin, void *lcomm);

/*
 * The tuner in the same library, as NCCL finds it when no tuner library is named: the net
 * plugin's file opened again (the same loaded image, so it shares the net's state) and
 * ncclTunerPlugin_v<version> looked up (5 or 6). Open it after stb_plugin_open (whose init
 * made the net context a Strata tuner looks for) and close it before stb_plugin_close.
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

#endif /* STB_PLUGIN_H */

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
 * One stb_plugin_t per process; its comms are used by one thread. The same
 * library's CollNet is reached through stb_collnet_open (below).
 */
#ifndef STB_PLUGIN_H
#define STB_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "strata/types.h"

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

/* The last WARN line the plugin logged through the loader's logger ("" if none); thread-safe. */
void stb_plugin_last_warning(char *buf, size_t len);

/* ------------------------------------------------------------------ CollNet */

/*
 * The CollNet of the same library, driven as NCCL's proxy drives it (see
 * include/nccl/net_v11.h): looked up as ncclCollNetPlugin_v<version> (11 or
 * 12), init(&ctx, comm_id, logger) after the net's, finalize at close. Types
 * and operators are Strata's, translated to NCCL's ncclDataType_t and
 * ncclRedOp_t here; a NULL *req_p means "again" (back-pressure), as NCCL reads
 * it. Each collComm is used by one thread at a time; connect blocks.
 */
typedef struct stb_collnet stb_collnet_t;

/* STRATA_ERR_NOT_FOUND when the library has no such table. */
strata_status_t stb_collnet_open(stb_plugin_t *plugin, int version, uint64_t comm_id,
                                 stb_collnet_t **cn_p);
/* finalize(ctx). Comms must be closed first. NULL is a no-op. */
void stb_collnet_close(stb_collnet_t *cn);

strata_status_t stb_collnet_devices(stb_collnet_t *cn, int *ndev_p);
/* v12 adds the rail and the plane; with v11 both read -1. */
strata_status_t stb_collnet_props_get(stb_collnet_t *cn, int dev, stb_plugin_props_t *props,
                                      int *rail_p, int *plane_p);
strata_status_t stb_collnet_listen(stb_collnet_t *cn, int dev, void *handle, void **lcomm_p);
/* handles[nranks] as NCCL gathers them; rank: this member's. */
strata_status_t stb_collnet_connect(stb_collnet_t *cn, void *const *handles, int nranks,
                                    int rank, void *lcomm, void **ccomm_p);
/* NCCL's question for (its type, its operator); nccl_type / nccl_op are NCCL's numbers. */
strata_status_t stb_collnet_reduce_support(stb_collnet_t *cn, int nccl_type, int nccl_op,
                                           int *supported_p);
/* NCCL's numbers for a Strata type and operator (avg: ncclAvg, which NCCL never sends). */
int stb_collnet_nccl_type(strata_dtype_t dtype);
int stb_collnet_nccl_op(strata_op_t op);
strata_status_t stb_collnet_reg(stb_collnet_t *cn, void *ccomm, void *buf, size_t size,
                                void **mhandle_p);
strata_status_t stb_collnet_dereg(stb_collnet_t *cn, void *ccomm, void *mhandle);
strata_status_t stb_collnet_iallreduce(stb_collnet_t *cn, void *ccomm, void *send, void *recv,
                                       size_t count, strata_dtype_t dtype, strata_op_t op,
                                       void *send_mh, void *recv_mh, void **req_p);
/* One window [window_off, +window_bytes) of the nranks x bytes_per_rank rank-major buffer. */
strata_status_t stb_collnet_iallgather(stb_collnet_t *cn, void *ccomm, void *send, void *send_mh,
                                       void *recv, void *recv_mh, size_t bytes_per_rank,
                                       size_t window_off, size_t window_bytes, void **req_p);
strata_status_t stb_collnet_ireducescatter(stb_collnet_t *cn, void *ccomm, void *send,
                                           void *send_mh, void *recv, void *recv_mh,
                                           size_t bytes_per_rank, size_t window_off,
                                           size_t window_bytes, strata_dtype_t dtype,
                                           strata_op_t op, void **req_p);
/* *req_p NULL: nothing to wait for. */
strata_status_t stb_collnet_iflush(stb_collnet_t *cn, void *ccomm, void *data, int size,
                                   void *mh, void **req_p);
/* size_p NULL: NCCL's flush path, which passes no size pointer. */
strata_status_t stb_collnet_test(stb_collnet_t *cn, void *req, int *done_p, int *size_p);
void stb_collnet_close_coll(stb_collnet_t *cn, void *ccomm);
void stb_collnet_close_listen(stb_collnet_t *cn, void *lcomm);

#endif /* STB_PLUGIN_H */

/*
 * The CollNet of a plugin loaded with tools/lib/plugin_loader.h.
 */
#ifndef STB_PLUGIN_COLLNET_H
#define STB_PLUGIN_COLLNET_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "strata/types.h"
#include "tools/lib/plugin_loader.h"

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

#endif /* STB_PLUGIN_COLLNET_H */

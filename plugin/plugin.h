/*
 * Internal interface of the plugin layer, the only layer that speaks NCCL.
 *
 * stp_status_to_nccl is the one place a strata_status_t becomes an
 * ncclResult_t. The plugin state (selected transport, device properties,
 * per-communicator contexts) is process-wide and reference counted by the v11
 * init/finalize pairs; it is rebuilt from scratch after the last finalize, so
 * NCCL can dlclose and dlopen the library again.
 */
#ifndef STP_PLUGIN_H
#define STP_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "nccl/net.h"
#include "transport/transport.h"

#define STP_PLUGIN_NAME "Strata"
#define STP_MAX_DEVS 64

/* One per ncclNet init (per NCCL communicator). */
typedef struct stp_ctx {
    uint64_t magic;
    uint64_t comm_id;
    int traffic_class;
    struct stp_ctx *next;       /* the state's list of live contexts */
} stp_ctx_t;

/* Translates a status for NCCL; aborts first when STRATA_ABORT_ON_ERROR=1. */
ncclResult_t stp_status_to_nccl(strata_status_t status);

/* Installs NCCL's logger as the sink (NULL keeps stderr). */
void stp_log_attach(ncclDebugLogger_t logger);

/*
 * Takes one reference on the plugin state, selecting and initialising the
 * transport on the first one. Returns a new context in *ctx_p.
 */
strata_status_t stp_state_acquire(uint64_t comm_id, int traffic_class, stp_ctx_t **ctx_p);

/* Drops the reference a context holds and frees it; NULL or a bad context is ignored. */
void stp_state_release(stp_ctx_t *ctx);

/* The transport in use, or NULL before the first init / after the last finalize. */
const stt_ops_t *stp_state_transport(void);
int stp_state_ndev(void);

/* Cached properties of dev (strings stay valid until the last finalize), or NULL. */
const stt_props_t *stp_state_props(int dev);

/*
 * True if a live context (an ncclNet init not yet finalized) has this comm_id, NCCL's
 * commHash: that communicator runs on Strata's net. *ndev_p then holds the device count.
 */
int stp_state_has_comm(uint64_t comm_id, int *ndev_p);

/*
 * makeVDevice: fuses devs[0..n-1] through the transport (which orders and checks
 * them) and adds the virtual device to the state; its index in *dev_p. Refused
 * (STRATA_ERR_UNSUPPORTED) under STRATA_NET_FUSE=off. The decision is logged:
 * INFO with the members when fused, WARN with the reason when not.
 */
strata_status_t stp_state_vdev_make(const int *devs, int n, int *dev_p);

/*
 * The devices NCCL fused into dev with makeVDevice, into devs
 * (STT_MAX_VDEV_MEMBERS entries); returns their number. A device NCCL did not
 * fuse (an interface, or one STRATA_NET_FUSE fused at init) is its only member.
 */
int stp_state_vmembers(int dev, int *devs);

/*
 * Sets the exported v11 and v12 tables' makeVDevice: NCCL fuses devices only when it
 * is not NULL. Called by the first init, under the state's lock.
 */
void stp_net_fusion_offer(bool on);

/* True if ctx is a live context handed out by stp_state_acquire. */
int stp_ctx_valid(const stp_ctx_t *ctx);

#endif /* STP_PLUGIN_H */

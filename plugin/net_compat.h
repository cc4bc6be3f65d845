/*
 * The older net plugin ABIs (v6 to v10) as adapters over Strata's v11 table.
 *
 * Strata implements ncclNet_v11_t once (plugin/net_v11.c). Each
 * plugin/net_vN.c exports ncclNetPlugin_vN for NCCL releases that stop at
 * version N, and every entry of it calls through ncclNetPlugin_v11. This
 * header holds what those five files share, so that none of them repeats
 * another:
 *
 *   - The one v11 context. Before v11 a plugin had no per-communicator
 *     context: init ran once per process and listen/connect took none. The
 *     adapters call v11's init once, with commId 0 and an undefined traffic
 *     class, and pass the resulting context to every listen and connect. A
 *     v10 connect carries its own traffic class; since v11 takes the traffic
 *     class at init, each distinct class gets a context of its own, created
 *     on first use. The contexts live until stp_compat_fini(): the old ABIs
 *     have no finalize.
 *   - Properties: one helper copies v11's properties into any older layout,
 *     member by member, driven by a per-version table of the members that
 *     version has.
 *   - Sizes: v6 to v8 pass int sizes. A negative one is refused, never
 *     converted; no size_t ever narrows to an int on the way.
 *   - The entry points whose signature is the same across several versions.
 *
 * Errors: every value returned is either v11's own result, passed through
 * untouched, or an error the adapter finds itself, logs once and translates
 * through stp_status_to_nccl like the rest of the plugin: NCCL misusing the
 * API (a negative size, a NULL pointer the adapter must read, a call before
 * init) is STRATA_ERR_INVALID, one traffic class too many
 * STRATA_ERR_NO_RESOURCE, an offloaded device shown to v6
 * STRATA_ERR_UNSUPPORTED.
 *
 * Threads: everything here may be called from any thread. The data-path
 * adapters (isend, irecv, test) take no lock and allocate nothing.
 */
#ifndef STP_NET_COMPAT_H
#define STP_NET_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/net.h"
#include "plugin/plugin.h"

/*
 * Most buffers one irecv may group: NCCL groups at most one receive per proxy
 * sub-operation, and has MAXCHANNELS = 64 of them (src/include/proxy.h,
 * NCCL_PROXY_MAX_SUBS, v2.28.9-1). It only sizes the adapters' stack arrays;
 * v11 enforces its own, smaller maxRecvs.
 */
#define STP_COMPAT_MAX_RECVS 64

/*
 * Distinct v10 traffic classes one process may use, counting "undefined".
 * Real deployments use one or two; 16 leaves room without a heap table.
 */
#define STP_COMPAT_MAX_CONTEXTS 16

/* The native table (plugin/net_v11.c) and the adapters (net_v10.c ... net_v6.c). */
extern ncclNet_v11_t ncclNetPlugin_v11;   /* writable: makeVDevice (net_v11.c) */
extern const ncclNet_v10_t ncclNetPlugin_v10;
extern const ncclNet_v9_t ncclNetPlugin_v9;
extern const ncclNet_v8_t ncclNetPlugin_v8;
extern const ncclNet_v7_t ncclNetPlugin_v7;
extern const ncclNet_v6_t ncclNetPlugin_v6;

/* ------------------------------------------------------------------ contexts */

/*
 * Initialises v11 once per process (commId 0, undefined traffic class) with
 * NCCL's logger and, from v10 on, its profiler callback (NULL before v10).
 * Idempotent: later calls succeed without calling v11 again. A failed init is
 * not remembered; the next call tries again.
 */
ncclResult_t stp_compat_init(ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn);

/*
 * The v11 context for a traffic class (NCCL_NET_TRAFFIC_CLASS_UNDEF for the
 * default one), creating it with v11's init on first use. Fails (as
 * STRATA_ERR_INVALID) before stp_compat_init succeeded. Takes a mutex: for listen/connect, not
 * for the data path.
 */
ncclResult_t stp_compat_ctx_get(int traffic_class, void **ctx_p);

/*
 * Finalizes every context the adapters created and returns to the state
 * before stp_compat_init. NCCL before v11 never calls it (those ABIs have no
 * finalize); tests do, and so may a host that unloads the library. All comms
 * opened through the adapters must be closed first.
 */
void stp_compat_fini(void);

/* ------------------------------------------------------------------ properties */

/* One member copied from ncclNetProperties_v11_t into an older layout. */
typedef struct stp_compat_field {
    uint16_t dst_off;   /* offset in the older struct */
    uint16_t src_off;   /* offset in ncclNetProperties_v11_t */
    uint16_t len;
} stp_compat_field_t;

/* The members one older properties struct has, and its size. */
typedef struct stp_compat_props_layout {
    int version;
    size_t size;
    const stp_compat_field_t *fields;
    size_t nfields;
} stp_compat_props_layout_t;

/*
 * The size of `member`, or a compile error if `type` and v11 disagree on it.
 * (Member types are the same in every version; vProps differs only in its
 * typedef name, so sizes are what can be compared.)
 */
#define STP_COMPAT_MEMBER_SIZE(type, member)                                                \
    (sizeof(((type *)0)->member) +                                                          \
     0 * sizeof(char[sizeof(((type *)0)->member) ==                                         \
                     sizeof(((ncclNetProperties_v11_t *)0)->member) ? 1 : -1]))

/* A stp_compat_field_t for `member`, which `type` and v11 both have. */
#define STP_COMPAT_FIELD(type, member)                                                      \
    { .dst_off = offsetof(type, member),                                                    \
      .src_off = offsetof(ncclNetProperties_v11_t, member),                                 \
      .len = STP_COMPAT_MEMBER_SIZE(type, member) }

/*
 * The members each version added, as groups of fields; a version's table
 * lists the groups up to its own. (v10 added none; v11's maxMultiRequestSize
 * is for v11 alone.)
 */
#define STP_COMPAT_FIELDS_V6(type)                                                          \
    STP_COMPAT_FIELD(type, name), STP_COMPAT_FIELD(type, pciPath),                          \
    STP_COMPAT_FIELD(type, guid), STP_COMPAT_FIELD(type, ptrSupport),                       \
    STP_COMPAT_FIELD(type, speed), STP_COMPAT_FIELD(type, port),                            \
    STP_COMPAT_FIELD(type, latency), STP_COMPAT_FIELD(type, maxComms),                      \
    STP_COMPAT_FIELD(type, maxRecvs)
#define STP_COMPAT_FIELDS_V7(type)                                                          \
    STP_COMPAT_FIELD(type, netDeviceType), STP_COMPAT_FIELD(type, netDeviceVersion)
#define STP_COMPAT_FIELDS_V8(type) STP_COMPAT_FIELD(type, regIsGlobal)
#define STP_COMPAT_FIELDS_V9(type)                                                          \
    STP_COMPAT_FIELD(type, forceFlush), STP_COMPAT_FIELD(type, vProps),                     \
    STP_COMPAT_FIELD(type, maxP2pBytes), STP_COMPAT_FIELD(type, maxCollBytes)

#define STP_COMPAT_PROPS_LAYOUT(ver, type, field_table)                                     \
    { .version = (ver), .size = sizeof(type), .fields = (field_table),                      \
      .nfields = sizeof(field_table) / sizeof((field_table)[0]) }

/*
 * Fills *props (a struct of layout->size bytes) from v11's getProperties.
 * Members the older version lacks are left out; padding is zeroed. Refuses,
 * for a version without device offload (v6), a device v11 reports as
 * offloaded. *props is written only on success.
 */
ncclResult_t stp_compat_props_get(int dev, const stp_compat_props_layout_t *layout,
                                  void *props);

/* ------------------------------------------------------------------ shared entry points */

/* Signatures every version shares, passed straight to v11. */
ncclResult_t stp_compat_devices(int *ndev);
ncclResult_t stp_compat_listen(int dev, void *handle, void **listen_comm);
ncclResult_t stp_compat_mr_reg_dmabuf(void *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mhandle);
ncclResult_t stp_compat_mr_dereg(void *comm, void *mhandle);
ncclResult_t stp_compat_flush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                              void **request);
ncclResult_t stp_compat_test(void *request, int *done, int *sizes);
ncclResult_t stp_compat_send_close(void *send_comm);
ncclResult_t stp_compat_recv_close(void *recv_comm);
ncclResult_t stp_compat_listen_close(void *listen_comm);

/*
 * connect/accept with a device handle (v7 to v9; v10's connect adds the
 * traffic class). stp_compat_connect_tc is the general form: it connects
 * through the context of `traffic_class`.
 */
ncclResult_t stp_compat_connect_tc(int dev, int traffic_class, void *handle, void **send_comm,
                                   ncclNetDeviceHandle_v11_t **send_dev_comm);
ncclResult_t stp_compat_connect(int dev, void *handle, void **send_comm,
                                ncclNetDeviceHandle_v11_t **send_dev_comm);
ncclResult_t stp_compat_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v11_t **recv_dev_comm);

/* regMr with a size_t (v8 on) or an int (v6, v7) size. */
ncclResult_t stp_compat_mr_reg(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t stp_compat_mr_reg_int(void *comm, void *data, int size, int type, void **mhandle);

/* isend/irecv with int sizes (v6 to v8) and with size_t sizes but no profiler handles (v9). */
ncclResult_t stp_compat_send_int(void *send_comm, void *data, int size, int tag, void *mhandle,
                                 void **request);
ncclResult_t stp_compat_recv_int(void *recv_comm, int n, void **data, int *sizes, int *tags,
                                 void **mhandles, void **request);
ncclResult_t stp_compat_send(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void **request);
ncclResult_t stp_compat_recv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                             void **mhandles, void **request);

/*
 * Device offload (v7 on). v11 may leave these NULL (a host plugin does); the
 * adapters then behave as NCCL does when the entry is NULL: getDeviceMr
 * succeeds without touching *dptr_mhandle, irecvConsumed does nothing.
 */
ncclResult_t stp_compat_mr_device_get(void *comm, void *mhandle, void **dptr_mhandle);
ncclResult_t stp_compat_recv_consumed(void *recv_comm, int n, void *request);

#endif /* STP_NET_COMPAT_H */

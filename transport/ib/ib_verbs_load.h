/*
 * libibverbs, loaded at run time: the plugin and libstrata.so carry no
 * DT_NEEDED on it, so they load on a node without rdma-core and run over
 * tcp there (the ib transport's probe then fails with the reason).
 *
 * stt_ib_verbs_load opens libibverbs.so.1 once per process (dlopen
 * RTLD_NOW | RTLD_LOCAL under a pthread_once; the handle is never closed)
 * and resolves every exported symbol the transport calls into stt_ib_verbs,
 * each at the symbol version the headers of the build name (dlvsym), so the
 * call is the one the compiler would have linked. The data path's verbs
 * (ibv_post_send, ibv_post_recv, ibv_poll_cq) are inline in <infiniband/
 * verbs.h> and call the provider through the context's ops: they need no
 * symbol and are called directly.
 *
 * Exported symbols used (nm -D --undefined-only of the plugin before this
 * change): IBVERBS_1.1: ibv_get_device_list ibv_free_device_list
 * ibv_get_device_name ibv_open_device ibv_close_device ibv_query_device
 * ibv_query_port ibv_query_gid ibv_alloc_pd ibv_dealloc_pd ibv_reg_mr
 * ibv_dereg_mr ibv_create_cq ibv_destroy_cq ibv_create_qp ibv_modify_qp
 * ibv_destroy_qp ibv_get_async_event ibv_ack_async_event ibv_event_type_str
 * ibv_port_state_str ibv_wc_status_str; IBVERBS_1.12 (rdma-core 34):
 * ibv_reg_dmabuf_mr, optional (NULL on an older library: no DMA-BUF).
 *
 * Thread safety: stt_ib_verbs_load may be called from any thread; the table
 * is written once, before the first load returns, and only read after.
 */
#ifndef STT_IB_VERBS_LOAD_H
#define STT_IB_VERBS_LOAD_H

#include <infiniband/verbs.h>

#include "strata/status.h"

/* The file dlopen is asked for: the soname, as the package installs it. */
#define STT_IB_VERBS_LIBRARY "libibverbs.so.1"

typedef struct stt_ib_verbs {
    struct ibv_device **(*get_device_list)(int *num_devices);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *device);
    struct ibv_context *(*open_device)(struct ibv_device *device);
    int (*close_device)(struct ibv_context *context);
    int (*query_device)(struct ibv_context *context, struct ibv_device_attr *attr);
    /* The exported one, for providers without the extended query (stt_ib_query_port). */
    int (*query_port)(struct ibv_context *context, uint8_t port_num,
                      struct _compat_ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *context, uint8_t port_num, int index,
                     union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
    /* NULL when the library predates it. */
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length,
                                    uint64_t iova, int fd, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, void *cq_context,
                                struct ibv_comp_channel *channel, int comp_vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    int (*get_async_event)(struct ibv_context *context, struct ibv_async_event *event);
    void (*ack_async_event)(struct ibv_async_event *event);
    const char *(*event_type_str)(enum ibv_event_type event);
    const char *(*port_state_str)(enum ibv_port_state state);
    const char *(*wc_status_str)(enum ibv_wc_status status);
} stt_ib_verbs_t;

/* Filled by the first successful stt_ib_verbs_load; read-only after. */
extern stt_ib_verbs_t stt_ib_verbs;

/*
 * Loads the library (once; later calls return the first answer). OK when
 * every required symbol resolved; STRATA_ERR_UNSUPPORTED otherwise, after an
 * INFO line "ib: libibverbs.so.1 not loadable: <why>; the ib transport is
 * unavailable" (once). *why_p (may be NULL) gets NULL or that reason.
 */
strata_status_t stt_ib_verbs_load(const char **why_p);

/*
 * ibv_query_port as <infiniband/verbs.h> defines it inline (the provider's
 * extended query when it has one, else the exported call), through the table.
 */
int stt_ib_query_port(struct ibv_context *context, uint8_t port_num,
                      struct ibv_port_attr *attr);

/* The library op (transport.h): the file name, after loading it. */
const char *stt_ib_library(const char **why_p);

#endif /* STT_IB_VERBS_LOAD_H */

/* libibverbs loaded at run time (ib_verbs_load.h). */
#include <pthread.h>
#include <string.h>

#include "transport/base/dynlib.h"
#include "transport/ib/ib_verbs_load.h"
#include "util/log.h"

/* The version every symbol but one has had since rdma-core's first release. */
#define V11 "IBVERBS_1.1"
#define SYM(member, ver, opt) STT_DYNSYM(stt_ib_verbs_t, member, "ibv_" #member, ver, opt)

static const stt_dynsym_t verbs_syms[] = {
    SYM(get_device_list, V11, false),   SYM(free_device_list, V11, false),
    SYM(get_device_name, V11, false),   SYM(open_device, V11, false),
    SYM(close_device, V11, false),      SYM(query_device, V11, false),
    SYM(query_port, V11, false),        SYM(query_gid, V11, false),
    SYM(alloc_pd, V11, false),          SYM(dealloc_pd, V11, false),
    SYM(reg_mr, V11, false),            SYM(dereg_mr, V11, false),
    /* rdma-core 34 (2021); without it DMA-BUF registration is reported unsupported. */
    SYM(reg_dmabuf_mr, "IBVERBS_1.12", true),
    SYM(create_cq, V11, false),         SYM(destroy_cq, V11, false),
    SYM(create_qp, V11, false),         SYM(modify_qp, V11, false),
    SYM(destroy_qp, V11, false),        SYM(get_async_event, V11, false),
    SYM(ack_async_event, V11, false),   SYM(event_type_str, V11, false),
    SYM(port_state_str, V11, false),    SYM(wc_status_str, V11, false),
};

stt_ib_verbs_t stt_ib_verbs;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static stt_dynlib_t verbs_lib = {
    .who = "ib", .file = STT_IB_VERBS_LIBRARY, .syms = verbs_syms,
    .nsyms = (int)(sizeof(verbs_syms) / sizeof(verbs_syms[0])),
    .table = &stt_ib_verbs, .table_bytes = sizeof(stt_ib_verbs),
};

static void verbs_load_once(void)
{
    stt_dynlib_load(&verbs_lib);
    if (verbs_lib.status == STRATA_OK && stt_ib_verbs.reg_dmabuf_mr == NULL)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "ib: " STT_IB_VERBS_LIBRARY " has no "
                 "ibv_reg_dmabuf_mr (older than rdma-core 34): no DMA-BUF registration");
}

strata_status_t stt_ib_verbs_load(const char **why_p)
{
    pthread_once(&load_once, verbs_load_once);
    return stt_dynlib_result(&verbs_lib, why_p);
}

int stt_ib_query_port(struct ibv_context *context, uint8_t port_num,
                      struct ibv_port_attr *attr)
{
    struct verbs_context *vctx = verbs_get_ctx_op(context, query_port);

    if (vctx != NULL)
        return vctx->query_port(context, port_num, attr, sizeof(*attr));
    memset(attr, 0, sizeof(*attr));
    return stt_ib_verbs.query_port(context, port_num, (struct _compat_ibv_port_attr *)attr);
}

const char *stt_ib_library(const char **why_p)
{
    stt_ib_verbs_load(why_p);
    return STT_IB_VERBS_LIBRARY;
}

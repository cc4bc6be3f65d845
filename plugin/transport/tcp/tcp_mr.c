/* Memory registration of the TCP transport: host memory only, nothing pinned. */
#include <stdlib.h>

#include "plugin/transport/tcp/tcp_internal.h"
#include "plugin/transport/tcp/tcp_mr.h"
#include "util/log.h"

static bool mr_comm_ok(const stt_comm_t *comm)
{
    return comm != NULL && comm->ops == &stt_tcp_ops;
}

strata_status_t stt_tcp_reg_mr(stt_comm_t *comm, void *data, size_t size, int type, void **mh_p)
{
    if (!mr_comm_ok(comm) || mh_p == NULL || (data == NULL && size > 0)) {
        STU_WARN("tcp: reg_mr: bad arguments (comm %p, data %p, %zu bytes, output %p)",
                 (void *)comm, data, size, (void *)mh_p);
        return STRATA_ERR_INVALID;
    }
    if (type == STT_PTR_CUDA) {
        STU_WARN("tcp: reg_mr: GPU memory (%p, %zu bytes) is not supported by the TCP"
                 " transport; it handles host memory only", data, size);
        return STRATA_ERR_UNSUPPORTED;
    }
    if (type != STT_PTR_HOST) {
        STU_WARN("tcp: reg_mr: unknown memory type %d", type);
        return STRATA_ERR_INVALID;
    }
    stt_tcp_mr_t *mr = malloc(sizeof(*mr));
    if (mr == NULL) {
        STU_WARN("tcp: reg_mr: no memory for a handle");
        return STRATA_ERR_NO_MEMORY;
    }
    mr->magic = STT_TCP_MR_MAGIC;
    mr->comm = comm;
    mr->start = (uintptr_t)data;
    mr->size = size;
    *mh_p = mr;
    return STRATA_OK;
}

strata_status_t stt_tcp_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mh_p)
{
    STU_WARN("tcp: reg_mr_dmabuf (fd %d, %zu bytes, type %d): DMA-BUF memory is not supported"
             " by the TCP transport", fd, size, type);
    return STRATA_ERR_UNSUPPORTED;
}

strata_status_t stt_tcp_dereg_mr(stt_comm_t *comm, void *mh)
{
    stt_tcp_mr_t *mr = mh;

    if (!mr_comm_ok(comm) || mr == NULL || mr->magic != STT_TCP_MR_MAGIC || mr->comm != comm) {
        STU_WARN("tcp: dereg_mr: %p is not a handle registered on comm %p", mh, (void *)comm);
        return STRATA_ERR_INVALID;
    }
    mr->magic = 0;
    free(mr);
    return STRATA_OK;
}

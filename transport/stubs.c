/* Shared "unsupported" operations: transports point unimplemented ops here. */
#include "transport/transport.h"
#include "util/log.h"

strata_status_t stt_no_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p)
{
    STU_WARN("%s: DMA-BUF registration is not supported by this transport",
             comm->ops->name);
    return STRATA_ERR_UNSUPPORTED;
}

strata_status_t stt_no_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p)
{
    STU_WARN("%s: flush is not supported by this transport", comm->ops->name);
    return STRATA_ERR_UNSUPPORTED;
}

int stt_no_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    return 0;
}

strata_status_t stt_no_progress(stt_comm_t *comm)
{
    return STRATA_OK;
}

strata_status_t stt_no_make_vdev(const int *devs, int n, int *vdev_p)
{
    STU_INFO(STU_LOG_NET, "this transport does not fuse devices into virtual ones");
    return STRATA_ERR_UNSUPPORTED;
}

const char *stt_no_library(const char **why_p)
{
    *why_p = NULL;
    return NULL;
}

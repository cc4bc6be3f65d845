/* Host-memory handles shared by transports that need no registration (hostmr.h). */
#include <stdlib.h>

#include "transport/base/hostmr.h"
#include "util/compiler.h"
#include "util/log.h"

strata_status_t stt_hostmr_reg(stt_comm_t *comm, void *data, size_t size, int type, void **mh_p)
{
    if (comm == NULL) {
        STU_WARN("reg_mr called with a NULL comm");
        return STRATA_ERR_INVALID;
    }
    const char *who = comm->ops->name;

    if (mh_p == NULL || (data == NULL && size > 0)) {
        STU_WARN("%s: reg_mr: bad arguments (data %p, %zu bytes, output %p)", who, data, size,
                 (void *)mh_p);
        return STRATA_ERR_INVALID;
    }
    if (type == STT_PTR_CUDA) {
        STU_WARN("%s: reg_mr: GPU memory (%p, %zu bytes) is not supported by the %s"
                 " transport; it handles host memory only", who, data, size, who);
        return STRATA_ERR_UNSUPPORTED;
    }
    if (type != STT_PTR_HOST) {
        STU_WARN("%s: reg_mr: unknown memory type %d", who, type);
        return STRATA_ERR_INVALID;
    }
    stt_hostmr_t *mr = malloc(sizeof(*mr));
    if (mr == NULL) {
        STU_WARN("%s: reg_mr: no memory for a handle", who);
        return STRATA_ERR_NO_MEMORY;
    }
    mr->magic = STT_HOSTMR_MAGIC;
    mr->comm = comm;
    mr->start = (uintptr_t)data;
    mr->size = size;
    *mh_p = mr;
    return STRATA_OK;
}

strata_status_t stt_hostmr_reg_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mh_p)
{
    if (comm == NULL) {
        STU_WARN("reg_mr_dmabuf called with a NULL comm");
        return STRATA_ERR_INVALID;
    }
    STU_WARN("%s: reg_mr_dmabuf (fd %d, %zu bytes, type %d): DMA-BUF memory is not supported"
             " by the %s transport", comm->ops->name, fd, size, type, comm->ops->name);
    return STRATA_ERR_UNSUPPORTED;
}

strata_status_t stt_hostmr_dereg(stt_comm_t *comm, void *mh)
{
    stt_hostmr_t *mr = mh;

    if (comm == NULL) {
        STU_WARN("dereg_mr called with a NULL comm");
        return STRATA_ERR_INVALID;
    }
    if (mr == NULL || mr->magic != STT_HOSTMR_MAGIC || mr->comm != comm) {
        STU_WARN("%s: dereg_mr: %p is not a handle registered on comm %p", comm->ops->name, mh,
                 (void *)comm);
        return STRATA_ERR_INVALID;
    }
    mr->magic = 0;
    free(mr);
    return STRATA_OK;
}

strata_status_t stt_hostmr_irecv_check(stt_comm_t *comm, const char *peer, int n, void **data,
                                       const size_t *sizes, const int *tags, void **mhs,
                                       stt_req_t **req_p)
{
    const char *who = comm->ops->name;

    if (req_p == NULL || n < 1 || n > STT_MAX_RECVS || data == NULL || sizes == NULL ||
        tags == NULL) {
        STU_WARN("%s: irecv from %s: bad arguments (n %d of at most %d, data %p, sizes %p,"
                 " tags %p, request output %p)", who, peer, n, STT_MAX_RECVS, (void *)data,
                 (const void *)sizes, (const void *)tags, (void *)req_p);
        return STRATA_ERR_INVALID;
    }
    for (int i = 0; i < n; i++) {
        if ((data[i] == NULL && sizes[i] > 0) ||
            !stt_hostmr_valid(comm, mhs ? mhs[i] : NULL, data[i], sizes[i])) {
            STU_WARN("%s: irecv from %s: buffer %d is invalid (data %p, %zu bytes, mh %p)", who,
                     peer, i, data[i], sizes[i], mhs ? mhs[i] : NULL);
            return STRATA_ERR_INVALID;
        }
    }
    return STRATA_OK;
}

strata_status_t stt_hostmr_isend_check(stt_comm_t *comm, const char *peer, const void *data,
                                       size_t size, uint64_t limit, const void *mh,
                                       stt_req_t **req_p)
{
    if (STU_LIKELY(req_p != NULL && size <= limit && (data != NULL || size == 0) &&
                   stt_hostmr_valid(comm, mh, data, size)))
        return STRATA_OK;
    STU_WARN("%s: isend to %s: bad arguments (data %p, %zu bytes, limit %llu, mh %p, request"
             " output %p)", comm->ops->name, peer, data, size, (unsigned long long)limit, mh,
             (void *)req_p);
    return STRATA_ERR_INVALID;
}

strata_status_t stt_hostmr_iflush(stt_comm_t *comm, const char *peer, strata_status_t failed,
                                  stt_slots_t *slots, int n, stt_req_t **req_p)
{
    if (req_p == NULL || n < 1 || n > STT_MAX_RECVS) {
        STU_WARN("%s: iflush on the comm from %s: bad arguments (n %d, request output %p)",
                 comm->ops->name, peer, n, (void *)req_p);
        return STRATA_ERR_INVALID;
    }
    if (failed != STRATA_OK)
        return failed;
    stt_slot_t *slot = stt_slots_take(slots, 0);
    if (slot != NULL)
        slot->state = STT_SLOT_DONE;
    *req_p = slot != NULL ? &slot->base : NULL;
    return STRATA_OK;
}

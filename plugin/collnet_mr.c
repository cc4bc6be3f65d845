/*
 * CollNet registrations: one per (address, size, type) and collComm, reference counted, each
 * holding the transport's handle on every link's send and receive comm, the self link's
 * included (the executor sends and receives NCCL's buffers on any of them). NCCL registers its staging region once per
 * channel and direction, 2 x nChannels times on the same collComm (src/transport/coll_net.cc
 * of v2.28.9-1): the later calls only take a reference.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin/collnet.h"
#include "util/log.h"

static void mr_free(stp_cn_comm_t *c, stp_cn_mr_t *mr)
{
    for (int l = 0; l < c->nconn; l++) {
        if (mr->mh[2 * l] != NULL)
            stt_dereg_mr(c->links[l].send, mr->mh[2 * l]);
        if (mr->mh[2 * l + 1] != NULL)
            stt_dereg_mr(c->links[l].recv, mr->mh[2 * l + 1]);
    }
    mr->magic = 0;
    free(mr);
}

/* Registers on every link; *mr_p on success. dmabuf_fd < 0: a plain registration. */
static strata_status_t mr_create(stp_cn_comm_t *c, void *data, size_t size, int type,
                                 uint64_t offset, int dmabuf_fd, stp_cn_mr_t **mr_p)
{
    stp_cn_mr_t *mr = calloc(1, sizeof(*mr) + 2 * (size_t)c->nconn * sizeof(void *));
    strata_status_t status = STRATA_OK;

    if (mr == NULL)
        return STRATA_ERR_NO_MEMORY;
    mr->magic = STP_CN_MR_MAGIC;
    mr->comm = c;
    mr->addr = (uintptr_t)data;
    mr->size = size;
    mr->type = type;
    mr->refs = 1;
    for (int l = 0; l < c->nconn && status == STRATA_OK; l++) {
        stt_comm_t *comms[2] = {c->links[l].send, c->links[l].recv};
        for (int d = 0; d < 2 && status == STRATA_OK; d++) {
            if (dmabuf_fd >= 0)
                status = stt_reg_mr_dmabuf(comms[d], data, size, type, offset,
                                           dmabuf_fd, &mr->mh[2 * l + d]);
            else
                status = stt_reg_mr(comms[d], data, size, type, &mr->mh[2 * l + d]);
        }
    }
    if (status != STRATA_OK) {
        STU_WARN("collnet: registering %zu bytes at %p (type %d) on the links to the group"
                 " failed: %s", size, data, type, strata_status_str(status));
        mr_free(c, mr);
        return status;
    }
    *mr_p = mr;
    return STRATA_OK;
}

static strata_status_t mr_get(stp_cn_comm_t *c, void *data, size_t size, int type,
                              uint64_t offset, int dmabuf_fd, stp_cn_mr_t **mr_p)
{
    strata_status_t status = STRATA_OK;
    stp_cn_mr_t *mr;

    pthread_mutex_lock(&c->mr_lock);
    for (mr = c->mrs; mr != NULL; mr = mr->next) {
        if (mr->addr == (uintptr_t)data && mr->size == size && mr->type == type) {
            mr->refs++;
            break;
        }
    }
    if (mr == NULL) {
        status = mr_create(c, data, size, type, offset, dmabuf_fd, &mr);
        if (status == STRATA_OK) {
            mr->next = c->mrs;
            c->mrs = mr;
        }
    }
    pthread_mutex_unlock(&c->mr_lock);
    if (status == STRATA_OK)
        *mr_p = mr;
    return status;
}

strata_status_t stp_cn_mr_get(stp_cn_comm_t *c, void *data, size_t size, int type,
                              stp_cn_mr_t **mr_p)
{
    return mr_get(c, data, size, type, 0, -1, mr_p);
}

void stp_cn_mr_put(stp_cn_comm_t *c, stp_cn_mr_t *mr)
{
    stp_cn_mr_t **pp;

    pthread_mutex_lock(&c->mr_lock);
    if (--mr->refs > 0) {
        pthread_mutex_unlock(&c->mr_lock);
        return;
    }
    for (pp = &c->mrs; *pp != NULL && *pp != mr; pp = &(*pp)->next)
        ;
    if (*pp == mr)
        *pp = mr->next;
    pthread_mutex_unlock(&c->mr_lock);
    mr_free(c, mr);
}

static int comm_valid(const stp_cn_comm_t *c)
{
    return c != NULL && c->magic == STP_CN_COMM_MAGIC;
}

static ncclResult_t mr_reg(void *coll_comm, void *data, size_t size, int type, uint64_t offset,
                           int fd, void **mhandle)
{
    stp_cn_comm_t *c = coll_comm;
    stp_cn_mr_t *mr = NULL;

    if (!comm_valid(c) || mhandle == NULL || (data == NULL && size > 0)) {
        STU_WARN("collnet: regMr: %s", !comm_valid(c) ? "not a Strata collComm"
                 : mhandle == NULL ? "NULL mhandle" : "NULL data with a non-zero size");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    strata_status_t status = mr_get(c, data, size, type, offset, fd, &mr);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    *mhandle = mr;
    return ncclSuccess;
}

ncclResult_t stp_cn_reg_mr(void *coll_comm, void *data, size_t size, int type, void **mhandle)
{
    return mr_reg(coll_comm, data, size, type, 0, -1, mhandle);
}

ncclResult_t stp_cn_reg_mr_dmabuf(void *coll_comm, void *data, size_t size, int type,
                                  uint64_t offset, int fd, void **mhandle)
{
    /* Host memory never needs the file descriptor; GPU memory goes to the transport. */
    return mr_reg(coll_comm, data, size, type, offset, type == NCCL_PTR_HOST ? -1 : fd,
                  mhandle);
}

ncclResult_t stp_cn_dereg_mr(void *coll_comm, void *mhandle)
{
    stp_cn_comm_t *c = coll_comm;
    stp_cn_mr_t *mr = mhandle;

    if (!comm_valid(c) || mr == NULL || mr->magic != STP_CN_MR_MAGIC || mr->comm != c) {
        STU_WARN("collnet: deregMr: %s", !comm_valid(c) ? "not a Strata collComm"
                 : "not a registration of this collComm");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    stp_cn_mr_put(c, mr);
    return ncclSuccess;
}

strata_status_t stp_cn_mr_check(const stp_cn_comm_t *c, void *mhandle, const void *data,
                                size_t size, const char *what)
{
    const stp_cn_mr_t *mr = mhandle;
    uintptr_t a = (uintptr_t)data;

    if (mr == NULL || mr->magic != STP_CN_MR_MAGIC || mr->comm != c) {
        STU_WARN("collnet: %s: the memory handle %p is not a registration of this collComm",
                 what, mhandle);
        return STRATA_ERR_INVALID;
    }
    if (size > 0 && (data == NULL || a < mr->addr || a - mr->addr > mr->size ||
                     size > mr->size - (a - mr->addr))) {
        STU_WARN("collnet: %s: %zu bytes at %p lie outside the registration of %zu bytes at"
                 " %p", what, size, data, mr->size, (void *)mr->addr);
        return STRATA_ERR_INVALID;
    }
    if (mr->type != NCCL_PTR_HOST && size > 0 && c->nconn == c->nlinks) {
        STU_WARN("collnet: %s: memory of type %d (GPU) on a device without GPU memory support;"
                 " this CollNet reduces on the CPU", what, mr->type);
        return STRATA_ERR_UNSUPPORTED;
    }
    return STRATA_OK;
}

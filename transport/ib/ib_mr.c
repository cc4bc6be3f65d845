/*
 * Memory registration of the ib transport, through each context's
 * registration cache (ib_mrcache.h). Handles are cache entries; registering a
 * range that an existing registration covers is a hit that costs a lock and a
 * counter, which NCCL's regIsGlobal contract relies on.
 *
 * Buffers passed without a handle (the collective library does that) are
 * registered on the fly through the same cache: a covering registration is
 * reused, otherwise one is made and released when the request completes.
 * That path takes the context's lock per message; callers that care
 * register their buffers once.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"

#define MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static strata_status_t mr_reg_cb(void *arg, uintptr_t start, size_t len, void **mr_p,
                                 uint32_t *lkey_p, uint32_t *rkey_p)
{
    stt_ib_ctx_t *ctx = arg;
    struct ibv_mr *mr = stt_ib_verbs.reg_mr(ctx->pd, (void *)start, len, MR_ACCESS);

    if (mr == NULL) {
        int err = errno;
        STU_WARN("ib: %s: ibv_reg_mr(%p, %zu bytes): %s%s", ctx->name, (void *)start, len,
                 strerror(err), err == ENOMEM || err == EPERM ?
                 " (locked-memory limit? check ulimit -l)" : "");
        return err == ENOMEM ? STRATA_ERR_NO_MEMORY : STRATA_ERR_IO;
    }
    *mr_p = mr;
    *lkey_p = mr->lkey;
    *rkey_p = mr->rkey;
    return STRATA_OK;
}

static void mr_dereg_cb(void *arg, void *mr)
{
    stt_ib_ctx_t *ctx = arg;
    int rc = stt_ib_verbs.dereg_mr(mr);

    if (rc != 0)
        STU_WARN("ib: %s: ibv_dereg_mr: %s", ctx->name, strerror(rc));
}

static const stt_ib_mrc_ops_t mr_cache_ops = {.reg = mr_reg_cb, .dereg = mr_dereg_cb};

void stt_ib_mr_cache_init(stt_ib_ctx_t *ctx)
{
    long page = sysconf(_SC_PAGESIZE);
    int keep = stu_param_int(STU_PARAM_IB_MR_KEEP) > 0 ? STT_IB_MRC_KEEP_MAX : 0;

    stt_ib_mrc_init(&ctx->mrc, &mr_cache_ops, ctx, page > 0 ? (size_t)page : 4096, keep);
}

static stt_ib_ctx_t *mr_comm_ctx(stt_comm_t *comm)
{
    if (comm == NULL || comm->ops != &stt_ib_ops)
        return NULL;
    return ((stt_ib_conn_t *)comm)->ctx;
}

bool stt_ib_mr_covers(const stt_ib_mrc_entry_t *e, const void *data, size_t size)
{
    uintptr_t p = (uintptr_t)data;
    return p >= e->start && p <= e->end && size <= e->end - p;
}

strata_status_t stt_ib_mr_fly_acquire(stt_ib_ctx_t *ctx, const void *data, size_t size,
                                      stt_ib_mrc_entry_t **entry_p)
{
    pthread_mutex_lock(&ctx->lock);
    strata_status_t status = stt_ib_mrc_acquire(&ctx->mrc, data, size, entry_p);
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

void stt_ib_mr_fly_release(stt_ib_ctx_t *ctx, stt_ib_mrc_entry_t *entry)
{
    pthread_mutex_lock(&ctx->lock);
    stt_ib_mrc_release(&ctx->mrc, entry);
    pthread_mutex_unlock(&ctx->lock);
}

strata_status_t stt_ib_mr_resolve(stt_ib_ctx_t *ctx, void *mh, void *data, size_t size,
                                  uint32_t *lkey_p, uint32_t *rkey_p,
                                  stt_ib_mrc_entry_t **fly_p)
{
    stt_ib_mrc_entry_t *e = mh;
    strata_status_t status;

    *fly_p = NULL;
    if (size == 0) {
        *lkey_p = 0;
        *rkey_p = 0;
        return STRATA_OK;
    }
    if (e != NULL) {
        if (e->magic != STT_IB_MRC_MAGIC || e->cache != &ctx->mrc) {
            STU_WARN("ib: memory handle %p is not a registration of device %s", mh, ctx->name);
            return STRATA_ERR_INVALID;
        }
        if (!stt_ib_mr_covers(e, data, size)) {
            STU_WARN("ib: buffer %p + %zu bytes lies outside its registration [%p, %p)", data,
                     size, (void *)e->start, (void *)e->end);
            return STRATA_ERR_INVALID;
        }
    } else {
        status = stt_ib_mr_fly_acquire(ctx, data, size, &e);
        if (status != STRATA_OK)
            return status;
        *fly_p = e;
    }
    *lkey_p = e->lkey;
    *rkey_p = e->rkey;
    return STRATA_OK;
}

strata_status_t stt_ib_reg_mr(stt_comm_t *comm, void *data, size_t size, int type, void **mh_p)
{
    stt_ib_ctx_t *ctx = mr_comm_ctx(comm);
    stt_ib_mrc_entry_t *e;

    if (ctx == NULL || mh_p == NULL || (data == NULL && size > 0)) {
        STU_WARN("ib: reg_mr: bad arguments (comm %p, data %p, %zu bytes, output %p)",
                 (void *)comm, data, size, (void *)mh_p);
        return STRATA_ERR_INVALID;
    }
    if (type != STT_PTR_HOST && type != STT_PTR_CUDA) {
        STU_WARN("ib: reg_mr: unknown memory type %d", type);
        return STRATA_ERR_INVALID;
    }
    if (type == STT_PTR_CUDA &&
        !(((stt_ib_conn_t *)comm)->dev->props.ptr_support & STT_PTR_CUDA)) {
        STU_WARN("ib: reg_mr: GPU memory (%p, %zu bytes) needs a peer-memory module"
                 " (nvidia_peermem) or DMA-BUF; neither is available on %s", data, size,
                 ctx->name);
        return STRATA_ERR_UNSUPPORTED;
    }
    pthread_mutex_lock(&ctx->lock);
    strata_status_t status = stt_ib_mrc_acquire(&ctx->mrc, data, size, &e);
    pthread_mutex_unlock(&ctx->lock);
    if (status != STRATA_OK)
        return status;
    *mh_p = e;
    return STRATA_OK;
}

strata_status_t stt_ib_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p)
{
    stt_ib_ctx_t *ctx = mr_comm_ctx(comm);
    stt_ib_mrc_entry_t *e;

    if (ctx == NULL || mh_p == NULL || size == 0) {
        STU_WARN("ib: reg_mr_dmabuf: bad arguments (comm %p, %zu bytes, output %p)",
                 (void *)comm, size, (void *)mh_p);
        return STRATA_ERR_INVALID;
    }
    if (!ctx->dmabuf) {
        STU_WARN("ib: reg_mr_dmabuf (fd %d, %zu bytes): %s does not support DMA-BUF"
                 " registration (ibv_reg_dmabuf_mr probe failed)", fd, size, ctx->name);
        return STRATA_ERR_UNSUPPORTED;
    }
    struct ibv_mr *mr = stt_ib_verbs.reg_dmabuf_mr(ctx->pd, offset, size,
                                                   (uint64_t)(uintptr_t)data, fd, MR_ACCESS);
    if (mr == NULL) {
        STU_WARN("ib: %s: ibv_reg_dmabuf_mr(fd %d, offset %llu, %zu bytes, iova %p): %s",
                 ctx->name, fd, (unsigned long long)offset, size, data, strerror(errno));
        return STRATA_ERR_IO;
    }
    pthread_mutex_lock(&ctx->lock);
    strata_status_t status = stt_ib_mrc_insert(&ctx->mrc, (uintptr_t)data, size, mr, mr->lkey,
                                               mr->rkey, &e);
    pthread_mutex_unlock(&ctx->lock);
    if (status != STRATA_OK) {
        stt_ib_verbs.dereg_mr(mr);
        return status;
    }
    *mh_p = e;
    return STRATA_OK;
}

strata_status_t stt_ib_dereg_mr(stt_comm_t *comm, void *mh)
{
    stt_ib_ctx_t *ctx = mr_comm_ctx(comm);

    if (ctx == NULL) {
        STU_WARN("ib: dereg_mr: %p is not an ib comm", (void *)comm);
        return STRATA_ERR_INVALID;
    }
    pthread_mutex_lock(&ctx->lock);
    bool owned = stt_ib_mrc_owns(&ctx->mrc, mh);
    if (owned)
        stt_ib_mrc_release(&ctx->mrc, mh);
    pthread_mutex_unlock(&ctx->lock);
    if (!owned) {
        STU_WARN("ib: dereg_mr: %p is not a registration of device %s", mh, ctx->name);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

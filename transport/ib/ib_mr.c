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
#include <stdlib.h>
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

/*
 * A registration on a comm of a virtual device: one cache entry per member
 * port, in member order (a comm on one port hands out the entry itself).
 */
#define MR_VMR_MAGIC 0x524d5653u   /* "SVMR" */
typedef struct mr_vmr {
    uint32_t magic;
    int n;
    stt_ib_mrc_entry_t *e[STT_IB_MAX_MEMBERS];
} mr_vmr_t;

static stt_ib_conn_t *mr_comm(stt_comm_t *comm)
{
    if (comm == NULL || comm->ops != &stt_ib_ops)
        return NULL;
    return (stt_ib_conn_t *)comm;
}

bool stt_ib_mr_covers(const stt_ib_mrc_entry_t *e, const void *data, size_t size)
{
    uintptr_t p = (uintptr_t)data;
    return p >= e->start && p <= e->end && size <= e->end - p;
}

static void mr_release(stt_ib_ctx_t *ctx, stt_ib_mrc_entry_t *entry)
{
    pthread_mutex_lock(&ctx->lock);
    stt_ib_mrc_release(&ctx->mrc, entry);
    pthread_mutex_unlock(&ctx->lock);
}

void stt_ib_mr_fly_drop(const stt_ib_conn_t *conn, stt_ib_mrc_entry_t **fly)
{
    for (int j = 0; j < conn->nmembers; j++) {
        if (fly[j] != NULL)
            mr_release(conn->m[j].ctx, fly[j]);
        fly[j] = NULL;
    }
}

/* Registers [data, data + size) through every member's cache into e[]; all or nothing. */
static strata_status_t mr_acquire_all(const stt_ib_conn_t *conn, const void *data, size_t size,
                                      stt_ib_mrc_entry_t **e)
{
    for (int j = 0; j < conn->nmembers; j++) {
        stt_ib_ctx_t *ctx = conn->m[j].ctx;
        pthread_mutex_lock(&ctx->lock);
        strata_status_t status = stt_ib_mrc_acquire(&ctx->mrc, data, size, &e[j]);
        pthread_mutex_unlock(&ctx->lock);
        if (status != STRATA_OK) {
            while (--j >= 0) {
                mr_release(conn->m[j].ctx, e[j]);
                e[j] = NULL;
            }
            return status;
        }
    }
    return STRATA_OK;
}

/* The entries of handle mh on conn, checked; NULL (warned) for a foreign handle. */
static stt_ib_mrc_entry_t *const *mr_entries(const stt_ib_conn_t *conn, void *const *mh)
{
    const mr_vmr_t *v = *mh;

    if (conn->nmembers == 1)
        return (stt_ib_mrc_entry_t *const *)mh;
    if (v->magic != MR_VMR_MAGIC || v->n != conn->nmembers) {
        STU_WARN("ib: memory handle %p is not a registration of virtual device %s", *mh,
                 conn->dev->props.name);
        return NULL;
    }
    return v->e;
}

strata_status_t stt_ib_mr_resolve(const stt_ib_conn_t *conn, void *mh, void *data, size_t size,
                                  stt_ib_keys_t *keys, stt_ib_mrc_entry_t **fly)
{
    stt_ib_mrc_entry_t *const *e;
    strata_status_t status;

    for (int j = 0; j < conn->nmembers; j++) {
        fly[j] = NULL;
        keys->lkey[j] = keys->rkey[j] = 0;
    }
    if (size == 0)
        return STRATA_OK;
    if (mh != NULL) {
        if ((e = mr_entries(conn, &mh)) == NULL)
            return STRATA_ERR_INVALID;
        for (int j = 0; j < conn->nmembers; j++) {
            if (e[j]->magic != STT_IB_MRC_MAGIC || e[j]->cache != &conn->m[j].ctx->mrc) {
                STU_WARN("ib: memory handle %p is not a registration of device %s", mh,
                         conn->m[j].ctx->name);
                return STRATA_ERR_INVALID;
            }
            if (!stt_ib_mr_covers(e[j], data, size)) {
                STU_WARN("ib: buffer %p + %zu bytes lies outside its registration [%p, %p)",
                         data, size, (void *)e[j]->start, (void *)e[j]->end);
                return STRATA_ERR_INVALID;
            }
        }
    } else {
        status = mr_acquire_all(conn, data, size, fly);
        if (status != STRATA_OK)
            return status;
        e = fly;
    }
    for (int j = 0; j < conn->nmembers; j++) {
        keys->lkey[j] = e[j]->lkey;
        keys->rkey[j] = e[j]->rkey;
    }
    return STRATA_OK;
}

/* Hands out e[0..n): the entry itself on one port, a fused handle on several. */
static strata_status_t mr_handle_make(const stt_ib_conn_t *conn, stt_ib_mrc_entry_t **e,
                                      void **mh_p)
{
    if (conn->nmembers == 1) {
        *mh_p = e[0];
        return STRATA_OK;
    }
    mr_vmr_t *v = calloc(1, sizeof(*v));
    if (v == NULL) {
        STU_WARN("ib: no memory for a registration handle (%zu bytes)", sizeof(*v));
        return STRATA_ERR_NO_MEMORY;
    }
    v->magic = MR_VMR_MAGIC;
    v->n = conn->nmembers;
    memcpy(v->e, e, (size_t)v->n * sizeof(e[0]));
    *mh_p = v;
    return STRATA_OK;
}

static strata_status_t mr_handle_fail(const stt_ib_conn_t *conn, stt_ib_mrc_entry_t **e,
                                      strata_status_t status)
{
    stt_ib_mr_fly_drop(conn, e);
    return status;
}

strata_status_t stt_ib_reg_mr(stt_comm_t *comm, void *data, size_t size, int type, void **mh_p)
{
    stt_ib_conn_t *conn = mr_comm(comm);
    stt_ib_mrc_entry_t *e[STT_IB_MAX_MEMBERS] = {0};

    if (conn == NULL || mh_p == NULL || (data == NULL && size > 0)) {
        STU_WARN("ib: reg_mr: bad arguments (comm %p, data %p, %zu bytes, output %p)",
                 (void *)comm, data, size, (void *)mh_p);
        return STRATA_ERR_INVALID;
    }
    if (type != STT_PTR_HOST && type != STT_PTR_CUDA) {
        STU_WARN("ib: reg_mr: unknown memory type %d", type);
        return STRATA_ERR_INVALID;
    }
    if (type == STT_PTR_CUDA && !(conn->dev->props.ptr_support & STT_PTR_CUDA)) {
        STU_WARN("ib: reg_mr: GPU memory (%p, %zu bytes) needs a peer-memory module"
                 " (nvidia_peermem) or DMA-BUF; neither is available on %s", data, size,
                 conn->dev->props.name);
        return STRATA_ERR_UNSUPPORTED;
    }
    strata_status_t status = mr_acquire_all(conn, data, size, e);
    if (status == STRATA_OK)
        status = mr_handle_make(conn, e, mh_p);
    return status == STRATA_OK ? status : mr_handle_fail(conn, e, status);
}

/* One member's DMA-BUF registration, inserted into its cache. */
static strata_status_t mr_dmabuf_one(stt_ib_ctx_t *ctx, void *data, size_t size, uint64_t offset,
                                     int fd, stt_ib_mrc_entry_t **e_p)
{
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
                                               mr->rkey, e_p);
    pthread_mutex_unlock(&ctx->lock);
    if (status != STRATA_OK)
        stt_ib_verbs.dereg_mr(mr);
    return status;
}

strata_status_t stt_ib_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh_p)
{
    stt_ib_conn_t *conn = mr_comm(comm);
    stt_ib_mrc_entry_t *e[STT_IB_MAX_MEMBERS] = {0};
    strata_status_t status = STRATA_OK;

    (void)type;
    if (conn == NULL || mh_p == NULL || size == 0) {
        STU_WARN("ib: reg_mr_dmabuf: bad arguments (comm %p, %zu bytes, output %p)",
                 (void *)comm, size, (void *)mh_p);
        return STRATA_ERR_INVALID;
    }
    for (int j = 0; j < conn->nmembers && status == STRATA_OK; j++)
        status = mr_dmabuf_one(conn->m[j].ctx, data, size, offset, fd, &e[j]);
    if (status == STRATA_OK)
        status = mr_handle_make(conn, e, mh_p);
    return status == STRATA_OK ? status : mr_handle_fail(conn, e, status);
}

strata_status_t stt_ib_dereg_mr(stt_comm_t *comm, void *mh)
{
    stt_ib_conn_t *conn = mr_comm(comm);
    bool owned = conn != NULL && mh != NULL;
    stt_ib_mrc_entry_t *const *e = owned ? mr_entries(conn, &mh) : NULL;

    for (int j = 0; e != NULL && j < conn->nmembers && owned; j++) {
        pthread_mutex_lock(&conn->m[j].ctx->lock);
        owned = stt_ib_mrc_owns(&conn->m[j].ctx->mrc, e[j]);
        pthread_mutex_unlock(&conn->m[j].ctx->lock);
    }
    if (e == NULL || !owned) {
        STU_WARN("ib: dereg_mr: %p is not a registration of %s", mh,
                 conn != NULL ? conn->dev->props.name : "an ib comm");
        return STRATA_ERR_INVALID;
    }
    for (int j = 0; j < conn->nmembers; j++)
        mr_release(conn->m[j].ctx, e[j]);
    if (conn->nmembers > 1) {
        ((mr_vmr_t *)mh)->magic = 0;
        free(mh);
    }
    return STRATA_OK;
}

/*
 * Memory handles for transports that move host memory without registering it
 * (tcp, ucx's tag API, loop): a handle only records what was registered, which
 * lets isend/irecv check that a buffer lies inside the region its handle names.
 * GPU and DMA-BUF memory are refused with STRATA_ERR_UNSUPPORTED.
 *
 * Thread safety: none needed; a handle belongs to one comm.
 */
#ifndef STT_HOSTMR_H
#define STT_HOSTMR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/base/slots.h"
#include "transport/transport.h"

#define STT_HOSTMR_MAGIC 0x52525453u   /* "STRR" */

typedef struct stt_hostmr {
    uint32_t magic;
    stt_comm_t *comm;
    uintptr_t start;
    size_t size;
} stt_hostmr_t;

/*
 * The reg_mr / reg_mr_dmabuf / dereg_mr operations themselves: such a
 * transport points its ops table here. comm's ops->name prefixes the
 * messages (the call reached us through comm->ops, so it is the
 * transport's own comm).
 */
strata_status_t stt_hostmr_reg(stt_comm_t *comm, void *data, size_t size, int type,
                               void **mh_p);
strata_status_t stt_hostmr_reg_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mh_p);
strata_status_t stt_hostmr_dereg(stt_comm_t *comm, void *mh);

/*
 * irecv's arguments for such a transport: n in 1..STT_MAX_RECVS, non-NULL
 * arrays and output, every buffer inside its handle. STRATA_ERR_INVALID
 * with a warning naming peer and the bad argument.
 */
strata_status_t stt_hostmr_irecv_check(stt_comm_t *comm, const char *peer, int n, void **data,
                                       const size_t *sizes, const int *tags, void **mhs,
                                       stt_req_t **req_p);

/* isend's arguments: a buffer of at most limit bytes inside its handle, an output. As above. */
strata_status_t stt_hostmr_isend_check(stt_comm_t *comm, const char *peer, const void *data,
                                       size_t size, uint64_t limit, const void *mh,
                                       stt_req_t **req_p);

/*
 * The whole iflush of such a transport: host memory is coherent once a
 * receive completed, so there is nothing to wait for. Checks the arguments
 * (n in 1..STT_MAX_RECVS, an output: STRATA_ERR_INVALID as above), returns
 * failed when the comm failed, and otherwise takes a request from slots that
 * is DONE at once (a NULL request when none is free: call again).
 */
strata_status_t stt_hostmr_iflush(stt_comm_t *comm, const char *peer, strata_status_t failed,
                                  stt_slots_t *slots, int n, stt_req_t **req_p);

/* A NULL handle is accepted (nothing to check); otherwise it must cover the buffer. */
static inline bool stt_hostmr_valid(const stt_comm_t *comm, const void *mh, const void *data,
                                    size_t size)
{
    const stt_hostmr_t *mr = mh;

    if (mr == NULL)
        return true;
    if (mr->magic != STT_HOSTMR_MAGIC || mr->comm != comm)
        return false;
    if (size == 0)
        return true;
    uintptr_t p = (uintptr_t)data;
    return p >= mr->start && size <= mr->size && p - mr->start <= mr->size - size;
}

#endif /* STT_HOSTMR_H */

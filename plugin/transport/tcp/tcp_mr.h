/*
 * Memory handles of the TCP transport. Sockets need no registration, so a
 * handle only records what was registered, which lets isend/irecv check that a
 * buffer lies inside the region its handle names.
 */
#ifndef STT_TCP_MR_H
#define STT_TCP_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strata/transport.h"

#define STT_TCP_MR_MAGIC 0x52525453u   /* "STRR" */

typedef struct stt_tcp_mr {
    uint32_t magic;
    stt_comm_t *comm;
    uintptr_t start;
    size_t size;
} stt_tcp_mr_t;

/* A NULL handle is accepted (nothing to check); otherwise it must cover the buffer. */
static inline bool stt_tcp_mr_valid(const stt_comm_t *comm, const void *mh, const void *data,
                                    size_t size)
{
    const stt_tcp_mr_t *mr = mh;

    if (mr == NULL)
        return true;
    if (mr->magic != STT_TCP_MR_MAGIC || mr->comm != comm)
        return false;
    if (size == 0)
        return true;
    uintptr_t p = (uintptr_t)data;
    return p >= mr->start && size <= mr->size && p - mr->start <= mr->size - size;
}

#endif /* STT_TCP_MR_H */

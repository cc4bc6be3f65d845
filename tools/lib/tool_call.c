/* One checked collective call: layout, inputs, the call, the check (see tool_call.h). */
#include "tools/lib/tool_call.h"

#include <string.h>

size_t stb_call_send_bytes(const stb_call_t *c, int nranks)
{
    size_t esz = strata_dtype_size(c->dtype);
    return c->coll == STA_COLL_REDUCE_SCATTER ? c->count * (size_t)nranks * esz : c->count * esz;
}

size_t stb_call_recv_bytes(const stb_call_t *c, int nranks)
{
    size_t esz = strata_dtype_size(c->dtype);
    return c->coll == STA_COLL_ALLGATHER ? c->count * (size_t)nranks * esz : c->count * esz;
}

size_t stb_call_recv_cap(const stb_call_t *c, int nranks)
{
    size_t s = stb_call_send_bytes(c, nranks), r = stb_call_recv_bytes(c, nranks);
    return c->in_place && s > r ? s : r;
}

void stb_call_bufs(const stb_call_t *c, int rank, int nranks, char *send, char *recv, void **sb,
                   void **rb)
{
    size_t mine = (size_t)rank * c->count * strata_dtype_size(c->dtype);
    (void)nranks;
    *sb = send;
    *rb = recv;
    if (!c->in_place)
        return;
    switch (c->coll) {
    case STA_COLL_REDUCE_SCATTER: *sb = recv; *rb = recv + mine; break;
    case STA_COLL_ALLGATHER: *sb = recv + mine; break;
    default: *sb = recv; break;
    }
}

void stb_call_fill(const stb_call_t *c, int rank, int nranks, char *send, char *recv,
                   unsigned char poison)
{
    const size_t m = c->count, P = (size_t)nranks, r = (size_t)rank;
    void *sb, *rb;

    stb_call_bufs(c, rank, nranks, send, recv, &sb, &rb);
    memset(recv, poison, stb_call_recv_cap(c, nranks));
    switch (c->coll) {
    case STA_COLL_REDUCE_SCATTER:
        stb_data_fill(sb, m * P, c->dtype, c->op, rank, 0);
        break;
    case STA_COLL_ALLGATHER:
        stb_data_fill(sb, m, c->dtype, STRATA_SUM, rank, r * m);
        break;
    case STA_COLL_BROADCAST:
        if (rank == c->root)
            stb_data_fill(sb, m, c->dtype, STRATA_SUM, rank, 0);
        break;
    default:
        stb_data_fill(sb, m, c->dtype, c->op, rank, 0);
        break;
    }
}

size_t stb_call_verify(const stb_call_t *c, const stb_data_ref_t *ref, int rank, int nranks,
                       char *send, char *recv, const char *what)
{
    const size_t m = c->count, r = (size_t)rank, esz = strata_dtype_size(c->dtype);
    size_t wrong = 0;
    void *sb, *rb;

    stb_call_bufs(c, rank, nranks, send, recv, &sb, &rb);
    switch (c->coll) {
    case STA_COLL_ALLREDUCE:
        return stb_data_check_reduced(rb, m, ref, 0, what);
    case STA_COLL_REDUCE_SCATTER:
        return stb_data_check_reduced(rb, m, ref, r * m, what);
    case STA_COLL_ALLGATHER:
        for (int q = 0; q < nranks; q++)
            wrong += stb_data_check_input(recv + (size_t)q * m * esz, m, c->dtype, q,
                                          (size_t)q * m, what);
        return wrong;
    case STA_COLL_BROADCAST:
        return stb_data_check_input(rb, m, c->dtype, c->root, 0, what);
    case STA_COLL_REDUCE:
        return rank == c->root ? stb_data_check_reduced(rb, m, ref, 0, what) : 0;
    default:
        return m;
    }
}

strata_status_t stb_call_run(const stb_call_t *c, void *sb, void *rb, strata_comm_t *comm)
{
    switch (c->coll) {
    case STA_COLL_ALLREDUCE:
        return strata_allreduce(sb, rb, c->count, c->dtype, c->op, comm);
    case STA_COLL_REDUCE_SCATTER:
        return strata_reduce_scatter(sb, rb, c->count, c->dtype, c->op, comm);
    case STA_COLL_ALLGATHER:
        return strata_allgather(sb, rb, c->count, c->dtype, comm);
    case STA_COLL_BROADCAST:
        return strata_broadcast(sb, rb, c->count, c->dtype, c->root, comm);
    case STA_COLL_REDUCE:
        return strata_reduce(sb, rb, c->count, c->dtype, c->op, c->root, comm);
    default:
        return STRATA_ERR_INVALID;
    }
}

strata_status_t stb_call_start(const stb_call_t *c, void *sb, void *rb, strata_comm_t *comm,
                               strata_request_t **req_p)
{
    switch (c->coll) {
    case STA_COLL_ALLREDUCE:
        return strata_iallreduce(sb, rb, c->count, c->dtype, c->op, comm, req_p);
    case STA_COLL_REDUCE_SCATTER:
        return strata_ireduce_scatter(sb, rb, c->count, c->dtype, c->op, comm, req_p);
    case STA_COLL_ALLGATHER:
        return strata_iallgather(sb, rb, c->count, c->dtype, comm, req_p);
    case STA_COLL_BROADCAST:
        return strata_ibroadcast(sb, rb, c->count, c->dtype, c->root, comm, req_p);
    case STA_COLL_REDUCE:
        return strata_ireduce(sb, rb, c->count, c->dtype, c->op, c->root, comm, req_p);
    default:
        return STRATA_ERR_INVALID;
    }
}

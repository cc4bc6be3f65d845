/*
 * One checked collective call: the buffers' layout, the inputs written from
 * the result oracle (tool_data.h), the call itself (blocking or not) and the
 * check of what this rank received. strata-perf's checked iterations and
 * strata-soak's random calls both go through it, so they judge a result alike.
 *
 * Layout, as nccl-tests' (counts in elements, P ranks, r this rank, m = count):
 *   allreduce, broadcast, reduce: send m -> recv m
 *   reduce_scatter: send m*P -> recv m        allgather: send m -> recv m*P
 *   in place: allreduce, broadcast, reduce: recv -> recv;
 *             reduce_scatter: recv (P blocks) -> recv + r*m;
 *             allgather: recv + r*m -> recv (P blocks).
 * So the receive buffer must hold stb_call_recv_cap bytes (in-place reduce_scatter keeps
 * its whole input there).
 *
 * Pure functions over caller buffers, except stb_call_run / stb_call_start, which are the
 * collective (every rank makes the same call); thread-safe as the communicator.
 */
#ifndef STB_CALL_H
#define STB_CALL_H

#include <stddef.h>

#include "algos/cost_model.h"
#include "strata/strata.h"
#include "tools/lib/tool_data.h"

/* The byte that fills a receive buffer before a checked call: 0x7f is out of the data's range
 * in every type (127 for int8, NaN for fp16 and bf16, ~3.4e38 for fp32). */
#define STB_CALL_POISON 0x7f

typedef struct stb_call {
    sta_coll_t coll;
    strata_dtype_t dtype;
    strata_op_t op;             /* ignored by allgather and broadcast */
    int root;                   /* broadcast and reduce only */
    size_t count;               /* the count passed to the collective (per rank for RS, AG) */
    int in_place;
} stb_call_t;

/* Bytes this rank sends and receives (its whole input and output). */
size_t stb_call_send_bytes(const stb_call_t *c, int nranks);
size_t stb_call_recv_bytes(const stb_call_t *c, int nranks);
/* Bytes the receive buffer must have: the output, or in place the larger of both. */
size_t stb_call_recv_cap(const stb_call_t *c, int nranks);

/* The pointers to pass, from the two buffers of the layout above. */
void stb_call_bufs(const stb_call_t *c, int rank, int nranks, char *send, char *recv, void **sb,
                   void **rb);

/*
 * Writes this rank's input where the call reads it, after filling the first
 * stb_call_recv_cap bytes of recv with `poison` (STB_CALL_POISON), so an element the
 * call should have written and did not is wrong.
 */
void stb_call_fill(const stb_call_t *c, int rank, int nranks, char *send, char *recv,
                   unsigned char poison);

/*
 * Wrong elements in what this rank received; ref must be built for (dtype, op, nranks)
 * (unused by allgather and broadcast). A reduce's non-root receives nothing (0). what: as
 * stb_data_check's (may be NULL).
 */
size_t stb_call_verify(const stb_call_t *c, const stb_data_ref_t *ref, int rank, int nranks,
                       char *send, char *recv, const char *what);

/* The collective, blocking / non-blocking (*req_p as strata_i*'s). */
strata_status_t stb_call_run(const stb_call_t *c, void *sb, void *rb, strata_comm_t *comm);
strata_status_t stb_call_start(const stb_call_t *c, void *sb, void *rb, strata_comm_t *comm,
                               strata_request_t **req_p);

#endif /* STB_CALL_H */

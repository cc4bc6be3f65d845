/*
 * strata-soak's engine: runs the drawn calls on a communicator, blocking ones
 * at once and non-blocking ones queued (up to STB_SOAK_QUEUE, each in its own
 * buffers), and checks each one when it is done:
 *   - every element this rank received, against the oracle (tool_call.h);
 *   - the send buffer unchanged (compared with a copy taken after the fill);
 *   - the bytes around the receive region (the offset before it, 64 bytes past
 *     the receive capacity) still poison: nothing written out of bounds.
 * Wrong calls are printed on stderr at once, with the seed, the index and the
 * replay command, and counted per collective and algorithm (the algorithm is
 * the communicator's table's choice for the call's bytes, which is what runs).
 *
 * Every call is collective: all ranks make the same ones in the same order.
 * One thread.
 */
#ifndef STB_SOAK_EXEC_H
#define STB_SOAK_EXEC_H

#include <stdint.h>

#include "strata/strata.h"
#include "tools/soak/soak_draw.h"

/* Per collective and algorithm, summed over the ranks at the end. */
typedef struct stb_soak_counts {
    int64_t calls[STA_COLL_COUNT][STA_ALGO_COUNT];
    int64_t forced[STA_COLL_COUNT][STA_ALGO_COUNT];
    int64_t nonblocking[STA_COLL_COUNT][STA_ALGO_COUNT];
    int64_t in_place[STA_COLL_COUNT][STA_ALGO_COUNT];
    int64_t wrong[STA_COLL_COUNT][STA_ALGO_COUNT];  /* calls wrong on some rank, per rank */
    int64_t bytes[STA_COLL_COUNT][STA_ALGO_COUNT];  /* the table's bytes, summed */
    int64_t barriers;
} stb_soak_counts_t;

typedef struct stb_soak_slot stb_soak_slot_t;

typedef struct stb_soak {
    strata_comm_t *comm;
    const stb_soak_opts_t *opts;
    uint64_t seed;
    int rank;
    int nranks;
    sta_dims_t dims;
    sta_algo_t forced;              /* what the comm's tables force now */
    stb_soak_slot_t *slots;         /* STB_SOAK_QUEUE */
    int queued;                     /* non-blocking calls in flight, slots 0 .. queued-1 */
    int injected;                   /* --inject-wrong done */
    int64_t wrong_calls;            /* on this rank, since the start */
    int64_t failed;                 /* calls that returned an error (the comm is then dead) */
    stb_soak_counts_t counts;       /* this rank's */
} stb_soak_t;

/* Allocates the slots' buffers for opts->max_bytes. STRATA_ERR_NO_MEMORY. */
strata_status_t stb_soak_init(stb_soak_t *s, strata_comm_t *comm, const stb_soak_opts_t *opts,
                              uint64_t seed);
void stb_soak_fini(stb_soak_t *s);

/* Draws and runs call `index` (queues it when non-blocking). An error is the call's. */
strata_status_t stb_soak_call(stb_soak_t *s, uint64_t index);

/* Waits for and checks every queued call. */
strata_status_t stb_soak_drain(stb_soak_t *s);

#endif /* STB_SOAK_EXEC_H */

/*
 * strata-soak's pure parts: its command line and the pseudo-random sequence
 * of calls. Call i of a run is a function of (seed, i, the comm's dims)
 * alone, so every rank draws the same call without talking, and a failure at
 * call i replays with --seed S --first i --calls 1 on the same ranks and nodes.
 * No I/O, no global state; thread-safe.
 */
#ifndef STB_SOAK_DRAW_H
#define STB_SOAK_DRAW_H

#include <stddef.h>
#include <stdint.h>

#include "algos/cost_model.h"
#include "strata/status.h"
#include "tools/lib/tool_call.h"

/* Largest buffer by default: "a few MiB", past every algorithm's crossover (docs/algorithms.md). */
#define STB_SOAK_DEFAULT_MAX_BYTES ((size_t)4 << 20)
#define STB_SOAK_DEFAULT_SECONDS 60
/* Calls between two checks of the whole job (wrong results, the stop): small enough that a
 * duration ends within a second of its mark, large enough that the checks cost little. */
#define STB_SOAK_DEFAULT_BATCH 32
#define STB_SOAK_DEFAULT_PROGRESS_S 60
/* Non-blocking calls queued at most before they are waited for (each has its own buffers). */
#define STB_SOAK_QUEUE 3
/* Buffers start up to this many elements past their 64-byte-aligned start. */
#define STB_SOAK_MAX_OFFSET 7
/* Elements a count may exceed its drawn size by (odd counts: +1 .. +7). */
#define STB_SOAK_MAX_EXTRA 7

typedef struct stb_soak_opts {
    uint64_t seed;              /* --seed; 0: rank 0 draws one and tells the others */
    uint64_t calls;             /* --calls; 0: until --seconds */
    int seconds;                /* --seconds (default when --calls is not given) */
    uint64_t first;             /* --first: the index of the first call run */
    size_t max_bytes;           /* --max-bytes */
    int batch;                  /* --batch */
    int progress_s;             /* --progress: rank 0's progress line period; 0: none */
    int64_t inject_wrong;       /* --inject-wrong: corrupt the first checked result at or
                                   after this call on the last rank (tests the check); -1 */
    int verbose;                /* -v */
    int help;
} stb_soak_opts_t;

/* One call of the sequence. */
typedef struct stb_soak_draw {
    int barrier;                /* 1: strata_barrier; call is unused */
    stb_call_t call;
    sta_algo_t force;           /* STA_ALGO_AUTO, or the algorithm forced for this call */
    int nonblocking;            /* strata_i*, queued with up to STB_SOAK_QUEUE - 1 others */
    unsigned send_off;          /* elements past the send buffer's aligned start */
    unsigned recv_off;
} stb_soak_draw_t;

strata_status_t stb_soak_opts_parse(int argc, char *const argv[], stb_soak_opts_t *opts,
                                    char *err, size_t errlen);
const char *stb_soak_usage(void);

/*
 * Call `index` of the sequence `seed` on a comm of these dims: collective (allreduce 3,
 * reduce_scatter, allgather, broadcast, reduce 2 each, barrier 1 in 12), type and op
 * uniform, size log-uniform from 1 B to max_bytes (the whole buffer for reduce_scatter
 * and allgather) with 1 in 16 counts 0 and of the others a quarter each kept, made odd,
 * raised by 1..7, lowered by 1; root uniform, in place 1 in 3, an algorithm forced 1 in 2
 * (uniform among those sta_algo_selectable), non-blocking 1 in 4, offsets 0 half the time.
 */
void stb_soak_draw(uint64_t seed, uint64_t index, const sta_dims_t *dims, size_t max_bytes,
                   stb_soak_draw_t *d);

/* Bytes each buffer of a slot needs for any call drawn with max_bytes on nranks. */
size_t stb_soak_buf_cap(size_t max_bytes, int nranks);

/* "allreduce fp16 sum count 1235 root 2 in-place forced ring nb off 3/0" into buf. */
void stb_soak_draw_str(const stb_soak_draw_t *d, char *buf, size_t len);

#endif /* STB_SOAK_DRAW_H */

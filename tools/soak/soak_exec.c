/* strata-soak's engine: run, queue, check and count the drawn calls (see soak_exec.h). */
#include "tools/soak/soak_exec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/introspect.h"
#include "tools/lib/tool_call.h"
#include "tools/lib/tool_util.h"

/* Poison bytes before and after each buffer's region: one cache line, so a vectorised
 * kernel's overrun by a whole register (64 bytes with AVX-512) still lands in it. */
#define SOAK_GUARD 64
/* Buffers start on a cache line, so the drawn offsets make every misalignment. */
#define SOAK_ALIGN 64

struct stb_soak_slot {
    unsigned char *send;            /* SOAK_GUARD + cap + SOAK_GUARD bytes each */
    unsigned char *recv;
    unsigned char *shadow;          /* the send buffer as filled */
    size_t alloc;
    stb_soak_draw_t d;
    uint64_t index;
    sta_algo_t algo;                /* what the table picked for the call */
    size_t shadow_len;              /* bytes of send compared after the call; 0: none */
    strata_request_t *req;
};

strata_status_t stb_soak_init(stb_soak_t *s, strata_comm_t *comm, const stb_soak_opts_t *opts,
                              uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->comm = comm;
    s->opts = opts;
    s->seed = seed;
    s->rank = strata_comm_rank(comm);
    s->nranks = strata_comm_nranks(comm);
    s->forced = stb_comm_forced(comm);
    stb_comm_model(comm, NULL, &s->dims);
    s->slots = calloc(STB_SOAK_QUEUE, sizeof(*s->slots));
    if (s->slots == NULL)
        return STRATA_ERR_NO_MEMORY;
    size_t alloc = stb_soak_buf_cap(opts->max_bytes, s->nranks) + 2 * SOAK_GUARD;
    for (int k = 0; k < STB_SOAK_QUEUE; k++) {
        stb_soak_slot_t *sl = &s->slots[k];
        sl->alloc = alloc;
        sl->send = stb_alloc_touched(SOAK_ALIGN, alloc);
        sl->recv = stb_alloc_touched(SOAK_ALIGN, alloc);
        sl->shadow = stb_alloc_touched(SOAK_ALIGN, alloc);
        if (sl->send == NULL || sl->recv == NULL || sl->shadow == NULL) {
            stb_soak_fini(s);
            return STRATA_ERR_NO_MEMORY;
        }
    }
    return STRATA_OK;
}

void stb_soak_fini(stb_soak_t *s)
{
    for (int k = 0; s->slots != NULL && k < STB_SOAK_QUEUE; k++) {
        free(s->slots[k].send);
        free(s->slots[k].recv);
        free(s->slots[k].shadow);
    }
    free(s->slots);
    s->slots = NULL;
}

/* The regions of a slot for its call: where send and recv start. */
static size_t soak_send_at(const stb_soak_slot_t *sl)
{
    return SOAK_GUARD + sl->d.send_off * strata_dtype_size(sl->d.call.dtype);
}

static size_t soak_recv_at(const stb_soak_slot_t *sl)
{
    return SOAK_GUARD + sl->d.recv_off * strata_dtype_size(sl->d.call.dtype);
}

/* The bytes the table costs the call by (strata.h's strata_comm_algo_for). */
static size_t soak_table_bytes(const stb_call_t *c, int nranks)
{
    size_t s = stb_call_send_bytes(c, nranks), r = stb_call_recv_bytes(c, nranks);
    return s > r ? s : r;
}

/* Fills the slot for its call: poison, input, guards, the send buffer's copy. */
static void soak_prepare(stb_soak_t *s, stb_soak_slot_t *sl)
{
    const stb_call_t *c = &sl->d.call;
    size_t rat = soak_recv_at(sl), sat = soak_send_at(sl);
    size_t rcap = stb_call_recv_cap(c, s->nranks), sbytes = stb_call_send_bytes(c, s->nranks);

    memset(sl->recv, STB_CALL_POISON, rat);
    memset(sl->recv + rat + rcap, STB_CALL_POISON, SOAK_GUARD);
    memset(sl->send, STB_CALL_POISON, sat);
    memset(sl->send + sat + sbytes, STB_CALL_POISON, SOAK_GUARD);
    stb_call_fill(c, s->rank, s->nranks, (char *)sl->send + sat, (char *)sl->recv + rat,
                  STB_CALL_POISON);
    sl->shadow_len = c->in_place ? 0 : sat + sbytes + SOAK_GUARD;
    memcpy(sl->shadow, sl->send, sl->shadow_len);
    sl->algo = stb_comm_algo(s->comm, c->coll, soak_table_bytes(c, s->nranks));
}

static size_t soak_poison_differs(const unsigned char *p, size_t n)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += p[i] != STB_CALL_POISON;
    return wrong;
}

/* --inject-wrong: spoil the first element of this rank's result once, on the last rank. */
static void soak_inject(stb_soak_t *s, stb_soak_slot_t *sl)
{
    const stb_call_t *c = &sl->d.call;
    void *sb, *rb;

    if (s->opts->inject_wrong < 0 || s->injected || sl->index < (uint64_t)s->opts->inject_wrong ||
        s->rank != s->nranks - 1 || c->count == 0 ||
        (c->coll == STA_COLL_REDUCE && c->root != s->rank))
        return;
    stb_call_bufs(c, s->rank, s->nranks, (char *)sl->send + soak_send_at(sl),
                  (char *)sl->recv + soak_recv_at(sl), &sb, &rb);
    memset(rb, STB_CALL_POISON, strata_dtype_size(c->dtype));
    s->injected = 1;
}

static void soak_replay_hint(const stb_soak_t *s, const stb_soak_slot_t *sl, const char *desc)
{
    fprintf(stderr, "strata-soak: rank %d: call %" PRIu64 " (%s, ran %s); replay: strata-soak "
            "--seed %" PRIu64 " --first %" PRIu64 " --calls 1 --max-bytes %zu on the same "
            "ranks and nodes\n", s->rank, sl->index, desc, sta_algo_name(sl->algo), s->seed,
            sl->index, s->opts->max_bytes);
}

/* Checks a finished call and counts it. */
static void soak_check(stb_soak_t *s, stb_soak_slot_t *sl)
{
    const stb_call_t *c = &sl->d.call;
    const sta_coll_t k = c->coll;
    const sta_algo_t a = sl->algo;
    size_t rat = soak_recv_at(sl), rcap = stb_call_recv_cap(c, s->nranks);
    stb_data_ref_t ref;
    char what[64], desc[160];

    soak_inject(s, sl);
    snprintf(what, sizeof(what), "strata-soak: rank %d: call %" PRIu64, s->rank, sl->index);
    stb_data_ref_build(&ref, c->dtype, c->op, s->nranks);
    size_t wrong = stb_call_verify(c, &ref, s->rank, s->nranks, (char *)sl->send + soak_send_at(sl),
                                   (char *)sl->recv + rat, what);
    size_t send_changed = 0;
    for (size_t i = 0; i < sl->shadow_len; i++)
        send_changed += sl->send[i] != sl->shadow[i];
    size_t guards = soak_poison_differs(sl->recv, rat) +
                    soak_poison_differs(sl->recv + rat + rcap, SOAK_GUARD);

    s->counts.calls[k][a]++;
    s->counts.forced[k][a] += sl->d.force != STA_ALGO_AUTO;
    s->counts.nonblocking[k][a] += sl->d.nonblocking;
    s->counts.in_place[k][a] += c->in_place;
    s->counts.bytes[k][a] += (int64_t)soak_table_bytes(c, s->nranks);
    if (s->opts->verbose && s->rank == 0) {
        stb_soak_draw_str(&sl->d, desc, sizeof(desc));
        printf("call %" PRIu64 ": %s: %s\n", sl->index, desc, sta_algo_name(a));
    }
    if (wrong == 0 && send_changed == 0 && guards == 0)
        return;
    s->counts.wrong[k][a]++;
    s->wrong_calls++;
    stb_soak_draw_str(&sl->d, desc, sizeof(desc));
    fprintf(stderr, "strata-soak: rank %d: WRONG call %" PRIu64 ": %zu wrong element(s), %zu "
            "send byte(s) changed, %zu guard byte(s) overwritten\n", s->rank, sl->index, wrong,
            send_changed, guards);
    soak_replay_hint(s, sl, desc);
}

static void soak_failed(stb_soak_t *s, const stb_soak_slot_t *sl, strata_status_t status)
{
    char desc[160];
    stb_soak_draw_str(&sl->d, desc, sizeof(desc));
    fprintf(stderr, "strata-soak: rank %d: FAILED call %" PRIu64 ": %s (%s)\n", s->rank,
            sl->index, strata_status_str(status), strata_comm_error(s->comm));
    soak_replay_hint(s, sl, desc);
    s->failed++;
}

strata_status_t stb_soak_drain(stb_soak_t *s)
{
    strata_status_t first = STRATA_OK;

    for (int k = 0; k < s->queued; k++) {
        stb_soak_slot_t *sl = &s->slots[k];
        strata_status_t status = strata_wait(sl->req);   /* frees the request, error or not */
        sl->req = NULL;
        if (status != STRATA_OK) {
            soak_failed(s, sl, status);
            if (first == STRATA_OK)
                first = status;
        } else {
            soak_check(s, sl);
        }
    }
    s->queued = 0;
    return first;
}

strata_status_t stb_soak_call(stb_soak_t *s, uint64_t index)
{
    stb_soak_draw_t d;
    strata_status_t status = STRATA_OK;

    stb_soak_draw(s->seed, index, &s->dims, s->opts->max_bytes, &d);
    if (s->queued > 0 && (d.barrier || !d.nonblocking || d.force != s->forced ||
                          s->queued == STB_SOAK_QUEUE))
        status = stb_soak_drain(s);
    if (status != STRATA_OK)
        return status;
    if (d.barrier) {
        s->counts.barriers++;
        status = strata_barrier(s->comm);
        s->failed += status != STRATA_OK;
        if (status != STRATA_OK)
            fprintf(stderr, "strata-soak: rank %d: FAILED call %" PRIu64 " (barrier): %s (%s)\n",
                    s->rank, index, strata_status_str(status), strata_comm_error(s->comm));
        return status;
    }
    if (d.force != s->forced) {
        /* the tables change only with nothing queued: the worker reads them */
        if ((status = stb_comm_force(s->comm, d.force)) != STRATA_OK)
            return status;
        s->forced = d.force;
    }
    stb_soak_slot_t *sl = &s->slots[s->queued];
    sl->d = d;
    sl->index = index;
    soak_prepare(s, sl);
    void *sb, *rb;
    stb_call_bufs(&d.call, s->rank, s->nranks, (char *)sl->send + soak_send_at(sl),
                  (char *)sl->recv + soak_recv_at(sl), &sb, &rb);
    if (d.nonblocking) {
        status = stb_call_start(&d.call, sb, rb, s->comm, &sl->req);
        if (status == STRATA_OK)
            s->queued++;
    } else {
        status = stb_call_run(&d.call, sb, rb, s->comm);
        if (status == STRATA_OK)
            soak_check(s, sl);
    }
    if (status != STRATA_OK)
        soak_failed(s, sl, status);
    return status;
}

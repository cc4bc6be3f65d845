/*
 * Transport conformance, tags: the shared-comm pattern of NCCL. NCCL gives
 * the GPUs of a node that send to one peer one send comm, each GPU with its
 * own tag, when the device's maxRecvs > 1; the receiver groups their buffers
 * into receives of up to maxRecvs, and the GPUs progress independently, so a
 * send often comes before the receive that has its tag, or while the oldest
 * receive lacks its tag. The contract (transport/transport.h, "Matching"):
 * matching is per tag in posting order, and a send whose buffer is not posted
 * waits, is never an error, and never loses or reorders its tag's messages.
 *
 * TAGS_T tags share one connection; each sends TAGS_STEPS messages ("steps").
 * The receiver posts, step by step, the step's buffers of every tag split into
 * grouped receives of 1..max_recvs buffers in a permuted tag order. Each
 * buffer must get exactly its (tag, step) message and report its size.
 *
 *   conf_tags_any_order  every receive posted without waiting for another:
 *                        all sends first, all receives first, and random
 *                        merges of the two, each with a different interleaving
 *                        of the tags' sends (per tag in step order).
 *   conf_tags_depth      NCCL's proxy: the receiver keeps TAGS_DEPTH steps
 *                        posted and posts the next only when the oldest is
 *                        complete; half the tags post every step at once, the
 *                        other half one step per round. Not on a transport
 *                        whose props.tags_block is set (tcp's byte stream): a
 *                        message held there holds back the ones behind it, so
 *                        the NCCL edge reports maxRecvs 1 and NCCL never shares
 *                        such a comm (test_plugin_tags checks that).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"
#include "sts_xport.h"

#define TAGS_T 8                 /* tags on the connection: GPUs of a node (NCCL: up to 8) */
#define TAGS_STEPS 4             /* any-order case: 8 x 4 single receives fit STT_MAX_REQUESTS */
#define TAGS_DEPTH_STEPS 8       /* depth case: steps per tag */
#define TAGS_DEPTH 2             /* steps the receiver keeps posted (NCCL: 16 / nsubs) */
#define TAGS_MAX_MSGS (TAGS_T * TAGS_DEPTH_STEPS)

/* A tag value per GPU: distinct, not small consecutive integers, one negative. */
static int tags_value(int t)
{
    return t == 5 ? -7 : 3 + 11 * t;
}

/* Message (t, s): sizes from 0 to 48 KiB, and two above tcp's 256 KiB striping threshold. */
static size_t tags_size(int t, int s)
{
    if ((t * 3 + s) % 13 == 4)
        return 300 * KiB + (size_t)t;
    if ((t + s) % 11 == 6)
        return 0;
    return 1 + ((size_t)(t * 131 + s * 977) * 7919u) % (48 * KiB);
}

static uint32_t tags_seed(int t, int s)
{
    return (uint32_t)(1000 * t + s + 1);
}

/* The layout of one run: message (t, s) at off[s * TAGS_T + t] in both buffers. */
typedef struct tags_run {
    int steps;
    size_t off[TAGS_MAX_MSGS + 1];
    sts_buf_t sbuf, rbuf;
    sts_pair_t pair;
    sts_reqset_t set;
    /* receives in posting order: step, width, tags (GPU indexes), the set's slot */
    int nrecv;
    int r_step[TAGS_MAX_MSGS];
    int r_n[TAGS_MAX_MSGS];
    int r_t[TAGS_MAX_MSGS][STT_MAX_RECVS];
    int r_slot[TAGS_MAX_MSGS];
} tags_run_t;

/* Capacity of message (t, s)'s receive buffer: its size, plus slack for some. */
static size_t tags_cap(int t, int s)
{
    return tags_size(t, s) + (size_t)((t + s) % 3) * 5;
}

static void tags_open(sts_conf_ctx_t *ctx, tags_run_t *run, int steps)
{
    memset(run, 0, sizeof(*run));
    run->steps = steps;
    for (int s = 0; s < steps; s++)
        for (int t = 0; t < TAGS_T; t++) {
            int m = s * TAGS_T + t;
            run->off[m + 1] = run->off[m] + tags_cap(t, s);
        }
    sts_conf_open(ctx, 0, &run->pair);
    size_t total = run->off[steps * TAGS_T];
    assert_ok(sts_buf_alloc(&run->sbuf, run->pair.send, total));
    assert_ok(sts_buf_alloc(&run->rbuf, run->pair.recv, total));
    memset(run->rbuf.data, 0, total);
    for (int s = 0; s < steps; s++)
        for (int t = 0; t < TAGS_T; t++)
            sts_pattern_fill(run->sbuf.data + run->off[s * TAGS_T + t], tags_size(t, s),
                             tags_seed(t, s));
    assert_ok(sts_reqset_init(&run->set, 2 * TAGS_MAX_MSGS + 8));
}

static void tags_close(tags_run_t *run)
{
    sts_reqset_fini(&run->set);
    sts_buf_free(&run->sbuf);
    sts_buf_free(&run->rbuf);
    sts_pair_close(&run->pair);
}

/* Splits step s's tags, permuted, into receives of 1..width buffers (widths vary). */
static void tags_plan_step(tags_run_t *run, int s, int width, uint32_t seed)
{
    int perm[TAGS_T];

    sts_permute(perm, TAGS_T, seed + (uint32_t)s);
    for (int k = 0, g = 0; k < TAGS_T; g++) {
        int n = 1 + (s + g + (int)seed) % width;
        if (n > TAGS_T - k)
            n = TAGS_T - k;
        int r = run->nrecv++;
        run->r_step[r] = s;
        run->r_n[r] = n;
        for (int i = 0; i < n; i++)
            run->r_t[r][i] = perm[k + i];
        k += n;
    }
}

static void tags_post_recv(tags_run_t *run, int r, uint64_t deadline)
{
    void *data[STT_MAX_RECVS], *mhs[STT_MAX_RECVS];
    size_t caps[STT_MAX_RECVS];
    int tags[STT_MAX_RECVS];
    int s = run->r_step[r];

    for (int i = 0; i < run->r_n[r]; i++) {
        int t = run->r_t[r][i];
        data[i] = run->rbuf.data + run->off[s * TAGS_T + t];
        caps[i] = tags_cap(t, s);
        tags[i] = tags_value(t);
        mhs[i] = run->rbuf.mh;
    }
    assert_ok(sts_irecv_retry(run->pair.recv, run->r_n[r], data, caps, tags, mhs, &run->set,
                              deadline, &run->r_slot[r], NULL));
}

static void tags_post_send(tags_run_t *run, int t, int s, uint64_t deadline)
{
    assert_ok(sts_isend_retry(run->pair.send, run->sbuf.data + run->off[s * TAGS_T + t],
                              tags_size(t, s), tags_value(t), run->sbuf.mh, &run->set, deadline,
                              NULL, NULL));
}

/* Receive r is over: well (its slot has no request left and no error) or not. */
static int tags_recv_done(const tags_run_t *run, int r)
{
    const sts_req_slot_t *slot = &run->set.slots[run->r_slot[r]];
    if (slot->req == NULL && slot->status != STRATA_OK)
        fail_msg("receive %d (step %d, %d buffers) failed: %s", r, run->r_step[r], run->r_n[r],
                 strata_status_str(slot->status));
    return slot->req == NULL;
}

/* Every buffer holds its (tag, step) message, with the send's size reported. */
static void tags_check(tags_run_t *run)
{
    assert_int_equal(run->set.errors, 0);
    for (int r = 0; r < run->nrecv; r++) {
        const sts_req_slot_t *slot = &run->set.slots[run->r_slot[r]];
        int s = run->r_step[r];
        for (int i = 0; i < run->r_n[r]; i++) {
            int t = run->r_t[r][i];
            if (slot->sizes[i] != tags_size(t, s))
                fail_msg("receive %d buffer %d (tag %d, step %d): %zu bytes, want %zu", r, i,
                         tags_value(t), s, slot->sizes[i], tags_size(t, s));
            assert_pattern(run->rbuf.data + run->off[s * TAGS_T + t], tags_size(t, s),
                           tags_seed(t, s));
        }
    }
    assert_true(sts_guard_ok(run->rbuf.data, run->off[run->steps * TAGS_T]));
}

/* A small deterministic generator for the interleavings. */
static uint32_t tags_rand(uint32_t *x)
{
    *x = *x * 1664525u + 1013904223u;
    return *x >> 8;
}

/*
 * The send order: the tags' sends interleaved at random, each tag in step
 * order, some tags favoured so that they run ahead of the others.
 */
static void tags_send_order(int steps, uint32_t seed, int *order)
{
    int next[TAGS_T] = {0}, left = steps * TAGS_T;
    uint32_t x = seed * 2654435761u + 1;

    for (int k = 0; left > 0; k++) {
        int t = (int)(tags_rand(&x) % (TAGS_T + 4));
        if (t >= TAGS_T)
            t = (int)(seed % TAGS_T);        /* the favoured tag runs ahead */
        while (next[t] == steps)
            t = (t + 1) % TAGS_T;
        order[k] = t * TAGS_DEPTH_STEPS + next[t]++;
        left--;
    }
}

static void conf_tags_any_order(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const int width = sts_conf_max_recvs(ctx);
    tags_run_t *run = malloc(sizeof(*run));

    assert_non_null(run);
    /* variant: 0 sends first, 1 receives first, 2..5 random merges */
    for (int variant = 0; variant < 6; variant++) {
        uint32_t seed = 17u + 31u * (uint32_t)variant, x = seed;
        int order[TAGS_T * TAGS_STEPS];
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

        tags_open(ctx, run, TAGS_STEPS);
        for (int s = 0; s < TAGS_STEPS; s++)
            tags_plan_step(run, s, width, seed);
        tags_send_order(TAGS_STEPS, seed, order);
        int ns = 0, nr = 0, total = TAGS_T * TAGS_STEPS;
        while (ns < total || nr < run->nrecv) {
            int send = variant == 0 ? ns < total
                     : variant == 1 ? nr == run->nrecv
                     : nr == run->nrecv || (ns < total && tags_rand(&x) % 2 == 0);
            if (send) {
                tags_post_send(run, order[ns] / TAGS_DEPTH_STEPS, order[ns] % TAGS_DEPTH_STEPS,
                               deadline);
                ns++;
            } else {
                tags_post_recv(run, nr++, deadline);
            }
        }
        assert_ok(sts_reqset_wait(&run->set, deadline));
        tags_check(run);
        tags_close(run);
    }
    free(run);
}

static void conf_tags_depth(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const int width = sts_conf_max_recvs(ctx);

    if (ctx->props.tags_block) {
        print_message("%s: tags_block set (one byte stream per connection): a held message"
                      " holds back the ones behind it, so receives that wait for each other"
                      " are outside its contract; skipped\n", stt_name(ctx->ops));
        skip();
    }
    tags_run_t *run = malloc(sizeof(*run));
    assert_non_null(run);
    for (int variant = 0; variant < 3; variant++) {
        uint32_t seed = 5u + 13u * (uint32_t)variant;
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
        int sent[TAGS_T] = {0}, step_first[TAGS_DEPTH_STEPS + 1];
        int posted = 0, done = 0;

        tags_open(ctx, run, TAGS_DEPTH_STEPS);
        for (int s = 0; s < TAGS_DEPTH_STEPS; s++) {
            step_first[s] = run->nrecv;
            tags_plan_step(run, s, width, seed);
        }
        step_first[TAGS_DEPTH_STEPS] = run->nrecv;
        for (int round = 0; done < TAGS_DEPTH_STEPS; round++) {
            if (stu_deadline_passed(deadline))
                fail_msg("variant %d: %d of %d steps complete, %d posted, at the deadline",
                         variant, done, TAGS_DEPTH_STEPS, posted);
            /* fast tags (every other one, shifted by the variant) post all their steps;
             * slow ones one step every third round */
            for (int t = 0; t < TAGS_T; t++) {
                int fast = (t + variant) % 2 == 0;
                if (sent[t] < TAGS_DEPTH_STEPS && (fast || round % 3 == 0)) {
                    tags_post_send(run, t, sent[t], deadline);
                    sent[t]++;
                }
            }
            while (posted < TAGS_DEPTH_STEPS && posted < done + TAGS_DEPTH) {
                for (int r = step_first[posted]; r < step_first[posted + 1]; r++)
                    tags_post_recv(run, r, deadline);
                posted++;
            }
            sts_reqset_progress(&run->set);
            while (done < posted) {
                int complete = 1;
                for (int r = step_first[done]; r < step_first[done + 1] && complete; r++)
                    complete = tags_recv_done(run, r);
                if (!complete)
                    break;
                done++;
            }
        }
        assert_ok(sts_reqset_wait(&run->set, deadline));
        tags_check(run);
        tags_close(run);
    }
    free(run);
}

int main(void)
{
    struct CMUnitTest cases[] = {
        STS_CONF_CASE(conf_tags_any_order),
        STS_CONF_CASE(conf_tags_depth),
    };
    return sts_conf_run("conformance-tags", cases, sizeof(cases) / sizeof(cases[0]));
}

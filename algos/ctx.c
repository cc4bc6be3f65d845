/* Context helpers: sticky errors, scratch memory, backoff. */
#define _GNU_SOURCE   /* ppoll */
#include "algos/ctx.h"

#include <poll.h>

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "util/log.h"
#include "util/time.h"

/*
 * Backoff phases. Busy polling costs 4-7 µs per hop between two cores, waking
 * a sleeper ~35-40 µs, and two spinners on one core a 4 ms scheduler tick
 * (docs/machines.md): spin only while a message is likely close, and barely
 * at all when ranks outnumber cores.
 */
#define BACKOFF_SPIN_NS 50000ull           /* 50 µs: about 10 busy-polled hops */
/*
 * Oversubscribed, no spin at all and 20 µs of yields before blocking on a futex. Chosen by
 * measurement (4 ranks on 2 cores, 8 B-4 KiB allreduce, interleaved runs on a loaded
 * machine): a spin of 0.5-2 µs first made a call several times slower, and 100 µs of
 * yields (a peer on our core gets its turn, but so does every other process) two to four
 * times; the figures against OpenMPI: docs/benchmarks.md, "Small messages with more ranks
 * than cores".
 */
#define BACKOFF_SPIN_OVERSUB_NS 0ull
#define BACKOFF_YIELD_NS 500000ull         /* then sched_yield for 0.5 ms */
#define BACKOFF_YIELD_OVERSUB_NS 20000ull
/*
 * The most a BLOCK wait yields when its round moves many bytes (sta_backoff_expect). A
 * round of large pieces keeps the peers copying for hundreds of µs; a wait that sleeps
 * after 20 µs pays a futex wake-up per round and runs behind the peer it shares a core
 * with. 3 ranks on 2 cores, 2-32 MiB allreduce: 1.1-1.3x faster with 0.3 ms of yields than
 * with 20 µs (docs/algorithms.md, "Waiting without spinning the machine away").
 */
#define BACKOFF_YIELD_OVERSUB_MAX_NS 1000000ull
#define BACKOFF_NAP_MIN_NS 20000ull        /* then nap 20 µs ... */
#define BACKOFF_NAP_MAX_NS 100000ull       /* ... doubling up to 100 µs: transports progress only when polled */
#define BACKOFF_POLL_MAX_NS 2000000ull     /* 2 ms when sleeping in poll(): readiness wakes us first */
/*
 * A sleeping wait progresses its context's other comms at most this often: a failover frame
 * then waits at most 1 ms on top of its round trip, against detection bounds of seconds
 * (STRATA_SOCKET_USER_TIMEOUT), and an idle tcp virtual NIC's receive comm costs one recv
 * per ms (the tcp send comm's watch of its acknowledgements, STT_TCP_WATCH_NS, uses the
 * same period).
 */
#define STA_IDLE_PROGRESS_NS 1000000ull

strata_status_t sta_ctx_fail(sta_ctx_t *ctx, strata_status_t status, const char *fmt, ...)
{
    va_list ap;

    if (ctx->failed == STRATA_OK) {
        va_start(ap, fmt);
        vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
        va_end(ap);
        ctx->failed = status;
        STU_WARN("rank %d: %s (%s)", ctx->rank, ctx->errmsg, strata_status_str(status));
    }
    return status;
}

strata_status_t sta_ctx_scratch(sta_ctx_t *ctx, size_t bytes, void **buf_p)
{
    if (bytes > ctx->scratch_size) {
        void *p = realloc(ctx->scratch, bytes);
        if (p == NULL)
            return sta_ctx_fail(ctx, STRATA_ERR_NO_MEMORY, "scratch of %zu bytes", bytes);
        ctx->scratch = p;
        ctx->scratch_size = bytes;
    }
    *buf_p = ctx->scratch;
    return STRATA_OK;
}

void sta_ctx_progress_idle(const sta_ctx_t *ctx)
{
    if (ctx->peers == NULL)
        return;
    for (int r = 0; r < ctx->nranks; r++) {
        if (ctx->peers[r].send != NULL)
            (void)stt_progress(ctx->peers[r].send);
        if (ctx->peers[r].recv != NULL)
            (void)stt_progress(ctx->peers[r].recv);
    }
}

void sta_backoff_init(sta_backoff_t *b, uint64_t timeout_ns, sta_wait_mode_t mode)
{
    b->start_ns = stu_time_ns();
    b->deadline_ns = b->start_ns + timeout_ns;
    b->nap_ns = BACKOFF_NAP_MIN_NS;
    b->idle_ns = b->start_ns;
    b->yield_ns = BACKOFF_YIELD_OVERSUB_NS;
    b->polls = 0;
    b->mode = mode;
    b->ctx = NULL;
}

void sta_backoff_start(sta_backoff_t *b, const sta_ctx_t *ctx)
{
    sta_backoff_init(b, ctx->timeout_ns, ctx->wait);
    b->ctx = ctx;
}

void sta_backoff_idle(sta_backoff_t *b)
{
    uint64_t now = stu_time_ns();

    if (b->ctx == NULL || now - b->idle_ns < STA_IDLE_PROGRESS_NS)
        return;
    b->idle_ns = now;
    sta_ctx_progress_idle(b->ctx);
}

/* The spin phase: none where ranks outnumber the cores or a wait yields from the start. */
static uint64_t backoff_spin_ns(const sta_backoff_t *b)
{
    return b->mode == STA_WAIT_SPIN ? BACKOFF_SPIN_NS : BACKOFF_SPIN_OVERSUB_NS;
}

void sta_backoff_expect(sta_backoff_t *b, size_t bytes)
{
    uint64_t ns = (uint64_t)bytes / STA_WAIT_YIELD_BYTES_PER_NS;

    if (b->mode != STA_WAIT_BLOCK)
        return;
    b->yield_ns = STU_MIN(STU_MAX(ns, BACKOFF_YIELD_OVERSUB_NS), BACKOFF_YIELD_OVERSUB_MAX_NS);
}

int sta_backoff_spinning(const sta_backoff_t *b)
{
    uint64_t spin = backoff_spin_ns(b);
    return stu_time_ns() - b->start_ns < spin;
}

int sta_backoff_should_block(const sta_backoff_t *b, strata_status_t *status_p)
{
    uint64_t now = stu_time_ns();
    uint64_t spent = now - b->start_ns;

    *status_p = now >= b->deadline_ns ? STRATA_ERR_TIMEOUT : STRATA_OK;
    if (b->mode == STA_WAIT_BLOCK)
        return spent >= BACKOFF_SPIN_OVERSUB_NS + b->yield_ns;
    return spent >= backoff_spin_ns(b) + BACKOFF_YIELD_NS;
}

strata_status_t sta_backoff_step(sta_backoff_t *b)
{
    return sta_backoff_step_fds(b, NULL, 0);
}

strata_status_t sta_backoff_step_fds(sta_backoff_t *b, struct pollfd *fds, int nfds)
{
    /* Reading the clock every poll is cheap (vDSO) next to a transport test. */
    uint64_t now = stu_time_ns();
    uint64_t spent = now - b->start_ns;
    uint64_t spin = backoff_spin_ns(b);

    b->polls++;
    if (STU_UNLIKELY(now >= b->deadline_ns))
        return STRATA_ERR_TIMEOUT;
    if (spent < spin)
        return STRATA_OK;
    sta_backoff_idle(b);
    if (nfds > 0 && b->mode == STA_WAIT_BLOCK) {
        /*
         * More ranks than cores: the peer we wait for may need our core to run at
         * all, so block in poll() right away; readiness wakes us (~35 µs) where
         * yielding could cost a scheduler tick (~4 ms) per hop.
         */
        struct timespec block = {0, (long)BACKOFF_POLL_MAX_NS};
        ppoll(fds, (nfds_t)nfds, &block, NULL);
        return STRATA_OK;
    }
    if (spent < spin + BACKOFF_YIELD_NS) {
        sched_yield();
        return STRATA_OK;
    }
    struct timespec ts = {0, (long)b->nap_ns};
    if (nfds > 0)
        ppoll(fds, (nfds_t)nfds, &ts, NULL);   /* readiness or the nap, whichever is first */
    else
        nanosleep(&ts, NULL);
    if (b->nap_ns < (nfds > 0 ? BACKOFF_POLL_MAX_NS : BACKOFF_NAP_MAX_NS))
        b->nap_ns *= 2;
    return STRATA_OK;
}

int sta_wait_fds_add(stt_comm_t *comm, struct pollfd *fds, int n, int max)
{
    if (n < 0 || n >= max)
        return -1;
    int got = stt_poll_fds(comm, fds + n, max - n);
    return got > 0 ? n + got : -1;
}

/*
 * The CollNet's wait: what test() does when the executor finds nothing to move.
 *
 * NCCL's proxy thread busy-polls test() and calls sched_yield() after a pass that progressed
 * nothing; with a core of its own that is the quickest a software collective can react, and
 * test() returns at once (STRATA_COLLNET_WAIT=spin; auto where this host's members fit its
 * cores). Where the members on one host outnumber its cores (emulated nodes on one machine:
 * strata-run --nodes, the functional tests) and the cores are busy with other work, spinning
 * members take the CPU from the members whose data they wait for: sched_yield() hands the
 * core over only when the scheduler agrees, a process that spins uses up its share, and a
 * peer woken behind spinners or compilers waits a scheduler tick (~4 ms, docs/machines.md)
 * or more per hop. There (=poll; auto where the members outnumber the cores and the host's
 * load says other work runs, collnet_load.h) test() waits as the collective library's waits
 * do where ranks outnumber cores (algos/ctx.c's backoff): after 2 us without progress it
 * blocks in poll() on the sockets of the connections that have requests in flight, for at
 * most 2 ms, and returns to NCCL; readiness wakes it at once.
 *
 * A comm whose poll_fds names nothing while it has requests in flight (staged bytes, ucx
 * events already waiting, a set too large) makes the wait a short nap instead: sleeping on
 * the other comms' descriptors could miss the one that matters.
 */
#include <inttypes.h>
#include <poll.h>

#include "plugin/collnet.h"
#include "util/log.h"
#include "util/time.h"

/* The descriptors of every connection with a request in flight; 0 when some comm names none. */
static int idle_fds(stp_cn_comm_t *c)
{
    const unsigned pass = ++c->pass;
    int n = 0;

    for (int i = 0; i < c->nflights; i++) {
        const stp_cn_flight_t *f = &c->flights[i];
        stp_cn_link_t *lk = &c->links[f->link];
        unsigned *mark = f->is_send ? &lk->send_mark : &lk->recv_mark;
        if (*mark == pass)
            continue;
        *mark = pass;
        /* up to STP_CN_POLL_FDS_PER_COMM each: the array holds every comm's set */
        n = sta_wait_fds_add(f->is_send ? lk->send : lk->recv, c->pfds, n,
                             n + STP_CN_POLL_FDS_PER_COMM);
        if (n < 0)
            return 0;
    }
    return n;
}

/* Whether this idle test() sleeps: by the mode, or by the host's load (collnet_load.h). */
static int idle_polls(stp_cn_comm_t *c)
{
    if (c->wait != STP_CN_WAIT_LOAD)
        return c->wait == STP_CN_WAIT_POLL;
    const uint64_t changes = c->load.changes, probes = c->load.probes;
    const int poll = stp_cn_load_poll(&c->load, stu_time_ns(), stp_cn_host_runnable, NULL);
    if (c->load.changes != changes || c->load.probes != probes)
        STU_TRACE(STU_LOG_NET, "Strata collnet: comm 0x%" PRIx64 " member %d: the host %s:"
                  " test() %s when nothing moves (probe %" PRIu64 ": %d of %d samples busy; %d busy"
                  " in a row since)",
                  c->comm_id, c->pos, c->load.spin ? "runs nothing else" : "is busy",
                  c->load.spin ? "returns" : "sleeps in poll()", c->load.probes,
                  c->load.nbusy, c->load.nsamples, c->load.busy_run);
    return poll;
}

void stp_cn_exec_idle(stp_cn_comm_t *c)
{
    if (c->moved || c->failed != STRATA_OK || !idle_polls(c)) {
        c->idle = 0;
        return;
    }
    if (!c->idle) {
        /* the executor's own STRATA_TIMEOUT check names the late member; the backoff's
         * deadline is never reached first */
        /* the backoff of ranks that outnumber the cores: block after 2 us (its spin and yield
         * phases, 0.55 ms, lost to blocking at once side by side with 2 heads on 2 cores) */
        sta_backoff_init(&c->backoff, 2 * c->timeout_ns, STA_WAIT_BLOCK);
        c->idle = 1;
    }
    /* The set describes the transports as the pass that just moved nothing left them, and
     * nothing may progress them between here and the sleep: a tcp pass that reads a header
     * makes the message's other sockets owe bytes, which a set asked before it leaves out
     * (the sleep could then last its full 2 ms while the data waits there). A transport
     * whose poll_fds progresses (ucx runs its worker before arming it) names nothing when
     * that found events, so its completions are tested before any sleep. */
    (void)sta_backoff_step_fds(&c->backoff, c->pfds, idle_fds(c));
}

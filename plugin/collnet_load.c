/* The CollNet's wait by the host's load (plugin/collnet_load.h). */
#include <sched.h>
#include <stddef.h>

#include "plugin/collnet_load.h"
#include "util/host_load.h"
#include "util/time.h"

int stp_cn_host_runnable(void *arg)
{
    (void)arg;
    return stu_host_runnable();
}

void stp_cn_load_init(stp_cn_load_t *l, int here)
{
    *l = (stp_cn_load_t){.here = here > 0 ? here : 1, .period = UINT64_MAX};
}

/* One sample: 1 other work runs, 0 none, -1 unknown. */
static int load_sample(stp_cn_load_t *l, uint64_t now_ns, stp_cn_runnable_fn runnable,
                       void *arg)
{
    int running = runnable(arg);

    l->sampled_ns = now_ns;
    if (running < 0)
        return -1;
    return running > l->here;
}

/* The probe of the period that ended: most samples quiet is spin; too few decide nothing. */
static void load_decide(stp_cn_load_t *l)
{
    l->probing = 0;
    if (l->nsamples < STP_CN_LOAD_MIN_SAMPLES)
        return;
    int spin = 2 * l->nbusy < l->nsamples;
    l->probes++;
    l->changes += spin != l->spin;
    l->spin = spin;
    l->busy_run = 0;
}

int stp_cn_load_poll(stp_cn_load_t *l, uint64_t now_ns, stp_cn_runnable_fn runnable, void *arg)
{
    const uint64_t period = now_ns / STP_CN_LOAD_PERIOD_NS;
    const uint64_t phase = now_ns % STP_CN_LOAD_PERIOD_NS;
    const int in_window = phase < STP_CN_LOAD_WINDOW_NS;

    if (l->probing && (!in_window || period != l->period))
        load_decide(l);
    if (in_window) {
        if (period != l->period) {
            l->period = period;
            l->probing = 1;
            l->nsamples = l->nbusy = 0;
            l->sampled_ns = 0;
        }
        if (l->probing && phase >= STP_CN_LOAD_SETTLE_NS &&
            now_ns - l->sampled_ns >= STP_CN_LOAD_PROBE_SAMPLE_NS) {
            int busy = load_sample(l, now_ns, runnable, arg);
            if (busy >= 0) {
                l->nsamples++;
                l->nbusy += busy;
            }
        }
        return 0;   /* every member of the host spins through the probe */
    }
    if (l->spin && now_ns - l->sampled_ns >= STP_CN_LOAD_SPIN_SAMPLE_NS) {
        int busy = load_sample(l, now_ns, runnable, arg);
        if (busy == 1 && ++l->busy_run >= STP_CN_LOAD_BUSY_RUN) {
            l->spin = 0;
            l->changes++;
        } else if (busy == 0) {
            l->busy_run = 0;
        }
    }
    return !l->spin;
}

void stp_cn_load_first(stp_cn_load_t *l, stp_cn_runnable_fn runnable, void *arg)
{
    const uint64_t start = stu_time_ns();
    uint64_t next = start + STP_CN_LOAD_SETTLE_NS;

    l->nsamples = l->nbusy = 0;
    for (uint64_t now = start; now - start < STP_CN_LOAD_WINDOW_NS; now = stu_time_ns()) {
        if (now >= next) {
            int busy = load_sample(l, now, runnable, arg);
            if (busy >= 0) {
                l->nsamples++;
                l->nbusy += busy;
            }
            next = now + STP_CN_LOAD_PROBE_SAMPLE_NS;
        }
        sched_yield();   /* runnable, as a spinning member is, without taking the core */
    }
    l->probing = 1;
    load_decide(l);
}

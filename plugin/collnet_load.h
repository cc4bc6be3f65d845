/*
 * The CollNet's wait by the host's load (STRATA_COLLNET_WAIT=auto where the members on this
 * host outnumber its cores): return at once while the host runs nothing but the members,
 * sleep in poll() while it runs other work.
 *
 * Measured on 4 emulated nodes sharing 2 cores (docs/collnet-protocol.md, "Waiting"): with
 * nothing else running, members that return at once (NCCL's proxy yields after each idle
 * pass) beat members that sleep at every size; beside two busy processes they lose 2-5x from
 * 256 KiB, since a yield hands the core to a process that keeps it for its whole slice.
 * What tells the two apart is the host's running count (util/host_load.h): while every
 * member on the host spins it is the number of members, and anything above that is other
 * work. A member that sleeps is not counted, so the count can only be read while every
 * member spins: the members of one host agree on when without a message, from the clock they
 * share. The first 10 ms of every 500 ms of the monotonic clock are a probe: every member
 * returns at once, and from 3 ms in (a member asleep in poll() wakes within 2 ms) samples
 * the count once a ms; after it, a member returns at once until the
 * next probe when most of its samples found no other work, and sleeps otherwise. While it
 * returns at once it keeps sampling, and two busy samples in a row make it sleep until the
 * next probe. Beside busy processes the probes cost a spinning window of 10 ms in 500.
 *
 * The decision is each member's own (a wait needs no agreement); members of one host reach
 * the same one from the same samples. Not thread-safe: one per comm, used by its progress
 * thread.
 */
#ifndef STP_COLLNET_LOAD_H
#define STP_COLLNET_LOAD_H

#include <stdint.h>

#define STP_CN_LOAD_PERIOD_NS (500ull * 1000 * 1000)  /* a probe every 500 ms ... */
#define STP_CN_LOAD_WINDOW_NS (10ull * 1000 * 1000)   /* ... of 10 ms */
#define STP_CN_LOAD_SETTLE_NS (3ull * 1000 * 1000)   /* sleepers wake (poll: 2 ms at most), */
#define STP_CN_LOAD_PROBE_SAMPLE_NS (1000ull * 1000)  /* then a sample a ms in a probe */
#define STP_CN_LOAD_SPIN_SAMPLE_NS (5ull * 1000 * 1000) /* and every 5 ms while spinning */
#define STP_CN_LOAD_MIN_SAMPLES 3                     /* a probe with fewer decides nothing */
#define STP_CN_LOAD_BUSY_RUN 2                        /* busy samples in a row that end spinning */

typedef struct {
    int here;             /* members on this host: runnable threads while they spin */
    int spin;             /* the decision: 1 return at once, 0 sleep in poll() */
    int probing;          /* the samples of a probe are being taken */
    uint64_t period;      /* the period of the last probe sampled */
    uint64_t sampled_ns;  /* when the last sample was taken */
    int nsamples, nbusy;  /* the probe's samples, and those that found other work */
    int busy_run;         /* busy samples in a row while spinning after a probe */
    uint64_t probes;      /* probes that decided, and ... */
    uint64_t changes;     /* ... decisions that changed the wait */
} stp_cn_load_t;

/* The host's running count, or a test's; -1 when unknown. */
typedef int (*stp_cn_runnable_fn)(void *arg);
/* stu_host_runnable (arg unused): the runnable of the comms. */
int stp_cn_host_runnable(void *arg);

/* Starts sleeping (the wait of members that outnumber the cores) until a probe decides. */
void stp_cn_load_init(stp_cn_load_t *l, int here);

/*
 * The probe of connect's end: every member of the host has just left the agreement, so each
 * samples the count from 3 ms to 10 ms from now, yielding the core between samples, and
 * decides from them as a probe does (a benchmark or a job that runs collectives for less
 * than a probe period at a time would otherwise keep the first decision). Takes 10 ms.
 */
void stp_cn_load_first(stp_cn_load_t *l, stp_cn_runnable_fn runnable, void *arg);

/*
 * test() found nothing moved at now_ns (stu_time_ns): 1 when it should sleep in poll(), 0
 * when it should return at once. Samples runnable(arg) as the comment above says; a sample
 * of -1 counts for nothing, so a host without /proc/loadavg keeps sleeping.
 */
int stp_cn_load_poll(stp_cn_load_t *l, uint64_t now_ns, stp_cn_runnable_fn runnable, void *arg);

#endif /* STP_COLLNET_LOAD_H */

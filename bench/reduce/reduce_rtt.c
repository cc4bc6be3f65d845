/*
 * strata-reduce --rtt: the round trip of one cache line between CPU 0 and CPU 1. A thread on
 * CPU 0 writes an odd number into a shared line and spins until a thread on CPU 1, spinning on
 * the same line, answers with the next even number. Each batch times RTT_BATCH round trips;
 * the fastest batch is what the hardware does (preemption by other processes only adds), the
 * median says how often the two threads ran undisturbed. Two vCPUs sharing a last-level cache
 * answer in tens of ns; placed apart by the host, several times that (docs/machines.md). The
 * one-node collectives hand every flag and every byte across that path, so bench/membound.sh
 * prints it next to each round.
 */
#define _GNU_SOURCE
#include "bench/reduce/reduce_xcore.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/time.h"

#define RTT_BATCH    256         /* round trips per timed batch: amortises the clock reads */
#define RTT_MAX_REPS 100000
#define RTT_SPINS    (1u << 16)  /* spins before yielding: pinning may have failed */
#define RTT_LINE     64          /* bytes of a cache line on x86-64 */

typedef struct rtt {
    _Alignas(RTT_LINE) uint64_t line;   /* the shared line; nothing else lives in it */
    char pad[RTT_LINE - sizeof(uint64_t)];
    uint64_t rounds;
    pthread_barrier_t bar;
} rtt_t;

/* Spins until *line holds want (yielding now and then, in case both threads share a CPU). */
static void rtt_wait(const uint64_t *line, uint64_t want)
{
    unsigned spins = 0;

    while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != want) {
        if (++spins % RTT_SPINS == 0)
            sched_yield();
        else
            __builtin_ia32_pause();
    }
}

static void *rtt_answer(void *arg)
{
    rtt_t *r = arg;

    stb_xcore_pin(1);
    pthread_barrier_wait(&r->bar);
    for (uint64_t i = 1; i <= r->rounds; i++) {
        rtt_wait(&r->line, 2 * i - 1);
        __atomic_store_n(&r->line, 2 * i, __ATOMIC_RELEASE);
    }
    return NULL;
}

static int rtt_cmp(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

int stb_rtt_run(int reps)
{
    static rtt_t r;   /* static: aligned without aligned_alloc, and zero */
    double *ns;
    pthread_t t;

    if (reps < 1 || reps > RTT_MAX_REPS) {
        fprintf(stderr, "strata-reduce: --rtt needs 1..%d batches (--reps)\n", RTT_MAX_REPS);
        return 2;
    }
    if ((ns = malloc((size_t)reps * sizeof(*ns))) == NULL) {
        fprintf(stderr, "strata-reduce: out of memory for --rtt\n");
        return 1;
    }
    r.line = 0;
    r.rounds = (uint64_t)reps * RTT_BATCH;
    pthread_barrier_init(&r.bar, NULL, 2);
    stb_xcore_pin(0);
    if (pthread_create(&t, NULL, rtt_answer, &r) != 0) {
        fprintf(stderr, "strata-reduce: cannot start the --rtt thread\n");
        pthread_barrier_destroy(&r.bar);
        free(ns);
        return 1;
    }
    pthread_barrier_wait(&r.bar);
    uint64_t i = 1;
    for (int b = 0; b < reps; b++) {
        uint64_t t0 = stu_time_ns();
        for (int k = 0; k < RTT_BATCH; k++, i++) {
            __atomic_store_n(&r.line, 2 * i - 1, __ATOMIC_RELEASE);
            rtt_wait(&r.line, 2 * i);
        }
        ns[b] = (double)(stu_time_ns() - t0) / RTT_BATCH;
    }
    pthread_join(t, NULL);
    pthread_barrier_destroy(&r.bar);
    qsort(ns, (size_t)reps, sizeof(*ns), rtt_cmp);
    printf("rtt CPU 0 <-> CPU 1: %.0f ns fastest batch, %.0f ns median (%d batches of %d "
           "round trips of one cache line)\n", ns[0], ns[reps / 2], reps, RTT_BATCH);
    free(ns);
    return 0;
}

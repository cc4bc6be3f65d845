/*
 * strata-reduce --xcore: how fast one core hands data to another through shared memory, the
 * pattern of the one-node allreduce (algos/node_shm.c): a writer pinned to CPU 0 copies
 * `bytes` from its private buffer into a two-slot ring of `chunk`-byte slots, a reader pinned
 * to CPU 1 copies each slot out into its private buffer as soon as the slot is full. The rate
 * is bytes handed over per second (each byte: one read and one write on each side). Next to
 * --membw 2 (each thread copying its own buffers) it shows what crossing between the cores
 * costs: where the two vCPUs sit relative to one shared cache (docs/benchmarks.md, "Large
 * messages on one node").
 */
#define _GNU_SOURCE
#include "bench/reduce/reduce_xcore.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/time.h"

#define XCORE_SLOTS 2   /* double buffering, as the node allreduce's halves */
#define XCORE_MAX_REPS 64

typedef struct xcore {
    size_t bytes, chunk;
    char *slot[XCORE_SLOTS];
    uint64_t filled;   /* chunks written so far (writer's count; reader polls) */
    uint64_t drained;  /* chunks read so far (reader's count; writer polls) */
    pthread_barrier_t bar;
    int ok[2];
} xcore_t;

void stb_xcore_pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);   /* best effort */
}

/* The bytes of the chunk at off: a whole chunk, or what is left of the buffer. */
static size_t xcore_len(const xcore_t *x, size_t off)
{
    return x->bytes - off < x->chunk ? x->bytes - off : x->chunk;
}

static void *xcore_writer(void *arg)
{
    xcore_t *x = arg;
    char *src = malloc(x->bytes);

    stb_xcore_pin(0);
    x->ok[0] = src != NULL;
    if (src != NULL)
        memset(src, 3, x->bytes);
    pthread_barrier_wait(&x->bar);
    uint64_t nchunks = (x->bytes + x->chunk - 1) / x->chunk;
    for (uint64_t k = 0; src != NULL && k < nchunks; k++) {
        while (k - __atomic_load_n(&x->drained, __ATOMIC_ACQUIRE) >= XCORE_SLOTS)
            sched_yield();
        size_t off = (size_t)k * x->chunk, len = xcore_len(x, off);
        memcpy(x->slot[k % XCORE_SLOTS], src + off, len);
        __atomic_store_n(&x->filled, k + 1, __ATOMIC_RELEASE);
    }
    free(src);
    return NULL;
}

static void *xcore_reader(void *arg)
{
    xcore_t *x = arg;
    char *dst = malloc(x->bytes);

    stb_xcore_pin(1);
    x->ok[1] = dst != NULL;
    if (dst != NULL)
        memset(dst, 4, x->bytes);
    pthread_barrier_wait(&x->bar);
    uint64_t nchunks = (x->bytes + x->chunk - 1) / x->chunk;
    for (uint64_t k = 0; dst != NULL && k < nchunks; k++) {
        while (__atomic_load_n(&x->filled, __ATOMIC_ACQUIRE) <= k)
            sched_yield();
        size_t off = (size_t)k * x->chunk, len = xcore_len(x, off);
        memcpy(dst + off, x->slot[k % XCORE_SLOTS], len);
        __atomic_store_n(&x->drained, k + 1, __ATOMIC_RELEASE);
    }
    free(dst);
    return NULL;
}

/* One hand-over of `bytes`; returns GB/s, or a negative value when memory ran out. */
static double xcore_once(size_t bytes, size_t chunk, char *slots)
{
    xcore_t x = {.bytes = bytes, .chunk = chunk};
    pthread_t w, r;

    for (int i = 0; i < XCORE_SLOTS; i++)
        x.slot[i] = slots + (size_t)i * chunk;
    pthread_barrier_init(&x.bar, NULL, 3);
    pthread_create(&w, NULL, xcore_writer, &x);
    pthread_create(&r, NULL, xcore_reader, &x);
    pthread_barrier_wait(&x.bar);
    uint64_t t0 = stu_time_ns();
    pthread_join(w, NULL);
    pthread_join(r, NULL);
    uint64_t t1 = stu_time_ns();
    pthread_barrier_destroy(&x.bar);
    if (!x.ok[0] || !x.ok[1])
        return -1.0;
    return (double)bytes / (double)(t1 - t0);
}

static int xcore_cmp(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

int stb_xcore_run(size_t bytes, size_t chunk, int reps)
{
    double gbps[XCORE_MAX_REPS];
    char *slots;

    if (reps < 1 || reps > XCORE_MAX_REPS || chunk == 0 || bytes == 0) {
        fprintf(stderr, "strata-reduce: --xcore needs 1..%d reps and a chunk > 0\n",
                XCORE_MAX_REPS);
        return 2;
    }
    if ((slots = malloc(XCORE_SLOTS * chunk)) == NULL) {
        fprintf(stderr, "strata-reduce: out of memory for --xcore\n");
        return 1;
    }
    memset(slots, 5, XCORE_SLOTS * chunk);
    for (int r = 0; r < reps; r++) {
        if ((gbps[r] = xcore_once(bytes, chunk, slots)) < 0.0) {
            fprintf(stderr, "strata-reduce: out of memory for --xcore\n");
            free(slots);
            return 1;
        }
    }
    free(slots);
    qsort(gbps, (size_t)reps, sizeof(double), xcore_cmp);
    printf("xcore bytes %zu chunk %zu: %.1f GB/s (handed from CPU 0 to CPU 1, median of %d; "
           "min %.1f max %.1f)\n", bytes, chunk, gbps[reps / 2], reps, gbps[0], gbps[reps - 1]);
    return 0;
}

/*
 * strata-reduce --membw: the memory bandwidth two threads reach copying buffers far past the
 * caches, the figure the intra-node allreduce is compared with (docs/benchmarks.md, "Large
 * messages on one node"). Each thread memcpy's its own `bytes` between two buffers it touched
 * first; a repetition starts both threads at a barrier and ends when the slower finishes.
 * Read and write are both counted (2 x bytes per thread), as memcpy figures usually are.
 */
#include "bench/reduce/reduce_membw.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/time.h"

#define MEMBW_MAX_THREADS 64   /* far more than the machines' cores */

typedef struct membw_thread {
    pthread_barrier_t *bar;
    size_t bytes;
    int reps;
    uint64_t *start;           /* [reps] written by thread 0 */
    uint64_t *end;             /* [reps] this thread's finish times */
    int ok;
} membw_thread_t;

static void *membw_main(void *arg)
{
    membw_thread_t *t = arg;
    char *src = malloc(t->bytes), *dst = malloc(t->bytes);

    t->ok = src != NULL && dst != NULL;
    if (t->ok) {
        memset(src, 1, t->bytes);   /* fault every page in before timing */
        memset(dst, 2, t->bytes);
    }
    for (int r = 0; r < t->reps; r++) {
        pthread_barrier_wait(t->bar);
        if (t->start != NULL)
            t->start[r] = stu_time_ns();
        pthread_barrier_wait(t->bar);
        if (t->ok)
            memcpy(dst, src, t->bytes);
        t->end[r] = stu_time_ns();
    }
    free(src);
    free(dst);
    return NULL;
}

static int membw_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int stb_membw_run(size_t bytes, int threads, int reps)
{
    pthread_t tid[MEMBW_MAX_THREADS];
    membw_thread_t th[MEMBW_MAX_THREADS];
    pthread_barrier_t bar;
    uint64_t *times = calloc((size_t)(threads + 1) * (size_t)reps, sizeof(uint64_t));
    double *gbps = calloc((size_t)reps, sizeof(double));
    int status = 0;

    if (threads < 1 || threads > MEMBW_MAX_THREADS || times == NULL || gbps == NULL) {
        fprintf(stderr, "strata-reduce: --membw needs 1..%d threads\n", MEMBW_MAX_THREADS);
        free(times);
        free(gbps);
        return 2;
    }
    pthread_barrier_init(&bar, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        th[i] = (membw_thread_t){.bar = &bar, .bytes = bytes, .reps = reps,
                                 .start = i == 0 ? times : NULL,
                                 .end = times + (size_t)(i + 1) * (size_t)reps};
        pthread_create(&tid[i], NULL, membw_main, &th[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        status |= !th[i].ok;
    }
    pthread_barrier_destroy(&bar);
    for (int r = 0; r < reps; r++) {
        uint64_t last = 0;
        for (int i = 0; i < threads; i++)
            if (times[(size_t)(i + 1) * (size_t)reps + (size_t)r] > last)
                last = times[(size_t)(i + 1) * (size_t)reps + (size_t)r];
        gbps[r] = 2.0 * (double)bytes * threads / (double)(last - times[r]);
    }
    qsort(gbps, (size_t)reps, sizeof(double), membw_cmp);
    if (status)
        fprintf(stderr, "strata-reduce: out of memory for --membw\n");
    else
        printf("membw threads %d bytes %zu: %.1f GB/s (read + write, median of %d; min %.1f "
               "max %.1f)\n", threads, bytes, gbps[reps / 2], reps, gbps[0], gbps[reps - 1]);
    free(times);
    free(gbps);
    return status;
}

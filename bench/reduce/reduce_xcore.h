/* strata-reduce --xcore: the rate data moves from one core to another through memory both
 * map (see reduce_xcore.c). */
#ifndef STB_REDUCE_XCORE_H
#define STB_REDUCE_XCORE_H

#include <stddef.h>

/* Prints one line with the median GB/s (bytes handed from core 0 to core 1 per second) over
 * reps; 0 on success. */
int stb_xcore_run(size_t bytes, size_t chunk, int reps);

/* Pins the calling thread to one CPU, best effort (a failure leaves it where it was). */
void stb_xcore_pin(int cpu);

/* Prints one line with the round trip of one cache line between CPU 0 and CPU 1 (ns): the
 * fastest batch and the median batch over reps batches (see reduce_rtt.c); 0 on success. */
int stb_rtt_run(int reps);

#endif /* STB_REDUCE_XCORE_H */

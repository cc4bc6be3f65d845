/* strata-reduce --xcore: the rate data moves from one core to another through memory both
 * map (see reduce_xcore.c). */
#ifndef STB_REDUCE_XCORE_H
#define STB_REDUCE_XCORE_H

#include <stddef.h>

/* Prints one line with the median GB/s (bytes handed from core 0 to core 1 per second) over
 * reps; 0 on success. */
int stb_xcore_run(size_t bytes, size_t chunk, int reps);

#endif /* STB_REDUCE_XCORE_H */

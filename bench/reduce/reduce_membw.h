/* strata-reduce --membw: memcpy bandwidth of N threads at once (see reduce_membw.c). */
#ifndef STB_REDUCE_MEMBW_H
#define STB_REDUCE_MEMBW_H

#include <stddef.h>

/* Prints one line with the median GB/s (read + write) over reps; 0 on success. */
int stb_membw_run(size_t bytes, int threads, int reps);

#endif /* STB_REDUCE_MEMBW_H */

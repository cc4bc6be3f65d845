/*
 * What a process holds, for the soaks and the tests that look for leftovers:
 * open descriptors, resident memory, the collective library's shared-memory
 * segments mapped here (memfds named "strata", util/shm.h) and the entries of
 * /dev/shm (where nothing of Strata's should ever be).
 *
 * Reads /proc/self; no state; thread-safe (a count races with other threads'
 * opens and closes, as any count would).
 */
#ifndef STB_RES_H
#define STB_RES_H

#include <stdint.h>

typedef struct stb_res {
    int fds;                    /* open descriptors; -1: unknown */
    long long rss_bytes;        /* resident set; -1: unknown */
    int shm_maps;               /* mappings of a "memfd:strata" segment; -1: unknown */
    int dev_shm;                /* entries of /dev/shm (every process's); -1: unknown */
} stb_res_t;

/* Open descriptors of this process (entries of /proc/self/fd), -1 on error. */
int stb_res_fd_count(void);

/* Resident bytes of this process (/proc/self/statm), -1 on error. */
long long stb_res_rss_bytes(void);

/* Bytes malloc has handed out and not had back (glibc's mallinfo2: arenas and mmaps). */
long long stb_res_heap_bytes(void);

/* All four at once. */
void stb_res_sample(stb_res_t *res);

#endif /* STB_RES_H */

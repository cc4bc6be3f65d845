/*
 * The rendezvous that turns nranks processes into a communicator: rank 0
 * listens at the root address; every other rank connects and says who it is;
 * rank 0 checks the set (ranges, duplicates, sizes) and then relays small
 * all-gathers and barriers. The sockets stay open for the communicator's
 * life (out-of-band control only; data never goes this way).
 *
 * Every call is collective over all ranks and bounded by the deadline given
 * at init; a rank that never arrives fails init with STRATA_ERR_TIMEOUT and a
 * message listing the missing ranks.
 */
#ifndef STC_BOOTSTRAP_H
#define STC_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

typedef struct stc_boot {
    int rank;
    int nranks;
    int *fds;             /* rank 0: one per rank (fds[0] unused); others: fds[0] = root */
    uint64_t timeout_ns;
} stc_boot_t;

/*
 * root_fd: rank 0 may pass a socket already listening at root_addr (a
 * launcher that bound port 0 for it), else -1 to bind root_addr itself.
 */
strata_status_t stc_boot_init(stc_boot_t *boot, const char *root_addr, int root_fd, int rank,
                              int nranks, uint64_t timeout_ns);
void stc_boot_fini(stc_boot_t *boot);

/* Every rank contributes `size` bytes; all_out receives nranks * size bytes in rank order. */
strata_status_t stc_boot_allgather(stc_boot_t *boot, const void *mine, void *all_out,
                                   size_t size);

strata_status_t stc_boot_barrier(stc_boot_t *boot);

#endif /* STC_BOOTSTRAP_H */

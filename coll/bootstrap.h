/*
 * The rendezvous that turns nranks processes into a communicator: rank 0
 * listens at the root address; every other rank connects and proves it holds
 * the job key (coll/boot_wire.h: a MAC over rank 0's fresh nonce) before it
 * may say who it is; rank 0 proves the key back, checks the set (ranges,
 * duplicates, sizes) and then relays small all-gathers and barriers. The
 * sockets stay open for the communicator's life (out-of-band control only;
 * data never goes this way).
 *
 * Strangers: rank 0 serves up to STC_BOOT_PENDING_MAX connections at once,
 * each for at most STC_BOOT_AUTH_NS before it is closed; a connection that
 * sends anything but a valid hello is closed at once. Neither stalls init
 * nor takes a rank: only a rank of this job can join. A rank whose
 * connection rank 0 closed before it was welcomed connects again.
 *
 * Every call is collective over all ranks and bounded by the deadline given
 * at init; a rank that never arrives fails init with STRATA_ERR_TIMEOUT and a
 * message listing the missing ranks. A rank that joined and then dies while
 * rank 0 waits for others fails every rank's init at once (STRATA_ERR_REMOTE,
 * naming it); a rank whose root dies fails as soon as its socket says so, or,
 * when the root closed it before answering, once the root's port refuses it
 * (within BOOT_REJOIN_NS, bootstrap.c) rather than at the deadline. A rank refused by rank 0 fails at once:
 * STRATA_ERR_AUTH (another job secret), STRATA_ERR_MISMATCH (another rank
 * count, or its rank joined already), STRATA_ERR_INVALID (rank out of range).
 */
#ifndef STC_BOOTSTRAP_H
#define STC_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "coll/boot_wire.h"
#include "strata/status.h"

/*
 * A barrier's answer holds one byte per rank, 1 for each; rank 0 ends a join in which a
 * joined rank died by answering the others' first barrier with these at the ranks' places
 * (coll/boot_root.c), so each survivor fails naming the dead rank.
 */
#define STC_BOOT_BARRIER_DIED 0xdd     /* joined, then its connection closed */
#define STC_BOOT_BARRIER_ABSENT 0xaa   /* had not joined yet */

/* Unauthenticated connections rank 0 serves at once; more wait in the listen backlog. */
#define STC_BOOT_PENDING_MAX 64
/* How long one may take to prove the key: a rank answers within a round trip. */
#define STC_BOOT_AUTH_NS 1000000000ull

typedef struct stc_boot {
    int rank;
    int nranks;
    int *fds;             /* rank 0: one per rank (fds[0] unused); others: fds[0] = root */
    uint64_t timeout_ns;
    uint8_t key[STC_BOOT_KEY_BYTES];       /* the job key (coll/secret.h) */
    uint8_t session[STC_BOOT_NONCE_BYTES]; /* rank 0's, random per communicator */
} stc_boot_t;

/*
 * root_fd: rank 0 may pass a socket already listening at root_addr (a
 * launcher that bound port 0 for it), else -1 to bind root_addr itself.
 * key: the job key every rank holds.
 */
strata_status_t stc_boot_init(stc_boot_t *boot, const char *root_addr, int root_fd, int rank,
                              int nranks, uint64_t timeout_ns,
                              const uint8_t key[STC_BOOT_KEY_BYTES]);
void stc_boot_fini(stc_boot_t *boot);

/* The token rank `from` presents on its data connection to rank `to` (coll/connect.c). */
void stc_boot_conn_token(const stc_boot_t *boot, int from, int to,
                         uint8_t out[STC_BOOT_MAC_BYTES]);

/* Rank 0's side of the join (coll/boot_root.c): takes lfd and closes it. */
strata_status_t stc_boot_root_accept(stc_boot_t *boot, int lfd);

/* Every rank contributes `size` bytes; all_out receives nranks * size bytes in rank order. */
strata_status_t stc_boot_allgather(stc_boot_t *boot, const void *mine, void *all_out,
                                   size_t size);

strata_status_t stc_boot_barrier(stc_boot_t *boot);

#endif /* STC_BOOTSTRAP_H */

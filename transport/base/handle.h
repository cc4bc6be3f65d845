/*
 * What the connection handles of the socket-based transports share: the
 * handle head of tcp and ib (magic, version, listener id, listen address),
 * the connect slot at the end of every handle, and the deadline every
 * handshake keeps.
 *
 * The head is a native struct, so both ends must share the architecture, as
 * NCCL already assumes (ucx encodes its handle byte by byte instead,
 * ucx_wire.h). The caller's bytes may sit at any alignment (NCCL embeds the
 * handle in its own structs): every access copies.
 *
 * The connect slot: where a transport's connect keeps its in-progress state
 * between calls.
 * connect is called again and again with the same handle memory until the
 * connection is ready (the contract), and gets no other place to remember
 * how far it got. So the state lives on the heap, and its pointer in the
 * last STT_CONNSLOT_BYTES of the caller's handle, after the bytes listen
 * wrote (listen zeroes the rest of the handle). A check word (the pointer
 * mixed with the listener id) catches a handle that was copied or overwritten
 * while connecting, and zeroed or foreign bytes never validate.
 *
 * A caller that abandons a connect in progress (never calls again) leaks the
 * state: the contract gives the transport no later chance to free it.
 *
 * Thread safety: none needed (one handle, one caller).
 */
#ifndef STT_BASE_HANDLE_H
#define STT_BASE_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/base/netif.h"
#include "transport/transport.h"

/* The head of a tcp or ib handle, as listen writes it. */
typedef struct stt_handle {
    uint32_t magic;               /* the transport's */
    uint16_t version;             /* its protocol version */
    uint16_t reserved;
    uint64_t listener_id;         /* random, names the listen comm */
    stt_netif_addr_t addr;        /* where it listens */
} stt_handle_t;

/*
 * Copies the head of the caller's handle into *h and checks magic, version
 * and address family: STRATA_ERR_INVALID with a warning naming the
 * transport (who) and the first mismatch otherwise.
 */
strata_status_t stt_handle_load(const void *handle, uint32_t magic, uint16_t version,
                                const char *who, stt_handle_t *h);

/* Writes a new head into the caller's handle, zeroing the rest of its bytes. */
void stt_handle_store(void *handle, uint32_t magic, uint16_t version, uint64_t listener_id,
                      const stt_netif_addr_t *addr);

typedef struct stt_connslot {
    void *state;          /* connect's state, NULL as listen writes the handle */
    uint64_t check;       /* state ^ listener id ^ a constant; 0 with no state */
} stt_connslot_t;

#define STT_CONNSLOT_BYTES ((int)sizeof(stt_connslot_t))
/* Where the slot starts in the handle: a transport's listen bytes must end before it. */
#define STT_CONNSLOT_OFFSET (STT_HANDLE_SIZE - STT_CONNSLOT_BYTES)

_Static_assert(sizeof(stt_handle_t) <= STT_CONNSLOT_OFFSET, "the handle head overlaps the slot");

/*
 * The state stored in handle (NULL when connect has not started, or was
 * reset). STRATA_ERR_INVALID with a warning prefixed by who when the check
 * word does not match.
 */
strata_status_t stt_connslot_load(const void *handle, uint64_t listener_id, const char *who,
                                  void **state_p);

/* Stores state (NULL: done or reset) into handle. */
void stt_connslot_store(void *handle, uint64_t listener_id, void *state);

/* STRATA_CONNECT_TIMEOUT in ns; UINT64_MAX (no limit) when it is 0 or less. */
uint64_t stt_connect_timeout_ns(void);

/*
 * True, after a warning "<who>: <what> <peer> took longer than
 * STRATA_CONNECT_TIMEOUT=<ms> ms<hint>", when a handshake that started at
 * start_ns is past the deadline.
 */
bool stt_connect_expired(uint64_t start_ns, const char *who, const char *what, const char *peer,
                         const char *hint);

#endif /* STT_BASE_HANDLE_H */

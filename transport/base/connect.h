/*
 * The connect side every transport shares: the handle head of tcp and ib,
 * the connect slot at the end of every handle, the driver of a pending
 * connect, and the deadline every handshake keeps.
 *
 * connect is called again and again with the same handle memory until the
 * connection is ready (the contract), and gets no other place to remember
 * how far it got. So an attempt lives on the heap, its pointer in the last
 * STT_CONNSLOT_BYTES of the caller's handle (the connect slot), after the
 * bytes listen wrote (listen zeroes the rest of the handle). A check word
 * (the pointer mixed with the listener id) catches a handle that was copied
 * or overwritten while connecting, and zeroed or foreign bytes never
 * validate. stt_connect_run drives an attempt through a transport's steps:
 * decode the handle, start, step until ready, and past
 * STRATA_CONNECT_TIMEOUT fail with STRATA_ERR_TIMEOUT; the slot is reset
 * whenever an attempt ends, so a later call starts over. A caller that gives
 * up on a connect in progress calls the transport's connect_abandon
 * (stt_connect_abandon_run), which frees the attempt; one that neither calls
 * again nor abandons leaks it.
 *
 * The tcp and ib handles start with the same native head (magic, version,
 * listener id, listen address), so both ends must share the architecture,
 * as NCCL already assumes (ucx encodes its handle byte by byte instead,
 * ucx_wire.h). The caller's bytes may sit at any alignment (NCCL embeds the
 * handle in its own structs): every access copies.
 *
 * Thread safety: none needed (one handle, one caller).
 */
#ifndef STT_BASE_CONNECT_H
#define STT_BASE_CONNECT_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/base/netif.h"
#include "transport/transport.h"

/* ------------------------------------------------------------------ the handle head */

/*
 * The listen comm's secret: random, new for every listen, carried only in the handle (which
 * NCCL passes to the peer over its own bootstrap) and presented by the connector in its
 * first message; the listener closes a connection that does not present it at once. Never
 * logged. docs/reliability.md ("The plugin's listeners") says why a token and not a MAC.
 */
#define STT_HANDLE_SECRET_BYTES 16

typedef struct stt_handle {
    uint32_t magic;               /* the transport's */
    uint16_t version;             /* its protocol version */
    uint16_t reserved;
    uint64_t listener_id;         /* random, names the listen comm (logged) */
    stt_netif_addr_t addr;        /* where it listens */
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
} stt_handle_t;

/*
 * How long a connection accepted by a listener may take to deliver its first message (the
 * hello with the secret) before it is closed. A connector writes it as soon as its TCP
 * connect completes, usually before the listener has even accepted, so only a stranger (or
 * a process stalled for a whole second) takes longer. Short, so that idle strangers cannot
 * hold the listener's pending slots (200 idle sockets hold them 4 s, not 30 s x 4): 1 s is
 * a hundred scheduler ticks on a loaded 2-core machine.
 */
#define STT_HANDSHAKE_FIRST_MS 1000

/* A new secret (getrandom): STRATA_ERR_IO, warned with who, if the kernel gives none. */
strata_status_t stt_handle_secret_new(const char *who, uint8_t secret[STT_HANDLE_SECRET_BYTES]);

/* Whether a presented secret is the listener's, in constant time. */
bool stt_handle_secret_ok(const uint8_t *mine, const uint8_t *presented);

/*
 * Copies the head of the caller's handle into *h and checks magic, version
 * and address family: STRATA_ERR_INVALID with a warning naming the
 * transport (who) and the first mismatch otherwise.
 */
strata_status_t stt_handle_load(const void *handle, uint32_t magic, uint16_t version,
                                const char *who, stt_handle_t *h);

/* Writes a new head into the caller's handle, zeroing the rest of its bytes. */
void stt_handle_store(void *handle, uint32_t magic, uint16_t version, uint64_t listener_id,
                      const uint8_t secret[STT_HANDLE_SECRET_BYTES],
                      const stt_netif_addr_t *addr);

/* ------------------------------------------------------------------ the connect slot */

typedef struct stt_connslot {
    void *state;          /* the attempt, NULL as listen writes the handle */
    uint64_t check;       /* state ^ listener id ^ a constant; 0 with no state */
} stt_connslot_t;

#define STT_CONNSLOT_BYTES ((int)sizeof(stt_connslot_t))
/* Where the slot starts in the handle: a transport's listen bytes must end before it. */
#define STT_CONNSLOT_OFFSET (STT_HANDLE_SIZE - STT_CONNSLOT_BYTES)

_Static_assert(sizeof(stt_handle_t) <= STT_CONNSLOT_OFFSET, "the handle head overlaps the slot");

/*
 * The attempt stored in handle (NULL when connect has not started, or was
 * reset). STRATA_ERR_INVALID with a warning prefixed by who when the check
 * word does not match.
 */
strata_status_t stt_connslot_load(const void *handle, uint64_t listener_id, const char *who,
                                  void **state_p);

/* Stores state (NULL: done or reset) into handle. */
void stt_connslot_store(void *handle, uint64_t listener_id, void *state);

/* ------------------------------------------------------------------ the pending connect */

/* What every attempt starts with; a transport's attempt embeds it first. */
typedef struct stt_connect {
    uint64_t start_ns;                    /* when the attempt began (stu_time_ns) */
    char peer[STT_NETIF_ADDR_STRLEN];     /* the listener's address, for messages */
} stt_connect_t;

/* A transport's connect, step by step. Errors are logged where they are found. */
typedef struct stt_connect_steps {
    const char *who;      /* transport name */
    const char *hint;     /* appended to the timeout warning ("" for none) */
    /* What the attempt got to, appended instead of hint when not NULL. */
    const char *(*why_late)(const stt_connect_t *state);
    /*
     * Checks the caller's handle and decodes it into h (STT_HANDLE_SIZE bytes
     * at most). NULL for a handle that is the head above: then h is an
     * stt_handle_t, checked with magic and version.
     */
    strata_status_t (*decode)(const void *handle, void *h, uint64_t *listener_id_p);
    uint32_t magic;
    uint16_t version;
    /* Begins an attempt on dev to the listener h names; fills its stt_connect_t. */
    strata_status_t (*start)(int dev, const void *h, const stt_conn_cfg_t *cfg,
                             stt_connect_t **state_p);
    /*
     * Moves the attempt on without blocking: STRATA_INPROGRESS while it is
     * not ready; once it is, makes the send comm (*send_p), which takes over
     * what it needs from the attempt, and returns its status; any other
     * status ends the attempt.
     */
    strata_status_t (*step)(stt_connect_t *state, int dev, const void *h, stt_comm_t **send_p);
    /* Frees an ended attempt and whatever it still holds. */
    void (*free)(stt_connect_t *state);
} stt_connect_steps_t;

/*
 * A transport's connect_abandon: frees the attempt the handle's slot holds (steps->free) and
 * resets the slot. A handle with no attempt, or one that does not decode, is left alone
 * (a warning for a corrupt slot, as connect gives).
 */
void stt_connect_abandon_run(const stt_connect_steps_t *steps, void *handle);

/*
 * The whole connect operation of a transport: NULL checks, the handle, the
 * slot, one step, the deadline. OK with *send_p NULL while in progress.
 */
strata_status_t stt_connect_run(const stt_connect_steps_t *steps, int dev, void *handle,
                                const stt_conn_cfg_t *cfg, stt_comm_t **send_p);

/* STRATA_CONNECT_TIMEOUT in ns; UINT64_MAX (no limit) when it is 0 or less. */
uint64_t stt_connect_timeout_ns(void);

/*
 * True, after a warning "<who>: <what> <peer> took longer than
 * STRATA_CONNECT_TIMEOUT=<ms> ms<hint>", when a handshake that started at
 * start_ns is past the deadline.
 */
bool stt_connect_expired(uint64_t start_ns, const char *who, const char *what, const char *peer,
                         const char *hint);

#endif /* STT_BASE_CONNECT_H */

/*
 * Telemetry of the net plugin: counters per connection (send or receive comm)
 * and per device, dumped as JSON at each finalize when STRATA_STATS names a
 * file, and readable while running through strata_net_stats_json and
 * strata_net_stats_write (include/strata/net_stats.h, exported by the .so).
 *
 * Cost. Each comm gets one record (stp_stats_t) when connect or accept hands
 * it out; the comm's stats pointer (transport.h) leads to it. The data path
 * (net_v11.c) adds to its counters with single-writer relaxed atomics: a load
 * and a store, no lock prefix, no lock. NCCL drives a comm from one thread at
 * a time, so each counter has one writer; a reader on another thread sees
 * each counter whole (it may see bytes of a message before its count). The
 * clock is read only when a post was refused for want of a slot (the start of
 * back-pressure) and when the next post succeeds (its end).
 *
 * The registry of records takes a mutex at open and close (off the data path)
 * and while a reader walks it. A closed comm's counters stay: in its device's
 * totals always, and, when STRATA_STATS names a file, as a connection entry
 * for the first STP_STATS_MAX_CLOSED closed comms; the last finalize dumps and
 * then forgets everything.
 */
#ifndef STP_NET_STATS_H
#define STP_NET_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "util/time.h"

/* Closed comms kept as entries (about 100 bytes each); past it only device totals grow. */
#define STP_STATS_MAX_CLOSED 4096

typedef struct stp_stats {
    /* written by the comm's thread only, read by anyone (relaxed atomics) */
    uint64_t bytes;          /* payload bytes completed (sent, or received into buffers) */
    uint64_t msgs;           /* messages completed (a grouped receive of n counts n) */
    uint64_t errors;         /* errors returned to the caller on this comm */
    uint64_t reconnects;     /* failovers and reconnections below the comm (vNIC members) */
    uint64_t blocked_ns;     /* time between a post refused for want of a slot and the next
                                post that was taken */
    uint64_t blocked_since;  /* stu_time_ns() of the first refused post, 0 when not blocked */
    /* members of its device (stt_member_stats_t): read from the comm while it is open
     * (comm, under the registry's lock), copied here at close */
    const stt_comm_t *comm;
    int nmembers;
    stt_member_stats_t members[STT_MAX_VDEV_MEMBERS];
    /* fixed at open */
    uint64_t id;             /* 1, 2, ... in the order comms were opened */
    int dev;
    bool send;
    bool closed;
    struct stp_stats *next;  /* the registry's list */
} stp_stats_t;

static inline void stp_stats_add(uint64_t *counter, uint64_t v)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

/* A request of the comm completed with n sizes (its messages) adding up to bytes. */
static inline void stp_stats_done(const stt_comm_t *comm, int n, uint64_t bytes)
{
    stp_stats_t *s = comm->stats;
    if (s != NULL) {
        stp_stats_add(&s->msgs, (uint64_t)n);
        stp_stats_add(&s->bytes, bytes);
    }
}

/* An error went back to the caller on the comm. */
static inline void stp_stats_error(const stt_comm_t *comm)
{
    stp_stats_t *s = comm->stats;
    if (s != NULL)
        stp_stats_add(&s->errors, 1);
}

/* A post on the comm: taken (req true) or refused for want of a slot. */
static inline void stp_stats_post(const stt_comm_t *comm, bool taken)
{
    stp_stats_t *s = comm->stats;
    if (s == NULL)
        return;
    if (!taken) {
        if (s->blocked_since == 0)
            s->blocked_since = stu_time_ns();
    } else if (s->blocked_since != 0) {
        stp_stats_add(&s->blocked_ns, stu_time_ns() - s->blocked_since);
        s->blocked_since = 0;
    }
}

/*
 * Gives comm a record (send or receive comm on dev). Without memory the comm
 * simply goes uncounted (its stats pointer stays NULL), with a warning.
 */
void stp_stats_open(stt_comm_t *comm, int dev, bool send);
/* Folds the comm's counters into its device and retires its record; before close_*. */
void stp_stats_close(stt_comm_t *comm);
/* Adds to the comm's reconnect counter (a transport below reported a failover). */
void stp_stats_reconnect(stt_comm_t *comm, uint64_t n);

/* Takes the transport's failover count of the comm (stt_comm_t.failovers) as its
 * reconnect counter: a load and a compare per test, a store when it moved. */
static inline void stp_stats_failovers(const stt_comm_t *comm)
{
    stp_stats_t *s = comm->stats;
    if (s != NULL && __atomic_load_n(&s->reconnects, __ATOMIC_RELAXED) < comm->failovers)
        __atomic_store_n(&s->reconnects, (uint64_t)comm->failovers, __ATOMIC_RELAXED);
}

/*
 * The JSON document (docs/multirail.md, "Telemetry") into buf (len bytes,
 * NUL-terminated when len > 0); returns the length it needs without the NUL,
 * as snprintf does.
 */
size_t stp_stats_json(char *buf, size_t len);
/*
 * Writes the document to path, where "%p" becomes the process id and "%h" the
 * host name, through a temporary file renamed into place. STRATA_ERR_IO (logged).
 */
strata_status_t stp_stats_write(const char *path);
/* At each finalize: stp_stats_write(STRATA_STATS) when it is set; a failure is only logged. */
void stp_stats_finalize(void);
/* After the last finalize: forgets the closed comms and the device totals. */
void stp_stats_reset(void);

#endif /* STP_NET_STATS_H */

/*
 * Strata status codes: the single status type of every layer.
 *
 * 0 is success, 1 means "in progress / try again", every error is negative.
 * The plugin layer translates a status to ncclResult_t in exactly one place
 * (plugin/net_status.c); nothing else in Strata speaks ncclResult_t.
 */
#ifndef STRATA_STATUS_H
#define STRATA_STATUS_H

/*
 * Marks the functions libstrata.so exports. The library is compiled with
 * hidden visibility, and its version script lets out only strata_* names.
 */
#ifndef STRATA_API
#define STRATA_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strata_status {
    STRATA_OK = 0,
    STRATA_INPROGRESS = 1, /* not done yet; call again */

    STRATA_ERR_INVALID = -1,     /* bad argument from the caller */
    STRATA_ERR_NO_MEMORY = -2,   /* allocation failed */
    STRATA_ERR_NO_RESOURCE = -3, /* out of slots, descriptors, QPs, ... */
    STRATA_ERR_IO = -4,          /* a local system call failed */
    STRATA_ERR_REMOTE = -5,      /* the peer died, reset, or broke protocol */
    STRATA_ERR_TIMEOUT = -6,     /* a bounded wait expired */
    STRATA_ERR_UNSUPPORTED = -7, /* the operation or memory type is not supported */
    STRATA_ERR_TRUNCATED = -8,   /* a message larger than the posted receive */
    STRATA_ERR_INTERNAL = -9,    /* Strata's own invariant broke (a bug) */
    STRATA_ERR_MISMATCH = -10,   /* ranks disagree on a collective's arguments */
    STRATA_ERR_NOT_FOUND = -11,  /* no such device, transport, or entry */
    STRATA_ERR_AUTH = -12,       /* a peer did not prove the job's (or handle's) secret */
} strata_status_t;

/* A static, human-readable name for a status ("STRATA_ERR_REMOTE"). Never NULL. */
STRATA_API const char *strata_status_str(strata_status_t status);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STATUS_H */

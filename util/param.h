/*
 * Every STRATA_* environment knob, declared once (util/param.c) with its type,
 * default and help text. Values are read from the environment on first use and
 * cached; stu_param_reload() re-reads them (tests, and a plugin reloaded by
 * NCCL). Nothing in Strata calls getenv("STRATA_...") directly.
 *
 * Thread safety: all functions may be called from any thread; a reload that
 * races with readers gives each reader either the old or the new value.
 */
#ifndef STU_PARAM_H
#define STU_PARAM_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"

typedef enum stu_param_id {
    STU_PARAM_DEBUG,
    STU_PARAM_TRANSPORT,
    STU_PARAM_ABORT_ON_ERROR,
    STU_PARAM_SOCKET_IFNAME,
    STU_PARAM_SOCKET_FAMILY,
    STU_PARAM_SOCKET_NSOCKS,
    STU_PARAM_SOCKET_STRIPE_MIN,
    STU_PARAM_SOCKET_BUFSIZE,
    STU_PARAM_SOCKET_USER_TIMEOUT,
    STU_PARAM_CONNECT_TIMEOUT,
    STU_PARAM_RANK,
    STU_PARAM_NRANKS,
    STU_PARAM_ROOT_ADDR,
    STU_PARAM_ROOT_FD,
    STU_PARAM_NODE_ID,
    STU_PARAM_TIMEOUT,
    STU_PARAM_ALGO,
    STU_PARAM_SHM_CHUNK,
    STU_PARAM_HIER_CHUNK,
    STU_PARAM_PROFILE,
    STU_PARAM_SHM_ALPHA_US,
    STU_PARAM_SHM_BETA_GBPS,
    STU_PARAM_NET_ALPHA_US,
    STU_PARAM_NET_BETA_GBPS,
    STU_PARAM_GAMMA_GBPS,
    STU_PARAM_WAKE_US,
    STU_PARAM_YIELD_US,
    STU_PARAM_SHM_CACHE_BETA_GBPS,
    STU_PARAM_SHM_CACHE_BYTES,
    STU_PARAM_CALIBRATE,
    STU_PARAM_RAIL_MAP,
    STU_PARAM_TUNER,
    STU_PARAM_IB_HCA,
    STU_PARAM_IB_GID_INDEX,
    STU_PARAM_IB_ADDR_FAMILY,
    STU_PARAM_IB_ADDR_RANGE,
    STU_PARAM_IB_TIMEOUT,
    STU_PARAM_IB_RETRY_CNT,
    STU_PARAM_IB_SL,
    STU_PARAM_IB_TC,
    STU_PARAM_IB_QPS_PER_CONNECTION,
    STU_PARAM_IB_SPLIT_MIN,
    STU_PARAM_IB_ADAPTIVE_ROUTING,
    STU_PARAM_IB_AR_THRESHOLD,
    STU_PARAM_IB_MR_KEEP,
    STU_PARAM_IB_FLUSH,
    STU_PARAM_COLLNET,
    STU_PARAM_COLLNET_ALGO,
    STU_PARAM_COLLNET_CHUNK,
    STU_PARAM_COLLNET_INFLIGHT,
    STU_PARAM_COLLNET_ORDER,
    STU_PARAM_COLLNET_STAGE,
    STU_PARAM_COLLNET_WAIT,
    STU_PARAM_JOB_SECRET,
    STU_PARAM_JOB_SECRET_FILE,
    STU_PARAM_JOB_SECRET_FD,
    STU_PARAM_STATS,
    STU_PARAM_NET_FUSE,
    STU_PARAM_COUNT
} stu_param_id_t;

typedef enum stu_param_type {
    STU_PARAM_TYPE_INT,   /* decimal, with an optional K/M/G (binary) suffix */
    STU_PARAM_TYPE_STR,
} stu_param_type_t;

#define STU_PARAM_SECRET 0x1 /* the value is never logged or printed */

/* A value check beyond type and range: OK, or STRATA_ERR_INVALID with why[] filled. */
typedef strata_status_t (*stu_param_check_fn)(const char *value, char *why, size_t len);

typedef struct stu_param_def {
    const char *name;     /* full variable name, "STRATA_SOCKET_NSOCKS" */
    stu_param_type_t type;
    const char *dflt;     /* default as text; "" for an empty string */
    const char *help;
    int64_t min, max;         /* INT: the accepted values, inclusive (the default among them) */
    const char *choices;      /* STR: the accepted values, '|'-separated, any case; NULL: any */
    stu_param_check_fn check; /* STR: NULL, or a syntax check (filters) */
    int flags;                /* STU_PARAM_SECRET */
} stu_param_def_t;

/* The table, indexed by stu_param_id_t. */
const stu_param_def_t *stu_param_def(stu_param_id_t id);

/*
 * Cached integer value. A malformed or out-of-range value logs a warning
 * naming the variable and its range, and yields the default; the next
 * stu_param_reload() or stu_param_validate() reports it as an error.
 */
int64_t stu_param_int(stu_param_id_t id);

/* Cached string value (never NULL; "" when unset and no default). Valid until reload. */
const char *stu_param_str(stu_param_id_t id);

/* The raw environment value, or NULL when the variable is unset (not cached). */
const char *stu_param_env(stu_param_id_t id);

/*
 * Re-reads every value from the environment, then validates them
 * (stu_param_validate). Init paths fail on its error.
 */
strata_status_t stu_param_reload(void);

/*
 * Every variable that is set must be well formed and in range: integers
 * within [min, max], strings among their choices or passing their check.
 * Each bad one is logged once per load with its name, value and what it
 * accepts; STRATA_ERR_INVALID if there was any, else OK.
 */
strata_status_t stu_param_validate(void);

/* "1..8", "AF_INET|AF_INET6", or "" when anything goes, for help texts. */
void stu_param_range_str(stu_param_id_t id, char *buf, size_t len);

/*
 * Frees the cached values; the next use reads the environment again. The
 * plugin calls it at its last finalize, so that NCCL's dlclose leaves no heap
 * behind (strings returned earlier become invalid).
 */
void stu_param_release(void);

/* Logs every parameter with its value and source at INFO (secrets as "(set)"). */
void stu_param_log_all(void);

/* Parses "123", "64K", "4M", "1G" (binary multiples). OK or STRATA_ERR_INVALID. */
strata_status_t stu_param_parse_int(const char *text, int64_t *value_p);

#endif /* STU_PARAM_H */

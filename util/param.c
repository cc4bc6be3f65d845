/* The parameter table and its cache. */
#include "util/param.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static const stu_param_def_t param_table[STU_PARAM_COUNT] = {
    [STU_PARAM_DEBUG] = {"STRATA_DEBUG", STU_PARAM_TYPE_STR, "WARN",
        "log level: NONE, VERSION, WARN, INFO or TRACE (NCCL's logger is used when NCCL loaded us)"},
    [STU_PARAM_TRANSPORT] = {"STRATA_TRANSPORT", STU_PARAM_TYPE_STR, "auto",
        "transport: auto (the first built-in one that probes and has a device; today tcp),"
        " tcp, or loop (in-process, for tests)"},
    [STU_PARAM_ABORT_ON_ERROR] = {"STRATA_ABORT_ON_ERROR", STU_PARAM_TYPE_INT, "0",
        "1: abort() at the first error returned to NCCL, for a core dump at the cause"},
    [STU_PARAM_SOCKET_IFNAME] = {"STRATA_SOCKET_IFNAME", STU_PARAM_TYPE_STR, "",
        "interfaces for the TCP transport: prefixes 'eth,ib', '^' excludes, '=' exact names;"
        " empty: every up interface except loopback and docker, loopback if nothing else"},
    [STU_PARAM_SOCKET_FAMILY] = {"STRATA_SOCKET_FAMILY", STU_PARAM_TYPE_STR, "",
        "address family of TCP devices: AF_INET, AF_INET6, or empty for either (IPv4 first)"},
    [STU_PARAM_SOCKET_NSOCKS] = {"STRATA_SOCKET_NSOCKS", STU_PARAM_TYPE_INT, "2",
        "TCP sockets per connection (1..8); large messages are striped across them"},
    [STU_PARAM_SOCKET_STRIPE_MIN] = {"STRATA_SOCKET_STRIPE_MIN", STU_PARAM_TYPE_INT, "256K",
        "messages below this many bytes travel on one socket, larger ones are striped"},
    [STU_PARAM_SOCKET_BUFSIZE] = {"STRATA_SOCKET_BUFSIZE", STU_PARAM_TYPE_INT, "0",
        "SO_SNDBUF/SO_RCVBUF in bytes; 0 keeps the kernel's autotuning"},
    [STU_PARAM_SOCKET_USER_TIMEOUT] = {"STRATA_SOCKET_USER_TIMEOUT", STU_PARAM_TYPE_INT, "30000",
        "ms after which unacknowledged data or failed keepalives declare a TCP peer dead"},
    [STU_PARAM_CONNECT_TIMEOUT] = {"STRATA_CONNECT_TIMEOUT", STU_PARAM_TYPE_INT, "30000",
        "ms a connection handshake may take before connect/accept fail"},
};

typedef struct param_value {
    int loaded;
    int from_env;
    int64_t ival;
    char *sval;
} param_value_t;

static param_value_t param_values[STU_PARAM_COUNT];
static pthread_mutex_t param_lock = PTHREAD_MUTEX_INITIALIZER;

const stu_param_def_t *stu_param_def(stu_param_id_t id)
{
    return &param_table[id];
}

strata_status_t stu_param_parse_int(const char *text, int64_t *value_p)
{
    char *end;
    long long v;

    if (text == NULL || *text == '\0')
        return STRATA_ERR_INVALID;
    errno = 0;
    v = strtoll(text, &end, 0);
    if (errno != 0 || end == text)
        return STRATA_ERR_INVALID;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return STRATA_ERR_INVALID;
    if (shift != 0 && (v > (INT64_MAX >> shift) || v < (INT64_MIN >> shift)))
        return STRATA_ERR_INVALID;
    *value_p = (int64_t)v * ((int64_t)1 << shift);
    return STRATA_OK;
}

/* Called with param_lock held. */
static void param_load(stu_param_id_t id)
{
    const stu_param_def_t *def = &param_table[id];
    param_value_t *pv = &param_values[id];
    const char *env = getenv(def->name);
    const char *text = (env != NULL) ? env : def->dflt;

    free(pv->sval);
    pv->sval = strdup(text);
    pv->from_env = (env != NULL);
    pv->ival = 0;
    if (def->type == STU_PARAM_TYPE_INT) {
        if (stu_param_parse_int(text, &pv->ival) != STRATA_OK) {
            STU_WARN("param: %s='%s' is not an integer, using the default %s", def->name, text,
                     def->dflt);
            stu_param_parse_int(def->dflt, &pv->ival);
            pv->from_env = 0;
        }
    }
    __atomic_store_n(&pv->loaded, 1, __ATOMIC_RELEASE);
}

static param_value_t *param_get(stu_param_id_t id)
{
    param_value_t *pv = &param_values[id];
    if (!__atomic_load_n(&pv->loaded, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&param_lock);
        if (!pv->loaded)
            param_load(id);
        pthread_mutex_unlock(&param_lock);
    }
    return pv;
}

int64_t stu_param_int(stu_param_id_t id)
{
    return param_get(id)->ival;
}

const char *stu_param_str(stu_param_id_t id)
{
    const char *s = param_get(id)->sval;
    return s != NULL ? s : "";
}

void stu_param_reload(void)
{
    pthread_mutex_lock(&param_lock);
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        param_load((stu_param_id_t)i);
    pthread_mutex_unlock(&param_lock);
}

void stu_param_log_all(void)
{
    if (stu_log_level < STU_LOG_INFO)
        return;
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        param_value_t *pv = param_get((stu_param_id_t)i);
        STU_INFO(STU_LOG_ENV, "param %s=%s (%s)", param_table[i].name, pv->sval ? pv->sval : "",
                 pv->from_env ? "environment" : "default");
    }
}

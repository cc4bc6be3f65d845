/* The parameter cache and its checks; the table itself is util/param_table.c. */
#include "util/param.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

typedef struct param_value {
    int loaded;
    int from_env;
    int bad; /* the environment's value was rejected (logged at load) */
    int64_t ival;
    char *sval;
} param_value_t;

static param_value_t param_values[STU_PARAM_COUNT];
static pthread_mutex_t param_lock = PTHREAD_MUTEX_INITIALIZER;

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

void stu_param_range_str(stu_param_id_t id, char *buf, size_t len)
{
    const stu_param_def_t *def = stu_param_def(id);

    size_t used = 0;
    int empty = 0;

    buf[0] = '\0';
    if (def->type == STU_PARAM_TYPE_INT) {
        snprintf(buf, len, "%" PRId64 "..%" PRId64, def->min, def->max);
        return;
    }
    /* "a|b|c" as "a, b, c"; an empty choice as " or empty" */
    for (const char *p = def->choices; p != NULL && used + 1 < len;) {
        const char *bar = strchr(p, '|');
        int n = bar != NULL ? (int)(bar - p) : (int)strlen(p);
        if (n == 0)
            empty = 1;
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", n, p);
        p = bar != NULL ? bar + 1 : NULL;
    }
    if (empty && used + 1 < len)
        snprintf(buf + used, len - used, " or empty");
}

/* Is text one of the '|'-separated choices (any case)? An empty choice admits "". */
static int param_choice_ok(const char *choices, const char *text)
{
    size_t tlen = strlen(text);
    const char *p = choices;

    for (;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);
        if (n == tlen && strncasecmp(p, text, n) == 0)
            return 1;
        if (bar == NULL)
            return 0;
        p = bar + 1;
    }
}

/* Checks an environment value against its definition; logs and returns 0 when it is bad. */
static int param_value_ok(stu_param_id_t id, const char *text, int64_t *ival_p)
{
    const stu_param_def_t *def = stu_param_def(id);
    char range[96], why[160];
    const char *shown = (def->flags & STU_PARAM_SECRET) ? "(not shown)" : text;

    if (def->type == STU_PARAM_TYPE_INT) {
        stu_param_range_str(id, range, sizeof(range));
        if (stu_param_parse_int(text, ival_p) != STRATA_OK) {
            STU_WARN("param: %s='%s' is not an integer (it takes %s; default %s)", def->name,
                     shown, range, def->dflt);
            return 0;
        }
        if (*ival_p < def->min || *ival_p > def->max) {
            STU_WARN("param: %s=%s is outside %s (default %s)", def->name, shown, range,
                     def->dflt);
            return 0;
        }
        return 1;
    }
    if (def->choices != NULL && !param_choice_ok(def->choices, text)) {
        stu_param_range_str(id, range, sizeof(range));
        STU_WARN("param: %s='%s' is not one of %s", def->name, shown, range);
        return 0;
    }
    if (def->check != NULL && def->check(text, why, sizeof(why)) != STRATA_OK) {
        STU_WARN("param: %s='%s' is not %s", def->name, shown, why);
        return 0;
    }
    return 1;
}

/* Called with param_lock held. */
static void param_load(stu_param_id_t id)
{
    const stu_param_def_t *def = stu_param_def(id);
    param_value_t *pv = &param_values[id];
    const char *env = getenv(def->name);
    const char *text = (env != NULL) ? env : def->dflt;

    free(pv->sval);
    pv->sval = strdup(text);
    pv->from_env = (env != NULL);
    pv->bad = env != NULL && !param_value_ok(id, env, &pv->ival);
    if (def->type == STU_PARAM_TYPE_INT && (env == NULL || pv->bad))
        stu_param_parse_int(def->dflt, &pv->ival);
    if (pv->bad)
        pv->from_env = 0;
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

const char *stu_param_env(stu_param_id_t id)
{
    return getenv(stu_param_def(id)->name);
}

strata_status_t stu_param_validate(void)
{
    int bad = 0;
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        bad += param_get((stu_param_id_t)i)->bad;
    return bad ? STRATA_ERR_INVALID : STRATA_OK;
}

strata_status_t stu_param_reload(void)
{
    pthread_mutex_lock(&param_lock);
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        param_load((stu_param_id_t)i);
    pthread_mutex_unlock(&param_lock);
    return stu_param_validate();
}

void stu_param_release(void)
{
    pthread_mutex_lock(&param_lock);
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        __atomic_store_n(&param_values[i].loaded, 0, __ATOMIC_RELEASE);
        free(param_values[i].sval);
        param_values[i].sval = NULL;
    }
    pthread_mutex_unlock(&param_lock);
}

void stu_param_log_all(void)
{
    if (stu_log_level < STU_LOG_INFO)
        return;
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        const stu_param_def_t *def = stu_param_def((stu_param_id_t)i);
        param_value_t *pv = param_get((stu_param_id_t)i);
        const char *v = pv->sval ? pv->sval : "";
        if ((def->flags & STU_PARAM_SECRET) && *v != '\0')
            v = "(set, not shown)";
        STU_INFO(STU_LOG_ENV, "param %s=%s (%s)", def->name, v,
                 pv->from_env ? "environment" : "default");
    }
}

/* The reference-counted device table shared by tcp, ucx and ib (devref.h). */
#include <string.h>

#include "transport/base/devref.h"
#include "util/log.h"

strata_status_t stt_devref_init(stt_devref_t *devs)
{
    strata_status_t status = STRATA_OK;

    stu_log_init();
    pthread_mutex_lock(&devs->lock);
    if (devs->refs == 0) {
        int count = 0;
        status = devs->open(&count);
        devs->count = status == STRATA_OK ? count : 0;
    }
    if (status == STRATA_OK)
        devs->refs++;
    pthread_mutex_unlock(&devs->lock);
    return status;
}

void stt_devref_fini(stt_devref_t *devs)
{
    pthread_mutex_lock(&devs->lock);
    if (devs->refs > 0 && --devs->refs == 0) {
        if (devs->close != NULL)
            devs->close();
        devs->count = 0;
    }
    pthread_mutex_unlock(&devs->lock);
}

strata_status_t stt_devref_count(stt_devref_t *devs, int *ndev_p)
{
    if (ndev_p == NULL) {
        STU_WARN("%s: devices() called with a NULL output", devs->who);
        return STRATA_ERR_INVALID;
    }
    pthread_mutex_lock(&devs->lock);
    int refs = devs->refs, count = devs->count;
    pthread_mutex_unlock(&devs->lock);
    if (refs == 0) {
        STU_WARN("%s: devices() called before init", devs->who);
        return STRATA_ERR_INVALID;
    }
    *ndev_p = count;
    return STRATA_OK;
}

strata_status_t stt_devref_lookup(stt_devref_t *devs, int dev, const void *table, size_t elem,
                                  void *out)
{
    pthread_mutex_lock(&devs->lock);
    int refs = devs->refs, count = devs->count;
    bool ok = refs > 0 && dev >= 0 && dev < count;
    if (ok && table != NULL && out != NULL)
        memcpy(out, (const char *)table + (size_t)dev * elem, elem);
    pthread_mutex_unlock(&devs->lock);
    if (ok)
        return STRATA_OK;
    STU_WARN("%s: no device %d (%d devices%s)", devs->who, dev, count,
             refs ? "" : ", not initialised");
    return STRATA_ERR_NOT_FOUND;
}

strata_status_t stt_devref_add(stt_devref_t *devs, int max,
                               strata_status_t (*add)(int count, bool room, void *arg,
                                                      int *index_p),
                               void *arg, int *index_p)
{
    strata_status_t status = STRATA_ERR_INVALID;
    int index = -1;

    pthread_mutex_lock(&devs->lock);
    bool held = devs->refs > 0;
    if (held) {
        status = add(devs->count, devs->count < max, arg, &index);
        if (status == STRATA_OK && index == devs->count)
            devs->count++;
    }
    pthread_mutex_unlock(&devs->lock);
    if (!held)
        STU_WARN("%s: a device added before init", devs->who);
    if (status == STRATA_OK)
        *index_p = index;
    return status;
}

bool stt_devref_held(stt_devref_t *devs)
{
    pthread_mutex_lock(&devs->lock);
    bool held = devs->refs > 0;
    pthread_mutex_unlock(&devs->lock);
    return held;
}

/*
 * The transport registry: one ordered, const table. "auto" walks it in order
 * and takes the first transport that probes, initialises and has a device;
 * transports marked manual_only (loop: in-process only; ucx: not measured
 * faster than tcp yet) are never picked by "auto" but can be named.
 */
#include <string.h>
#include <strings.h>

#ifdef STRATA_HAVE_IBVERBS
#include "transport/ib/ib.h"
#endif
#include "transport/loop/loop.h"
#include "transport/tcp/tcp.h"
#ifdef STRATA_HAVE_UCX
#include "transport/ucx/ucx.h"
#endif
#include "transport/transport.h"
#include "util/build_info.h"
#include "util/log.h"

typedef struct registry_entry {
    const stt_ops_t *ops;
    int manual_only;
} registry_entry_t;

static const registry_entry_t registry[] = {
#ifdef STRATA_HAVE_IBVERBS
    {&stt_ib_ops, 0},
#endif
#ifdef STRATA_HAVE_UCX
    /* Named only (STRATA_TRANSPORT=ucx) until measured faster than tcp where both run:
     * on loopback it is slower (docs/ucx-protocol.md), so "auto" skips it. */
    {&stt_ucx_ops, 1},
#endif
    {&stt_tcp_ops, 0},
    {&stt_loop_ops, 1},
};

int stt_registry_count(void)
{
    return (int)(sizeof(registry) / sizeof(registry[0]));
}

const stt_ops_t *stt_registry_at(int index)
{
    if (index < 0 || index >= stt_registry_count())
        return NULL;
    return registry[index].ops;
}

const stt_ops_t *stt_registry_find(const char *name)
{
    for (int i = 0; i < stt_registry_count(); i++)
        if (strcasecmp(stt_name(registry[i].ops), name) == 0)
            return registry[i].ops;
    return NULL;
}

/* Probe, init and count devices; on success the caller owns one init reference. */
static strata_status_t registry_try(const stt_ops_t *ops, int *ndev_p)
{
    strata_status_t status;
    int ndev = 0;

    status = stt_probe(ops);
    if (status != STRATA_OK) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "transport %s: probe says %s", stt_name(ops),
                 strata_status_str(status));
        return status;
    }
    status = stt_init(ops);
    if (status != STRATA_OK) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "transport %s: init failed (%s)", stt_name(ops),
                 strata_status_str(status));
        return status;
    }
    status = stt_devices(ops, &ndev);
    if (status != STRATA_OK || ndev <= 0) {
        STU_INFO(STU_LOG_INIT | STU_LOG_NET, "transport %s: no usable device", stt_name(ops));
        stt_fini(ops);
        return status != STRATA_OK ? status : STRATA_ERR_NOT_FOUND;
    }
    *ndev_p = ndev;
    return STRATA_OK;
}

strata_status_t stt_registry_select(const char *name, const stt_ops_t **ops_p, int *ndev_p)
{
    strata_status_t status;
    int ndev = 0;

    if (name != NULL && *name != '\0' && strcasecmp(name, "auto") != 0) {
        const stt_ops_t *ops = stt_registry_find(name);
        if (ops == NULL) {
            STU_WARN("transport '%s' is not built into this library (STRATA_TRANSPORT); built in: "
                     "%s%s%s", name, stu_build_info()->transports,
                     stu_build_info()->missing[0] ? "; left out for want of a package: " : "",
                     stu_build_info()->missing);
            return STRATA_ERR_NOT_FOUND;
        }
        status = registry_try(ops, &ndev);
        if (status != STRATA_OK) {
            const char *why = NULL;
            const char *lib = stt_library(ops, &why);
            if (lib != NULL && why != NULL)
                STU_WARN("transport '%s' was asked for (STRATA_TRANSPORT) but cannot run here: "
                         "%s is not loadable: %s", name, lib, why);
            else
                STU_WARN("transport '%s' was asked for but cannot run here (%s)", name,
                         strata_status_str(status));
            return status;
        }
        *ops_p = ops;
        *ndev_p = ndev;
        return STRATA_OK;
    }
    for (int i = 0; i < stt_registry_count(); i++) {
        if (registry[i].manual_only)
            continue;
        if (registry_try(registry[i].ops, &ndev) == STRATA_OK) {
            *ops_p = registry[i].ops;
            *ndev_p = ndev;
            return STRATA_OK;
        }
    }
    STU_WARN("no transport can run here (tried every built-in one)");
    return STRATA_ERR_NOT_FOUND;
}

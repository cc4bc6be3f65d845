/* UCX loaded at run time (ucx_load.h). */
#include <pthread.h>

#include "transport/base/dynlib.h"
#include "transport/ucx/ucx_load.h"
#include "util/log.h"

#define SYM(member, sym) STT_DYNSYM(stt_ucx_lib_t, member, sym, NULL, false)
#define UCP(member) SYM(member, "ucp_" #member)

static const stt_dynsym_t ucx_syms[] = {
    UCP(get_version),        UCP(init_version),          UCP(cleanup),
    UCP(config_read),        UCP(config_release),        UCP(worker_create),
    UCP(worker_destroy),     UCP(worker_get_address),    UCP(worker_release_address),
    UCP(worker_get_efd),     UCP(worker_arm),            UCP(worker_progress),
    UCP(ep_create),          UCP(ep_close_nbx),          UCP(ep_flush_nbx),
    UCP(tag_send_nbx),       UCP(tag_recv_nbx),          UCP(tag_recv_request_test),
    UCP(request_check_status), UCP(request_cancel),      UCP(request_free),
    SYM(status_string, "ucs_status_string"),
};

stt_ucx_lib_t stt_ucx_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static strata_status_t load_status;
static char load_why[STT_DYNLIB_WHY_BYTES];

static void ucx_load_once(void)
{
    load_status = stt_dynlib_open(STT_UCX_LIBRARY, ucx_syms,
                                  (int)(sizeof(ucx_syms) / sizeof(ucx_syms[0])), &stt_ucx_lib,
                                  sizeof(stt_ucx_lib), load_why, sizeof(load_why));
    if (load_status != STRATA_OK)
        STU_INFO(STU_LOG_INIT | STU_LOG_NET,
                 "ucx: " STT_UCX_LIBRARY " not loadable: %s; the ucx transport is unavailable",
                 load_why);
}

strata_status_t stt_ucx_lib_load(const char **why_p)
{
    pthread_once(&load_once, ucx_load_once);
    if (why_p != NULL)
        *why_p = load_status == STRATA_OK ? NULL : load_why;
    return load_status;
}

const char *stt_ucx_library(const char **why_p)
{
    stt_ucx_lib_load(why_p);
    return STT_UCX_LIBRARY;
}

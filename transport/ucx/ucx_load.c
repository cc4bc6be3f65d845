/* UCX loaded at run time (ucx_load.h). */
#include <pthread.h>

#include "transport/base/dynlib.h"
#include "transport/ucx/ucx_load.h"

#define SYM(member, sym) STT_DYNSYM(stt_ucx_lib_t, member, sym, NULL, false)
#define UCP(member) SYM(member, "ucp_" #member)

static const stt_dynsym_t ucx_syms[] = {
    UCP(get_version),        UCP(init_version),          UCP(cleanup),
    UCP(config_read),        UCP(config_release),        UCP(config_modify),
    UCP(worker_create),
    UCP(worker_destroy),     UCP(worker_get_address),    UCP(worker_release_address),
    UCP(worker_get_efd),     UCP(worker_arm),            UCP(worker_progress),
    UCP(ep_create),          UCP(ep_close_nbx),          UCP(ep_flush_nbx),
    UCP(tag_send_nbx),       UCP(tag_recv_nbx),          UCP(tag_recv_request_test),
    UCP(request_check_status), UCP(request_cancel),      UCP(request_free),
    SYM(status_string, "ucs_status_string"),
};

stt_ucx_lib_t stt_ucx_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static stt_dynlib_t ucx_lib = {
    .who = "ucx", .file = STT_UCX_LIBRARY, .syms = ucx_syms,
    .nsyms = (int)(sizeof(ucx_syms) / sizeof(ucx_syms[0])),
    .table = &stt_ucx_lib, .table_bytes = sizeof(stt_ucx_lib),
};

static void ucx_load_once(void)
{
    stt_dynlib_load(&ucx_lib);
}

strata_status_t stt_ucx_lib_load(const char **why_p)
{
    pthread_once(&load_once, ucx_load_once);
    return stt_dynlib_result(&ucx_lib, why_p);
}

const char *stt_ucx_library(const char **why_p)
{
    stt_ucx_lib_load(why_p);
    return STT_UCX_LIBRARY;
}

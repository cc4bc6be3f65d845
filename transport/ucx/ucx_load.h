/*
 * UCX, loaded at run time: the plugin and libstrata.so carry no DT_NEEDED on
 * libucp, libuct or libucs, so they load where UCX is not installed and run
 * over another transport there (the ucx transport's probe then fails with
 * the reason).
 *
 * stt_ucx_lib_load opens libucp.so.0 once per process (dlopen RTLD_NOW |
 * RTLD_LOCAL under a pthread_once; never closed: UCX does not support being
 * unloaded) and resolves the calls the transport makes into stt_ucx_lib.
 * libucp brings libucs and libuct as its own dependencies, and dlsym on its
 * handle searches them too: ucs_status_string is libucs's. The members have
 * the header's own types (__typeof__), so a call through the table is checked
 * as the direct call was. ucp_init is inline in <ucp/api/ucp.h> and calls
 * ucp_init_version with the header's API version: stt_ucx_lib_init does the
 * same through the table.
 *
 * Exported symbols used (nm -D --undefined-only of the plugin before this
 * change): ucp_cleanup ucp_config_read ucp_config_release ucp_config_modify (virtual
 * devices: a member's NET_DEVICES) ucp_ep_close_nbx
 * ucp_ep_create ucp_ep_flush_nbx ucp_get_version ucp_init_version
 * ucp_request_cancel ucp_request_check_status ucp_request_free
 * ucp_tag_recv_nbx ucp_tag_recv_request_test ucp_tag_send_nbx
 * ucp_worker_arm ucp_worker_create ucp_worker_destroy ucp_worker_get_address
 * ucp_worker_get_efd ucp_worker_progress ucp_worker_release_address
 * ucs_status_string. UCX exports them without symbol versions.
 *
 * Thread safety: stt_ucx_lib_load may be called from any thread; the table is
 * written once, before the first load returns, and only read after.
 */
#ifndef STT_UCX_LOAD_H
#define STT_UCX_LOAD_H

#include <ucp/api/ucp.h>

#include "strata/status.h"

/* The file dlopen is asked for: the soname, as the package installs it. */
#define STT_UCX_LIBRARY "libucp.so.0"

typedef struct stt_ucx_lib {
    __typeof__(ucp_get_version) *get_version;
    __typeof__(ucp_init_version) *init_version;
    __typeof__(ucp_cleanup) *cleanup;
    __typeof__(ucp_config_read) *config_read;
    __typeof__(ucp_config_release) *config_release;
    __typeof__(ucp_config_modify) *config_modify;
    __typeof__(ucp_worker_create) *worker_create;
    __typeof__(ucp_worker_destroy) *worker_destroy;
    __typeof__(ucp_worker_get_address) *worker_get_address;
    __typeof__(ucp_worker_release_address) *worker_release_address;
    __typeof__(ucp_worker_get_efd) *worker_get_efd;
    __typeof__(ucp_worker_arm) *worker_arm;
    __typeof__(ucp_worker_progress) *worker_progress;
    __typeof__(ucp_ep_create) *ep_create;
    __typeof__(ucp_ep_close_nbx) *ep_close_nbx;
    __typeof__(ucp_ep_flush_nbx) *ep_flush_nbx;
    __typeof__(ucp_tag_send_nbx) *tag_send_nbx;
    __typeof__(ucp_tag_recv_nbx) *tag_recv_nbx;
    __typeof__(ucp_tag_recv_request_test) *tag_recv_request_test;
    __typeof__(ucp_request_check_status) *request_check_status;
    __typeof__(ucp_request_cancel) *request_cancel;
    __typeof__(ucp_request_free) *request_free;
    __typeof__(ucs_status_string) *status_string;     /* libucs's */
} stt_ucx_lib_t;

/* Filled by the first successful stt_ucx_lib_load; read-only after. */
extern stt_ucx_lib_t stt_ucx_lib;

/*
 * Loads the library (once; later calls return the first answer). OK when
 * every symbol resolved; STRATA_ERR_UNSUPPORTED otherwise, after an INFO
 * line "ucx: libucp.so.0 not loadable: <why>; the ucx transport is
 * unavailable" (once). *why_p (may be NULL) gets NULL or that reason.
 */
strata_status_t stt_ucx_lib_load(const char **why_p);

/* ucp_init as the header defines it inline, through the table. */
static inline ucs_status_t stt_ucx_lib_init(const ucp_params_t *params,
                                            const ucp_config_t *config, ucp_context_h *ctx_p)
{
    return stt_ucx_lib.init_version(UCP_API_MAJOR, UCP_API_MINOR, params, config, ctx_p);
}

/* The library op (transport.h): the file name, after loading it. */
const char *stt_ucx_library(const char **why_p);

#endif /* STT_UCX_LOAD_H */

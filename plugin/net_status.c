/* The single translation from strata_status_t to ncclResult_t. */
#include <stdlib.h>

#include "plugin/plugin.h"
#include "util/log.h"
#include "util/param.h"

ncclResult_t stp_status_to_nccl(strata_status_t status)
{
    ncclResult_t result;

    switch (status) {
    case STRATA_OK:
        return ncclSuccess;
    case STRATA_ERR_REMOTE:
    case STRATA_ERR_TIMEOUT:
    case STRATA_ERR_AUTH:
        result = ncclRemoteError; /* the peer died, reset, broke protocol, never came,
                                            or did not prove the secret */
        break;
    case STRATA_ERR_TRUNCATED:
    case STRATA_ERR_MISMATCH:
    case STRATA_ERR_NOT_FOUND:
    case STRATA_ERR_UNSUPPORTED:
        result = ncclInvalidUsage;       /* the user's configuration or call pattern */
        break;
    case STRATA_ERR_INVALID:
    case STRATA_ERR_INTERNAL:
    case STRATA_INPROGRESS:
        result = ncclInternalError;      /* NCCL (or Strata) broke the API contract */
        break;
    case STRATA_ERR_NO_MEMORY:
    case STRATA_ERR_NO_RESOURCE:
    case STRATA_ERR_IO:
    default:
        result = ncclSystemError;        /* the operating system or the hardware said no */
        break;
    }
    if (stu_param_int(STU_PARAM_ABORT_ON_ERROR)) {
        STU_WARN("STRATA_ABORT_ON_ERROR=1: aborting on %s", strata_status_str(status));
        abort();
    }
    return result;
}

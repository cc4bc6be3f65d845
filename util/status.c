/* Names of strata_status_t values. */
#include "strata/status.h"

const char *strata_status_str(strata_status_t status)
{
    switch (status) {
    case STRATA_OK: return "STRATA_OK";
    case STRATA_INPROGRESS: return "STRATA_INPROGRESS";
    case STRATA_ERR_INVALID: return "STRATA_ERR_INVALID";
    case STRATA_ERR_NO_MEMORY: return "STRATA_ERR_NO_MEMORY";
    case STRATA_ERR_NO_RESOURCE: return "STRATA_ERR_NO_RESOURCE";
    case STRATA_ERR_IO: return "STRATA_ERR_IO";
    case STRATA_ERR_REMOTE: return "STRATA_ERR_REMOTE";
    case STRATA_ERR_TIMEOUT: return "STRATA_ERR_TIMEOUT";
    case STRATA_ERR_UNSUPPORTED: return "STRATA_ERR_UNSUPPORTED";
    case STRATA_ERR_TRUNCATED: return "STRATA_ERR_TRUNCATED";
    case STRATA_ERR_INTERNAL: return "STRATA_ERR_INTERNAL";
    case STRATA_ERR_MISMATCH: return "STRATA_ERR_MISMATCH";
    case STRATA_ERR_NOT_FOUND: return "STRATA_ERR_NOT_FOUND";
    case STRATA_ERR_AUTH: return "STRATA_ERR_AUTH";
    }
    return "STRATA_ERR_UNKNOWN";
}

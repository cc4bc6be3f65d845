/* The library's own version, for programs that compare it with the header they were built with. */
#include "strata/strata.h"

int strata_version(void)
{
    return STRATA_VERSION_CODE;
}

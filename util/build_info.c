/* The build's configuration, from the header make generates (strata_config.h in $(BUILD)/gen). */
#include "util/build_info.h"

#include "strata_config.h"

static const stu_build_info_t build_info = {
    .version = STRATA_CONFIG_VERSION,
    .transports = STRATA_CONFIG_TRANSPORTS,
    .missing = STRATA_CONFIG_MISSING,
    .sanitizers = STRATA_CONFIG_SANITIZERS,
    .debug = STRATA_CONFIG_DEBUG,
    .summary = STRATA_CONFIG_SUMMARY,
};

const stu_build_info_t *stu_build_info(void)
{
    return &build_info;
}

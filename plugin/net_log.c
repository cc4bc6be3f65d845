/*
 * Bridge from Strata's logger to the one NCCL passes to init. NCCL filters by
 * its own NCCL_DEBUG level, so our threshold follows NCCL_DEBUG (read, never
 * written) in addition to STRATA_DEBUG; otherwise INFO lines would never be
 * formatted when NCCL_DEBUG=INFO asks for them.
 */
#include <stdlib.h>

#include "plugin/plugin.h"
#include "util/log.h"

static ncclDebugLogger_t nccl_logger;

static void log_to_nccl(int level, unsigned long flags, const char *file, int line,
                        const char *msg)
{
    ncclDebugLogger_t logger = nccl_logger;
    if (logger != NULL)
        logger((ncclDebugLogLevel)level, flags, file, line, "NET/Strata %s", msg);
}

void stp_log_attach(ncclDebugLogger_t logger)
{
    if (logger == NULL)
        return;
    nccl_logger = logger;
    int level = stu_log_level_parse(getenv("NCCL_DEBUG"));
    stu_log_set_sink(log_to_nccl, level > 0 ? level : STU_LOG_WARN);
}

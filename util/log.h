/*
 * Logging for every layer. One sink at a time: NCCL's logger when NCCL loaded
 * the plugin (installed by plugin/), stderr otherwise.
 *
 * The level is checked before anything is formatted, so a disabled INFO or
 * TRACE costs one load and one compare. Levels and subsystem flags have the
 * same values as NCCL's ncclDebugLogLevel and NCCL_INIT/NCCL_NET/..., so the
 * plugin forwards them unchanged.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef STU_LOG_H
#define STU_LOG_H

#include "util/compiler.h"

enum {
    STU_LOG_NONE = 0,
    STU_LOG_VERSION = 1,
    STU_LOG_WARN = 2,
    STU_LOG_INFO = 3,
    STU_LOG_ABORT = 4,
    STU_LOG_TRACE = 5,
};

/* Subsystem flags (NCCL's values). */
#define STU_LOG_INIT    0x1UL
#define STU_LOG_COLL    0x2UL
#define STU_LOG_P2P     0x4UL
#define STU_LOG_SHM     0x8UL
#define STU_LOG_NET     0x10UL
#define STU_LOG_TUNING  0x40UL
#define STU_LOG_ENV     0x80UL
#define STU_LOG_ALL     (~0UL)

/* A sink receives one formatted line (no trailing newline). */
typedef void (*stu_log_sink_t)(int level, unsigned long flags, const char *file,
                               int line, const char *msg);

/* Current threshold; messages above it are dropped before formatting. */
extern int stu_log_level;

/*
 * Installs a sink (NULL restores stderr) and raises the threshold to at least
 * min_level (the threshold from STRATA_DEBUG is kept if higher).
 */
void stu_log_set_sink(stu_log_sink_t sink, int min_level);

/* Reads STRATA_DEBUG (NONE|VERSION|WARN|INFO|TRACE, default WARN). */
void stu_log_init(void);

/* Parses a level name as STRATA_DEBUG and NCCL_DEBUG spell it; -1 if unknown. */
int stu_log_level_parse(const char *text);

void stu_log_emit(int level, unsigned long flags, const char *file, int line,
                  const char *fmt, ...) STU_PRINTF(5, 6);

#define STU_WARN(...) \
    stu_log_emit(STU_LOG_WARN, STU_LOG_ALL, __FILE__, __LINE__, __VA_ARGS__)
#define STU_INFO(flags, ...)                                                   \
    do {                                                                       \
        if (STU_UNLIKELY(stu_log_level >= STU_LOG_INFO))                       \
            stu_log_emit(STU_LOG_INFO, (flags), __func__, __LINE__, __VA_ARGS__); \
    } while (0)
#define STU_TRACE(flags, ...)                                                  \
    do {                                                                       \
        if (STU_UNLIKELY(stu_log_level >= STU_LOG_TRACE))                      \
            stu_log_emit(STU_LOG_TRACE, (flags), __func__, __LINE__, __VA_ARGS__); \
    } while (0)

#endif /* STU_LOG_H */

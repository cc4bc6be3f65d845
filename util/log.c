/* Logging: level filter, stderr fallback, NCCL sink. */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

int stu_log_level = STU_LOG_WARN;

static stu_log_sink_t log_sink;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

int stu_log_level_parse(const char *text)
{
    static const struct { const char *name; int level; } names[] = {
        {"NONE", STU_LOG_NONE}, {"VERSION", STU_LOG_VERSION}, {"WARN", STU_LOG_WARN},
        {"INFO", STU_LOG_INFO}, {"ABORT", STU_LOG_ABORT}, {"TRACE", STU_LOG_TRACE},
    };
    if (text == NULL)
        return -1;
    for (size_t i = 0; i < STU_ARRAY_SIZE(names); i++)
        if (strcasecmp(text, names[i].name) == 0)
            return names[i].level;
    return -1;
}

static void log_init_once(void)
{
    int level = stu_log_level_parse(getenv("STRATA_DEBUG"));
    if (level >= 0)
        stu_log_level = level;
}

void stu_log_init(void)
{
    pthread_once(&log_once, log_init_once);
}

void stu_log_set_sink(stu_log_sink_t sink, int min_level)
{
    stu_log_init();
    log_sink = sink;
    if (min_level > stu_log_level)
        stu_log_level = min_level;
}

static const char *level_tag(int level)
{
    switch (level) {
    case STU_LOG_WARN: return "WARN";
    case STU_LOG_INFO: return "INFO";
    case STU_LOG_TRACE: return "TRACE";
    default: return "LOG";
    }
}

void stu_log_emit(int level, unsigned long flags, const char *file, int line,
                  const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    stu_log_init();
    if (level > stu_log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    stu_log_sink_t sink = log_sink;
    if (sink != NULL) {
        sink(level, flags, file, line, msg);
        return;
    }
    if (level == STU_LOG_WARN)
        fprintf(stderr, "strata %d [%s] %s:%d %s\n", (int)getpid(), level_tag(level), file,
                line, msg);
    else
        fprintf(stderr, "strata %d [%s] %s\n", (int)getpid(), level_tag(level), msg);
}

/* The host's runnable tasks from /proc/loadavg (util/host_load.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/host_load.h"

int stu_loadavg_runnable(const char *text)
{
    const char *p = text;

    if (text == NULL)
        return -1;
    /* three load averages, each followed by one space */
    for (int field = 0; field < 3; field++) {
        if (*p == ' ' || *p == '\0')
            return -1;
        while (*p != ' ' && *p != '\0')
            p++;
        if (*p++ != ' ')
            return -1;
    }
    if (*p < '0' || *p > '9')
        return -1;
    char *end;
    errno = 0;
    long running = strtol(p, &end, 10);
    if (errno != 0 || *end != '/' || end[1] < '0' || end[1] > '9')
        return -1;
    long total = strtol(end + 1, &end, 10);
    if (errno != 0 || *end != ' ' || running < 1 || running > total || total > 1L << 30)
        return -1;
    return (int)running;
}

int stu_host_runnable(void)
{
    char text[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    do {
        n = read(fd, text, sizeof(text) - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return -1;
    text[n] = '\0';
    return stu_loadavg_runnable(text);
}

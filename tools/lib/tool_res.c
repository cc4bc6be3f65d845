/* What a process holds: descriptors, memory, segments (see tool_res.h). */
#include "tools/lib/tool_res.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The name util/shm.h gives the node's segment, as /proc/self/maps shows it. */
#define RES_SHM_NAME "/memfd:strata"

int stb_res_fd_count(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;

    if (dir == NULL)
        return -1;
    while ((de = readdir(dir)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(dir);
    return n - 1; /* the directory stream's own descriptor */
}

long long stb_res_rss_bytes(void)
{
    long long size = 0, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%lld %lld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

long long stb_res_heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (long long)mi.uordblks + (long long)mi.hblkhd;
}

static int res_shm_maps(void)
{
    char line[512];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, RES_SHM_NAME) != NULL;
    fclose(f);
    return n;
}

static int res_dev_shm(void)
{
    DIR *dir = opendir("/dev/shm");
    struct dirent *de;
    int n = 0;

    if (dir == NULL)
        return -1;
    while ((de = readdir(dir)) != NULL)
        n += de->d_name[0] != '.';
    closedir(dir);
    return n;
}

void stb_res_sample(stb_res_t *res)
{
    res->fds = stb_res_fd_count();
    res->rss_bytes = stb_res_rss_bytes();
    res->shm_maps = res_shm_maps();
    res->dev_shm = res_dev_shm();
}

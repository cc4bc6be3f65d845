/* Test helpers: deadlines, patterns, resource counters. */
#define _GNU_SOURCE
#include "sts_util.h"
#include "tools/lib/tool_netns.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <dirent.h>
#include <malloc.h>
#include <sched.h>
#include <sys/random.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STS_SANITIZED 1
#else
#define STS_SANITIZED 0
#endif

double sts_timeout_scale(void)
{
    const char *env = getenv("STS_TIMEOUT_SCALE");
    double scale = STS_SANITIZED ? 3.0 : 1.0;
    if (env != NULL && atof(env) > 0)
        scale = atof(env);
    return scale;
}

uint64_t sts_deadline(double seconds)
{
    return stu_time_ns() + (uint64_t)(seconds * sts_timeout_scale() * 1e9);
}

void sts_relax(void)
{
    sched_yield();
}

/* splitmix64 finaliser: a cheap, well-mixed function of (seed, word index). */
static inline uint64_t pattern_word(uint32_t seed, uint64_t index)
{
    uint64_t z = index * 0x9e3779b97f4a7c15ull + ((uint64_t)seed << 32 | seed) + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sts_pattern_fill(void *buf, size_t size, uint32_t seed)
{
    unsigned char *p = buf;
    size_t words = size / 8;
    for (size_t k = 0; k < words; k++) {
        uint64_t w = pattern_word(seed, k);
        memcpy(p + 8 * k, &w, 8);
    }
    if (size % 8) {
        uint64_t w = pattern_word(seed, words);
        memcpy(p + 8 * words, &w, size % 8);
    }
}

size_t sts_pattern_check(const void *buf, size_t size, uint32_t seed)
{
    const unsigned char *p = buf;
    size_t words = size / 8;
    for (size_t k = 0; k <= words; k++) {
        size_t n = k < words ? 8 : size % 8;
        if (n == 0)
            break;
        uint64_t w = pattern_word(seed, k);
        if (memcmp(p + 8 * k, &w, n) != 0) {
            const unsigned char *e = (const unsigned char *)&w;
            for (size_t i = 0; i < n; i++)
                if (p[8 * k + i] != e[i])
                    return 8 * k + i;
        }
    }
    return SIZE_MAX;
}

void sts_permute(int *perm, int n, uint32_t seed)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;   /* an LCG step: cheap, same everywhere */
        int j = (int)((seed >> 16) % (uint32_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    if (n > 1 && perm[0] == 0) {
        perm[0] = perm[1];
        perm[1] = 0;
    }
}

void sts_guard_set(void *buf, size_t size)
{
    memset((char *)buf + size, STS_GUARD_BYTE, STS_GUARD_SIZE);
}

int sts_guard_ok(const void *buf, size_t size)
{
    const unsigned char *g = (const unsigned char *)buf + size;
    for (size_t i = 0; i < STS_GUARD_SIZE; i++)
        if (g[i] != STS_GUARD_BYTE)
            return 0;
    return 1;
}

int sts_fd_count(void)
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

int sts_fd_count_settle(int most, uint64_t deadline)
{
    int n;

    while ((n = sts_fd_count()) > most && !stu_deadline_passed(deadline))
        sts_relax();
    return n;
}

int sts_socket_count(int except)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0, self = dir != NULL ? dirfd(dir) : -1;

    if (dir == NULL)
        return -1;
    while ((de = readdir(dir)) != NULL) {
        char path[64], target[64];
        int fd = atoi(de->d_name);
        if (de->d_name[0] == '.' || fd == self || fd == except)
            continue;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        if (len > 0 && strncmp(target, "socket:", 7) == 0)
            n++;
    }
    closedir(dir);
    return n;
}

long long sts_heap_in_use(void)
{
#if STS_SANITIZED
    return -1;
#else
    struct mallinfo2 mi = mallinfo2();
    return (long long)mi.uordblks + (long long)mi.hblkhd;
#endif
}

long long sts_rss_bytes(void)
{
#if STS_SANITIZED
    return -1;
#else
    long long size = 0, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%lld %lld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
#endif
}

const char *sts_job_secret_export(void)
{
    static char text[65];
    unsigned char raw[32];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        abort();
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(text + 2 * i, 3, "%02x", raw[i]);
    setenv("STRATA_JOB_SECRET", text, 1);
    return text;
}

int sts_tcp_connect(const char *ip, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int sts_rail_if_bytes(int rx, int rails, unsigned long long *bytes)
{
    char line[512];
    FILE *f = fopen("/proc/net/dev", "r");
    int found = 0;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        char name[32];
        unsigned long long v[9];
        char *colon = strchr(line, ':');
        if (colon == NULL)
            continue;
        *colon = ' ';
        if (sscanf(line, "%31s %llu %llu %llu %llu %llu %llu %llu %llu %llu", name, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]) != 10)
            continue;
        for (int r = 0; r < rails; r++) {
            char want[16];
            stb_netns_rail_ifname(r, want, sizeof(want));
            if (strcmp(name, want) == 0) {
                bytes[r] = rx ? v[0] : v[8];
                found++;
            }
        }
    }
    fclose(f);
    return found == rails ? 0 : -1;
}

/*
 * strata-netperf --listen against strangers: it listens on one interface (the
 * tcp transport's, here loopback), not on every address; a connection that
 * sends terminal escapes and junk, one that closes at once and one that stays
 * silent past the hello timeout each end only themselves; their bytes never
 * reach the output raw; the real client that comes after them still runs.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sts_util.h"
#include "util/time.h"

#define NETPERF_BIN STRATA_BUILD_DIR "/bin/strata-netperf"
#define WAIT_S 120 /* bounds for a loaded 2-core machine; none measures speed */

/* Runs argv with stdout and stderr into the file at out; returns its pid. */
static pid_t spawn_logged(char *const argv[], const char *out)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            _exit(127);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        setenv("STRATA_SOCKET_IFNAME", "=lo", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* The whole file (static buffer). */
static const char *slurp(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f != NULL)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

static int wait_exit(pid_t pid)
{
    uint64_t deadline = sts_deadline(WAIT_S);
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (stu_deadline_passed(deadline)) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(20000);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Reads until the peer closes (the server dropped us); 0 when it did within the bound. */
static int wait_closed(int fd)
{
    char b[512];
    struct timeval tv = {.tv_sec = WAIT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (;;) {
        ssize_t n = read(fd, b, sizeof(b));
        if (n == 0)
            return 0;
        if (n < 0)
            return errno == ECONNRESET ? 0 : -1;
    }
}

/* An IPv4 address of this host other than loopback, or "" when it has none. */
static void other_address(char *buf, size_t len)
{
    struct ifaddrs *ifs;
    buf[0] = '\0';
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *a = ifs; a != NULL && buf[0] == '\0'; a = a->ifa_next)
        if (a->ifa_addr != NULL && a->ifa_addr->sa_family == AF_INET &&
            ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr) >> 24 != 127)
            inet_ntop(AF_INET, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, buf,
                      (socklen_t)len);
    freeifaddrs(ifs);
}

static void test_listen_survives_strangers(void **state)
{
    char slog[] = "/tmp/strata-np-server-XXXXXX", clog[] = "/tmp/strata-np-client-XXXXXX";
    close(mkstemp(slog));
    close(mkstemp(clog));
    char *server[] = {NETPERF_BIN, "--listen", "0",  "--accept-timeout",
                      "100",       "-T",       "60", NULL};
    pid_t sp = spawn_logged(server, slog);

    int port = 0;
    uint64_t deadline = sts_deadline(WAIT_S);
    while (port == 0 && !stu_deadline_passed(deadline)) {
        const char *p = strstr(slurp(slog), " port ");
        if (p == NULL || sscanf(p, " port %d", &port) != 1)
            usleep(20000);
    }
    assert_true(port > 0);
    /* on loopback only: not on the host's other addresses */
    assert_non_null(strstr(slurp(slog), "listening on 127.0.0.1 port"));
    char other[64];
    other_address(other, sizeof(other));
    if (other[0] != '\0')
        assert_int_equal(sts_tcp_connect(other, port), -1);

    /* escapes and junk, then a hang-up, then silence past the hello timeout */
    int fd = sts_tcp_connect("127.0.0.1", port);
    assert_true(fd >= 0);
    /* 8 bytes where the magic and version go, then escapes where the tool's name goes */
    const char evil[] = "JUNKJUNK\x1b[31mEVIL\x07\r\nmore\x01\x02 junk \xff\xfe and then more";
    assert_int_equal(write(fd, evil, sizeof(evil) - 1), (ssize_t)(sizeof(evil) - 1));
    assert_int_equal(wait_closed(fd), 0);
    close(fd);
    fd = sts_tcp_connect("127.0.0.1", port);
    assert_true(fd >= 0);
    close(fd);
    fd = sts_tcp_connect("127.0.0.1", port);
    assert_true(fd >= 0);
    assert_int_equal(wait_closed(fd), 0);
    close(fd);

    char addr[32];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    char *client[] = {NETPERF_BIN, "--connect", addr, "-e", "64K", "-n", "20", NULL};
    int crc = wait_exit(spawn_logged(client, clog));
    int src = wait_exit(sp);
    const char *out = slurp(slog);
    if (crc != 0 || src != 0)
        fail_msg("client %d, server %d; server said:\n%s\nclient said:\n%s", crc, src, out,
                 slurp(clog));
    assert_non_null(strstr(out, "is not a strata-netperf client"));
    assert_non_null(strstr(out, "strata-netperf: done"));
    assert_null(strchr(out, '\x1b'));
    assert_null(strchr(out, '\x07'));
    assert_null(strstr(out, "\xff\xfe"));
    assert_non_null(strstr(out, "\\x1b")); /* shown escaped */
    unlink(slog);
    unlink(clog);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_survives_strangers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

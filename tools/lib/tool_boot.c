/* Bench bootstrap: framing, hello, exchange and status-carrying barrier. */
#include "tools/lib/tool_boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/lib/tool_util.h"
#include "util/time.h"

#define BOOT_HELLO_MAGIC 0x53544248u   /* "STBH" */
#define BOOT_SYNC_MAGIC 0x53544253u    /* "STBS" */
#define BOOT_TOOL_LEN 32
#define BOOT_BACKLOG 4              /* one peer, and a stray connection or two */

typedef struct boot_hello {
    uint32_t magic;
    uint32_t version;
    char tool[BOOT_TOOL_LEN];
} boot_hello_t;

typedef struct boot_sync {
    uint32_t magic;
    int32_t status;
} boot_sync_t;

void stb_boot_from_fd(stb_boot_t *boot, int fd, int timeout_ms, const char *peer_name)
{
    boot->fd = fd;
    boot->timeout_ms = timeout_ms;
    snprintf(boot->peer, sizeof(boot->peer), "%s", peer_name);
}

strata_status_t stb_boot_listen(const char *where, int port, int *lfd_p, int *port_p)
{
    stu_addr_t any, bound;
    int lfd;
    strata_status_t status = stu_addr_make(where, port, &any);

    if (status == STRATA_OK)
        status = stu_sock_listen(&any, BOOT_BACKLOG, &lfd, &bound);
    if (status != STRATA_OK)
        return status;
    *lfd_p = lfd;
    *port_p = stu_addr_port(&bound);
    return STRATA_OK;
}

strata_status_t stb_boot_accept(stb_boot_t *boot, int lfd, int timeout_ms)
{
    char peer[STU_ADDR_TEXT_LEN];
    int fd;
    strata_status_t status = stu_sock_accept(lfd, stu_deadline_ms(timeout_ms), &fd);

    if (status == STRATA_ERR_TIMEOUT)
        stb_log_err("no peer connected within %d ms", timeout_ms);
    if (status != STRATA_OK)
        return status;
    stu_sock_name(fd, 1, peer, sizeof(peer));
    stb_boot_from_fd(boot, fd, timeout_ms, peer);
    return STRATA_OK;
}

strata_status_t stb_boot_connect(stb_boot_t *boot, const char *hostport, int timeout_ms)
{
    stu_addr_t addr;
    int fd;

    if (stu_addr_parse(hostport, &addr) != STRATA_OK) {
        stb_log_err("bad peer address '%s' (want HOST:PORT or [IPV6]:PORT)", hostport);
        return STRATA_ERR_INVALID;
    }
    strata_status_t status = stu_sock_connect(&addr, stu_deadline_ms(timeout_ms), &fd);
    if (status != STRATA_OK)
        return status;
    stb_boot_from_fd(boot, fd, timeout_ms, hostport);
    return STRATA_OK;
}

/* Logs a failed exchange once, with the peer: the socket helpers leave that to the caller. */
static strata_status_t boot_io(stb_boot_t *boot, const char *op, strata_status_t status)
{
    if (status != STRATA_OK)
        stb_log_err("%s, peer %s: %s", op, boot->peer,
                    status == STRATA_ERR_TIMEOUT ? "timed out"
                    : status == STRATA_ERR_REMOTE ? "the peer closed the connection"
                                                  : strata_status_str(status));
    return status;
}

strata_status_t stb_boot_send(stb_boot_t *boot, const void *buf, size_t len)
{
    return boot_io(boot, "send",
                   stu_sock_send_all(boot->fd, buf, len, stu_deadline_ms(boot->timeout_ms)));
}

strata_status_t stb_boot_recv(stb_boot_t *boot, void *buf, size_t len)
{
    return boot_io(boot, "recv",
                   stu_sock_recv_all(boot->fd, buf, len, stu_deadline_ms(boot->timeout_ms)));
}

strata_status_t stb_boot_exchange(stb_boot_t *boot, const void *mine, void *theirs, size_t len)
{
    strata_status_t status = stb_boot_send(boot, mine, len);

    if (status != STRATA_OK)
        return status;
    return stb_boot_recv(boot, theirs, len);
}

strata_status_t stb_boot_hello(stb_boot_t *boot, const char *tool, uint32_t version)
{
    boot_hello_t mine = {0}, theirs;

    mine.magic = htonl(BOOT_HELLO_MAGIC);
    mine.version = htonl(version);
    snprintf(mine.tool, sizeof(mine.tool), "%s", tool);
    strata_status_t status = stb_boot_exchange(boot, &mine, &theirs, sizeof(mine));
    if (status != STRATA_OK)
        return status;
    if (ntohl(theirs.magic) != BOOT_HELLO_MAGIC ||
        strnlen(theirs.tool, BOOT_TOOL_LEN) == BOOT_TOOL_LEN ||
        strcmp(theirs.tool, mine.tool) != 0 || ntohl(theirs.version) != version) {
        char shown[4 * BOOT_TOOL_LEN + 4];
        stb_text_printable(theirs.tool, BOOT_TOOL_LEN, shown, sizeof(shown));
        stb_log_err("peer %s is not %s protocol %u (magic 0x%08x, tool '%s', version %u)",
                    boot->peer, tool, version, ntohl(theirs.magic), shown,
                    ntohl(theirs.version));
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

strata_status_t stb_boot_sync(stb_boot_t *boot, strata_status_t mine)
{
    boot_sync_t out = {htonl(BOOT_SYNC_MAGIC), (int32_t)htonl((uint32_t)mine)};
    boot_sync_t in;
    strata_status_t status = stb_boot_exchange(boot, &out, &in, sizeof(out));

    if (mine != STRATA_OK)
        return mine;
    if (status != STRATA_OK)
        return status;
    if (ntohl(in.magic) != BOOT_SYNC_MAGIC) {
        stb_log_err("bootstrap out of step with peer %s (got 0x%08x, want a sync)", boot->peer,
                    ntohl(in.magic));
        return STRATA_ERR_REMOTE;
    }
    strata_status_t theirs = (strata_status_t)(int32_t)ntohl((uint32_t)in.status);
    if (theirs != STRATA_OK) {
        stb_log_err("peer %s failed (%s); stopping", boot->peer, strata_status_str(theirs));
        return STRATA_ERR_REMOTE;
    }
    return STRATA_OK;
}

int stb_boot_peer_failed(stb_boot_t *boot)
{
    struct pollfd pfd = {.fd = boot->fd, .events = POLLIN};
    boot_sync_t frame;

    if (boot->fd < 0 || poll(&pfd, 1, 0) <= 0)
        return 0;
    ssize_t n = recv(boot->fd, &frame, sizeof(frame), MSG_PEEK | MSG_DONTWAIT);
    if (n == 0)
        return 1;
    if (n < 0)
        return errno != EAGAIN && errno != EINTR;
    if ((size_t)n < sizeof(frame))
        return 0;
    return ntohl(frame.magic) == BOOT_SYNC_MAGIC && frame.status != 0;
}

void stb_boot_close(stb_boot_t *boot)
{
    if (boot->fd >= 0)
        close(boot->fd);
    boot->fd = -1;
}

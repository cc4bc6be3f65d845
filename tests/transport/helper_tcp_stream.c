/*
 * Two-process throughput check of the TCP transport: a forked child sends
 * `iters` messages of `size` bytes with `window` in flight, another process
 * receives them and prints the rate. Both sides busy-poll, as NCCL's proxy
 * thread does. Settings come from the STRATA_* environment as usual.
 *
 *   helper_tcp_stream [size_bytes] [iters] [window] [netns [qdisc]]
 *
 * Without "netns" both run in this namespace (the parent receives), over the
 * interface STRATA_SOCKET_IFNAME picks (e.g. "=lo"). With "netns" the
 * receiver runs in one network namespace and the sender in another, joined by
 * a veth (tests/support/netns.h; needs root), and STRATA_SOCKET_IFNAME is
 * forced to that veth; qdisc, if given, shapes the link ("tbf rate 1gbit
 * burst 32kb latency 50ms").
 *
 * Output, one line: nsocks=<n> size=<bytes> iters=<n> window=<n> seconds=<s> GB/s=<rate>
 * (GB = 10^9 bytes, timed on the receiver from the first to the last completion
 * after a warmup of `window` * 2 messages).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns.h"
#include "transport/tcp/tcp.h"
#include "util/param.h"
#include "util/time.h"

#define MAX_WINDOW 64
#define GIVE_UP_NS (120ull * 1000000000ull)

static const stt_ops_t *ops = &stt_tcp_ops;

static int fail(const char *what, strata_status_t status)
{
    fprintf(stderr, "helper_tcp_stream %d: %s: %s\n", (int)getpid(), what,
            strata_status_str(status));
    return 1;
}

static int run_sender(int rfd, size_t size, long total, int window)
{
    unsigned char handle[STT_HANDLE_SIZE];
    stt_comm_t *send = NULL;
    stt_req_t *reqs[MAX_WINDOW] = {0};
    strata_status_t status;
    uint64_t start = stu_time_ns();

    if (read(rfd, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
        return fail("reading the handle", STRATA_ERR_IO);
    if ((status = stt_init(ops)) != STRATA_OK)
        return fail("init", status);
    char *buf = malloc(size);
    if (buf == NULL)
        return fail("malloc", STRATA_ERR_NO_MEMORY);
    memset(buf, 0x3c, size);
    while (send == NULL) {
        if ((status = stt_connect(ops, 0, handle, NULL, &send)) != STRATA_OK)
            return fail("connect", status);
        if (stu_time_ns() - start > GIVE_UP_NS)
            return fail("connect", STRATA_ERR_TIMEOUT);
    }
    long posted = 0, done = 0;
    while (done < total) {
        for (int w = 0; w < window; w++) {
            if (reqs[w] == NULL && posted < total) {
                if ((status = stt_isend(send, buf, size, 0, NULL, &reqs[w])) != STRATA_OK)
                    return fail("isend", status);
                posted += reqs[w] != NULL;
            }
            if (reqs[w] != NULL) {
                int d = 0;
                if ((status = stt_test(reqs[w], &d, NULL)) != STRATA_OK)
                    return fail("test send", status);
                if (d) {
                    reqs[w] = NULL;
                    done++;
                }
            }
        }
        if (stu_time_ns() - start > GIVE_UP_NS)
            return fail("sending", STRATA_ERR_TIMEOUT);
    }
    stt_close_send(send);
    stt_fini(ops);
    free(buf);
    return 0;
}

static int run_receiver(int wfd, size_t size, long total, int window)
{
    unsigned char handle[STT_HANDLE_SIZE];
    stt_listen_t *listen = NULL;
    stt_comm_t *recv = NULL;
    stt_req_t *reqs[MAX_WINDOW] = {0};
    strata_status_t status;
    uint64_t start = stu_time_ns(), t0 = 0, t1 = 0;
    long warm = 2L * window;

    if ((status = stt_listen(ops, 0, handle, &listen)) != STRATA_OK)
        return fail("listen", status);
    if (write(wfd, handle, sizeof(handle)) != (ssize_t)sizeof(handle))
        return fail("writing the handle", STRATA_ERR_IO);
    while (recv == NULL) {
        if ((status = stt_accept(listen, &recv)) != STRATA_OK)
            return fail("accept", status);
        if (stu_time_ns() - start > GIVE_UP_NS)
            return fail("accept", STRATA_ERR_TIMEOUT);
    }
    char *bufs[MAX_WINDOW];
    for (int w = 0; w < window; w++)
        if ((bufs[w] = malloc(size)) == NULL)
            return fail("malloc", STRATA_ERR_NO_MEMORY);
    long posted = 0, done = 0;
    while (done < total) {
        for (int w = 0; w < window; w++) {
            if (reqs[w] == NULL && posted < total) {
                void *data[1] = {bufs[w]};
                size_t cap[1] = {size};
                int tag[1] = {0};
                if ((status = stt_irecv(recv, 1, data, cap, tag, NULL, &reqs[w])) != STRATA_OK)
                    return fail("irecv", status);
                posted += reqs[w] != NULL;
            }
            if (reqs[w] != NULL) {
                int d = 0;
                size_t got[1];
                if ((status = stt_test(reqs[w], &d, got)) != STRATA_OK)
                    return fail("test recv", status);
                if (d) {
                    if (got[0] != size)
                        return fail("size check", STRATA_ERR_INTERNAL);
                    reqs[w] = NULL;
                    done++;
                    if (done == warm)
                        t0 = stu_time_ns();
                    t1 = stu_time_ns();
                }
            }
        }
        if (stu_time_ns() - start > GIVE_UP_NS)
            return fail("receiving", STRATA_ERR_TIMEOUT);
    }
    double secs = (double)(t1 - t0) / 1e9;
    long timed = total - warm;
    printf("nsocks=%lld size=%zu iters=%ld window=%d seconds=%.3f GB/s=%.3f\n",
           (long long)stu_param_int(STU_PARAM_SOCKET_NSOCKS), size, timed, window, secs,
           (double)timed * (double)size / secs / 1e9);
    fflush(stdout);
    stt_close_recv(recv);
    stt_close_listen(listen);
    for (int w = 0; w < window; w++)
        free(bufs[w]);
    return 0;
}

/* Both ends in this namespace: the child sends, the parent receives. */
static int run_local(size_t size, long total, int window)
{
    int pfd[2], wstatus = 0;
    strata_status_t status;

    if (pipe(pfd) != 0)
        return fail("pipe", STRATA_ERR_IO);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0)
        return fail("fork", STRATA_ERR_IO);
    if (child == 0) {
        close(pfd[1]);
        _exit(run_sender(pfd[0], size, total, window));
    }
    close(pfd[0]);
    if ((status = stt_init(ops)) != STRATA_OK) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return fail("init", status);
    }
    int rc = run_receiver(pfd[1], size, total, window);
    if (rc != 0)
        kill(child, SIGKILL);
    waitpid(child, &wstatus, 0);
    close(pfd[1]);
    stt_fini(ops);
    return rc == 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 ? 0 : 1;
}

typedef struct netns_args {
    size_t size;
    long total;
    int window;
} netns_args_t;

static int netns_receiver(void *arg, int ctl)
{
    const netns_args_t *a = arg;
    strata_status_t status;

    stu_param_reload();
    if ((status = stt_init(ops)) != STRATA_OK)
        return fail("init", status);
    int rc = run_receiver(ctl, a->size, a->total, a->window);
    stt_fini(ops);
    return rc;
}

static int netns_sender(void *arg, int ctl)
{
    const netns_args_t *a = arg;

    stu_param_reload();
    return run_sender(ctl, a->size, a->total, a->window);
}

/* Receiver in node 0, sender in node 1, the handle relayed through this process. */
static int run_netns(size_t size, long total, int window, const char *qdisc)
{
    netns_args_t args = {.size = size, .total = total, .window = window};
    sts_netns_t *net = NULL;
    uint8_t handle[STT_HANDLE_SIZE];
    pid_t rpid, spid;
    int rctl, sctl, rws = 0, sws = 0;
    strata_status_t status;
    int timeout_ms = (int)(GIVE_UP_NS / 1000000ull) + 10000;

    setenv("STRATA_SOCKET_IFNAME", "=" STS_NETNS_IFNAME, 1);
    if ((status = sts_netns_create(2, STS_NETNS_PAIR, &net)) != STRATA_OK)
        return fail("creating the namespaces", status);
    if (qdisc != NULL && (status = sts_netns_shape(net, 0, qdisc)) != STRATA_OK)
        goto err_destroy;
    status = sts_netns_spawn(net, 0, netns_receiver, &args, &rpid, &rctl);
    if (status == STRATA_OK)
        status = sts_netns_msg_recv(rctl, handle, sizeof(handle), timeout_ms);
    if (status == STRATA_OK)
        status = sts_netns_spawn(net, 1, netns_sender, &args, &spid, &sctl);
    if (status == STRATA_OK)
        status = sts_netns_msg_send(sctl, handle, sizeof(handle), timeout_ms);
    if (status == STRATA_OK)
        status = sts_netns_wait(net, spid, timeout_ms, &sws);
    if (status == STRATA_OK)
        status = sts_netns_wait(net, rpid, timeout_ms, &rws);
    if (status == STRATA_OK && !(sts_netns_exit_ok(sws) && sts_netns_exit_ok(rws)))
        status = STRATA_ERR_REMOTE;
err_destroy:
    sts_netns_destroy(net);
    return status == STRATA_OK ? 0 : fail("running in namespaces", status);
}

int main(int argc, char **argv)
{
    size_t size = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    long iters = argc > 2 ? strtol(argv[2], NULL, 0) : 200;
    int window = argc > 3 ? atoi(argv[3]) : 4;
    bool netns = argc > 4 && strcmp(argv[4], "netns") == 0;

    if (size == 0 || iters < 1 || window < 1 || window > MAX_WINDOW || (argc > 4 && !netns) ||
        argc > 6) {
        fprintf(stderr, "usage: %s [size_bytes>0] [iters>0] [window 1..%d] [netns [qdisc]]\n",
                argv[0], MAX_WINDOW);
        return 2;
    }
    long total = iters + 2L * window;
    if (netns)
        return run_netns(size, total, window, argc > 5 ? argv[5] : NULL);
    return run_local(size, total, window);
}

/*
 * gloo_allreduce: Gloo's ring and halving-doubling allreduce timed the way
 * nccl-tests times ncclAllReduce, printing nccl-tests' columns, so
 * bench/ab/compare.sh puts Gloo next to Strata and OpenMPI in one table.
 *
 *   build/bench/ab/gloo_allreduce --np 4 -A ring -b 8 -e 256M -f 4
 *
 * The program starts its ranks itself: the parent makes a temporary directory
 * for Gloo's FileStore (under $TMPDIR, else /tmp), forks --np children (rank =
 * child index), waits for them within -T seconds (killing them if it passes),
 * and removes the directory. Ranks connect over Gloo's TCP transport on the loopback device;
 * every port is chosen by the kernel.
 *
 * Started by a launcher instead (--store DIR), the program is one rank: its rank and the
 * rank count come from STRATA_RANK and STRATA_NRANKS (what strata-run sets), the FileStore
 * is DIR (the launcher makes it, empty, where every rank sees it), and --iface NAME picks
 * the interface to talk over. That is how bench/ab/run.sh runs Gloo on emulated nodes:
 *   strata-run -n 4 --nodes 2 --netns -- gloo_allreduce --store DIR --iface veth0 -A ring
 *
 * Gloo's AllreduceRing and AllreduceHalvingDoubling reduce in place, so the
 * out-of-place column times a memcpy(recv, send) followed by the in-place
 * call: what a caller who needs its input kept pays. The in-place column is
 * Gloo's own algorithm alone. Per size, like mpi_allreduce: one checked call
 * per placement, -w untimed calls, a barrier, -n timed calls; the row shows
 * the mean per call averaged over ranks; busbw = algbw * 2(n-1)/n. Each
 * algorithm object is built once per size and placement, outside the timing,
 * as Gloo intends (it allocates its scratch buffers in the constructor).
 */
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ab_common.h"

#define PROGRAM "gloo_allreduce"

/* How often the parent looks for exited ranks: often enough, cheap enough. */
#define GLOO_REAP_POLL_US 20000

namespace {

struct rank_state {
    const ab_opts_t *o;
    int rank;
    int nranks;
    bool ring;
    std::shared_ptr<gloo::Context> ctx;
    char *send;
    char *recv;
};

template <typename T>
const gloo::ReductionFunction<T> *reduction_for(ab_op_t op)
{
    switch (op) {
    case AB_PROD: return gloo::ReductionFunction<T>::product;
    case AB_MIN: return gloo::ReductionFunction<T>::min;
    case AB_MAX: return gloo::ReductionFunction<T>::max;
    case AB_SUM: break;
    }
    return gloo::ReductionFunction<T>::sum;
}

template <typename T>
std::unique_ptr<gloo::Algorithm> make_allreduce(const rank_state &s, size_t count)
{
    std::vector<T *> ptrs{reinterpret_cast<T *>(s.recv)};
    const gloo::ReductionFunction<T> *fn = reduction_for<T>(s.o->op);

    if (s.ring)
        return std::unique_ptr<gloo::Algorithm>(
            new gloo::AllreduceRing<T>(s.ctx, ptrs, (int)count, fn));
    return std::unique_ptr<gloo::Algorithm>(
        new gloo::AllreduceHalvingDoubling<T>(s.ctx, ptrs, (int)count, fn));
}

std::unique_ptr<gloo::Algorithm> make_for_type(const rank_state &s, size_t count)
{
    switch (s.o->dtype) {
    case AB_DOUBLE: return make_allreduce<double>(s, count);
    case AB_INT32: return make_allreduce<int32_t>(s, count);
    case AB_INT64: return make_allreduce<int64_t>(s, count);
    case AB_FLOAT: break;
    }
    return make_allreduce<float>(s, count);
}

/* One call: out of place copies the input first (see the file comment). */
void run_once(const rank_state &s, gloo::Algorithm &algo, bool in_place, size_t bytes)
{
    if (!in_place)
        memcpy(s.recv, s.send, bytes);
    algo.run();
}

/* Sum of two doubles over the ranks, in place: [mean time, wrong count]. */
class rank_sum {
  public:
    explicit rank_sum(const std::shared_ptr<gloo::Context> &ctx)
        : algo_(ctx, std::vector<double *>{vals_}, 2)
    {
    }
    void run(double a, double b, double *sum_a, double *sum_b)
    {
        vals_[0] = a;
        vals_[1] = b;
        algo_.run();
        *sum_a = vals_[0];
        *sum_b = vals_[1];
    }

  private:
    double vals_[2] = {0, 0};
    gloo::AllreduceRing<double> algo_;
};

void print_header(const rank_state &s, gloo::rendezvous::Store &store)
{
    char host[256] = "";
    std::string pid = std::to_string((long)getpid());

    gethostname(host, sizeof(host) - 1);
    store.set("pid" + std::to_string(s.rank), std::vector<char>(pid.begin(), pid.end()));
    if (s.rank != 0)
        return;
    std::string system = std::string("Gloo ") + std::to_string(GLOO_VERSION_MAJOR) + "." +
                         std::to_string(GLOO_VERSION_MINOR) + " (libgloo), " +
                         (s.ring ? "ring" : "halving-doubling") + ", tcp " +
                         (s.o->iface != NULL ? std::string("over ") + s.o->iface : "loopback");
    ab_print_header(s.o, PROGRAM, system.c_str(), s.nranks);
    for (int r = 0; r < s.nranks; r++) {
        std::vector<char> v = store.get("pid" + std::to_string(r));
        ab_print_rank(r, strtol(std::string(v.begin(), v.end()).c_str(), NULL, 10), host);
    }
    ab_print_titles();
}

int rank_main(const ab_opts_t &o, int rank, const char *store_dir)
{
    rank_state s;
    size_t tsize = ab_dtype_size(o.dtype);
    int status = 0;

    s.o = &o;
    s.rank = rank;
    s.nranks = o.nranks;
    s.ring = strcmp(o.algo, "ring") == 0;
    s.send = static_cast<char *>(malloc(o.max_bytes));
    s.recv = static_cast<char *>(malloc(o.max_bytes));
    if (s.send == NULL || s.recv == NULL) {
        fprintf(stderr, PROGRAM ": rank %d: cannot allocate 2 x %zu bytes\n", rank, o.max_bytes);
        return 1;
    }
    memset(s.send, 0, o.max_bytes);
    memset(s.recv, 0, o.max_bytes);

    gloo::transport::tcp::attr attr;
    if (o.iface != NULL)
        attr.iface = o.iface;
    else
        attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(store_dir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, o.nranks);
    ctx->setTimeout(std::chrono::seconds(o.timeout_s));
    ctx->connectFullMesh(store, dev);
    s.ctx = ctx;

    gloo::BarrierAllToAll barrier(s.ctx);
    rank_sum stats(s.ctx);
    print_header(s, store);

    for (size_t size = ab_size_first(&o); size != 0; size = ab_size_next(&o, size)) {
        size_t count = size / tsize, bytes = count * tsize;
        double us[2] = {0, 0}, wrong[2] = {-1, -1};

        if (count == 0)
            continue;
        for (int ip = 0; ip < 2; ip++) {
            std::unique_ptr<gloo::Algorithm> algo = make_for_type(s, count);
            double mine_wrong = 0, t0, mine_us;

            if (o.check) {
                ab_fill(ip ? s.recv : s.send, count, o.dtype, o.op, rank);
                run_once(s, *algo, ip, bytes);
                mine_wrong = (double)ab_check(s.recv, count, o.dtype, o.op, o.nranks);
            }
            for (int i = 0; i < o.warmup; i++)
                run_once(s, *algo, ip, bytes);
            barrier.run();
            t0 = ab_now();
            for (int i = 0; i < o.iters; i++)
                run_once(s, *algo, ip, bytes);
            mine_us = (ab_now() - t0) * 1e6 / o.iters;
            stats.run(mine_us, mine_wrong, &us[ip], &wrong[ip]);
            us[ip] /= o.nranks;
            if (!o.check)
                wrong[ip] = -1;
        }
        if (rank == 0)
            ab_print_row(&o, bytes, o.nranks, us[0], (long)wrong[0], us[1], (long)wrong[1]);
    }
    if (rank == 0)
        status = ab_print_footer();
    /*
     * Nobody closes its connections while a peer may still be in a collective: Gloo
     * reports a peer's close as an error even after the last message arrived. So each
     * rank says "done" through the store after the last barrier and leaves only when
     * every rank has said it.
     */
    barrier.run();
    std::vector<std::string> done;
    for (int r = 0; r < o.nranks; r++)
        done.push_back("done" + std::to_string(r));
    store.set(done[(size_t)rank], std::vector<char>{'1'});
    store.wait(done, std::chrono::seconds(o.timeout_s));
    free(s.send);
    free(s.recv);
    return status;
}

void remove_store(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            std::string path = std::string(dir) + "/" + e->d_name;
            unlink(path.c_str());
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Waits for every child within the bound; kills the rest when one fails or time passes. */
int reap_all(std::vector<pid_t> &pids, int timeout_s)
{
    double deadline = ab_now() + timeout_s + 5;
    size_t left = pids.size();
    int status = 0;

    while (left > 0) {
        int ws;
        pid_t pid = waitpid(-1, &ws, WNOHANG);
        if (pid > 0) {
            for (size_t i = 0; i < pids.size(); i++) {
                if (pids[i] != pid)
                    continue;
                pids[i] = 0;
                left--;
                int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
                if (code != 0) {
                    fprintf(stderr, PROGRAM ": rank %zu exited with %d\n", i, code);
                    status = 1;
                }
            }
            continue;
        }
        if (status != 0 || ab_now() > deadline) {
            if (status == 0)
                fprintf(stderr, PROGRAM ": ranks still running after %d s, killing them\n",
                        timeout_s);
            for (pid_t p : pids)
                if (p > 0)
                    kill(p, SIGKILL);
            status = 1;
        }
        usleep(GLOO_REAP_POLL_US);
    }
    return status;
}

/* A positive integer from the environment, or -1. */
int env_int(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if (v == NULL || *v == '\0')
        return -1;
    n = strtol(v, &end, 10);
    return *end == '\0' && n >= 0 && n <= 1 << 20 ? (int)n : -1;
}

/* One rank started by a launcher (see the file comment). */
int launched_main(ab_opts_t &o)
{
    int rank = env_int("STRATA_RANK"), nranks = env_int("STRATA_NRANKS"), status;

    if (rank < 0 || nranks < 1 || rank >= nranks) {
        fprintf(stderr, PROGRAM ": --store needs STRATA_RANK and STRATA_NRANKS from a launcher "
                        "(strata-run), 0 <= rank < ranks\n");
        return 2;
    }
    if (o.nranks != 0 && o.nranks != nranks) {
        fprintf(stderr, PROGRAM ": --np %d but the launcher started %d ranks\n", o.nranks,
                nranks);
        return 2;
    }
    o.nranks = nranks;
    ab_arm_timeout(&o, PROGRAM);
    try {
        status = rank_main(o, rank, o.store);
    } catch (const std::exception &e) {
        fprintf(stderr, PROGRAM ": rank %d: %s\n", rank, e.what());
        status = 1;
    }
    fflush(stdout);
    return status;
}

} /* namespace */

int main(int argc, char **argv)
{
    static const char usage[] =
        "  --np N      ranks to start (processes on this host), default 2\n"
        "  -A ALGO     ring (default) or hd (halving-doubling)\n"
        "  --store DIR one rank started by a launcher (rank, ranks: STRATA_RANK, STRATA_NRANKS);\n"
        "              DIR is the FileStore, empty, seen by every rank\n"
        "  --iface IF  talk over interface IF (default: 127.0.0.1)\n";
    ab_opts_t o;
    const char *tmpdir = getenv("TMPDIR");
    std::string store_tmpl = std::string(tmpdir != NULL && *tmpdir ? tmpdir : "/tmp") +
                             "/strata-gloo-ab.XXXXXX";
    std::vector<char> store_buf(store_tmpl.begin(), store_tmpl.end());
    char *store_dir;
    std::vector<pid_t> pids;
    pid_t parent = getpid();
    int rc = ab_opts_parse(argc, argv, AB_OPT_NP | AB_OPT_ALGO | AB_OPT_LAUNCHED, usage, &o);

    if (rc != 0)
        return rc < 0 ? 2 : 0;
    if (o.algo == NULL)
        o.algo = "ring";
    if (strcmp(o.algo, "ring") != 0 && strcmp(o.algo, "hd") != 0) {
        fprintf(stderr, PROGRAM ": -A must be ring or hd, not '%s'\n", o.algo);
        return 2;
    }
    if (o.max_bytes / ab_dtype_size(o.dtype) > 0x7fffffff) {
        fprintf(stderr, PROGRAM ": -e %zu is more elements than Gloo's int count\n",
                o.max_bytes);
        return 2;
    }
    if (o.store != NULL)
        return launched_main(o);
    if (o.nranks == 0)
        o.nranks = 2;
    store_buf.push_back('\0');
    store_dir = mkdtemp(store_buf.data());
    if (store_dir == NULL) {
        perror(PROGRAM ": mkdtemp");
        return 1;
    }
    fflush(stdout);
    for (int r = 0; r < o.nranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror(PROGRAM ": fork");
            for (pid_t p : pids)
                kill(p, SIGKILL);
            reap_all(pids, 0);
            remove_store(store_dir);
            return 1;
        }
        if (pid == 0) {
            int status;
            /* Die with the parent; it may have gone before prctl took effect. */
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
                _exit(1);
            ab_arm_timeout(&o, PROGRAM);
            try {
                status = rank_main(o, r, store_dir);
            } catch (const std::exception &e) {
                fprintf(stderr, PROGRAM ": rank %d: %s\n", r, e.what());
                status = 1;
            }
            fflush(stdout);
            _exit(status);
        }
        pids.push_back(pid);
    }
    rc = reap_all(pids, o.timeout_s);
    remove_store(store_dir);
    return rc;
}

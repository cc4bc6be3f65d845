/* TCP rendezvous through rank 0 (see bootstrap.h). */
#include "coll/bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sock.h"
#include "util/time.h"

#define BOOT_MAGIC 0x5354424f4f543031ull   /* "STBOOT01" */
#define BOOT_BACKLOG 4096
#define BOOT_HELLO_NS 5000000000ull        /* a connected rank sends its hello at once */

typedef struct boot_hello {
    uint64_t magic;
    int32_t rank;
    int32_t nranks;
} boot_hello_t;

static uint64_t boot_deadline(const stc_boot_t *boot)
{
    return stu_time_ns() + boot->timeout_ns;
}

static void boot_close_all(stc_boot_t *boot)
{
    if (boot->fds == NULL)
        return;
    for (int i = 0; i < boot->nranks; i++)
        if (boot->fds[i] >= 0)
            close(boot->fds[i]);
    free(boot->fds);
    boot->fds = NULL;
}

/* Lists the ranks that have not arrived, for the timeout message. */
static void boot_warn_missing(const stc_boot_t *boot)
{
    char list[256];
    size_t used = 0;
    int missing = 0;
    for (int i = 1; i < boot->nranks; i++) {
        if (boot->fds[i] >= 0)
            continue;
        missing++;
        if (used + 16 < sizeof(list))
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d", used ? "," : "", i);
    }
    STU_WARN("bootstrap: %d of %d ranks never arrived: %s%s", missing, boot->nranks, list,
             used + 16 >= sizeof(list) ? ",..." : "");
}

static strata_status_t boot_root_accept(stc_boot_t *boot, int listen_fd)
{
    uint64_t deadline = boot_deadline(boot);
    int arrived = 1;

    while (arrived < boot->nranks) {
        int fd;
        boot_hello_t h;
        strata_status_t status = stu_sock_accept(listen_fd, deadline, &fd);
        if (status == STRATA_ERR_TIMEOUT) {
            boot_warn_missing(boot);
            return status;
        }
        if (status != STRATA_OK)
            return status;
        /* a client that connects and says nothing (a probe, a scanner) costs 5 s, not init */
        uint64_t hello_by = stu_time_ns() + BOOT_HELLO_NS;
        status = stu_sock_recv_all(fd, &h, sizeof(h), hello_by < deadline ? hello_by : deadline);
        if (status != STRATA_OK || h.magic != BOOT_MAGIC || h.nranks != boot->nranks ||
            h.rank <= 0 || h.rank >= boot->nranks || boot->fds[h.rank] >= 0) {
            STU_WARN("bootstrap: rejected a hello (%s; magic %llx, rank %d, nranks %d, "
                     "expected nranks %d)", strata_status_str(status),
                     (unsigned long long)h.magic, h.rank, h.nranks, boot->nranks);
            close(fd);
            if (status == STRATA_OK && h.magic == BOOT_MAGIC && h.nranks != boot->nranks)
                return STRATA_ERR_MISMATCH;
            continue;
        }
        boot->fds[h.rank] = fd;
        arrived++;
    }
    return STRATA_OK;
}

strata_status_t stc_boot_init(stc_boot_t *boot, const char *root_addr, int root_fd, int rank,
                              int nranks, uint64_t timeout_ns)
{
    strata_status_t status = STRATA_OK;
    stu_addr_t addr;

    memset(boot, 0, sizeof(*boot));
    boot->rank = rank;
    boot->nranks = nranks;
    boot->timeout_ns = timeout_ns;
    boot->fds = malloc(sizeof(int) * (size_t)(nranks > 0 ? nranks : 1));
    if (boot->fds == NULL)
        return STRATA_ERR_NO_MEMORY;
    for (int i = 0; i < nranks; i++)
        boot->fds[i] = -1;
    if (nranks == 1) {
        if (root_fd >= 0)
            close(root_fd);
        return STRATA_OK;
    }
    if (root_fd < 0 && (root_addr == NULL || *root_addr == '\0')) {
        STU_WARN("bootstrap: no root address: set STRATA_ROOT_ADDR=host:port (or MASTER_ADDR "
                 "and MASTER_PORT)");
        status = STRATA_ERR_INVALID;
        goto err_fds;
    }
    if (root_fd < 0 && (status = stu_addr_parse(root_addr, &addr)) != STRATA_OK)
        goto err_fds;
    if (rank == 0) {
        int lfd = root_fd;
        if (lfd < 0 && (status = stu_sock_listen(&addr, BOOT_BACKLOG, &lfd, NULL)) != STRATA_OK)
            goto err_fds;
        status = boot_root_accept(boot, lfd);
        close(lfd);
    } else {
        boot_hello_t h = {.magic = BOOT_MAGIC, .rank = rank, .nranks = nranks};
        uint64_t deadline = boot_deadline(boot);
        if (root_fd >= 0)
            close(root_fd);
        status = stu_sock_connect(&addr, deadline, &boot->fds[0]);
        if (status == STRATA_OK)
            status = stu_sock_send_all(boot->fds[0], &h, sizeof(h), deadline);
        if (status != STRATA_OK)
            STU_WARN("bootstrap: rank %d could not join the root at %s (%s)", rank, root_addr,
                     strata_status_str(status));
    }
    if (status != STRATA_OK)
        goto err_fds;
    return stc_boot_barrier(boot);
err_fds:
    boot_close_all(boot);
    return status;
}

void stc_boot_fini(stc_boot_t *boot)
{
    boot_close_all(boot);
}

strata_status_t stc_boot_allgather(stc_boot_t *boot, const void *mine, void *all_out,
                                   size_t size)
{
    uint64_t deadline = boot_deadline(boot);
    strata_status_t status;
    char *all = all_out;

    memcpy(all + (size_t)boot->rank * size, mine, size);
    if (boot->nranks == 1)
        return STRATA_OK;
    if (boot->rank != 0) {
        if ((status = stu_sock_send_all(boot->fds[0], mine, size, deadline)) != STRATA_OK)
            return status;
        status = stu_sock_recv_all(boot->fds[0], all, size * (size_t)boot->nranks, deadline);
        if (status != STRATA_OK)
            STU_WARN("bootstrap: rank %d lost the root (%s)", boot->rank,
                     strata_status_str(status));
        return status;
    }
    for (int i = 1; i < boot->nranks; i++) {
        status = stu_sock_recv_all(boot->fds[i], all + (size_t)i * size, size, deadline);
        if (status != STRATA_OK) {
            STU_WARN("bootstrap: no contribution from rank %d (%s)", i, strata_status_str(status));
            return status;
        }
    }
    for (int i = 1; i < boot->nranks; i++) {
        status = stu_sock_send_all(boot->fds[i], all, size * (size_t)boot->nranks, deadline);
        if (status != STRATA_OK) {
            STU_WARN("bootstrap: rank %d unreachable (%s)", i, strata_status_str(status));
            return status;
        }
    }
    return STRATA_OK;
}

strata_status_t stc_boot_barrier(stc_boot_t *boot)
{
    uint8_t mine = 1;
    uint8_t all[boot->nranks];
    return stc_boot_allgather(boot, &mine, all, 1);
}

/* TCP rendezvous through rank 0 (see bootstrap.h); rank 0's side of the join is boot_root.c. */
#include "coll/bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/sock.h"
#include "util/time.h"

#define BOOT_BACKLOG 4096
/* Between a rank's attempts to join after rank 0 closed its connection unanswered. */
#define BOOT_RETRY_NS 20000000ull
/* How long a rank whose connection rank 0 closed unanswered tries to connect again: rank 0
 * listens until its join ends, so a port that refuses for this long (a refusal is
 * immediate; 2 s rides out a loaded host's scheduling) means its join is over: it died or
 * failed, and the rank fails then, not at the deadline. */
#define BOOT_REJOIN_NS 2000000000ull

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

/* The error a rank refused by rank 0 fails with, logged with the cause. */
static strata_status_t boot_refused(const stc_boot_t *boot, const char *root_addr,
                                    const stc_boot_welcome_t *w)
{
    switch (w->verdict) {
    case STC_BOOT_BAD_MAC:
        STU_WARN("bootstrap: rank 0 at %s refused rank %d's job secret: every rank must hold "
                 "the same one (STRATA_JOB_SECRET_FILE, STRATA_JOB_SECRET or strata-run's; "
                 "docs/reliability.md)",
                 root_addr, boot->rank);
        return STRATA_ERR_AUTH;
    case STC_BOOT_BAD_NRANKS:
        STU_WARN("bootstrap: rank 0 at %s runs a job of %d ranks; rank %d was started with %d",
                 root_addr, w->nranks, boot->rank, boot->nranks);
        return STRATA_ERR_MISMATCH;
    case STC_BOOT_DUPLICATE:
        STU_WARN("bootstrap: rank 0 at %s has rank %d already (two processes with one rank?)",
                 root_addr, boot->rank);
        return STRATA_ERR_MISMATCH;
    default:
        STU_WARN("bootstrap: rank 0 at %s refused rank %d: %s", root_addr, boot->rank,
                 stc_boot_verdict_str(w->verdict));
        return STRATA_ERR_INVALID;
    }
}

/*
 * One attempt to join: challenge, hello, welcome. STRATA_INPROGRESS when rank 0 closed the
 * connection before it answered (it was busy, or this rank too slow): try again.
 */
static strata_status_t boot_join_once(stc_boot_t *boot, const stu_addr_t *addr,
                                      const char *root_addr, uint64_t deadline,
                                      uint64_t connect_by)
{
    uint8_t challenge[STC_BOOT_CHALLENGE_BYTES], hello[STC_BOOT_HELLO_BYTES];
    uint8_t welcome[STC_BOOT_WELCOME_BYTES], root_nonce[STC_BOOT_NONCE_BYTES];
    stc_boot_hello_t h = {.rank = boot->rank, .nranks = boot->nranks};
    stc_boot_welcome_t w;
    const char *why = NULL;
    int fd, authentic = 0;

    strata_status_t status = stu_sock_connect(addr, connect_by, &fd);
    if (status != STRATA_OK)
        return status;
    status = stu_sock_recv_all(fd, challenge, sizeof(challenge), deadline);
    if (status == STRATA_OK) {
        if (stc_boot_challenge_decode(challenge, root_nonce, &why) != STRATA_OK) {
            STU_WARN("bootstrap: %s is not rank 0's rendezvous: %s", root_addr, why);
            status = STRATA_ERR_AUTH;
        } else if (getrandom(h.nonce, sizeof(h.nonce), 0) != (ssize_t)sizeof(h.nonce)) {
            status = STRATA_ERR_IO;
        }
    }
    if (status == STRATA_OK) {
        stc_boot_hello_encode(boot->key, challenge, &h, hello);
        status = stu_sock_send_all(fd, hello, sizeof(hello), deadline);
    }
    if (status == STRATA_OK)
        status = stu_sock_recv_all(fd, welcome, sizeof(welcome), deadline);
    if (status == STRATA_ERR_REMOTE) {
        close(fd); /* closed unanswered: rank 0 was busy, or this rank too slow */
        return STRATA_INPROGRESS;
    }
    if (status == STRATA_OK &&
        stc_boot_welcome_check(boot->key, hello, welcome, &w, &authentic, &why) != STRATA_OK) {
        STU_WARN("bootstrap: rank 0 at %s: %s; not joining it", root_addr, why);
        status = STRATA_ERR_AUTH;
    }
    if (status == STRATA_OK && w.verdict != STC_BOOT_OK)
        status = boot_refused(boot, root_addr, &w);
    if (status != STRATA_OK) {
        close(fd);
        return status;
    }
    memcpy(boot->session, w.session, sizeof(boot->session));
    boot->fds[0] = fd;
    return STRATA_OK;
}

static strata_status_t boot_join(stc_boot_t *boot, const stu_addr_t *addr,
                                 const char *root_addr)
{
    uint64_t deadline = boot_deadline(boot);
    int attempts = 0;

    for (;;) {
        /* after the first attempt, rank 0 was there: its port must take us again soon */
        uint64_t now = stu_time_ns();
        uint64_t connect_by = attempts > 0 && now + BOOT_REJOIN_NS < deadline
                                  ? now + BOOT_REJOIN_NS : deadline;
        strata_status_t status = boot_join_once(boot, addr, root_addr, deadline, connect_by);
        attempts++;
        if (status == STRATA_ERR_TIMEOUT && connect_by < deadline &&
            stu_time_ns() < deadline) {
            STU_WARN("bootstrap: rank 0 at %s closed rank %d's connection unanswered and no "
                     "longer takes connections: its join ended (rank 0 died, or its init "
                     "failed)", root_addr, boot->rank);
            return STRATA_ERR_REMOTE;
        }
        if (status != STRATA_INPROGRESS) {
            if (status != STRATA_OK)
                STU_WARN("bootstrap: rank %d could not join the root at %s after %d attempt(s) "
                         "(%s)",
                         boot->rank, root_addr, attempts, strata_status_str(status));
            return status;
        }
        STU_INFO(STU_LOG_INIT,
                 "bootstrap: rank 0 at %s closed rank %d's connection before "
                 "answering; joining again",
                 root_addr, boot->rank);
        if (stu_time_ns() + BOOT_RETRY_NS >= deadline) {
            STU_WARN("bootstrap: rank %d could not join the root at %s before the timeout",
                     boot->rank, root_addr);
            return STRATA_ERR_TIMEOUT;
        }
        struct timespec ts = {0, (long)BOOT_RETRY_NS};
        nanosleep(&ts, NULL);
    }
}

strata_status_t stc_boot_init(stc_boot_t *boot, const char *root_addr, int root_fd, int rank,
                              int nranks, uint64_t timeout_ns,
                              const uint8_t key[STC_BOOT_KEY_BYTES])
{
    strata_status_t status = STRATA_OK;
    stu_addr_t addr;

    memset(boot, 0, sizeof(*boot));
    boot->rank = rank;
    boot->nranks = nranks;
    boot->timeout_ns = timeout_ns;
    memcpy(boot->key, key, sizeof(boot->key));
    boot->fds = malloc(sizeof(int) * (size_t)(nranks > 0 ? nranks : 1));
    if (boot->fds == NULL) {
        if (root_fd >= 0)
            close(root_fd);
        return STRATA_ERR_NO_MEMORY;
    }
    for (int i = 0; i < nranks; i++)
        boot->fds[i] = -1;
    if (nranks == 1) {
        if (root_fd >= 0)
            close(root_fd);
        return getrandom(boot->session, sizeof(boot->session), 0) ==
                       (ssize_t)sizeof(boot->session)
                   ? STRATA_OK
                   : STRATA_ERR_IO;
    }
    if (root_fd < 0 && (root_addr == NULL || *root_addr == '\0')) {
        STU_WARN("bootstrap: no root address: set STRATA_ROOT_ADDR=host:port (or MASTER_ADDR "
                 "and MASTER_PORT)");
        status = STRATA_ERR_INVALID;
        goto err_fds;
    }
    if (root_fd < 0 && (status = stu_addr_parse(root_addr, &addr)) != STRATA_OK) {
        STU_WARN("bootstrap: the root address '%s' (STRATA_ROOT_ADDR, or MASTER_ADDR and "
                 "MASTER_PORT) is not host:port",
                 root_addr);
        goto err_fds;
    }
    if (rank == 0) {
        int lfd = root_fd;
        if (lfd < 0 && (status = stu_sock_listen(&addr, BOOT_BACKLOG, &lfd, NULL)) != STRATA_OK)
            goto err_fds;
        status = stc_boot_root_accept(boot, lfd);
    } else {
        if (root_fd >= 0)
            close(root_fd);
        status = boot_join(boot, &addr, root_addr);
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
    stu_secure_zero(boot->key, sizeof(boot->key));
}

void stc_boot_conn_token(const stc_boot_t *boot, int from, int to,
                         uint8_t out[STC_BOOT_MAC_BYTES])
{
    stc_boot_token_make(boot->key, boot->session, from, to, out);
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
        status = stu_sock_send_all(boot->fds[0], mine, size, deadline);
        if (status == STRATA_OK)
            status = stu_sock_recv_all(boot->fds[0], all, size * (size_t)boot->nranks,
                                       deadline);
        /* a send into a root that died fails as its answer would: both say so */
        if (status == STRATA_ERR_REMOTE)
            STU_WARN("bootstrap: rank %d lost the root: rank 0 closed its connection (it "
                     "died, or its init failed)", boot->rank);
        else if (status != STRATA_OK)
            STU_WARN("bootstrap: rank %d lost the root, rank 0 (%s)", boot->rank,
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
    strata_status_t status = stc_boot_allgather(boot, &mine, all, 1);
    if (status != STRATA_OK)
        return status;
    for (int i = 0; i < boot->nranks; i++) {
        if (all[i] == 1)
            continue;
        char list[256] = "";
        size_t used = 0;
        for (int j = 0; j < boot->nranks && used + 16 < sizeof(list); j++)
            if (all[j] == STC_BOOT_BARRIER_ABSENT)
                used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d",
                                         used ? "," : "", j);
        if (all[i] == STC_BOOT_BARRIER_DIED)
            STU_WARN("bootstrap: rank %d: rank 0 ended the join because rank %d joined and "
                     "then closed its connection (it died, or its init failed)%s%s%s",
                     boot->rank, i, used ? "; ranks " : "", list,
                     used ? " had not arrived" : "");
        else
            STU_WARN("bootstrap: rank %d: rank 0's barrier answer is not one (%u at rank %d)",
                     boot->rank, all[i], i);
        return STRATA_ERR_REMOTE;
    }
    return STRATA_OK;
}

/*
 * Rank 0's side of the rendezvous's join (coll/bootstrap.h): every pending
 * connection is served at once from one poll loop, so a silent or slow
 * stranger costs one slot for STC_BOOT_AUTH_NS, never the others' time; a
 * connection that sends anything but a valid hello is closed as soon as its
 * 64 bytes are in. Only a HELLO whose MAC proves the job key can claim a
 * rank; a rank of this job with another rank count, a rank out of range or a
 * rank that joined already is told so (a signed WELCOME) and closed, and the
 * join goes on for the others.
 *
 * Joined ranks are watched while the join waits for the rest: a rank whose
 * connection closes (it died, or its init failed) ends the join at once with
 * STRATA_ERR_REMOTE naming it, and every other joined rank is told in its
 * first barrier's answer (bootstrap.c: STC_BOOT_BARRIER_DIED at the dead
 * rank's place), instead of all of them waiting for the late ranks and then
 * for a contribution that cannot come.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coll/bootstrap.h"
#include "util/log.h"
#include "util/sock.h"
#include "util/time.h"

/* Rejections of strangers logged one by one; later ones are only counted (a flood). */
#define ROOT_WARN_MAX 8

/* Why a connection was closed before it joined, for the closing summary. */
enum {
    ROOT_DROP_SILENT,  /* no complete hello within STC_BOOT_AUTH_NS */
    ROOT_DROP_CLOSED,  /* closed or reset by the peer */
    ROOT_DROP_FOREIGN, /* not a hello of this protocol version */
    ROOT_DROP_BAD_MAC, /* did not prove the job key */
    ROOT_DROP_REFUSED, /* this job's key, refused (rank count, range, duplicate) */
    ROOT_DROP_COUNT
};

typedef struct root_pending {
    int fd;
    uint64_t expires;
    size_t got;
    uint8_t challenge[STC_BOOT_CHALLENGE_BYTES];
    uint8_t hello[STC_BOOT_HELLO_BYTES];
    char peer[64];
} root_pending_t;

typedef struct root {
    stc_boot_t *boot;
    int lfd;
    struct pollfd *pfd;    /* pending, the listener, joined ranks */
    int *pfd_rank;         /* the joined rank of each of pfd's last entries */
    int npend;
    int arrived;
    int warned;
    unsigned drops[ROOT_DROP_COUNT];
    root_pending_t pend[STC_BOOT_PENDING_MAX];
} root_t;

static void root_peer_name(int fd, char *buf, size_t len)
{
    stu_addr_t a;
    a.len = sizeof(a.ss);
    if (getpeername(fd, (struct sockaddr *)&a.ss, &a.len) == 0)
        stu_addr_format(&a, buf, len);
    else
        snprintf(buf, len, "(unknown peer)");
}

/* Closes pending connection i (its slot takes the last one's place). */
static void root_drop(root_t *r, int i, int why, const char *detail)
{
    root_pending_t *p = &r->pend[i];

    r->drops[why]++;
    if (why != ROOT_DROP_REFUSED && detail != NULL && r->warned++ < ROOT_WARN_MAX)
        STU_WARN("bootstrap: closed a connection from %s: %s%s", p->peer, detail,
                 r->warned == ROOT_WARN_MAX ? " (further ones are only counted)" : "");
    close(p->fd);
    r->pend[i] = r->pend[--r->npend];
}

static void root_summary(const root_t *r)
{
    unsigned total = 0;
    for (int i = 0; i < ROOT_DROP_COUNT; i++)
        total += r->drops[i];
    if (total == 0)
        return;
    STU_WARN("bootstrap: closed %u connection(s) that did not join: %u silent past %llu ms, %u "
             "closed by the peer, %u not a Strata rendezvous, %u without the job secret, %u "
             "refused ranks",
             total, r->drops[ROOT_DROP_SILENT],
             (unsigned long long)(STC_BOOT_AUTH_NS / 1000000), r->drops[ROOT_DROP_CLOSED],
             r->drops[ROOT_DROP_FOREIGN], r->drops[ROOT_DROP_BAD_MAC],
             r->drops[ROOT_DROP_REFUSED]);
}

/* The ranks that have not arrived, "3,5,..." into list; returns how many. */
static int root_missing(const stc_boot_t *boot, char *list, size_t len)
{
    size_t used = 0;
    int missing = 0;

    list[0] = '\0';
    for (int i = 1; i < boot->nranks; i++) {
        if (boot->fds[i] >= 0)
            continue;
        missing++;
        if (used + 16 < len)
            used += (size_t)snprintf(list + used, len - used, "%s%d", used ? "," : "", i);
        else if (used + 4 < len && list[used - 1] != '.')
            used += (size_t)snprintf(list + used, len - used, ",...");
    }
    return missing;
}

/* Lists the ranks that have not arrived, for the timeout message. */
static void root_warn_missing(const stc_boot_t *boot)
{
    char list[256];
    int missing = root_missing(boot, list, sizeof(list));
    STU_WARN("bootstrap: %d of %d ranks never arrived: %s", missing, boot->nranks, list);
}

/*
 * Joined rank `dead` closed its connection: tells every other joined rank (the answer to
 * its first barrier, STC_BOOT_BARRIER_DIED at dead's place, STC_BOOT_BARRIER_ABSENT at each
 * rank that had not arrived) and fails the join. What a rank sent for its barrier is read
 * first, so closing its socket sends a FIN, not a reset that could overtake the answer.
 */
static strata_status_t root_joined_died(root_t *r, int dead)
{
    stc_boot_t *boot = r->boot;
    uint8_t *answer = malloc((size_t)boot->nranks);
    char list[256], junk[64];

    int missing = root_missing(boot, list, sizeof(list));
    STU_WARN("bootstrap: rank %d joined and then closed its connection (it died, or its init "
             "failed) while %d rank(s) had not arrived (%s); ending the join",
             dead, missing, list);
    close(boot->fds[dead]);
    boot->fds[dead] = -1;
    for (int i = 0; answer != NULL && i < boot->nranks; i++)
        answer[i] = i == dead ? STC_BOOT_BARRIER_DIED
                    : i == 0 || boot->fds[i] >= 0 ? 1 : STC_BOOT_BARRIER_ABSENT;
    for (int i = 1; answer != NULL && i < boot->nranks; i++) {
        if (boot->fds[i] < 0)
            continue;
        while (recv(boot->fds[i], junk, sizeof(junk), MSG_DONTWAIT) > 0)
            ;
        (void)send(boot->fds[i], answer, (size_t)boot->nranks, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    free(answer);
    return STRATA_ERR_REMOTE;
}

/* Accepts what the backlog holds while slots are free, and challenges each. */
static strata_status_t root_accept_some(root_t *r)
{
    while (r->npend < STC_BOOT_PENDING_MAX) {
        int fd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                errno == ECONNABORTED)
                return STRATA_OK;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: serve the pending ones first, accept again later */
                STU_INFO(STU_LOG_INIT, "bootstrap: accept: %s", strerror(errno));
                return STRATA_OK;
            }
            STU_WARN("bootstrap: accept: %s", strerror(errno));
            return STRATA_ERR_IO;
        }
        root_pending_t *p = &r->pend[r->npend++];
        uint8_t nonce[STC_BOOT_NONCE_BYTES];
        int one = 1;
        memset(p, 0, sizeof(*p));
        p->fd = fd;
        p->expires = stu_time_ns() + STC_BOOT_AUTH_NS;
        root_peer_name(fd, p->peer, sizeof(p->peer));
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
            STU_WARN("bootstrap: getrandom: %s", strerror(errno));
            return STRATA_ERR_IO;
        }
        stc_boot_challenge_encode(nonce, p->challenge);
        /* a new socket's send buffer is empty: the 24 bytes go at once or the peer is gone */
        if (send(fd, p->challenge, sizeof(p->challenge), MSG_NOSIGNAL | MSG_DONTWAIT) !=
            (ssize_t)sizeof(p->challenge))
            root_drop(r, r->npend - 1, ROOT_DROP_CLOSED, NULL);
    }
    return STRATA_OK;
}

/* Answers a complete hello: a rank joins, or the connection is told why not and closed. */
static void root_judge(root_t *r, int i)
{
    root_pending_t *p = &r->pend[i];
    stc_boot_t *boot = r->boot;
    stc_boot_hello_t h;
    stc_boot_welcome_t w = {.nranks = boot->nranks};
    uint8_t out[STC_BOOT_WELCOME_BYTES];
    const char *why = NULL;

    memcpy(w.session, boot->session, sizeof(w.session));
    if (stc_boot_hello_check(boot->key, p->challenge, p->hello, boot->nranks, &h, &w.verdict,
                             &why) != STRATA_OK) {
        root_drop(r, i, ROOT_DROP_FOREIGN, why);
        return;
    }
    if (w.verdict == STC_BOOT_OK && boot->fds[h.rank] >= 0)
        w.verdict = STC_BOOT_DUPLICATE;
    if (w.verdict == STC_BOOT_BAD_MAC) {
        /* unsigned: nothing computed from the key goes to someone who does not hold it */
        stc_boot_welcome_encode(NULL, p->hello, &w, out);
        (void)send(p->fd, out, sizeof(out), MSG_NOSIGNAL | MSG_DONTWAIT);
        root_drop(r, i, ROOT_DROP_BAD_MAC,
                  "its hello does not prove this job's secret (a stranger, or a rank started "
                  "with another STRATA_JOB_SECRET)");
        return;
    }
    stc_boot_welcome_encode(boot->key, p->hello, &w, out);
    strata_status_t status =
        stu_sock_send_all(p->fd, out, sizeof(out), stu_time_ns() + STC_BOOT_AUTH_NS);
    if (w.verdict != STC_BOOT_OK) {
        STU_WARN("bootstrap: refused rank %d (of %d) from %s: %s; this job has %d ranks",
                 h.rank, h.nranks, p->peer, stc_boot_verdict_str(w.verdict), boot->nranks);
        root_drop(r, i, ROOT_DROP_REFUSED, NULL);
        return;
    }
    if (status != STRATA_OK) {
        root_drop(r, i, ROOT_DROP_CLOSED, NULL); /* the rank connects again */
        return;
    }
    boot->fds[h.rank] = p->fd;
    r->arrived++;
    r->pend[i] = r->pend[--r->npend];
}

/* Reads what pending connection i has sent; judges it once the hello is whole. */
static void root_read(root_t *r, int i)
{
    root_pending_t *p = &r->pend[i];
    ssize_t n = recv(p->fd, p->hello + p->got, sizeof(p->hello) - p->got, MSG_DONTWAIT);

    if (n > 0) {
        p->got += (size_t)n;
        if (p->got == sizeof(p->hello))
            root_judge(r, i);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    root_drop(r, i, ROOT_DROP_CLOSED, NULL);
}

static int root_ms_until(uint64_t now, uint64_t t)
{
    uint64_t ms = t > now ? (t - now + 999999) / 1000000 : 0;
    return ms > 1000000 ? 1000000 : (int)ms;
}

static strata_status_t root_loop(root_t *r, uint64_t deadline)
{
    struct pollfd *pfd = r->pfd;

    while (r->arrived < r->boot->nranks) {
        uint64_t now = stu_time_ns();
        if (now >= deadline) {
            root_warn_missing(r->boot);
            return STRATA_ERR_TIMEOUT;
        }
        uint64_t wake = deadline;
        for (int i = r->npend - 1; i >= 0; i--) {
            if (r->pend[i].expires > now)
                continue;
            /* what arrived while this process was not running still counts */
            int fd = r->pend[i].fd;
            root_read(r, i);
            if (i < r->npend && r->pend[i].fd == fd)
                root_drop(r, i, ROOT_DROP_SILENT, "no valid hello within a second");
        }
        for (int i = 0; i < r->npend; i++)
            if (r->pend[i].expires < wake)
                wake = r->pend[i].expires;
        int n = 0;
        for (int i = 0; i < r->npend; i++)
            pfd[n++] = (struct pollfd){.fd = r->pend[i].fd, .events = POLLIN};
        int listening = r->npend < STC_BOOT_PENDING_MAX;
        if (listening)
            pfd[n++] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
        /* joined ranks: only their hang-up (their barrier's byte may already be there) */
        int joined_at = n;
        for (int i = 1; i < r->boot->nranks; i++)
            if (r->boot->fds[i] >= 0) {
                r->pfd_rank[n - joined_at] = i;
                pfd[n++] = (struct pollfd){.fd = r->boot->fds[i], .events = POLLRDHUP};
            }
        int rc = poll(pfd, (nfds_t)n, root_ms_until(now, wake));
        if (rc < 0 && errno != EINTR) {
            STU_WARN("bootstrap: poll: %s", strerror(errno));
            return STRATA_ERR_IO;
        }
        if (rc <= 0)
            continue;
        for (int i = joined_at; i < n; i++)
            if (pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR))
                return root_joined_died(r, r->pfd_rank[i - joined_at]);
        /* pending first, last to first: a judged or dropped slot takes the last one's place */
        int npoll = listening ? joined_at - 1 : joined_at;
        for (int i = npoll - 1; i >= 0; i--)
            if (pfd[i].revents != 0)
                root_read(r, i);
        if (listening && pfd[joined_at - 1].revents != 0) {
            strata_status_t status = root_accept_some(r);
            if (status != STRATA_OK)
                return status;
        }
    }
    return STRATA_OK;
}

strata_status_t stc_boot_root_accept(stc_boot_t *boot, int lfd)
{
    static root_t zero;
    root_t *r = malloc(sizeof(*r));
    strata_status_t status;

    if (r == NULL) {
        close(lfd);
        return STRATA_ERR_NO_MEMORY;
    }
    *r = zero;
    r->boot = boot;
    r->lfd = lfd;
    r->arrived = 1;
    r->pfd = calloc(STC_BOOT_PENDING_MAX + 1 + (size_t)boot->nranks, sizeof(*r->pfd));
    r->pfd_rank = calloc((size_t)boot->nranks, sizeof(*r->pfd_rank));
    if (r->pfd == NULL || r->pfd_rank == NULL) {
        status = STRATA_ERR_NO_MEMORY;
    } else if (fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK) != 0) {
        STU_WARN("bootstrap: the listening socket: %s", strerror(errno));
        status = STRATA_ERR_IO;
    } else if (getrandom(boot->session, sizeof(boot->session), 0) !=
               (ssize_t)sizeof(boot->session)) {
        STU_WARN("bootstrap: getrandom: %s", strerror(errno));
        status = STRATA_ERR_IO;
    } else {
        status = root_loop(r, stu_time_ns() + boot->timeout_ns);
    }
    for (int i = 0; i < r->npend; i++)
        close(r->pend[i].fd); /* still pending when the join ended: never a rank */
    root_summary(r);
    close(lfd);
    free(r->pfd);
    free(r->pfd_rank);
    free(r);
    return status;
}

/*
 * CollNet connect: NCCL calls it once per head with every member's handle, blocking, and
 * frees the handles as soon as it returns. It must succeed or fail identically on every
 * member (a member that returns while others fail hangs NCCL's next allgather).
 *
 *   1. handles: each must be a CollNet handle, nonces distinct; this member's position is the
 *      index of its own nonce. Every member checks the same bytes, so all decide alike.
 *   2. links: to the positions any schedule exchanges with (algos/sched.h's peer set:
 *      ring neighbours, recursive-doubling partners), each both ways: connect to the peer's
 *      transport handle, accept from our own listen comm; the first message on every
 *      connection is a hello naming the group, its sender and its addressee, so accepted
 *      connections are told apart and strays refused. A device that takes GPU memory also
 *      gets a self link (a connection to this member's own listen comm) for staging.
 *   3. agreement: a ring allgather of one record per member (did it build its links, its
 *      NCCL rank, its cost model and knobs) on the executor itself. Every member that gets
 *      through it holds the same records and decides the same: all built, one group, NCCL's
 *      ranks a permutation; member 0's model builds everyone's selection table.
 * A member that fails before the agreement closes its connections, which fails its peers
 * (the transport reports the closed connection) and they theirs; anything slower is caught by
 * STRATA_TIMEOUT. On failure the listen comm is freed here: NCCL forgets it.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "plugin/collnet.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* Naps between connection passes that moved nothing: from 10 us, doubling to 1 ms. */
#define CN_NAP_MIN_NS 10000
#define CN_NAP_MAX_NS 1000000

/* One link being built. */
typedef struct cn_pending {
    uint8_t xhandle[STT_HANDLE_SIZE];   /* the peer's transport handle; connect's state after */
    uint8_t hello_out[STP_CN_HELLO_BYTES];
    stt_req_t *hello_req;
    int hello_sent;
} cn_pending_t;

/* A connection accepted, its hello not read yet. */
typedef struct cn_accepted {
    stt_comm_t *recv;
    stt_req_t *req;
    uint8_t hello_in[STP_CN_HELLO_BYTES];
} cn_accepted_t;

typedef struct cn_build {
    stp_cn_comm_t *c;
    stp_cn_listen_t *listen;
    cn_pending_t *pend;                 /* [nconn] */
    cn_accepted_t *acc;                 /* [nconn] */
    int naccepted, nidentified;
    uint64_t deadline;
} cn_build_t;

static strata_status_t cn_fail(const stp_cn_comm_t *c, strata_status_t status, const char *fmt,
                               ...) STU_PRINTF(3, 4);

static strata_status_t cn_fail(const stp_cn_comm_t *c, strata_status_t status, const char *fmt,
                               ...)
{
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    STU_WARN("Strata collnet: connect of comm 0x%" PRIx64 " (member %d of %d) failed: %s (%s)",
             c->comm_id, c->pos, c->nranks, msg, strata_status_str(status));
    return status;
}

/* Step 1: decodes every handle; this member's position. */
static strata_status_t cn_handles(stp_cn_comm_t *c, void *handles[], uint64_t my_nonce,
                                  uint8_t (*xhandles)[STP_CN_HANDLE_XPORT_BYTES])
{
    uint64_t *nonces = calloc((size_t)c->nranks, sizeof(*nonces));
    strata_status_t status = STRATA_OK;

    if (nonces == NULL)
        return STRATA_ERR_NO_MEMORY;
    c->pos = -1;
    for (int i = 0; i < c->nranks && status == STRATA_OK; i++) {
        stp_cn_handle_t h;
        if (handles[i] == NULL || stp_cn_handle_decode(handles[i], i, &h) != STRATA_OK) {
            status = cn_fail(c, STRATA_ERR_INVALID, "handle %d is missing or not ours", i);
            break;
        }
        nonces[i] = h.nonce;
        memcpy(xhandles[i], handles[i], STP_CN_HANDLE_XPORT_BYTES);
        for (int j = 0; j < i; j++)
            if (nonces[j] == h.nonce)
                status = cn_fail(c, STRATA_ERR_INVALID, "handles %d and %d are the same"
                                 " listener's", j, i);
        if (h.nonce == my_nonce)
            c->pos = i;
    }
    if (status == STRATA_OK && c->pos < 0)
        status = cn_fail(c, STRATA_ERR_INVALID, "this member's own handle is not among the %d",
                         c->nranks);
    if (status == STRATA_OK)
        c->group = stp_cn_group_id(nonces, c->nranks);
    free(nonces);
    return status;
}

/* Step 2a: the peer set (and the self link when the device takes GPU memory), and the arrays
 * that hang off the comm. */
static strata_status_t cn_links_alloc(stp_cn_comm_t *c)
{
    int peers[STA_SCHED_MAX_PEERS];
    const stt_props_t *props = stp_state_props(c->dev);
    c->nlinks = sta_sched_peers(c->nranks, c->pos, peers, STA_SCHED_MAX_PEERS);
    c->stage_all = stu_param_int(STU_PARAM_COLLNET_STAGE) != 0;
    c->nconn = c->nlinks +
               (c->stage_all || (props != NULL && (props->ptr_support & STT_PTR_CUDA)) ? 1 : 0);
    c->links = calloc((size_t)STU_MAX(c->nconn, 1), sizeof(*c->links));
    c->link_of = calloc((size_t)c->nranks, sizeof(int));
    c->rank_of = calloc((size_t)c->nranks, sizeof(int));
    c->pos_of = calloc((size_t)c->nranks, sizeof(int));
    if (c->links == NULL || c->link_of == NULL || c->rank_of == NULL || c->pos_of == NULL)
        return STRATA_ERR_NO_MEMORY;
    for (int p = 0; p < c->nranks; p++) {
        c->link_of[p] = -1;
        c->rank_of[p] = c->pos_of[p] = p;     /* until the agreement says otherwise */
    }
    for (int l = 0; l < c->nlinks; l++) {
        c->links[l].pos = peers[l];
        c->link_of[peers[l]] = l;
    }
    if (c->nconn > c->nlinks)
        c->links[c->nlinks].pos = c->pos;     /* the self link; link_of[pos] stays -1 */
    return STRATA_OK;
}

/* Connects every link that has no send comm yet and sends its hello. */
static strata_status_t cn_pass_connect(cn_build_t *b, int *moved)
{
    stp_cn_comm_t *c = b->c;
    stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};

    for (int l = 0; l < c->nconn; l++) {
        cn_pending_t *p = &b->pend[l];
        if (c->links[l].send == NULL) {
            strata_status_t status = stt_connect(c->ops, c->dev, p->xhandle, &cfg,
                                                 &c->links[l].send);
            if (status == STRATA_ERR_TIMEOUT && stu_time_ns() < b->deadline)
                continue;                     /* the peer is late to connect: try again */
            if (status != STRATA_OK)
                return cn_fail(c, status, "connecting to member %d", c->links[l].pos);
            if (c->links[l].send == NULL)
                continue;
            *moved = 1;
        }
        if (p->hello_req == NULL && !p->hello_sent) {
            stp_cn_hello_t h = {.group = c->group, .from = (uint32_t)c->pos,
                                .to = (uint32_t)c->links[l].pos, .nranks = (uint32_t)c->nranks};
            stp_cn_hello_encode(p->hello_out, &h);
            strata_status_t status = stt_isend(c->links[l].send, p->hello_out,
                                               STP_CN_HELLO_BYTES, 0, NULL, &p->hello_req);
            if (status != STRATA_OK)
                return cn_fail(c, status, "sending the hello to member %d", c->links[l].pos);
            *moved |= p->hello_req != NULL;
        }
        if (p->hello_req != NULL) {
            int done = 0;
            strata_status_t status = stt_test(p->hello_req, &done, NULL);
            if (status != STRATA_OK)
                return cn_fail(c, status, "sending the hello to member %d", c->links[l].pos);
            if (done) {
                p->hello_req = NULL;
                p->hello_sent = 1;
                *moved = 1;
            }
        }
    }
    return STRATA_OK;
}

/* A hello arrived on accepted connection a: which link it is. */
static strata_status_t cn_identify(cn_build_t *b, cn_accepted_t *a)
{
    stp_cn_comm_t *c = b->c;
    stp_cn_hello_t h = {0};

    if (stp_cn_hello_check(a->hello_in, c->group, c->pos, c->nranks, &h) != STRATA_OK)
        return cn_fail(c, STRATA_ERR_REMOTE, "a connection that is not from this group's"
                       " member (hello: group %016" PRIx64 " from %u to %u of %u)", h.group,
                       h.from, h.to, h.nranks);
    int l = h.from == (uint32_t)c->pos && c->nconn > c->nlinks ? c->nlinks : c->link_of[h.from];
    if (l < 0 || c->links[l].recv != NULL)
        return cn_fail(c, STRATA_ERR_REMOTE, "member %u connected %s", h.from,
                       l < 0 ? "without being a peer" : "twice");
    c->links[l].recv = a->recv;
    a->recv = NULL;
    b->nidentified++;
    return STRATA_OK;
}

/* Accepts connections and reads their hellos. */
static strata_status_t cn_pass_accept(cn_build_t *b, int *moved)
{
    stp_cn_comm_t *c = b->c;

    while (b->naccepted < c->nconn) {
        stt_comm_t *recv = NULL;
        strata_status_t status = stt_accept(b->listen->listen, &recv);
        if (status != STRATA_OK)
            return cn_fail(c, status, "accepting a connection");
        if (recv == NULL)
            break;
        b->acc[b->naccepted++].recv = recv;
        *moved = 1;
    }
    for (int i = 0; i < b->naccepted; i++) {
        cn_accepted_t *a = &b->acc[i];
        if (a->recv == NULL)
            continue;                          /* identified */
        if (a->req == NULL) {
            void *data = a->hello_in;
            size_t size = STP_CN_HELLO_BYTES;
            int tag = 0;
            void *mh = NULL;
            strata_status_t status = stt_irecv(a->recv, 1, &data, &size, &tag, &mh, &a->req);
            if (status != STRATA_OK)
                return cn_fail(c, status, "receiving a hello");
            if (a->req == NULL)
                continue;
        }
        int done = 0;
        size_t got[STT_MAX_RECVS];
        strata_status_t status = stt_test(a->req, &done, got);
        if (status != STRATA_OK)
            return cn_fail(c, status, "receiving a hello");
        if (!done)
            continue;
        a->req = NULL;
        *moved = 1;
        if (got[0] != STP_CN_HELLO_BYTES)
            return cn_fail(c, STRATA_ERR_REMOTE, "a hello of %zu bytes", got[0]);
        if ((status = cn_identify(b, a)) != STRATA_OK)
            return status;
    }
    return STRATA_OK;
}

static int cn_links_done(const cn_build_t *b)
{
    for (int l = 0; l < b->c->nconn; l++)
        if (!b->pend[l].hello_sent || b->c->links[l].recv == NULL)
            return 0;
    return 1;
}

/* Step 2b: every link, both ways, by the deadline. */
static strata_status_t cn_links_build(cn_build_t *b,
                                      uint8_t (*xhandles)[STP_CN_HANDLE_XPORT_BYTES])
{
    stp_cn_comm_t *c = b->c;
    uint64_t nap = CN_NAP_MIN_NS;
    strata_status_t status = STRATA_OK;

    for (int l = 0; l < c->nconn; l++)
        memcpy(b->pend[l].xhandle, xhandles[c->links[l].pos], STP_CN_HANDLE_XPORT_BYTES);
    while (!cn_links_done(b)) {
        int moved = 0;
        if ((status = cn_pass_connect(b, &moved)) != STRATA_OK ||
            (status = cn_pass_accept(b, &moved)) != STRATA_OK)
            return status;
        if (moved) {
            nap = CN_NAP_MIN_NS;
            continue;
        }
        if (stu_time_ns() > b->deadline) {
            for (int l = 0; l < c->nconn; l++)
                if (!b->pend[l].hello_sent || c->links[l].recv == NULL)
                    return cn_fail(c, STRATA_ERR_TIMEOUT, "member %d: %s within STRATA_TIMEOUT",
                                   c->links[l].pos, c->links[l].recv == NULL
                                       ? "no connection from it" : "could not connect to it");
        }
        struct timespec ts = {0, (long)nap};
        nanosleep(&ts, NULL);
        nap = STU_MIN(nap * 2, (uint64_t)CN_NAP_MAX_NS);
    }
    return STRATA_OK;
}

/* This host's id in the records: members with the same one share its cores. */
static uint64_t cn_host_id(void)
{
    char host[HOST_NAME_MAX + 1] = "";

    if (gethostname(host, sizeof(host) - 1) != 0)
        strcpy(host, "localhost");
    return stp_cn_host_id(host);
}

/*
 * What test() does when nothing moves (collnet_idle.c), STRATA_COLLNET_WAIT, this member's
 * own: spin, poll, or auto. auto returns at once where the members on this host fit its
 * cores (where they took every core, a member that slept paid a wake-up per hop whenever its
 * peer's data took over 2 us); where they outnumber them, returning at once wins while the
 * host runs nothing else and loses 2-5x beside busy processes, so the host's load decides
 * (collnet_load.h; docs/collnet-protocol.md, "Waiting").
 */
static stp_cn_wait_t cn_wait_mode(stp_cn_comm_t *c, const uint8_t *recs)
{
    const char *mode = stu_param_str(STU_PARAM_COLLNET_WAIT);
    const uint64_t mine = cn_host_id();
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    stp_cn_wait_t wait;
    int here = 0;

    for (int p = 0; p < c->nranks; p++) {
        stp_cn_record_t r;
        if (stp_cn_record_decode(recs + (size_t)p * STP_CN_RECORD_BYTES, &r) == STRATA_OK)
            here += r.host == mine;
    }
    if (strcasecmp(mode, "poll") == 0)
        wait = STP_CN_WAIT_POLL;
    else if (strcasecmp(mode, "spin") == 0)
        wait = STP_CN_WAIT_SPIN;
    else
        wait = ncpu > 0 && here > ncpu ? STP_CN_WAIT_LOAD : STP_CN_WAIT_SPIN;
    stp_cn_load_init(&c->load, here);
    STU_INFO(STU_LOG_NET, "Strata collnet: comm 0x%" PRIx64 " member %d: %d member(s) on this"
             " host of %ld core(s), STRATA_COLLNET_WAIT=%s: test() %s when nothing moves",
             c->comm_id, c->pos, here, ncpu, mode,
             wait == STP_CN_WAIT_POLL ? "sleeps in poll()" :
             wait == STP_CN_WAIT_SPIN ? "returns" : "returns or sleeps in poll() by the host's"
             " load");
    return wait;
}

/* STP_CN_WAIT_LOAD's first decision, from a probe as every member of the host ends connect. */
static void cn_load_first(stp_cn_comm_t *c)
{
    stp_cn_load_first(&c->load, stp_cn_host_runnable, NULL);
    STU_INFO(STU_LOG_NET, "Strata collnet: comm 0x%" PRIx64 " member %d: %d of %d samples of"
             " the host's running count found more than its %d member(s): test() %s when"
             " nothing moves until a probe (every %llu ms) finds otherwise",
             c->comm_id, c->pos, c->load.nbusy, c->load.nsamples, c->load.here,
             c->load.spin ? "returns" : "sleeps in poll()",
             (unsigned long long)(STP_CN_LOAD_PERIOD_NS / STU_NS_PER_MS));
}

/* Step 3: the records of every member, in position order, into recs (nranks records). */
static strata_status_t cn_agree(stp_cn_comm_t *c, int rank, uint8_t *recs, uint64_t deadline)
{
    uint8_t mine[STP_CN_RECORD_BYTES];
    stp_cn_record_t r;
    stp_cn_mr_t *smr = NULL, *dmr = NULL;
    strata_status_t status;

    stp_cn_record_local(&r);
    sta_model_t m;
    stp_cn_record_model(&r, &m);
    r.ok = sta_model_check(&m) == STRATA_OK;
    r.group = c->group;
    r.rank = (uint32_t)rank;
    r.nranks = (uint32_t)c->nranks;
    r.host = cn_host_id();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    r.cores = ncpu > 0 ? (uint32_t)STU_MIN(ncpu, (long)UINT32_MAX) : 0;
    stt_props_t props;
    if (stt_get_props(c->ops, c->dev, &props) == STRATA_OK) {
        r.stripe_min = (uint32_t)STU_MIN(props.stripe_min, (size_t)UINT32_MAX);
        r.flags |= props.cpu_copies ? STP_CN_REC_CPU_COPIES : 0;
    }
    c->chunk = r.chunk;
    stp_cn_record_encode(mine, &r);
    size_t bytes = (size_t)c->nranks * STP_CN_RECORD_BYTES;
    if ((status = stp_cn_mr_get(c, mine, sizeof(mine), NCCL_PTR_HOST, &smr)) != STRATA_OK)
        return status;
    if ((status = stp_cn_mr_get(c, recs, bytes, NCCL_PTR_HOST, &dmr)) != STRATA_OK)
        goto out;
    stp_cn_req_t *q = stp_cn_req_alloc(c);
    q->coll = STA_COLL_ALLGATHER;
    q->kind = STA_SCHED_RING_ALLGATHER;
    q->dtype = STRATA_UINT8;
    q->bytes = bytes;
    q->bytes_per_rank = STP_CN_RECORD_BYTES;
    q->src = mine;
    q->dst = recs;
    q->src_mr = smr;
    q->dst_mr = dmr;
    stp_cn_exec_submit(c, q);
    status = stp_cn_exec_wait(c, q, deadline);
    q->state = STP_CN_REQ_FREE;
out:
    if (dmr != NULL)
        stp_cn_mr_put(c, dmr);
    stp_cn_mr_put(c, smr);
    return status;
}

/* Step 3b: the same decision on every member, from the same records. */
static strata_status_t cn_decide(stp_cn_comm_t *c, const uint8_t *recs, stp_cn_record_t *dec)
{
    uint8_t *seen = calloc((size_t)c->nranks, 1);
    strata_status_t status = STRATA_OK;

    if (seen == NULL)
        return STRATA_ERR_NO_MEMORY;
    for (int p = 0; p < c->nranks && status == STRATA_OK; p++) {
        stp_cn_record_t r;
        const char *why = NULL;
        status = stp_cn_record_check(recs + (size_t)p * STP_CN_RECORD_BYTES, c->group,
                                     c->nranks, p == 0, &r, &why);
        if (status != STRATA_OK)
            status = cn_fail(c, status, "member %d: %s", p, why);
        else if (seen[r.rank]++)
            status = cn_fail(c, STRATA_ERR_MISMATCH, "member %d's NCCL rank %u is taken twice",
                             p, r.rank);
        if (status == STRATA_OK) {
            c->rank_of[p] = (int)r.rank;
            c->pos_of[r.rank] = p;
            dec[p] = r;
        }
    }
    free(seen);
    c->identity = 1;
    for (int p = 0; p < c->nranks; p++)
        c->identity &= c->rank_of[p] == p;
    return status;
}

void stp_cn_comm_free(stp_cn_comm_t *c)
{
    if (c == NULL)
        return;
    if (c->links != NULL) {
        stp_cn_exec_fini(c);
        while (c->mrs != NULL) {               /* registrations NCCL did not release */
            stp_cn_mr_t *mr = c->mrs;
            mr->refs = 1;
            stp_cn_mr_put(c, mr);
        }
        for (int l = 0; l < c->nconn; l++) {
            if (c->links[l].send != NULL)
                stt_close_send(c->links[l].send);
            if (c->links[l].recv != NULL)
                stt_close_recv(c->links[l].recv);
        }
    }
    pthread_mutex_destroy(&c->mr_lock);
    free(c->links);
    free(c->link_of);
    free(c->rank_of);
    free(c->pos_of);
    c->magic = 0;
    free(c);
}

/* Steps 2 and 3 on an allocated comm. */
static strata_status_t cn_build(stp_cn_comm_t *c, stp_cn_listen_t *cl, int rank,
                                uint8_t (*xhandles)[STP_CN_HANDLE_XPORT_BYTES])
{
    const uint64_t deadline = stu_time_ns() + c->timeout_ns;
    cn_build_t b = {.c = c, .listen = cl, .deadline = deadline};
    strata_status_t status;
    uint8_t *recs = NULL;
    stp_cn_record_t *dec = NULL;   /* the records decoded, in position order */

    if ((status = cn_links_alloc(c)) != STRATA_OK || (status = stp_cn_exec_init(c)) != STRATA_OK)
        return status;
    b.pend = calloc((size_t)STU_MAX(c->nconn, 1), sizeof(*b.pend));
    b.acc = calloc((size_t)STU_MAX(c->nconn, 1), sizeof(*b.acc));
    recs = calloc((size_t)c->nranks, STP_CN_RECORD_BYTES);
    dec = calloc((size_t)c->nranks, sizeof(*dec));
    if (b.pend == NULL || b.acc == NULL || recs == NULL || dec == NULL) {
        status = STRATA_ERR_NO_MEMORY;
        goto out;
    }
    if ((status = cn_links_build(&b, xhandles)) != STRATA_OK)
        goto out;
    if ((status = cn_agree(c, rank, recs, deadline)) != STRATA_OK) {
        cn_fail(c, status, "the agreement with the other members did not complete");
        goto out;
    }
    if ((status = cn_decide(c, recs, dec)) != STRATA_OK)
        goto out;
    c->wait = cn_wait_mode(c, recs);
    status = stp_cn_select_build(c, recs, dec);
    if (status == STRATA_OK && c->wait == STP_CN_WAIT_LOAD)
        cn_load_first(c);
out:
    for (int i = 0; i < b.naccepted; i++)      /* accepted but never identified */
        if (b.acc != NULL && b.acc[i].recv != NULL)
            stt_close_recv(b.acc[i].recv);
    for (int l = 0; b.pend != NULL && l < c->nconn; l++)   /* connects still in progress */
        if (c->links[l].send == NULL)
            stt_connect_abandon(c->ops, b.pend[l].xhandle);
    free(b.pend);
    free(b.acc);
    free(recs);
    free(dec);
    return status;
}

ncclResult_t stp_cn_connect(void *handles[], int nranks, int rank, void *listen_comm,
                            void **coll_comm)
{
    stp_cn_listen_t *cl = listen_comm;
    uint8_t (*xhandles)[STP_CN_HANDLE_XPORT_BYTES] = NULL;
    strata_status_t status;
    stp_cn_comm_t *c = NULL;

    if (cl == NULL || cl->magic != STP_CN_LISTEN_MAGIC) {
        STU_WARN("collnet: connect: not a Strata CollNet listen comm");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    if (handles == NULL || coll_comm == NULL || nranks < 1 || rank < 0 || rank >= nranks ||
        nranks > STP_CN_MAX_UNITS / 2) {
        STU_WARN("collnet: connect: bad arguments (handles %p, collComm %p, rank %d of %d;"
                 " at most %d members)", (void *)handles, (void *)coll_comm, rank, nranks,
                 STP_CN_MAX_UNITS / 2);
        status = STRATA_ERR_INVALID;
        goto err_listen;
    }
    *coll_comm = NULL;
    c = calloc(1, sizeof(*c));
    xhandles = calloc((size_t)nranks, sizeof(*xhandles));
    if (c == NULL || xhandles == NULL) {
        status = STRATA_ERR_NO_MEMORY;
        goto err_free;
    }
    pthread_mutex_init(&c->mr_lock, NULL);
    c->magic = STP_CN_COMM_MAGIC;
    c->ops = cl->ops;
    c->dev = cl->dev;
    c->nranks = nranks;
    c->rank = rank;
    c->comm_id = cl->comm_id;
    c->timeout_ns = (uint64_t)stu_param_int(STU_PARAM_TIMEOUT) * 1000000ull;
    if ((status = cn_handles(c, handles, cl->nonce, xhandles)) != STRATA_OK ||
        (status = cn_build(c, cl, rank, xhandles)) != STRATA_OK)
        goto err_free;
    free(xhandles);
    *coll_comm = c;
    return ncclSuccess;

err_free:
    free(xhandles);
    stp_cn_comm_free(c);
err_listen:
    stp_cn_close_listen(cl);                   /* NCCL forgets it after a failed connect */
    return stp_status_to_nccl(status);
}

ncclResult_t stp_cn_close_coll(void *coll_comm)
{
    stp_cn_comm_t *c = coll_comm;

    if (c == NULL)
        return ncclSuccess;
    if (c->magic != STP_CN_COMM_MAGIC) {
        STU_WARN("collnet: closeColl: not a Strata collComm");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    stp_cn_comm_free(c);
    return ncclSuccess;
}

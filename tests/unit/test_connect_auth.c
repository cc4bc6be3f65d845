/*
 * The data connections between ranks (coll/connect.c) over the in-process loop
 * transport: two ranks connect while strangers who hold rank 1's transport
 * handle (as someone who read the rendezvous traffic would) connect to it
 * first and send a greeting with a wrong token, a foreign rank, a wrong magic,
 * a short or a long first message, or nothing at all (more silent ones than
 * rank 1 keeps slots for). Both ranks must still connect, and a message each
 * way must travel between the real ranks, not a stranger.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/comm.h"
#include "transport/loop/loop.h"
#include "util/le.h"

#define NSTRANGERS 40           /* more than rank 1's unidentified slots (1 peer + 16) */
#define IDENT_MAGIC 0x32495453u /* connect.c's "STI2" */

typedef struct rank_ctx {
    strata_comm_t comm;
    int flat[2];
    strata_status_t status;
} rank_ctx_t;

typedef enum {
    S_WRONG_TOKEN,
    S_FOREIGN_RANK,
    S_WRONG_MAGIC,
    S_SHORT,
    S_LONG,
    S_SILENT,
    S_KINDS
} stranger_kind_t;

typedef struct stranger {
    pthread_t thread;
    stranger_kind_t kind;
    _Alignas(16) char handle[STT_HANDLE_SIZE];
    stt_comm_t *send;
    int queued; /* its connect is in the listener's queue */
} stranger_t;

static char handles[2 * STT_HANDLE_SIZE];
static uint8_t key[STC_BOOT_KEY_BYTES], session[STC_BOOT_NONCE_BYTES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done_ranks;

static void rank_init(rank_ctx_t *r, int rank)
{
    memset(r, 0, sizeof(*r));
    r->comm.ctx.rank = rank;
    r->comm.ctx.nranks = 2;
    r->comm.ctx.timeout_ns = 60ull * 1000000000ull;
    r->comm.ctx.peers = calloc(2, sizeof(sta_peer_conn_t));
    r->flat[0] = 0;
    r->flat[1] = 1;
    r->comm.flat_ranks = r->flat;
    r->comm.ops = &stt_loop_ops;
    r->comm.dev = 0;
    memcpy(r->comm.boot.key, key, sizeof(key));
    memcpy(r->comm.boot.session, session, sizeof(session));
    assert_int_equal(
        stt_listen(&stt_loop_ops, 0, handles + rank * STT_HANDLE_SIZE, &r->comm.listen),
        STRATA_OK);
}

static void *rank_main(void *arg)
{
    rank_ctx_t *r = arg;
    r->status = stc_connect_peers(&r->comm, handles);
    pthread_mutex_lock(&lock);
    done_ranks++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Sends msg on c and waits until it went; errors ignored (the rank may close it). */
static void send_wait(stt_comm_t *c, void *msg, size_t len)
{
    stt_req_t *req = NULL;
    while (req == NULL)
        if (stt_isend(c, msg, len, 0, NULL, &req) != STRATA_OK)
            return;
    int d = 0;
    while (!d)
        if (stt_test(req, &d, NULL) != STRATA_OK)
            return;
}

static void *stranger_main(void *arg)
{
    stranger_t *s = arg;
    stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    uint8_t msg[100];

    memset(msg, 0, sizeof(msg));
    stu_le_put32(msg, IDENT_MAGIC);
    stu_le_put32(msg + 4, s->kind == S_FOREIGN_RANK ? 7 : 0); /* rank 0 is rank 1's peer */
    for (size_t i = 8; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 13 + (unsigned)s->kind); /* not the token */
    if (s->kind == S_WRONG_MAGIC)
        stu_le_put32(msg, 0x44495453u); /* protocol 1's "STID" */
    while (s->send == NULL) {
        if (stt_connect(&stt_loop_ops, 0, s->handle, &cfg, &s->send) != STRATA_OK)
            return NULL;
        pthread_mutex_lock(&lock);
        s->queued = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
    }
    size_t len = s->kind == S_SHORT  ? 8
                 : s->kind == S_LONG ? sizeof(msg)
                                     : 8 + STC_BOOT_MAC_BYTES;
    if (s->kind != S_SILENT)
        send_wait(s->send, msg, len);
    /* hold the connection until both ranks are done */
    pthread_mutex_lock(&lock);
    while (done_ranks < 2)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* One message from rank `from` to rank `to` over their connection: it must arrive intact. */
static void message_check(rank_ctx_t *r, int from, int to)
{
    char out[32], in[32] = {0};
    snprintf(out, sizeof(out), "from rank %d to rank %d", from, to);
    void *buf = in;
    size_t size = sizeof(in);
    int tag = 0;
    stt_req_t *sreq = NULL, *rreq = NULL;
    while (sreq == NULL)
        assert_int_equal(
            stt_isend(r[from].comm.ctx.peers[to].send, out, sizeof(out), 0, NULL, &sreq),
            STRATA_OK);
    while (rreq == NULL)
        assert_int_equal(
            stt_irecv(r[to].comm.ctx.peers[from].recv, 1, &buf, &size, &tag, NULL, &rreq),
            STRATA_OK);
    int sd = 0, rd = 0;
    size_t got = 0;
    while (!sd || !rd) {
        if (!sd)
            assert_int_equal(stt_test(sreq, &sd, NULL), STRATA_OK);
        if (!rd)
            assert_int_equal(stt_test(rreq, &rd, &got), STRATA_OK);
    }
    assert_int_equal(got, sizeof(out));
    assert_string_equal(in, out);
}

static void test_strangers_with_a_handle_are_dropped(void **state)
{
    static rank_ctx_t r[2];
    static stranger_t s[NSTRANGERS];
    int ndev = 0;

    assert_int_equal(stt_init(&stt_loop_ops), STRATA_OK);
    assert_int_equal(stt_devices(&stt_loop_ops, &ndev), STRATA_OK);
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(session); i++)
        session[i] = (uint8_t)(i * 3 + 2);
    rank_init(&r[0], 0);
    rank_init(&r[1], 1);
    done_ranks = 0;
    /* strangers first: their connections are ahead of rank 0's in rank 1's queue */
    for (int i = 0; i < NSTRANGERS; i++) {
        s[i].kind = i < S_KINDS ? (stranger_kind_t)i : S_SILENT;
        s[i].send = NULL;
        s[i].queued = 0;
        memcpy(s[i].handle, handles + STT_HANDLE_SIZE, STT_HANDLE_SIZE);
        assert_int_equal(pthread_create(&s[i].thread, NULL, stranger_main, &s[i]), 0);
        pthread_mutex_lock(&lock);
        while (!s[i].queued)
            pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, rank_main, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < NSTRANGERS; i++)
        pthread_join(s[i].thread, NULL);
    assert_int_equal(r[0].status, STRATA_OK);
    assert_int_equal(r[1].status, STRATA_OK);
    message_check(r, 0, 1);
    message_check(r, 1, 0);

    for (int i = 0; i < NSTRANGERS; i++)
        if (s[i].send != NULL)
            stt_close_send(s[i].send);
    for (int i = 0; i < 2; i++) {
        stc_disconnect_peers(&r[i].comm);
        stt_close_listen(r[i].comm.listen);
        free(r[i].comm.ctx.peers);
    }
    stt_fini(&stt_loop_ops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strangers_with_a_handle_are_dropped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests of what the transports share in transport/base/ (pure logic):
 * request slots, the connect slot in a handle and the pending-connect driver
 * over scripted steps, the handle head's checks, the reference-counted device
 * table, the connection head's failure bookkeeping and errno classification.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/base/conn.h"
#include "transport/base/connect.h"
#include "transport/base/devref.h"
#include "transport/base/slots.h"
#include "transport/base/sock.h"
#include "util/param.h"
#include "util/time.h"

/* A request type as a transport has one: the slot head first, its own fields after. */
typedef struct test_req {
    stt_slot_t slot;
    uint64_t payload[3];
} test_req_t;

#define TEST_CAP 5

static const stt_ops_t test_ops = {.name = "test"};
static const stt_ops_t other_ops = {.name = "other"};

/* ------------------------------------------------------------------ slots */

static void test_slots_take_give_find(void **state)
{
    stt_comm_t comm = {.ops = &test_ops};
    test_req_t backing[TEST_CAP + 2];    /* one spare request on each side of the pool */
    test_req_t *reqs = &backing[1];
    stt_slots_t slots;

    memset(backing, 0, sizeof(backing));
    stt_slots_bind(&slots, reqs, sizeof(reqs[0]), TEST_CAP, &comm);
    assert_true(stt_slots_idle(&slots));
    for (int i = 0; i < TEST_CAP; i++) {
        assert_ptr_equal(reqs[i].slot.base.comm, &comm);
        assert_int_equal(reqs[i].slot.state, STT_SLOT_FREE);
        assert_int_equal(reqs[i].slot.index, i);
        assert_null(stt_slots_find(&slots, &reqs[i].slot.base));     /* free: not pending */
    }
    /* Request 0 is taken first, then in order, until none is left. */
    stt_slot_t *taken[TEST_CAP];
    for (int i = 0; i < TEST_CAP; i++) {
        taken[i] = stt_slots_take(&slots, i + 1);
        assert_ptr_equal(taken[i], &reqs[i].slot);
        assert_int_equal(taken[i]->state, STT_SLOT_ACTIVE);
        assert_int_equal(taken[i]->n, i + 1);
        assert_int_equal(taken[i]->base.nsizes, i + 1);
        assert_int_equal(taken[i]->status, STRATA_OK);
        assert_ptr_equal(stt_slots_find(&slots, &taken[i]->base), taken[i]);
    }
    assert_null(stt_slots_take(&slots, 1));
    assert_false(stt_slots_idle(&slots));
    /* A pointer inside a request, or a request next to the pool, is none of its requests. */
    backing[0].slot.state = STT_SLOT_ACTIVE;
    backing[TEST_CAP + 1].slot.state = STT_SLOT_ACTIVE;
    assert_null(stt_slots_find(&slots, (stt_req_t *)(void *)&reqs[1].payload[0]));
    assert_null(stt_slots_find(&slots, &backing[TEST_CAP + 1].slot.base));
    assert_null(stt_slots_find(&slots, &backing[0].slot.base));
    /* Given back in any order, taken again last-given first. */
    stt_slots_give(&slots, taken[3]);
    stt_slots_give(&slots, taken[1]);
    assert_null(stt_slots_find(&slots, &taken[3]->base));
    assert_ptr_equal(stt_slots_take(&slots, 0), taken[1]);
    assert_ptr_equal(stt_slots_take(&slots, 0), taken[3]);
    for (int i = 0; i < TEST_CAP; i++)
        stt_slots_give(&slots, taken[i]);
    assert_true(stt_slots_idle(&slots));
}

static void test_slots_test_check(void **state)
{
    stt_comm_t comm = {.ops = &test_ops}, foreign = {.ops = &other_ops};
    stt_req_t req = {.comm = &comm}, alien = {.comm = &foreign}, orphan = {.comm = NULL};
    int done = 0;

    assert_int_equal(stt_slots_test_check(&test_ops, &req, &done), STRATA_OK);
    assert_int_equal(stt_slots_test_check(&test_ops, NULL, &done), STRATA_ERR_INVALID);
    assert_int_equal(stt_slots_test_check(&test_ops, &req, NULL), STRATA_ERR_INVALID);
    assert_int_equal(stt_slots_test_check(&test_ops, &alien, &done), STRATA_ERR_INVALID);
    assert_int_equal(stt_slots_test_check(&test_ops, &orphan, &done), STRATA_ERR_INVALID);
    assert_int_equal(stt_slots_stale(&test_ops, &req), STRATA_ERR_INVALID);
}

/* ------------------------------------------------------------------ connection head */

static void test_conn_fail_sticks(void **state)
{
    stt_conn_t conn;

    stt_conn_init(&conn, &test_ops, 2, true, "192.0.2.1:4242");
    assert_ptr_equal(conn.base.ops, &test_ops);
    assert_int_equal(conn.base.dev, 2);
    assert_string_equal(conn.peer, "192.0.2.1:4242");
    assert_int_equal(stt_conn_status(&conn), STRATA_OK);
    assert_ptr_equal(stt_conn_of(&conn.base, &test_ops, true, "isend"), &conn);
    assert_null(stt_conn_of(&conn.base, &test_ops, false, "irecv"));    /* wrong direction */
    assert_null(stt_conn_of(&conn.base, &other_ops, true, "isend"));    /* foreign */
    assert_null(stt_conn_of(NULL, &test_ops, true, "isend"));
    stt_conn_fail(&conn, STRATA_ERR_REMOTE, "peer closed socket %d", 0);
    assert_int_equal(stt_conn_status(&conn), STRATA_ERR_REMOTE);
    stt_conn_fail(&conn, STRATA_ERR_IO, "a later failure");               /* the first stays */
    assert_int_equal(stt_conn_status(&conn), STRATA_ERR_REMOTE);
}

/* ------------------------------------------------------------------ handle and connect slot */

static void test_handle_head(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_netif_addr_t addr = {0};
    stt_handle_t h;

    addr.in4.sin_family = AF_INET;
    addr.in4.sin_port = htons(4242);
    memset(handle, 0xee, sizeof(handle));
    stt_handle_store(handle, 0x11223344u, 7, 0xabcdefull, &addr);
    for (size_t i = sizeof(stt_handle_t); i < sizeof(handle); i++)
        assert_int_equal(handle[i], 0);                  /* the rest zeroed, slot included */
    assert_int_equal(stt_handle_load(handle, 0x11223344u, 7, "test", &h), STRATA_OK);
    assert_true(h.listener_id == 0xabcdefull);
    assert_int_equal(ntohs(h.addr.in4.sin_port), 4242);
    assert_int_equal(stt_handle_load(handle, 0x11223345u, 7, "test", &h), STRATA_ERR_INVALID);
    assert_int_equal(stt_handle_load(handle, 0x11223344u, 8, "test", &h), STRATA_ERR_INVALID);
    ((stt_handle_t *)(void *)handle)->addr.sa.sa_family = AF_UNIX;
    assert_int_equal(stt_handle_load(handle, 0x11223344u, 7, "test", &h), STRATA_ERR_INVALID);
}

static void test_connslot(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], copy[STT_HANDLE_SIZE];
    int attempt;
    void *got = &got;

    memset(handle, 0, sizeof(handle));
    assert_int_equal(stt_connslot_load(handle, 42, "test", &got), STRATA_OK);
    assert_null(got);                                    /* as listen left it */
    stt_connslot_store(handle, 42, &attempt);
    assert_int_equal(stt_connslot_load(handle, 42, "test", &got), STRATA_OK);
    assert_ptr_equal(got, &attempt);
    /* The check word binds the pointer to the listener: another id, or a changed pointer, fails. */
    assert_int_equal(stt_connslot_load(handle, 43, "test", &got), STRATA_ERR_INVALID);
    memcpy(copy, handle, sizeof(copy));
    copy[STT_CONNSLOT_OFFSET] ^= 0x10;
    assert_int_equal(stt_connslot_load(copy, 42, "test", &got), STRATA_ERR_INVALID);
    stt_connslot_store(handle, 42, NULL);
    assert_int_equal(stt_connslot_load(handle, 42, "test", &got), STRATA_OK);
    assert_null(got);
    for (int i = STT_CONNSLOT_OFFSET; i < STT_HANDLE_SIZE; i++)
        assert_int_equal(handle[i], 0);
}

/* Scripted steps: an attempt that becomes ready after `steps_to_ready` steps. */
typedef struct script_attempt {
    stt_connect_t head;
    int steps;
} script_attempt_t;

static int script_steps_to_ready;       /* < 0: never ready */
static strata_status_t script_fail_with;  /* returned by the step when not OK */
static int script_live;                 /* attempts not freed */
static int script_long_ago;             /* 1: attempts start long ago, past any deadline */
static stt_comm_t script_comm = {.ops = &test_ops};

static strata_status_t script_start(int dev, const void *h, const stt_conn_cfg_t *cfg,
                                    stt_connect_t **state_p)
{
    script_attempt_t *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    a->head.start_ns = script_long_ago ? 0 : stu_time_ns();
    strcpy(a->head.peer, "scripted peer");
    script_live++;
    *state_p = &a->head;
    return STRATA_OK;
}

static strata_status_t script_step(stt_connect_t *state, int dev, const void *h,
                                   stt_comm_t **send_p)
{
    script_attempt_t *a = (script_attempt_t *)state;

    if (script_fail_with != STRATA_OK)
        return script_fail_with;
    if (script_steps_to_ready < 0 || ++a->steps < script_steps_to_ready)
        return STRATA_INPROGRESS;
    *send_p = &script_comm;
    return STRATA_OK;
}

static void script_free(stt_connect_t *state)
{
    script_live--;
    free(state);
}

static const stt_connect_steps_t script = {
    .who = "test", .hint = "", .magic = 0x5e5e5e5eu, .version = 3,
    .start = script_start, .step = script_step, .free = script_free,
};

static void script_handle(uint8_t *handle)
{
    stt_netif_addr_t addr = {0};

    addr.in4.sin_family = AF_INET;
    stt_handle_store(handle, script.magic, script.version, 99, &addr);
}

static void test_connect_run(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_comm_t *comm = &script_comm;
    void *slot;

    unsetenv("STRATA_CONNECT_TIMEOUT");                 /* 30 s: never reached here */
    stu_param_reload();
    script_long_ago = 0;
    script_handle(handle);
    script_steps_to_ready = 3;
    script_fail_with = STRATA_OK;
    /* In progress twice (the attempt sits in the slot), ready on the third call. */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(stt_connect_run(&script, 0, handle, NULL, &comm), STRATA_OK);
        assert_null(comm);
        assert_int_equal(stt_connslot_load(handle, 99, "test", &slot), STRATA_OK);
        assert_non_null(slot);
        assert_int_equal(script_live, 1);
    }
    assert_int_equal(stt_connect_run(&script, 0, handle, NULL, &comm), STRATA_OK);
    assert_ptr_equal(comm, &script_comm);
    assert_int_equal(stt_connslot_load(handle, 99, "test", &slot), STRATA_OK);
    assert_null(slot);                                   /* reset: a new connect starts over */
    assert_int_equal(script_live, 0);

    /* A failing step ends the attempt, frees it, resets the slot, writes no comm. */
    script_fail_with = STRATA_ERR_REMOTE;
    comm = &script_comm;
    assert_int_equal(stt_connect_run(&script, 0, handle, NULL, &comm), STRATA_ERR_REMOTE);
    assert_ptr_equal(comm, &script_comm);
    assert_int_equal(script_live, 0);

    /* Past STRATA_CONNECT_TIMEOUT: STRATA_ERR_TIMEOUT, freed and reset. */
    setenv("STRATA_CONNECT_TIMEOUT", "1", 1);
    stu_param_reload();
    script_long_ago = 1;
    script_fail_with = STRATA_OK;
    script_steps_to_ready = -1;
    assert_int_equal(stt_connect_run(&script, 0, handle, NULL, &comm), STRATA_ERR_TIMEOUT);
    assert_int_equal(script_live, 0);
    assert_int_equal(stt_connslot_load(handle, 99, "test", &slot), STRATA_OK);
    assert_null(slot);

    /* Bad arguments and a foreign handle start nothing. */
    assert_int_equal(stt_connect_run(&script, 0, NULL, NULL, &comm), STRATA_ERR_INVALID);
    assert_int_equal(stt_connect_run(&script, 0, handle, NULL, NULL), STRATA_ERR_INVALID);
    handle[0] ^= 1;
    assert_int_equal(stt_connect_run(&script, 0, handle, NULL, &comm), STRATA_ERR_INVALID);
    assert_int_equal(script_live, 0);
    unsetenv("STRATA_CONNECT_TIMEOUT");
    stu_param_reload();
}

/* ------------------------------------------------------------------ device table */

static int dev_opens, dev_closes;
static strata_status_t dev_open_status;

static strata_status_t test_dev_open(int *count_p)
{
    dev_opens++;
    *count_p = 3;
    return dev_open_status;
}

static void test_dev_close(void)
{
    dev_closes++;
}

static void test_devref(void **state)
{
    static stt_devref_t devs = STT_DEVREF_INIT("test", test_dev_open, test_dev_close);
    int table[3] = {10, 11, 12}, out = -1, n = -1;

    assert_int_equal(stt_devref_count(&devs, &n), STRATA_ERR_INVALID);   /* before init */
    assert_int_equal(stt_devref_lookup(&devs, 0, NULL, 0, NULL), STRATA_ERR_NOT_FOUND);
    dev_open_status = STRATA_ERR_IO;                     /* a failed first init counts nothing */
    assert_int_equal(stt_devref_init(&devs), STRATA_ERR_IO);
    assert_false(stt_devref_held(&devs));
    dev_open_status = STRATA_OK;
    assert_int_equal(stt_devref_init(&devs), STRATA_OK);
    assert_int_equal(stt_devref_init(&devs), STRATA_OK);
    assert_int_equal(dev_opens, 2);                      /* the failed one and the first */
    assert_int_equal(stt_devref_count(&devs, &n), STRATA_OK);
    assert_int_equal(n, 3);
    assert_int_equal(stt_devref_count(&devs, NULL), STRATA_ERR_INVALID);
    assert_int_equal(stt_devref_lookup(&devs, 2, table, sizeof(table[0]), &out), STRATA_OK);
    assert_int_equal(out, 12);
    assert_int_equal(stt_devref_lookup(&devs, 3, table, sizeof(table[0]), &out),
                     STRATA_ERR_NOT_FOUND);
    assert_int_equal(stt_devref_lookup(&devs, -1, NULL, 0, NULL), STRATA_ERR_NOT_FOUND);
    stt_devref_fini(&devs);
    assert_int_equal(dev_closes, 0);                     /* one reference left */
    assert_true(stt_devref_held(&devs));
    stt_devref_fini(&devs);
    assert_int_equal(dev_closes, 1);
    stt_devref_fini(&devs);                              /* a fini without init is ignored */
    assert_int_equal(dev_closes, 1);
    assert_int_equal(stt_devref_count(&devs, &n), STRATA_ERR_INVALID);
}

/* ------------------------------------------------------------------ errno classification */

static void test_sock_errno_status(void **state)
{
    static const int remote[] = {ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, EHOSTUNREACH,
                                 ENETUNREACH};
    static const int io[] = {EBADF, ENOMEM, EINVAL, ENOBUFS};

    for (size_t i = 0; i < sizeof(remote) / sizeof(remote[0]); i++)
        assert_int_equal(stt_sock_errno_status(remote[i]), STRATA_ERR_REMOTE);
    for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++)
        assert_int_equal(stt_sock_errno_status(io[i]), STRATA_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slots_take_give_find),
        cmocka_unit_test(test_slots_test_check),
        cmocka_unit_test(test_conn_fail_sticks),
        cmocka_unit_test(test_handle_head),
        cmocka_unit_test(test_connslot),
        cmocka_unit_test(test_connect_run),
        cmocka_unit_test(test_devref),
        cmocka_unit_test(test_sock_errno_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

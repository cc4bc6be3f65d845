/*
 * The wait's descriptor set (sta_wait_fds_add, algos/ctx.c): the collective library's waits
 * (algos/p2p.c, algos/ring_async.c) sleep in poll() on the descriptors of every comm they
 * wait on. A comm whose poll_fds names none (staged bytes, events already waiting, a set too
 * large) must make the whole set empty, so the wait naps and tests: a sleep on the other
 * comms' descriptors alone could last its whole 2 ms while that comm's completion waits.
 * The comms here are stubs whose poll_fds names a scripted number of descriptors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <string.h>

#include <cmocka.h>

#include "algos/ctx.h"

typedef struct stub_comm {
    stt_comm_t base;
    int names;      /* descriptors its poll_fds names (0: none) */
    int first_fd;   /* the fd of the first one; the others follow */
    int asked;      /* poll_fds calls */
} stub_comm_t;

static int stub_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    stub_comm_t *s = (stub_comm_t *)comm;
    s->asked++;
    if (s->names > max)
        return 0;   /* the contract: a set that does not fit is no set */
    for (int i = 0; i < s->names; i++)
        fds[i] = (struct pollfd){.fd = s->first_fd + i, .events = POLLIN};
    return s->names;
}

static stt_ops_t stub_ops = {.poll_fds = stub_poll_fds};

static void stub_init(stub_comm_t *s, int names, int first_fd)
{
    memset(s, 0, sizeof(*s));
    s->base.ops = &stub_ops;
    s->names = names;
    s->first_fd = first_fd;
}

static void test_sets_of_two_comms_add_up(void **state)
{
    (void)state;
    stub_comm_t a, b;
    struct pollfd fds[8];
    stub_init(&a, 2, 10);
    stub_init(&b, 3, 20);

    int n = sta_wait_fds_add(&a.base, fds, 0, 8);
    n = sta_wait_fds_add(&b.base, fds, n, 8);
    assert_int_equal(n, 5);
    assert_int_equal(fds[0].fd, 10);
    assert_int_equal(fds[1].fd, 11);
    assert_int_equal(fds[2].fd, 20);
    assert_int_equal(fds[4].fd, 22);
}

static void test_a_comm_naming_none_empties_the_set(void **state)
{
    (void)state;
    stub_comm_t named, none;
    struct pollfd fds[8];
    stub_init(&named, 2, 10);
    stub_init(&none, 0, 0);

    /* the comm with nothing to name first, or second: either way the wait naps */
    int n = sta_wait_fds_add(&none.base, fds, 0, 8);
    assert_int_equal(n, -1);
    n = sta_wait_fds_add(&named.base, fds, n, 8);
    assert_int_equal(n, -1);
    assert_int_equal(named.asked, 0);   /* nothing asked once the set is gone */

    n = sta_wait_fds_add(&named.base, fds, 0, 8);
    n = sta_wait_fds_add(&none.base, fds, n, 8);
    assert_int_equal(n, -1);
}

static void test_a_set_that_does_not_fit_is_none(void **state)
{
    (void)state;
    stub_comm_t a, b;
    struct pollfd fds[4];
    stub_init(&a, 3, 10);
    stub_init(&b, 2, 20);

    int n = sta_wait_fds_add(&a.base, fds, 0, 4);
    assert_int_equal(n, 3);
    assert_int_equal(sta_wait_fds_add(&b.base, fds, n, 4), -1);   /* 1 slot left for 2 */
    assert_int_equal(sta_wait_fds_add(&b.base, fds, 4, 4), -1);   /* no slot left */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sets_of_two_comms_add_up),
        cmocka_unit_test(test_a_comm_naming_none_empties_the_set),
        cmocka_unit_test(test_a_set_that_does_not_fit_is_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

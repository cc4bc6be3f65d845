/*
 * A smoke test per older ABI version, v10 down to v6 (and v11 alongside), as
 * an older NCCL would use the plugin: init with that version's signature,
 * devices, that version's properties layout, connect and accept with its
 * arguments (device handles from v7, the traffic class in v10's connect),
 * and a few messages echoed through a peer process that speaks the same
 * version, exercising int sizes (v6..v8) and size_t sizes (v9 on).
 *
 * Versions before v11 have no finalize, so the adapters' state lives as long
 * as the library is loaded: this binary keeps one reference on the library
 * for its whole run and never unloads it.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "func_common.h"

static void version_smoke(int version)
{
    func_fix_t fix;
    stb_plugin_props_t p;
    sts_net_link_t link;
    sts_peer_t peer;

    if (func_open(&fix, version) != 0)
        fail_msg("plugin v%d: cannot load or initialise", version);
    assert_string_equal(stb_plugin_name(fix.net), "Strata");
    for (int dev = 0; dev < fix.ndev; dev++) {
        assert_nccl_ok(stb_plugin_props(fix.net, dev, &p));
        assert_true(p.name[0] != '\0');
        assert_true(p.ptr_support & NCCL_PTR_HOST);
        assert_true(p.speed_mbps > 0);
        assert_in_range(p.max_recvs, 1, STB_PLUGIN_MAX_RECVS);
        assert_true(p.max_comms > 0);
        if (version >= 7)
            assert_int_equal(p.net_device_type, NCCL_NET_DEVICE_HOST);
        if (version >= 8)
            assert_in_range(p.reg_is_global, 0, 1);
        if (version >= 9) {
            assert_int_equal(p.vprops_ndevs, 1);
            assert_int_equal(p.vprops_dev0, dev);
            assert_true(p.max_p2p_bytes > 0);
        }
        if (version == 11)
            assert_true(p.max_multi_request >= 1);
    }
    /* A second init is harmless in every version (v11: a second context). */
    if (version < 11)
        assert_nccl_ok(stb_plugin_init(fix.net, 0));

    int fds = sts_fd_count();
    func_spawn(&peer, version, "echo-smoke", 0);
    func_link(&fix, &peer, &link);
    func_echo(&fix, &peer, &link, peer_smoke, PEER_COUNT(peer_smoke));
    sts_net_link_close(fix.net, &link);
    func_finish(&peer);
    /* Versions before v11 have no finalize to wait for a close finishing in the background
     * (ucx): wait for its descriptors here, or the next case's peer would inherit them. */
    assert_int_equal(sts_fd_count_settle(fds, sts_deadline(PEER_TIMEOUT_S)), fds);
    assert_nccl_ok(stb_plugin_finalize(fix.net));
    stb_plugin_unload(fix.net);
}

static void ver_v11(void **state) { version_smoke(11); }
static void ver_v10(void **state) { version_smoke(10); }
static void ver_v9(void **state) { version_smoke(9); }
static void ver_v8(void **state) { version_smoke(8); }
static void ver_v7(void **state) { version_smoke(7); }
static void ver_v6(void **state) { version_smoke(6); }

/* Teardown: no peer left behind. */
static int ver_teardown(void **state)
{
    return sts_peer_kill_all() == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test_teardown(ver_v11, ver_teardown),
        cmocka_unit_test_teardown(ver_v10, ver_teardown),
        cmocka_unit_test_teardown(ver_v9, ver_teardown),
        cmocka_unit_test_teardown(ver_v8, ver_teardown),
        cmocka_unit_test_teardown(ver_v7, ver_teardown),
        cmocka_unit_test_teardown(ver_v6, ver_teardown),
    };
    /* Held for the whole run: the v6..v10 adapters' state must outlive each case. */
    void *anchor = dlopen(STRATA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (anchor == NULL)
        return 1;
    return cmocka_run_group_tests_name("plugin_versions", cases, NULL, NULL);
}

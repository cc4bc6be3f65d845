/*
 * The v6..v10 tables and their properties, against a recording stand-in for
 * ncclNetPlugin_v11 (fake_net_v11.h) that reports a distinct value in every
 * member, so a member copied to the wrong place or left out shows.
 */
#include "fake_net_v11.h"

static void test_tables_are_complete(void **state)
{
    assert_string_equal(ncclNetPlugin_v10.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v9.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v8.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v7.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v6.name, ncclNetPlugin_v11.name);

    /* Every entry a version has is set, except makeVDevice (see net_v9.c). */
    const void *const *p;
    size_t i;
#define ALL_SET(table, last)                                                  \
    for (p = (const void *const *)&(table), i = 0;                            \
         i <= offsetof(__typeof__(table), last) / sizeof(void *); i++)        \
        assert_non_null(p[i])
    ALL_SET(ncclNetPlugin_v6, closeListen);
    ALL_SET(ncclNetPlugin_v7, irecvConsumed);
    ALL_SET(ncclNetPlugin_v8, irecvConsumed);
    ALL_SET(ncclNetPlugin_v9, irecvConsumed);
    ALL_SET(ncclNetPlugin_v10, irecvConsumed);
#undef ALL_SET
    assert_null(ncclNetPlugin_v9.makeVDevice);
    assert_null(ncclNetPlugin_v10.makeVDevice);
}

/* ------------------------------------------------------------------ properties */

static void fake_props_fill(void)
{
    static char name[] = "fake0";
    static char pci[] = "/sys/devices/pci0000:00/0000:00:03.0";

    fake.props = (ncclNetProperties_v11_t){
        .name = name, .pciPath = pci, .guid = 0x1122334455667788ull,
        .ptrSupport = NCCL_PTR_HOST | NCCL_PTR_DMABUF, .regIsGlobal = 1, .forceFlush = 1,
        .speed = 100000, .port = 3, .latency = 2.5f, .maxComms = 65536, .maxRecvs = 8,
        .netDeviceType = NCCL_NET_DEVICE_HOST, .netDeviceVersion = 0x5a,
        .vProps = { .ndevs = 2, .devs = { 4, 9 } },
        .maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES, .maxCollBytes = MAX_COLLNET_SIZE + 3,
        .maxMultiRequestSize = 4,
    };
}

/* Each version's properties, with guard bytes behind to catch an overlong write. */
#define GUARD 16
#define PROPS_CHECK_COMMON(p)                                  \
    do {                                                       \
        assert_ptr_equal((p).name, fake.props.name);           \
        assert_ptr_equal((p).pciPath, fake.props.pciPath);     \
        assert_int_equal((p).guid, fake.props.guid);           \
        assert_int_equal((p).ptrSupport, fake.props.ptrSupport); \
        assert_int_equal((p).speed, fake.props.speed);         \
        assert_int_equal((p).port, fake.props.port);           \
        assert_true((p).latency == fake.props.latency);        \
        assert_int_equal((p).maxComms, fake.props.maxComms);   \
        assert_int_equal((p).maxRecvs, fake.props.maxRecvs);   \
    } while (0)
#define PROPS_CHECK_DEVICE(p)                                                  \
    do {                                                                       \
        assert_int_equal((p).netDeviceType, fake.props.netDeviceType);         \
        assert_int_equal((p).netDeviceVersion, fake.props.netDeviceVersion);   \
    } while (0)
#define PROPS_CHECK_V9(p)                                                      \
    do {                                                                       \
        assert_int_equal((p).regIsGlobal, fake.props.regIsGlobal);             \
        assert_int_equal((p).forceFlush, fake.props.forceFlush);               \
        assert_int_equal((p).vProps.ndevs, 2);                                 \
        assert_int_equal((p).vProps.devs[0], 4);                               \
        assert_int_equal((p).vProps.devs[1], 9);                               \
        assert_int_equal((p).maxP2pBytes, fake.props.maxP2pBytes);             \
        assert_int_equal((p).maxCollBytes, fake.props.maxCollBytes);           \
    } while (0)
#define PROPS_GET(version, var)                                                \
    struct { ncclNetProperties_v##version##_t p; unsigned char guard[GUARD]; } var; \
    memset(&var, 0xa5, sizeof(var));                                           \
    assert_int_equal(ncclNetPlugin_v##version.getProperties(1, &var.p), ncclSuccess); \
    assert_int_equal(fake.dev, 1);                                             \
    for (int g = 0; g < GUARD; g++)                                            \
        assert_int_equal(var.guard[g], 0xa5)

static void test_props_convert_every_version(void **state)
{
    fake_props_fill();
    assert_int_equal(init_version(9), ncclSuccess);
    {
        PROPS_GET(6, v6);
        PROPS_CHECK_COMMON(v6.p);
    }
    {
        PROPS_GET(7, v7);
        PROPS_CHECK_COMMON(v7.p);
        PROPS_CHECK_DEVICE(v7.p);
    }
    {
        PROPS_GET(8, v8);
        PROPS_CHECK_COMMON(v8.p);
        PROPS_CHECK_DEVICE(v8.p);
        assert_int_equal(v8.p.regIsGlobal, 1);
    }
    {
        PROPS_GET(9, v9);
        PROPS_CHECK_COMMON(v9.p);
        PROPS_CHECK_DEVICE(v9.p);
        PROPS_CHECK_V9(v9.p);
    }
    {
        PROPS_GET(10, v10);
        PROPS_CHECK_COMMON(v10.p);
        PROPS_CHECK_DEVICE(v10.p);
        PROPS_CHECK_V9(v10.p);
    }
}

/* Padding the copy does not fill is zeroed, not left as it was. */
static void test_props_padding_is_zeroed(void **state)
{
    ncclNetProperties_v9_t v9;
    const unsigned char *bytes = (const unsigned char *)&v9;
    size_t hole = offsetof(ncclNetProperties_v9_t, vProps) + sizeof(v9.vProps);

    fake_props_fill();
    memset(&v9, 0xa5, sizeof(v9));
    assert_int_equal(ncclNetPlugin_v9.getProperties(0, &v9), ncclSuccess);
    for (size_t i = hole; i < offsetof(ncclNetProperties_v9_t, maxP2pBytes); i++)
        assert_int_equal(bytes[i], 0);
}

static void test_props_errors(void **state)
{
    ncclNetProperties_v6_t v6;
    ncclNetProperties_v7_t v7;
    ncclNetProperties_v10_t v10;

    fake_props_fill();
    assert_int_equal(ncclNetPlugin_v8.getProperties(0, NULL), ncclInternalError);
    assert_int_equal(ncclNetPlugin_v10.getProperties(0, NULL), ncclInternalError);

    /* v11's error comes back unchanged, and the output is not touched. */
    fake.props_result = ncclSystemError;
    memset(&v10, 0xa5, sizeof(v10));
    assert_int_equal(ncclNetPlugin_v10.getProperties(0, &v10), ncclSystemError);
    assert_int_equal(v10.speed, (int)0xa5a5a5a5);

    /* An offloaded device cannot be shown to v6, and can to v7. */
    fake.props_result = ncclSuccess;
    fake.props.netDeviceType = NCCL_NET_DEVICE_UNPACK;
    fake.props.netDeviceVersion = NCCL_NET_DEVICE_UNPACK_VERSION;
    memset(&v6, 0xa5, sizeof(v6));
    assert_int_equal(ncclNetPlugin_v6.getProperties(0, &v6), ncclInvalidUsage);
    assert_int_equal(v6.speed, (int)0xa5a5a5a5);
    assert_int_equal(ncclNetPlugin_v7.getProperties(0, &v7), ncclSuccess);
    assert_int_equal(v7.netDeviceType, NCCL_NET_DEVICE_UNPACK);
    assert_int_equal(v7.netDeviceVersion, NCCL_NET_DEVICE_UNPACK_VERSION);
}

/* include/nccl/net_v11.h: NCCL_NET_ATTR_INIT leaves every attribute undefined. */
static void test_attr_init_is_undefined(void **state)
{
    const ncclNetAttr_v11_t attr = NCCL_NET_ATTR_INIT;
    const ncclNetCommAttr_v11_t *sides[2] = { &attr.sendCommAttr, &attr.recvCommAttr };

    for (int i = 0; i < 2; i++) {
        assert_int_equal(sides[i]->maxConcurrentPeers, NCCL_NET_ATTR_UNDEF);
        assert_int_equal(sides[i]->minConcurrentPeers, NCCL_NET_ATTR_UNDEF);
        assert_int_equal(sides[i]->maxFlowsPerPeer, NCCL_NET_ATTR_UNDEF);
        assert_int_equal(sides[i]->minFlowsPerPeer, NCCL_NET_ATTR_UNDEF);
    }
    assert_int_equal(attr.op, UINT32_MAX);
    assert_int_equal(attr.algo, UINT32_MAX);
    assert_int_equal(attr.proto, UINT32_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tables_are_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_props_convert_every_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_props_padding_is_zeroed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_props_errors, setup, teardown),
        cmocka_unit_test(test_attr_init_is_undefined),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}

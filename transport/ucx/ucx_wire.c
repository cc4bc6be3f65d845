/* Handle, hello and tag encodings of the UCX transport (ucx_wire.h). */
#include <string.h>

#include "transport/ucx/ucx_wire.h"
#include "util/le.h"
#include "util/log.h"

strata_status_t stt_ucx_handle_encode(const stt_ucx_handle_t *h, void *buf)
{
    uint8_t *p = buf;
    int family = h->addr.sa.sa_family;

    if (family != AF_INET && family != AF_INET6) {
        STU_WARN("ucx: handle: address family %d is neither IPv4 nor IPv6", family);
        return STRATA_ERR_INVALID;
    }
    memset(p, 0, STT_UCX_HANDLE_BYTES);
    stu_le_put32(p, STT_UCX_HANDLE_MAGIC);
    stu_le_put16(p + 4, STT_UCX_WIRE_VERSION);
    stu_le_put16(p + 6, (uint16_t)family);
    stu_le_put64(p + 8, h->listener_id);
    if (family == AF_INET) {
        memcpy(p + 16, &h->addr.in4.sin_port, 2);
        memcpy(p + 18, &h->addr.in4.sin_addr, 4);
    } else {
        memcpy(p + 16, &h->addr.in6.sin6_port, 2);
        memcpy(p + 18, &h->addr.in6.sin6_addr, 16);
        stu_le_put32(p + 34, h->addr.in6.sin6_scope_id);
    }
    memcpy(p + 38, h->secret, STT_HANDLE_SECRET_BYTES);
    return STRATA_OK;
}

strata_status_t stt_ucx_handle_decode(const void *buf, stt_ucx_handle_t *h)
{
    const uint8_t *p = buf;
    uint32_t magic = stu_le_get32(p);
    uint16_t version = stu_le_get16(p + 4), family = stu_le_get16(p + 6);

    if (magic != STT_UCX_HANDLE_MAGIC || version != STT_UCX_WIRE_VERSION ||
        (family != AF_INET && family != AF_INET6)) {
        STU_WARN("ucx: not a UCX transport handle (magic 0x%08x, version %u, family %u;"
                 " expected 0x%08x, %u, IPv4 or IPv6)", magic, version, family,
                 STT_UCX_HANDLE_MAGIC, STT_UCX_WIRE_VERSION);
        return STRATA_ERR_INVALID;
    }
    memset(h, 0, sizeof(*h));
    h->listener_id = stu_le_get64(p + 8);
    h->addr.sa.sa_family = family;
    if (family == AF_INET) {
        memcpy(&h->addr.in4.sin_port, p + 16, 2);
        memcpy(&h->addr.in4.sin_addr, p + 18, 4);
    } else {
        memcpy(&h->addr.in6.sin6_port, p + 16, 2);
        memcpy(&h->addr.in6.sin6_addr, p + 18, 16);
        h->addr.in6.sin6_scope_id = stu_le_get32(p + 34);
    }
    memcpy(h->secret, p + 38, STT_HANDLE_SECRET_BYTES);
    return STRATA_OK;
}

void stt_ucx_hello_encode(const stt_ucx_hello_t *hello, void *buf)
{
    uint8_t *p = buf;

    stu_le_put32(p, STT_UCX_HELLO_MAGIC);
    stu_le_put16(p + 4, STT_UCX_WIRE_VERSION);
    stu_le_put16(p + 6, hello->kind);
    stu_le_put64(p + 8, hello->listener_id);
    stu_le_put32(p + 16, hello->conn_id);
    stu_le_put32(p + 20, hello->addr_len);
    memcpy(p + 24, hello->secret, STT_HANDLE_SECRET_BYTES);
}

strata_status_t stt_ucx_hello_decode(const void *buf, stt_ucx_hello_t *hello)
{
    const uint8_t *p = buf;
    uint32_t magic = stu_le_get32(p), len = stu_le_get32(p + 20);
    uint16_t version = stu_le_get16(p + 4), kind = stu_le_get16(p + 6);

    if (magic != STT_UCX_HELLO_MAGIC || version != STT_UCX_WIRE_VERSION ||
        (kind != STT_UCX_HELLO_CONNECT && kind != STT_UCX_HELLO_ACCEPT) || len == 0 ||
        len > STT_UCX_MAX_ADDR_BYTES) {
        STU_WARN("ucx: bad hello on the side channel (magic 0x%08x, version %u, kind %u,"
                 " address of %u bytes; limit %u)", magic, version, kind, len,
                 STT_UCX_MAX_ADDR_BYTES);
        return STRATA_ERR_INVALID;
    }
    hello->kind = kind;
    hello->listener_id = stu_le_get64(p + 8);
    hello->conn_id = stu_le_get32(p + 16);
    hello->addr_len = len;
    memcpy(hello->secret, p + 24, STT_HANDLE_SECRET_BYTES);
    return STRATA_OK;
}

/* Handle, hello and tag encodings of the UCX transport (ucx_wire.h). */
#include <stdint.h>
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

void stt_ucx_addrs_put(uint8_t *buf, size_t off, const void *addr, uint32_t len)
{
    stu_le_put32(buf + off, len);
    memcpy(buf + off + 4, addr, len);
}

strata_status_t stt_ucx_addrs_get(const uint8_t *buf, size_t len, int want, const char *peer,
                                  const uint8_t **addr, uint32_t *addr_len)
{
    size_t off = 4;
    uint32_t n = len >= 4 ? stu_le_get32(buf) : 0;

    if (n != (uint32_t)want) {
        STU_WARN("ucx: %s offers %u worker address(es) for %d member(s) here: a virtual device"
                 " connects only to one fusing as many devices", peer, n, want);
        return STRATA_ERR_INVALID;
    }
    for (int i = 0; i < want; i++) {
        uint32_t l = len - off >= 4 ? stu_le_get32(buf + off) : 0;
        if (len - off < 4 || l == 0 || l > len - off - 4) {
            STU_WARN("ucx: worker address %d of %s runs past its %zu bytes", i, peer, len);
            return STRATA_ERR_INVALID;
        }
        addr_len[i] = l;
        addr[i] = buf + off + 4;
        off += 4 + l;
    }
    return STRATA_OK;
}

void stt_ucx_vnic_plan(uint64_t size, int nlanes, uint32_t *part_bytes, int *nparts)
{
    uint64_t per = (size + (uint64_t)nlanes - 1) / (uint64_t)(nlanes > 0 ? nlanes : 1);

    per = (per + STT_UCX_PART_ALIGN - 1) / STT_UCX_PART_ALIGN * STT_UCX_PART_ALIGN;
    if (nlanes < 2 || per == 0 || per > UINT32_MAX) {
        *nparts = 1;
        *part_bytes = 0;
        return;
    }
    *part_bytes = (uint32_t)per;
    *nparts = (int)((size + per - 1) / per);
}

void stt_ucx_vhdr_encode(const stt_ucx_vhdr_t *h, void *buf)
{
    uint8_t *p = buf;

    memset(p, 0, STT_UCX_VHDR_BYTES);
    stu_le_put64(p, h->size);
    stu_le_put32(p + 8, h->seq);
    stu_le_put32(p + 12, h->part_bytes);
    p[16] = h->nparts;
    memcpy(p + 17, h->lane, sizeof(h->lane));
}

strata_status_t stt_ucx_vhdr_decode(const void *buf, int nlanes, stt_ucx_vhdr_t *h)
{
    const uint8_t *p = buf;

    h->size = stu_le_get64(p);
    h->seq = stu_le_get32(p + 8);
    h->part_bytes = stu_le_get32(p + 12);
    h->nparts = p[16];
    memcpy(h->lane, p + 17, sizeof(h->lane));
    bool ok = h->nparts >= 2 && h->nparts <= STT_MAX_VDEV_MEMBERS && h->part_bytes > 0 &&
              (uint64_t)h->part_bytes * (h->nparts - 1u) < h->size &&
              h->size <= (uint64_t)h->part_bytes * h->nparts;
    for (int j = 0; ok && j < h->nparts; j++)
        ok = h->lane[j] < nlanes;
    if (!ok) {
        STU_WARN("ucx: a striped message's head does not add up (%llu bytes in %u parts of %u,"
                 " %d lanes)", (unsigned long long)h->size, h->nparts, h->part_bytes, nlanes);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

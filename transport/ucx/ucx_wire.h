/*
 * What the UCX transport puts into bytes: the connection handle, the hello
 * both ends send over the side channel, and the UCP tag of a message. Pure
 * functions on caller memory (no alignment assumed), unit-tested in
 * tests/unit/test_ucx_wire.c. Integers are little-endian on the wire; ports
 * and addresses keep network order.
 *
 * Handle (STT_HANDLE_SIZE bytes, listen writes the first STT_UCX_HANDLE_BYTES,
 * zeroes the rest; connect keeps its state in the connect slot at the end,
 * base/connect.h):
 *   0 magic u32 "STRU" | 4 version u16 | 6 family u16 | 8 listener id u64 |
 *   16 port (network order) u16 | 18 address, 16 bytes (IPv4: first 4) |
 *   34 IPv6 scope id u32 | 38 the listener's secret, 16 bytes | 54..64 zero
 *
 * Hello (STT_UCX_HELLO_BYTES, then addr_len bytes of UCP worker address):
 *   0 magic u32 "STUH" | 4 version u16 | 6 kind u16 (1 connect, 2 accept) |
 *   8 listener id u64 | 16 connection id u32 | 20 address length u32 |
 *   24 the handle's secret, 16 bytes (base/connect.h): the connector proves it
 *   holds the handle, the listener that it is the handle's
 *
 * Tag (64 bits, matched with a full mask):
 *   bits 63..32 connection id | bits 31..0 the user's tag
 * A worker serves one connection, so the id only guards against stray
 * traffic; grouped receives post one UCP receive per buffer with that
 * buffer's tag, and UCP matches a sender's messages in posting order, which
 * is the contract's rule.
 */
#ifndef STT_UCX_WIRE_H
#define STT_UCX_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "transport/base/connect.h"
#include "transport/base/netif.h"
#include "strata/status.h"

#define STT_UCX_HANDLE_MAGIC 0x55525453u   /* "STRU" */
#define STT_UCX_HELLO_MAGIC 0x48555453u    /* "STUH" (the tcp transport's hello is "STRH") */
#define STT_UCX_WIRE_VERSION 2            /* 2: handle and hello carry the secret */
#define STT_UCX_HANDLE_BYTES 64            /* what listen writes */
_Static_assert(38 + STT_HANDLE_SECRET_BYTES <= STT_UCX_HANDLE_BYTES, "the secret fits");
#define STT_UCX_HELLO_BYTES 40
/* Largest worker address accepted from a peer: UCP packs one entry per device and
 * transport; a few hundred bytes on these machines, a few KiB with many HCAs. */
#define STT_UCX_MAX_ADDR_BYTES (64u << 10)

enum { STT_UCX_HELLO_CONNECT = 1, STT_UCX_HELLO_ACCEPT = 2 };

typedef struct stt_ucx_handle {
    uint64_t listener_id;
    stt_netif_addr_t addr;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
} stt_ucx_handle_t;

typedef struct stt_ucx_hello {
    uint16_t kind;
    uint64_t listener_id;
    uint32_t conn_id;
    uint32_t addr_len;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
} stt_ucx_hello_t;

/* Writes STT_UCX_HANDLE_BYTES. STRATA_ERR_INVALID for a family other than IPv4/IPv6. */
strata_status_t stt_ucx_handle_encode(const stt_ucx_handle_t *h, void *buf);
/* STRATA_ERR_INVALID (wrong magic, version or family) with a warning naming why. */
strata_status_t stt_ucx_handle_decode(const void *buf, stt_ucx_handle_t *h);

void stt_ucx_hello_encode(const stt_ucx_hello_t *hello, void *buf);
/* STRATA_ERR_INVALID for a bad magic, version, kind or an address length out of range. */
strata_status_t stt_ucx_hello_decode(const void *buf, stt_ucx_hello_t *hello);

static inline uint64_t stt_ucx_tag(uint32_t conn_id, int tag)
{
    return ((uint64_t)conn_id << 32) | (uint32_t)tag;
}

static inline int stt_ucx_tag_user(uint64_t tag)
{
    return (int)(uint32_t)tag;
}

#endif /* STT_UCX_WIRE_H */

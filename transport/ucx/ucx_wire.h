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
 * Hello (STT_UCX_HELLO_BYTES, then addr_len bytes of packed worker addresses):
 *   0 magic u32 "STUH" | 4 version u16 | 6 kind u16 (1 connect, 2 accept) |
 *   8 listener id u64 | 16 connection id u32 | 20 address length u32 |
 *   24 the handle's secret, 16 bytes (base/connect.h): the connector proves it
 *   holds the handle, the listener that it is the handle's
 *
 * Packed worker addresses (the hello's addr_len bytes): u32 n (the device's
 * members: 1 for an interface), then n times u32 length | that many bytes of
 * UCP worker address, member 0 first (stt_ucx_addrs_put / _get).
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/base/connect.h"
#include "transport/base/netif.h"
#include "strata/status.h"

#define STT_UCX_HANDLE_MAGIC 0x55525453u   /* "STRU" */
#define STT_UCX_HELLO_MAGIC 0x48555453u    /* "STUH" (the tcp transport's hello is "STRH") */
#define STT_UCX_WIRE_VERSION 3            /* 2: handle and hello carry the secret; 3: packed
                                             addresses, virtual devices */
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

/* Appends one packed address at buf + off (4 + len bytes). */
void stt_ucx_addrs_put(uint8_t *buf, size_t off, const void *addr, uint32_t len);
/*
 * Splits packed addresses of len bytes into n (want) addresses: STRATA_ERR_INVALID,
 * with a warning naming peer, when the count is not want or a length runs past the end.
 */
strata_status_t stt_ucx_addrs_get(const uint8_t *buf, size_t len, int want, const char *peer,
                                  const uint8_t **addr, uint32_t *addr_len);

/* ------------------------------------------------------------------ virtual devices */

#define STT_UCX_VTAG_PART (1ull << 47)
#define STT_UCX_VTAG_STRIPED (1ull << 46)
#define STT_UCX_VTAG_RECV_MASK (~STT_UCX_VTAG_STRIPED)   /* a head or a whole message */
#define STT_UCX_VHDR_BYTES 32
/* Parts are cut at multiples of this (a page), as the tcp transport's stripes are. */
#define STT_UCX_PART_ALIGN 4096u

typedef struct stt_ucx_vhdr {
    uint64_t size;
    uint32_t seq;
    uint32_t part_bytes;
    uint8_t nparts;
    uint8_t lane[8];
} stt_ucx_vhdr_t;

static inline uint64_t stt_ucx_vtag(uint32_t conn_id, int tag)
{
    return ((uint64_t)(conn_id & 0xffffu) << 48) | (uint32_t)tag;
}

static inline uint64_t stt_ucx_vtag_part(uint32_t conn_id, uint32_t seq, int part)
{
    return ((uint64_t)(conn_id & 0xffffu) << 48) | STT_UCX_VTAG_PART | ((uint64_t)part << 32) |
           seq;
}

/*
 * How a message of size bytes is striped over nlanes lanes: *nparts parts of
 * *part_bytes (page multiples; the last the rest). *nparts < 2: send it whole.
 */
void stt_ucx_vnic_plan(uint64_t size, int nlanes, uint32_t *part_bytes, int *nparts);
void stt_ucx_vhdr_encode(const stt_ucx_vhdr_t *h, void *buf);
/* STRATA_ERR_INVALID when the head does not describe a striping over nlanes lanes. */
strata_status_t stt_ucx_vhdr_decode(const void *buf, int nlanes, stt_ucx_vhdr_t *h);

static inline uint64_t stt_ucx_tag(uint32_t conn_id, int tag)
{
    return ((uint64_t)conn_id << 32) | (uint32_t)tag;
}

static inline int stt_ucx_tag_user(uint64_t tag)
{
    return (int)(uint32_t)tag;
}

#endif /* STT_UCX_WIRE_H */

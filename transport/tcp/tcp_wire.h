/*
 * The TCP transport's wire format: the handle, the handshake frames, the
 * message header and the stripe rule. Pure logic: no sockets, no allocation.
 * docs/tcp-protocol.md tells the whole protocol.
 *
 * The handle (STT_HANDLE_SIZE bytes, carried to the peer out of band by the
 * caller) is a native struct, stt_tcp_handle_t: both ends share the
 * architecture, as NCCL assumes. listen writes it and zeroes the rest of the
 * bytes; connect keeps its in-progress state in the connect slot at the end
 * (base/connect.h).
 *
 * Every frame integer travels little-endian at a fixed offset, so the frames do
 * not depend on struct layout or host byte order.
 *
 * Connection setup (client = connect side, server = listen side):
 *   client -> server, on each of the nsocks sockets, a hello (24 bytes):
 *     0 magic u32 | 4 version u16 | 6 index u8 | 7 nsocks u8 |
 *     8 listener id u64 | 16 connection id u64
 *   server -> client, on socket 0 once all nsocks hellos arrived, an ack (16 bytes):
 *     0 magic u32 | 4 version u16 | 6 nsocks u8 | 7 status u8 | 8 connection id u64
 *
 * Data: every message starts with a header (24 bytes) on socket 0:
 *     0 magic u32 | 4 flags u32 | 8 tag i32 | 12 sequence u32 | 16 size u64
 *   A message without STT_TCP_HDR_STRIPED has its whole payload on socket 0 right
 *   after the header. A striped message is cut into nsocks contiguous pieces
 *   (stt_tcp_stripe_locate); piece j travels on socket j, piece 0 right after
 *   the header. Both ends compute the split from the size and the connection's
 *   nsocks, so no piece carries its own header. On every socket, pieces follow
 *   the message order.
 */
#ifndef STT_TCP_WIRE_H
#define STT_TCP_WIRE_H

#include <stdint.h>

#include "strata/status.h"
#include "transport/base/connect.h"

#define STT_TCP_PROTO_VERSION 1
#define STT_TCP_MAX_SOCKS 8              /* STRATA_SOCKET_NSOCKS upper bound */

#define STT_TCP_HELLO_MAGIC 0x48525453u  /* "STRH" as bytes on the wire */
#define STT_TCP_ACK_MAGIC   0x41525453u  /* "STRA" */
#define STT_TCP_HDR_MAGIC   0x4d525453u  /* "STRM" */

#define STT_TCP_HELLO_BYTES 24
#define STT_TCP_ACK_BYTES   16
#define STT_TCP_HDR_BYTES   24

#define STT_TCP_HDR_STRIPED 0x1u         /* payload split across every socket */
#define STT_TCP_HDR_KNOWN_FLAGS STT_TCP_HDR_STRIPED

/* NCCL_MAX_NET_SIZE_BYTES: the largest message NCCL hands a net plugin. */
#define STT_TCP_MAX_MSG_BYTES (1ull << 40)

/*
 * Piece boundaries are multiples of this (one page), so each socket copies
 * whole pages of the user buffer; only the last non-empty piece is shorter.
 */
#define STT_TCP_STRIPE_ALIGN 4096u

#define STT_TCP_ACK_OK 0

/* The handle: base/connect.h's head with this magic and STT_TCP_PROTO_VERSION. */
#define STT_TCP_HANDLE_MAGIC 0x4c525453u   /* "STRL" */
typedef stt_handle_t stt_tcp_handle_t;

typedef struct stt_tcp_hello {
    uint16_t version;
    uint8_t index;
    uint8_t nsocks;
    uint64_t listener_id;
    uint64_t conn_id;
} stt_tcp_hello_t;

typedef struct stt_tcp_ack {
    uint16_t version;
    uint8_t nsocks;
    uint8_t status;
    uint64_t conn_id;
} stt_tcp_ack_t;

typedef struct stt_tcp_hdr {
    uint32_t flags;
    int32_t tag;
    uint32_t seq;
    uint64_t size;
} stt_tcp_hdr_t;

/*
 * Encoders write exactly *_BYTES bytes. Decoders check everything the frame
 * alone can tell (magic, version, ranges) and return STRATA_ERR_REMOTE with
 * *why_p set to a static description on failure; *out is written only on
 * success. Checks that need context (listener id, expected sequence) are the
 * caller's, except the sequence, which stt_tcp_hdr_decode takes as input.
 */
void stt_tcp_hello_encode(const stt_tcp_hello_t *hello, uint8_t *buf);
strata_status_t stt_tcp_hello_decode(const uint8_t *buf, stt_tcp_hello_t *hello_p,
                                     const char **why_p);

void stt_tcp_ack_encode(const stt_tcp_ack_t *ack, uint8_t *buf);
strata_status_t stt_tcp_ack_decode(const uint8_t *buf, stt_tcp_ack_t *ack_p, const char **why_p);

void stt_tcp_hdr_encode(const stt_tcp_hdr_t *hdr, uint8_t *buf);
/* The tag of an encoded header, read without validating it (for a matching look-ahead). */
int stt_tcp_hdr_tag(const uint8_t *buf);
strata_status_t stt_tcp_hdr_decode(const uint8_t *buf, uint32_t expected_seq,
                                   stt_tcp_hdr_t *hdr_p, const char **why_p);

/*
 * Which bytes of a message of `size` bytes with header `flags` travel on
 * socket `index` of a connection with `nsocks` sockets: [*off_p, *off_p + *len_p).
 * Unstriped messages go whole on socket 0 and are empty elsewhere. Striped
 * ones get pieces of ceil(size / nsocks) rounded up to STT_TCP_STRIPE_ALIGN;
 * trailing pieces may be empty. The pieces of one message never overlap and
 * cover it exactly. nsocks in 1..STT_TCP_MAX_SOCKS, index < nsocks.
 */
void stt_tcp_stripe_locate(uint64_t size, uint32_t flags, int nsocks, int index,
                           uint64_t *off_p, uint64_t *len_p);

#endif /* STT_TCP_WIRE_H */

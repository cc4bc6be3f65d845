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
 *   client -> server, on each of the nsocks sockets, a hello (40 bytes):
 *     0 magic u32 | 4 version u16 | 6 index u8 | 7 nsocks u8 |
 *     8 listener id u64 | 16 connection id u64 | 24 the handle's secret (16 bytes)
 *   server -> client, on socket 0 once all nsocks hellos arrived, an ack (16 bytes):
 *     0 magic u32 | 4 version u16 | 6 nsocks u8 | 7 status u8 | 8 connection id u64
 *   A socket whose hello is not this listener's (another id or secret) gets an ack with
 *   status REJECTED, one whose hello is not complete within STT_HANDSHAKE_FIRST_MS one
 *   with status LATE (connection id 0 when unknown), and is closed: the client fails at
 *   once on REJECTED and starts over on LATE.
 *
 * Data: every message starts with a header (24 bytes) on socket 0:
 *     0 magic u32 | 4 flags u32 | 8 tag i32 | 12 sequence u32 | 16 size u64
 *   A message without STT_TCP_HDR_STRIPED has its whole payload on socket 0 right
 *   after the header. A striped message is cut into nsocks contiguous pieces
 *   (stt_tcp_stripe_locate); piece j travels on socket j, piece 0 right after
 *   the header. A rotated one (STT_TCP_HDR_ROTATED, only on connections of a
 *   virtual device) travels whole on socket seq % nsocks. Both ends compute the
 *   split from the header and the connection's nsocks, so no piece carries its
 *   own header. On every socket, pieces follow the message order.
 *
 * A virtual device's handle (docs/multirail.md) adds, at STT_TCP_VNIC_OFFSET, the
 * listen addresses of its other members: 0 count u8 (0 or 1: a plain device) |
 * 1 family u8 (4 or 6) | then per member 1..count-1 its address (4 or 16 bytes)
 * and port (2 bytes), both in network order. Member 0 is the head's address.
 */
#ifndef STT_TCP_WIRE_H
#define STT_TCP_WIRE_H

#include <stdint.h>

#include "strata/status.h"
#include "transport/base/connect.h"
#include "transport/base/netif.h"

#define STT_TCP_PROTO_VERSION 4   /* 2: the hello carries the handle's secret; 3: failover
                                     frames on virtual devices' connections; 4: the lead
                                     socket (headers, frames) moves when its member is lost */
#define STT_TCP_MAX_SOCKS 8              /* STRATA_SOCKET_NSOCKS upper bound */

#define STT_TCP_HELLO_MAGIC 0x48525453u  /* "STRH" as bytes on the wire */
#define STT_TCP_ACK_MAGIC   0x41525453u  /* "STRA" */
#define STT_TCP_HDR_MAGIC   0x4d525453u  /* "STRM" */

#define STT_TCP_HELLO_BYTES 40
#define STT_TCP_ACK_BYTES   16
#define STT_TCP_HDR_BYTES   24
/* Failover frames (docs/tcp-protocol.md, "Failover"): DOWN and REPLAY stand where a
 * header would on the lead socket (STT_TCP_HDR_BYTES each); receiver -> sender frames
 * travel the other way on the receiver's lowest live socket (STT_TCP_RFRAME_BYTES each). */
#define STT_TCP_DOWN_MAGIC   0x44525453u /* "STRD": sockets going away */
#define STT_TCP_REPLAY_MAGIC 0x50525453u /* "STRP": the rest of a lost socket's stream */
#define STT_TCP_RFRAME_MAGIC 0x4f525453u /* "STRO": receiver -> sender */
#define STT_TCP_RFRAME_BYTES 16
#define STT_TCP_RFRAME_SUSPECT 1         /* the receiver saw these sockets fail */
#define STT_TCP_RFRAME_POS 2             /* how much of a lost socket's stream it holds */
#define STT_TCP_RFRAME_LEAD 3            /* the lead socket's member is lost: how much of
                                            the lead's stream the receiver holds */

#define STT_TCP_HDR_STRIPED 0x1u         /* payload split across every socket */
#define STT_TCP_HDR_ROTATED 0x2u         /* payload whole on socket seq % nsocks */
#define STT_TCP_HDR_KNOWN_FLAGS (STT_TCP_HDR_STRIPED | STT_TCP_HDR_ROTATED)

/* Where a virtual device's member addresses start in the handle (after the 60-byte head,
 * whose last 16 bytes are the listen secret). */
#define STT_TCP_VNIC_OFFSET 64
/* IPv6 members take 18 bytes each: 3 members fit before the connect slot, 4 do not. */
#define STT_TCP_VNIC_MAX_IN6 3

/* The listen addresses of a virtual device's members, member 0 first. */
typedef struct stt_tcp_vnic {
    int n;                                       /* 1 for a plain device */
    stt_netif_addr_t addr[STT_MAX_VDEV_MEMBERS];
} stt_tcp_vnic_t;

/* NCCL_MAX_NET_SIZE_BYTES: the largest message NCCL hands a net plugin. */
#define STT_TCP_MAX_MSG_BYTES (1ull << 40)

/*
 * Piece boundaries are multiples of this (one page), so each socket copies
 * whole pages of the user buffer; only the last non-empty piece is shorter.
 */
#define STT_TCP_STRIPE_ALIGN 4096u

#define STT_TCP_ACK_OK 0
#define STT_TCP_ACK_REJECTED 1           /* not this listener's id or secret */
#define STT_TCP_ACK_LATE 2               /* the hello took longer than STT_HANDSHAKE_FIRST_MS */

/* The handle: base/connect.h's head with this magic and STT_TCP_PROTO_VERSION. */
#define STT_TCP_HANDLE_MAGIC 0x4c525453u   /* "STRL" */
typedef stt_handle_t stt_tcp_handle_t;

typedef struct stt_tcp_hello {
    uint16_t version;
    uint8_t index;
    uint8_t nsocks;
    uint64_t listener_id;
    uint64_t conn_id;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
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
 * Which bytes of a message of `size` bytes with header `flags` and sequence
 * number `seq` travel on socket `index` of a connection with `nsocks` sockets:
 * [*off_p, *off_p + *len_p). Plain messages go whole on socket 0, rotated ones
 * whole on socket seq % nsocks; both are empty elsewhere. Striped ones get
 * pieces of ceil(size / nsocks) rounded up to STT_TCP_STRIPE_ALIGN; trailing
 * pieces may be empty. The pieces of one message never overlap and cover it
 * exactly. nsocks in 1..STT_TCP_MAX_SOCKS, index < nsocks.
 */
void stt_tcp_stripe_locate(uint64_t size, uint32_t flags, uint32_t seq, int nsocks, int index,
                           uint64_t *off_p, uint64_t *len_p);

/*
 * The bytes of socket `index` under socket mask `mask` (the sockets a message was
 * laid out on; bit j = socket j): stt_tcp_stripe_locate over the mask's sockets,
 * socket j being the k-th of them; empty for a socket outside the mask. `rot` is
 * seq % popcount(mask) (stt_tcp_rot).
 */
void stt_tcp_part_locate(uint64_t size, uint32_t flags, uint32_t rot, uint8_t mask, int index,
                         uint64_t *off_p, uint64_t *len_p);
/* seq % (sockets in mask): the rank, among the mask's sockets, of a rotated payload's. */
uint8_t stt_tcp_rot(uint32_t seq, uint8_t mask);

/*
 * Failover frames. A control frame at a header position is told from a header by
 * its magic (stt_tcp_ctl_kind: 0 for anything else). DOWN: mask of the sockets
 * going away, seq the next message's sequence number. REPLAY: socket, size of the
 * replayed bytes that follow it. Decoders check what the frame alone can tell.
 */
typedef struct stt_tcp_ctl {
    uint32_t kind;           /* STT_TCP_DOWN_MAGIC or STT_TCP_REPLAY_MAGIC */
    uint8_t arg;             /* DOWN: socket mask (never the socket it is read on); REPLAY:
                                socket index */
    uint32_t seq;            /* DOWN: the next message's sequence number */
    uint64_t size;           /* REPLAY: bytes that follow */
} stt_tcp_ctl_t;

uint32_t stt_tcp_ctl_kind(const uint8_t *buf);
void stt_tcp_ctl_encode(const stt_tcp_ctl_t *ctl, uint8_t *buf);
strata_status_t stt_tcp_ctl_decode(const uint8_t *buf, int nsocks, stt_tcp_ctl_t *ctl_p,
                                   const char **why_p);

/* Receiver -> sender: SUSPECT (arg: socket mask), POS or LEAD (arg: socket, pos: bytes). */
typedef struct stt_tcp_rframe {
    uint8_t type;
    uint8_t arg;
    uint64_t pos;
} stt_tcp_rframe_t;

void stt_tcp_rframe_encode(const stt_tcp_rframe_t *f, uint8_t *buf);
strata_status_t stt_tcp_rframe_decode(const uint8_t *buf, int nsocks, stt_tcp_rframe_t *f_p,
                                      const char **why_p);

/*
 * Writes members 1..n-1 of v into the handle's vNIC bytes (member 0 is the
 * head's). STRATA_ERR_INVALID when they do not fit (more than
 * STT_TCP_VNIC_MAX_IN6 IPv6 members, mixed families); nothing written then.
 */
strata_status_t stt_tcp_vnic_encode(const stt_tcp_vnic_t *v, uint8_t *handle);
/*
 * Reads them back, with addr0 (the head's address) as member 0. A plain
 * device's handle gives n = 1. STRATA_ERR_REMOTE with *why_p for bytes that
 * cannot be a vNIC list.
 */
strata_status_t stt_tcp_vnic_decode(const uint8_t *handle, const stt_netif_addr_t *addr0,
                                    stt_tcp_vnic_t *v, const char **why_p);

#endif /* STT_TCP_WIRE_H */

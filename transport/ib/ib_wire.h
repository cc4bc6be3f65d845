/*
 * The ib transport's wire formats. Pure logic: no verbs, no sockets, no
 * allocation. docs/ib-protocol.md tells the whole protocol; this header holds
 * the handle and the three formats and their checks (metadata: ib_wire.c,
 * FIFO entries: ib_fifo.c, the immediate: inline below).
 *
 * 0. The handle (STT_HANDLE_SIZE bytes, carried out of band by the caller):
 *    base/connect.h's native head with magic "STBH", STT_IB_PROTO_VERSION, a
 *    random listener id, the side channel's address and the listener's
 *    secret; connect keeps its state in the connect slot at the handle's end.
 *
 * 1. Connection metadata, over the TCP side channel. Three messages of
 *    STT_IB_META_BYTES each, every integer little-endian at a fixed offset:
 *      HELLO  connect -> listen: the sender's QPs, address, and FIFO
 *      REPLY  listen -> connect: the receiver's QPs, address, and sizes array
 *      READY  connect -> listen: the sender's QPs are at RTS
 *
 * 2. FIFO entries (clear-to-send). For receive number seq, the receiver
 *    RDMA-writes n entries, one per buffer, into slot seq % STT_IB_FIFO_DEPTH of
 *    the sender's FIFO. An entry is 32 bytes, 32-byte aligned, so that it never
 *    straddles a cache line. Fields are in host byte order (the handshake
 *    checks that both ends share it). seq is written as seq + 1, so a zeroed
 *    slot never looks posted and a slot still holding receive seq - DEPTH does
 *    not either.
 *
 * 3. The immediate of each completing RDMA write with immediate (32 bits):
 *      bits  0..4   FIFO slot of the receive it completes
 *      bits  5..7   number of QPs that carry a completion for it, minus 1
 *      bit   8      TRUNC: a send was larger than its buffer; the receive fails
 *      bit   9      SIZES: the sizes are in the receiver's sizes array slot
 *      bits 10..31  the byte count when SIZES is clear (single buffer, < 4 MiB)
 *    On a virtual device the top three bits carry the failover epoch instead
 *    (bits 10..28 the byte count, < 512 KiB; larger ones go through the sizes
 *    array): the receiver ignores an immediate of an older epoch.
 *
 * 4. Failover frames, on the TCP side channel of a comm on a virtual device
 *    (STT_IB_FO_BYTES each, docs/ib-protocol.md "Failover"): DOWN (sender ->
 *    receiver: members lost) and POS (receiver -> sender: the new epoch, the
 *    members lost, which receives are still open).
 *    A sizes array slot holds STT_MAX_RECVS u32: the byte count of each buffer,
 *    with STT_IB_SIZE_TRUNC set for a buffer whose send was too large.
 */
#ifndef STT_IB_WIRE_H
#define STT_IB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/base/connect.h"
#include "transport/transport.h"

/* 3: HELLO and REPLY carry the handle's secret; 4: virtual devices (member ports in the
 * metadata, per-member rkeys in the FIFO slot) */
#define STT_IB_PROTO_VERSION 4
#define STT_IB_MAX_QPS 8                  /* QPs of one connection, over all its members */
#define STT_IB_MAX_MEMBERS STT_MAX_VDEV_MEMBERS   /* ports one virtual device fuses */
#define STT_IB_FIFO_DEPTH STT_MAX_REQUESTS /* receives in flight: one FIFO slot each */

#define STT_IB_HANDLE_MAGIC 0x48425453u   /* "STBH" */
typedef stt_handle_t stt_ib_handle_t;

/* ------------------------------------------------------------------ FIFO */

typedef struct stt_ib_fifo_entry {
    uint64_t addr;        /* receive buffer */
    uint64_t size;        /* its capacity in bytes */
    uint32_t rkey;
    int32_t tag;
    uint8_t n;            /* buffers in this receive */
    uint8_t index;        /* this entry's buffer */
    uint8_t epoch;        /* virtual device: the receiver's failover epoch when it posted */
    uint8_t reserved;
    /*
     * Receive number + 1, last: a NIC (or rxe's copy loop) places the bytes of
     * a write in ascending order, so a seq that matches means the fields
     * before it have landed. A seq first let the sender see a new seq next to
     * the n of the slot's previous receive (seen on Soft-RoCE).
     */
    uint32_t seq;
} __attribute__((aligned(32))) stt_ib_fifo_entry_t;

_Static_assert(sizeof(stt_ib_fifo_entry_t) == 32, "a FIFO entry is 32 bytes");
_Static_assert(offsetof(stt_ib_fifo_entry_t, seq) == 28, "seq is the entry's last field");

/*
 * A slot whose seq matches but whose fields are inconsistent is read again,
 * and fails the connection only once it stayed so for this long and this
 * many reads (a stalled process must not mistake a slow write for a broken
 * peer): placement order within a write is what NICs do, not what the verbs
 * spec promises.
 */
#define STT_IB_FIFO_SETTLE_NS (100ull * 1000 * 1000)
#define STT_IB_FIFO_SETTLE_READS 64u

/*
 * One FIFO slot: the entries of one receive, after the rkeys of its buffers on
 * every member port of a virtual device (xkeys[buffer][member]; e[].rkey is
 * member 0's). A comm on one port writes only e[0..n); a comm on a virtual
 * device writes xkeys and e[0..n) in one RDMA write, so the seq of the last
 * entry still lands last.
 */
typedef struct stt_ib_fifo_slot {
    uint32_t xkeys[STT_MAX_RECVS][STT_IB_MAX_MEMBERS];
    stt_ib_fifo_entry_t e[STT_MAX_RECVS];
} stt_ib_fifo_slot_t;

_Static_assert(sizeof(((stt_ib_fifo_slot_t *)0)->xkeys) % 32 == 0, "entries stay 32-byte aligned");

/* Bytes the CTS write of n entries covers, and where it starts in the slot. */
static inline size_t stt_ib_fifo_write_off(int nmembers)
{
    return nmembers > 1 ? 0 : offsetof(stt_ib_fifo_slot_t, e);
}

static inline size_t stt_ib_fifo_write_len(int nmembers, int n)
{
    return offsetof(stt_ib_fifo_slot_t, e) - stt_ib_fifo_write_off(nmembers) +
           (size_t)n * sizeof(stt_ib_fifo_entry_t);
}

/*
 * Fills the n entries of receive seq into slot (the receiver's CTS source),
 * rkeys[i][j] being buffer i's rkey on member j of nmembers.
 */
void stt_ib_fifo_fill(stt_ib_fifo_slot_t *slot, uint32_t seq, int n, void *const *data,
                      const size_t *sizes, const int *tags,
                      const uint32_t (*rkeys)[STT_IB_MAX_MEMBERS], int nmembers);

/*
 * Sender side: has slot for receive seq fully arrived? Reads volatile memory
 * the NIC writes. OK when every entry is in and valid, STRATA_INPROGRESS when
 * some entry has not arrived yet, STRATA_ERR_REMOTE with *why_p set when an
 * arrived entry is malformed (n out of range, index wrong, entries disagree).
 * On OK *n_p gets the buffer count.
 */
strata_status_t stt_ib_fifo_check(const volatile stt_ib_fifo_slot_t *slot, uint32_t seq,
                                  int *n_p, const char **why_p);

/* ------------------------------------------------------------------ immediate */

#define STT_IB_IMM_SLOT_MASK 0x1fu
#define STT_IB_IMM_NQPS_SHIFT 5
#define STT_IB_IMM_TRUNC (1u << 8)
#define STT_IB_IMM_SIZES (1u << 9)
#define STT_IB_IMM_SIZE_SHIFT 10
#define STT_IB_IMM_SIZE_MAX ((1u << 22) - 1)   /* larger sizes go through the sizes array */
#define STT_IB_SIZE_TRUNC 0x80000000u          /* in a sizes array entry */
/* Largest message: the sizes array holds 31 bits (and RDMA writes are < 2^31). */
#define STT_IB_MAX_MSG_BYTES ((uint64_t)INT32_MAX)

_Static_assert(STT_IB_FIFO_DEPTH - 1 <= STT_IB_IMM_SLOT_MASK, "FIFO slot must fit the immediate");
_Static_assert(STT_IB_MAX_QPS <= 8, "QP count must fit the immediate");

/* A virtual device's immediates: the epoch in the top bits, a smaller byte count below. */
#define STT_IB_IMM_EPOCH_SHIFT 29
#define STT_IB_IMM_EPOCHS 8                      /* failovers one comm survives: 7 < 8 members */
#define STT_IB_IMM_SIZE_MAX_VNIC ((1u << 19) - 1)

typedef struct stt_ib_imm {
    uint32_t slot;
    uint32_t nqps;        /* 1..STT_IB_MAX_QPS */
    bool trunc;
    bool sizes;
    uint32_t size;        /* when !sizes */
    bool vnic;            /* a virtual device's immediate: epoch below, size < 512 KiB */
    uint32_t epoch;       /* vnic: 0..STT_IB_IMM_EPOCHS - 1 */
} stt_ib_imm_t;

static inline uint32_t stt_ib_imm_encode(const stt_ib_imm_t *imm)
{
    return (imm->slot & STT_IB_IMM_SLOT_MASK) | ((imm->nqps - 1) << STT_IB_IMM_NQPS_SHIFT) |
           (imm->trunc ? STT_IB_IMM_TRUNC : 0) | (imm->sizes ? STT_IB_IMM_SIZES : 0) |
           (imm->sizes ? 0 : imm->size << STT_IB_IMM_SIZE_SHIFT) |
           (imm->vnic ? imm->epoch << STT_IB_IMM_EPOCH_SHIFT : 0);
}

/* Decodes without judging; the receiver checks the fields against its state. */
static inline void stt_ib_imm_decode_as(uint32_t value, bool vnic, stt_ib_imm_t *imm)
{
    imm->slot = value & STT_IB_IMM_SLOT_MASK;
    imm->nqps = ((value >> STT_IB_IMM_NQPS_SHIFT) & 7u) + 1;
    imm->trunc = (value & STT_IB_IMM_TRUNC) != 0;
    imm->sizes = (value & STT_IB_IMM_SIZES) != 0;
    imm->vnic = vnic;
    imm->epoch = vnic ? value >> STT_IB_IMM_EPOCH_SHIFT : 0;
    uint32_t size = vnic ? (value & ((1u << STT_IB_IMM_EPOCH_SHIFT) - 1)) : value;
    imm->size = imm->sizes ? 0 : size >> STT_IB_IMM_SIZE_SHIFT;
}

/* The immediate of a comm on one port. */
static inline void stt_ib_imm_decode(uint32_t value, stt_ib_imm_t *imm)
{
    stt_ib_imm_decode_as(value, false, imm);
}

/* ------------------------------------------------------------------ failover frames */

#define STT_IB_FO_BYTES 32
#define STT_IB_FO_MAGIC 0x4f465453u      /* "STFO" as bytes on the wire */

enum { STT_IB_FO_DOWN = 1, STT_IB_FO_POS = 2 };

/*
 * 0 magic u32 | 4 version u16 | 6 type u8 | 7 epoch u8 | 8 dead u8 | 9..11 zero |
 * 12 next u32 | 16 open u32 | 20..31 zero; little-endian.
 */
typedef struct stt_ib_fo_frame {
    uint8_t type;         /* STT_IB_FO_* */
    uint8_t epoch;        /* POS: the receiver's epoch after this loss */
    uint8_t dead;         /* members lost so far, bit per member */
    uint32_t next;        /* POS: the receiver's next receive number */
    uint32_t open;        /* POS: bit per FIFO slot whose receive is still open */
} stt_ib_fo_frame_t;

/*
 * The sender's reading of a POS: is receive seq still open at the receiver, whose
 * next receive number is next and whose open receives are the FIFO slots in open?
 * Only the STT_IB_FIFO_DEPTH receives before next can be open.
 */
static inline bool stt_ib_fo_is_open(uint32_t next, uint32_t open, uint32_t seq)
{
    return next - seq - 1 < STT_IB_FIFO_DEPTH && (open & (1u << (seq % STT_IB_FIFO_DEPTH)));
}

void stt_ib_fo_encode(const stt_ib_fo_frame_t *f, uint8_t *buf);
/* Checks magic, version, type and ranges for nmembers; *why_p on STRATA_ERR_REMOTE. */
strata_status_t stt_ib_fo_decode(const uint8_t *buf, int nmembers, stt_ib_fo_frame_t *f_p,
                                 const char **why_p);

/* ------------------------------------------------------------------ connection metadata */

#define STT_IB_META_BYTES 512
#define STT_IB_META_MAGIC 0x42495453u   /* "STIB" as bytes on the wire */
#define STT_IB_BYTE_ORDER 0x01020304u   /* read back in host order: both ends must agree */

enum { STT_IB_META_HELLO = 1, STT_IB_META_REPLY = 2, STT_IB_META_READY = 3 };

/* Which GID pair the REPLY says both ends use (see stt_ib_meta_t.alt_gid). */
enum { STT_IB_GID_PRIMARY = 0, STT_IB_GID_ALT = 1 };

/* One member port of the sender's device (a port: one; a virtual device: 2..8). */
typedef struct stt_ib_meta_port {
    uint8_t link_layer;      /* IBV_LINK_LAYER_* */
    uint8_t mtu;             /* enum ibv_mtu, 1..5 */
    uint8_t port;
    uint8_t has_alt;         /* alt_gid is usable */
    uint16_t lid;
    uint32_t rkey;           /* the control block (addr) on this port */
    uint8_t gid[16];         /* the automatically chosen (or configured) GID */
    uint8_t alt_gid[16];     /* RoCE: the link-local GID, for the fallback */
} stt_ib_meta_port_t;

typedef struct stt_ib_meta {
    uint8_t kind;            /* STT_IB_META_* */
    uint8_t nqps;            /* 1..STT_IB_MAX_QPS, a multiple of nmembers; QP i on member
                                i % nmembers */
    uint8_t nmembers;        /* 1..STT_IB_MAX_MEMBERS: ports of the device (both ends equal) */
    uint8_t gid_choice;      /* REPLY: STT_IB_GID_*, for every member */
    uint8_t tc;              /* traffic class the sender's QPs use (informational) */
    uint32_t byte_order;     /* STT_IB_BYTE_ORDER as the sender's host stored it */
    uint64_t listener_id;    /* HELLO: the handle's; others: echoed */
    uint64_t conn_id;        /* chosen by connect, echoed by the other two */
    uint64_t addr;           /* HELLO: FIFO address; REPLY: sizes array address */
    uint32_t qpn[STT_IB_MAX_QPS];
    stt_ib_meta_port_t m[STT_IB_MAX_MEMBERS];
    /* HELLO: the handle's secret, proving the connector holds the handle; REPLY: the same,
     * proving the listener is the handle's; READY: zero. */
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
} stt_ib_meta_t;

/* Encodes exactly STT_IB_META_BYTES bytes. */
void stt_ib_meta_encode(const stt_ib_meta_t *meta, uint8_t *buf);

/*
 * Decodes and checks what the message alone can tell (magic, version, kind,
 * ranges, byte order). STRATA_ERR_REMOTE with *why_p set on failure; *meta_p
 * is written only on success.
 */
strata_status_t stt_ib_meta_decode(const uint8_t *buf, int expect_kind, stt_ib_meta_t *meta_p,
                                   const char **why_p);

#endif /* STT_IB_WIRE_H */

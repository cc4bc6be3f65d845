/*
 * The CollNet's bytes (docs/collnet-protocol.md): the listen handle NCCL carries to every
 * member, the hello that opens each connection, and the agreement record of each member.
 * Integers are little-endian; decoders check magic, version and ranges and say why a buffer
 * is refused.
 *
 *   handle  0..63 the transport's listen bytes | 64 magic u32 "STCN" | 68 version u16 |
 *           70 zero u16 | 72 nonce u64 | 80 dev i32 | 84..127 zero
 *   hello   0 magic u32 "STCH" | 4 version u16 | 6 zero u16 | 8 group u64 | 16 from u32 |
 *           20 to u32 | 24 nranks u32 | 28 zero u32
 *   record  0 magic u32 "STCA" | 4 version u16 | 6 ok u16 | 8 group u64 | 16 rank u32 |
 *           20 nranks u32 | 24 model: 8 x f64 bits (shm alpha, shm beta, net alpha, net beta,
 *           gamma, wake-up, shm cache beta, shm cache bytes: sta_field_t's order) | 88 forced
 *           algo i32 | 92 chunk u32 | 96 intra-node kind i32 | 100 cores u32 | 104 host u64 |
 *           112 stripe_min u32 | 116 flags u32 (STP_CN_REC_*; others refused) | 120..127 zero
 */
#include <string.h>

#include "algos/profile.h"
#include "plugin/collnet.h"
#include "util/le.h"
#include "util/log.h"
#include "util/param.h"

#define CN_HANDLE_MAGIC 0x4e435453u   /* "STCN" */
#define CN_HELLO_MAGIC 0x48435453u    /* "STCH" */
#define CN_RECORD_MAGIC 0x41435453u   /* "STCA" */
#define CN_WIRE_VERSION 3
/* The model fields a record carries, at 24..87: every one (the CollNet's table prices the
 * wake-ups and the cache tier as the library does). */
#define CN_RECORD_FIELDS 9
_Static_assert(STA_FIELD_COUNT == CN_RECORD_FIELDS, "the record carries every model field");
#define CN_RECORD_AFTER_MODEL (24 + 8 * CN_RECORD_FIELDS)

_Static_assert(STP_CN_HANDLE_XPORT_BYTES + 20 <= NCCL_NET_HANDLE_MAXSIZE,
               "the CollNet handle fits NCCL's 128 bytes");

strata_status_t stp_cn_handle_encode(void *buf, const void *xport, const stp_cn_handle_t *h)
{
    const uint8_t *x = xport;
    uint8_t *p = buf;

    /* The transports write their listen bytes at the front and zero the rest, which their
     * connect then uses for its state; the CollNet keeps only the front. */
    for (int i = STP_CN_HANDLE_XPORT_BYTES; i < NCCL_NET_HANDLE_MAXSIZE; i++) {
        if (x[i] != 0) {
            STU_WARN("collnet: the transport's listen handle uses byte %d; the CollNet keeps"
                     " only the first %d", i, STP_CN_HANDLE_XPORT_BYTES);
            return STRATA_ERR_INTERNAL;
        }
    }
    memset(p, 0, NCCL_NET_HANDLE_MAXSIZE);
    memcpy(p, x, STP_CN_HANDLE_XPORT_BYTES);
    p += STP_CN_HANDLE_XPORT_BYTES;
    stu_le_put32(p, CN_HANDLE_MAGIC);
    stu_le_put16(p + 4, CN_WIRE_VERSION);
    stu_le_put64(p + 8, h->nonce);
    stu_le_put32(p + 16, (uint32_t)h->dev);
    return STRATA_OK;
}

strata_status_t stp_cn_handle_decode(const void *buf, int index, stp_cn_handle_t *h)
{
    const uint8_t *p = (const uint8_t *)buf + STP_CN_HANDLE_XPORT_BYTES;

    if (stu_le_get32(p) != CN_HANDLE_MAGIC || stu_le_get16(p + 4) != CN_WIRE_VERSION) {
        STU_WARN("collnet: handle %d is not a Strata CollNet handle of version %d (magic %08x"
                 " version %u)", index, CN_WIRE_VERSION, stu_le_get32(p), stu_le_get16(p + 4));
        return STRATA_ERR_INVALID;
    }
    h->nonce = stu_le_get64(p + 8);
    h->dev = (int32_t)stu_le_get32(p + 16);
    return STRATA_OK;
}

void stp_cn_hello_encode(void *buf, const stp_cn_hello_t *h)
{
    uint8_t *p = buf;

    memset(p, 0, STP_CN_HELLO_BYTES);
    stu_le_put32(p, CN_HELLO_MAGIC);
    stu_le_put16(p + 4, CN_WIRE_VERSION);
    stu_le_put64(p + 8, h->group);
    stu_le_put32(p + 16, h->from);
    stu_le_put32(p + 20, h->to);
    stu_le_put32(p + 24, h->nranks);
}

strata_status_t stp_cn_hello_decode(const void *buf, stp_cn_hello_t *h)
{
    const uint8_t *p = buf;

    if (stu_le_get32(p) != CN_HELLO_MAGIC || stu_le_get16(p + 4) != CN_WIRE_VERSION)
        return STRATA_ERR_REMOTE;
    h->group = stu_le_get64(p + 8);
    h->from = stu_le_get32(p + 16);
    h->to = stu_le_get32(p + 20);
    h->nranks = stu_le_get32(p + 24);
    return STRATA_OK;
}

static uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

void stp_cn_record_encode(void *buf, const stp_cn_record_t *r)
{
    uint8_t *p = buf;

    memset(p, 0, STP_CN_RECORD_BYTES);
    stu_le_put32(p, CN_RECORD_MAGIC);
    stu_le_put16(p + 4, CN_WIRE_VERSION);
    stu_le_put16(p + 6, r->ok);
    stu_le_put64(p + 8, r->group);
    stu_le_put32(p + 16, r->rank);
    stu_le_put32(p + 20, r->nranks);
    for (int f = 0; f < CN_RECORD_FIELDS; f++)
        stu_le_put64(p + 24 + 8 * f, double_bits(r->model[f]));
    p += CN_RECORD_AFTER_MODEL;
    stu_le_put32(p, (uint32_t)r->forced);
    stu_le_put32(p + 4, r->chunk);
    stu_le_put32(p + 8, (uint32_t)r->intra);
    stu_le_put32(p + 12, r->cores);
    stu_le_put64(p + 16, r->host);
    stu_le_put32(p + 24, r->stripe_min);
    stu_le_put32(p + 28, r->flags);
}

strata_status_t stp_cn_record_decode(const void *buf, stp_cn_record_t *r)
{
    const uint8_t *p = buf;

    if (stu_le_get32(p) != CN_RECORD_MAGIC || stu_le_get16(p + 4) != CN_WIRE_VERSION)
        return STRATA_ERR_REMOTE;
    r->ok = stu_le_get16(p + 6);
    r->group = stu_le_get64(p + 8);
    r->rank = stu_le_get32(p + 16);
    r->nranks = stu_le_get32(p + 20);
    for (int f = 0; f < CN_RECORD_FIELDS; f++)
        r->model[f] = bits_double(stu_le_get64(p + 24 + 8 * f));
    p += CN_RECORD_AFTER_MODEL;
    r->forced = (int32_t)stu_le_get32(p);
    r->chunk = stu_le_get32(p + 4);
    r->intra = (int32_t)stu_le_get32(p + 8);
    r->cores = stu_le_get32(p + 12);
    r->host = stu_le_get64(p + 16);
    r->stripe_min = stu_le_get32(p + 24);
    r->flags = stu_le_get32(p + 28);
    if (r->flags & ~STP_CN_REC_FLAGS)
        return STRATA_ERR_REMOTE;
    return STRATA_OK;
}

strata_status_t stp_cn_hello_check(const void *buf, uint64_t group, int pos, int nranks,
                                   stp_cn_hello_t *h)
{
    if (stp_cn_hello_decode(buf, h) != STRATA_OK || h->group != group ||
        h->to != (uint32_t)pos || h->nranks != (uint32_t)nranks || h->from >= (uint32_t)nranks)
        return STRATA_ERR_REMOTE;
    return STRATA_OK;
}

void stp_cn_record_model(const stp_cn_record_t *r, sta_model_t *m)
{
    sta_model_default(m);
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        *sta_model_field(m, (sta_field_t)f) = r->model[f];
    m->intra = (sta_intra_t)r->intra;
}

/* Member 0's settings, which every member runs with: what its own checks let through. */
static const char *cn_lead_why(const stp_cn_record_t *r)
{
    const stu_param_def_t *chunk = stu_param_def(STU_PARAM_COLLNET_CHUNK);
    sta_model_t m;

    stp_cn_record_model(r, &m);
    if (sta_model_check(&m) != STRATA_OK)
        return "member 0's cost model is out of range";
    if (r->forced != STA_ALGO_AUTO && r->forced != STA_ALGO_RING &&
        r->forced != STA_ALGO_RECURSIVE)
        return "member 0's STRATA_COLLNET_ALGO is not auto, ring or recursive";
    if ((r->chunk != 0 && r->chunk < STP_CN_MIN_PIECE) || (int64_t)r->chunk < chunk->min ||
        (int64_t)r->chunk > chunk->max)
        return "member 0's STRATA_COLLNET_CHUNK is out of range";
    return NULL;
}

strata_status_t stp_cn_record_check(const void *buf, uint64_t group, int nranks, int lead,
                                    stp_cn_record_t *r, const char **why)
{
    if (stp_cn_record_decode(buf, r) != STRATA_OK) {
        *why = "its record is garbled";
        return STRATA_ERR_REMOTE;
    }
    if (!r->ok) {
        *why = "it could not take part (its cost model is invalid)";
        return STRATA_ERR_INVALID;
    }
    if (r->group != group || r->nranks != (uint32_t)nranks) {
        *why = "it was given other handles";
        return STRATA_ERR_MISMATCH;
    }
    if (r->rank >= (uint32_t)nranks) {
        *why = "its NCCL rank is out of range";
        return STRATA_ERR_MISMATCH;
    }
    if (lead && (*why = cn_lead_why(r)) != NULL)
        return STRATA_ERR_REMOTE;
    *why = NULL;
    return STRATA_OK;
}

/* FNV-1a, 64-bit (offset basis and prime from the FNV specification). */
#define CN_FNV_OFFSET 0xcbf29ce484222325ull
#define CN_FNV_PRIME 0x100000001b3ull

static uint64_t cn_fnv(uint64_t h, const uint8_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= bytes[i];
        h *= CN_FNV_PRIME;
    }
    return h;
}

uint64_t stp_cn_group_id(const uint64_t *nonces, int n)
{
    uint64_t h = CN_FNV_OFFSET;

    for (int i = 0; i < n; i++) {
        uint8_t le[8];
        stu_le_put64(le, nonces[i]);
        h = cn_fnv(h, le, sizeof(le));
    }
    return h;
}

uint64_t stp_cn_host_id(const char *host)
{
    return cn_fnv(CN_FNV_OFFSET, (const uint8_t *)host, strlen(host));
}

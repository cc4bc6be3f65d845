/* The handle head, the connect slot, the pending connect and the deadline (connect.h). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "transport/base/connect.h"
#include "util/hmac.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* Mixed into the check word so that zeroed or foreign bytes never validate. */
#define CONNSLOT_SALT 0x5a17c0de1bc0ffeeull

strata_status_t stt_handle_load(const void *handle, uint32_t magic, uint16_t version,
                                const char *who, stt_handle_t *h)
{
    const char *why = NULL;

    memcpy(h, handle, sizeof(*h));
    if (h->magic != magic)
        why = "bad magic (not a handle of this transport)";
    else if (h->version != version)
        why = "protocol version differs from ours";
    else if (h->addr.sa.sa_family != AF_INET && h->addr.sa.sa_family != AF_INET6)
        why = "unknown address family";
    if (why == NULL)
        return STRATA_OK;
    STU_WARN("%s: connect: invalid handle: %s (magic %08x version %u family %u)", who, why,
             h->magic, h->version, h->addr.sa.sa_family);
    return STRATA_ERR_INVALID;
}

void stt_handle_store(void *handle, uint32_t magic, uint16_t version, uint64_t listener_id,
                      const uint8_t secret[STT_HANDLE_SECRET_BYTES],
                      const stt_netif_addr_t *addr)
{
    stt_handle_t h = {.magic = magic, .version = version, .listener_id = listener_id,
                      .addr = *addr};

    memcpy(h.secret, secret, sizeof(h.secret));
    memset(handle, 0, STT_HANDLE_SIZE);
    memcpy(handle, &h, sizeof(h));
}

strata_status_t stt_handle_secret_new(const char *who, uint8_t secret[STT_HANDLE_SECRET_BYTES])
{
    /* Blocks only before the kernel's pool is first ready, never once the host is up. */
    if (getrandom(secret, STT_HANDLE_SECRET_BYTES, 0) == STT_HANDLE_SECRET_BYTES)
        return STRATA_OK;
    STU_WARN("%s: listen: getrandom for the handle's secret: %s", who, strerror(errno));
    return STRATA_ERR_IO;
}

bool stt_handle_secret_ok(const uint8_t *mine, const uint8_t *presented)
{
    return stu_mac_equal(mine, presented, STT_HANDLE_SECRET_BYTES) != 0;
}

static uint64_t connslot_check(const void *state, uint64_t listener_id)
{
    return (uint64_t)(uintptr_t)state ^ listener_id ^ CONNSLOT_SALT;
}

strata_status_t stt_connslot_load(const void *handle, uint64_t listener_id, const char *who,
                                  void **state_p)
{
    stt_connslot_t slot;

    memcpy(&slot, (const char *)handle + STT_CONNSLOT_OFFSET, sizeof(slot));
    if (slot.state != NULL && slot.check != connslot_check(slot.state, listener_id)) {
        STU_WARN("%s: connect: the handle's in-progress state is corrupt (handle copied or"
                 " overwritten while connecting?)", who);
        return STRATA_ERR_INVALID;
    }
    *state_p = slot.state;
    return STRATA_OK;
}

void stt_connslot_store(void *handle, uint64_t listener_id, void *state)
{
    stt_connslot_t slot = {.state = state,
                           .check = state != NULL ? connslot_check(state, listener_id) : 0};

    memcpy((char *)handle + STT_CONNSLOT_OFFSET, &slot, sizeof(slot));
}

/* The handle decoded into h (STT_HANDLE_SIZE bytes) with its listener id: the transport's
 * decode, or the shared head. */
static strata_status_t connect_decode(const stt_connect_steps_t *steps, const void *handle,
                                      uint8_t *h, uint64_t *listener_id_p)
{
    strata_status_t status;

    if (steps->decode != NULL)
        return steps->decode(handle, h, listener_id_p);
    status = stt_handle_load(handle, steps->magic, steps->version, steps->who,
                             (stt_handle_t *)h);
    *listener_id_p = ((const stt_handle_t *)h)->listener_id;
    return status;
}

strata_status_t stt_connect_run(const stt_connect_steps_t *steps, int dev, void *handle,
                                const stt_conn_cfg_t *cfg, stt_comm_t **send_p)
{
    union {
        uint8_t bytes[STT_HANDLE_SIZE];
        uint64_t align;
    } h;
    uint64_t listener_id = 0;
    stt_connect_t *cs;
    stt_comm_t *comm = NULL;
    strata_status_t status;

    if (handle == NULL || send_p == NULL) {
        STU_WARN("%s: connect(dev %d) called with a NULL %s", steps->who, dev,
                 handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    status = connect_decode(steps, handle, h.bytes, &listener_id);
    if (status == STRATA_OK)
        status = stt_connslot_load(handle, listener_id, steps->who, (void **)&cs);
    if (status != STRATA_OK)
        return status;
    if (cs == NULL) {
        status = steps->start(dev, h.bytes, cfg, &cs);
        if (status != STRATA_OK)
            return status;
        stt_connslot_store(handle, listener_id, cs);
    }
    status = steps->step(cs, dev, h.bytes, &comm);
    if (status == STRATA_INPROGRESS) {
        if (!stt_connect_expired(cs->start_ns, steps->who, "connecting to", cs->peer,
                                 steps->why_late != NULL ? steps->why_late(cs) : steps->hint)) {
            *send_p = NULL;
            return STRATA_OK;
        }
        status = STRATA_ERR_TIMEOUT;
    }
    steps->free(cs);                     /* ready (the comm took its parts) or failed */
    stt_connslot_store(handle, listener_id, NULL);
    if (status == STRATA_OK)
        *send_p = comm;
    return status;
}

void stt_connect_abandon_run(const stt_connect_steps_t *steps, void *handle)
{
    union {
        uint8_t bytes[STT_HANDLE_SIZE];
        uint64_t align;
    } h;
    uint64_t listener_id = 0;
    stt_connect_t *cs = NULL;
    strata_status_t status;

    status = connect_decode(steps, handle, h.bytes, &listener_id);
    if (status != STRATA_OK ||
        stt_connslot_load(handle, listener_id, steps->who, (void **)&cs) != STRATA_OK ||
        cs == NULL)
        return;
    steps->free(cs);
    stt_connslot_store(handle, listener_id, NULL);
}

uint64_t stt_connect_timeout_ns(void)
{
    int64_t ms = stu_param_int(STU_PARAM_CONNECT_TIMEOUT);

    return ms > 0 ? (uint64_t)ms * 1000000ull : UINT64_MAX;
}

bool stt_connect_expired(uint64_t start_ns, const char *who, const char *what, const char *peer,
                         const char *hint)
{
    uint64_t timeout_ns = stt_connect_timeout_ns();

    if (timeout_ns == UINT64_MAX || stu_time_ns() - start_ns <= timeout_ns)
        return false;
    STU_WARN("%s: %s %s took longer than STRATA_CONNECT_TIMEOUT=%llu ms%s", who, what, peer,
             (unsigned long long)(timeout_ns / 1000000ull), hint);
    return true;
}

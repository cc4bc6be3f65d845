/* The process's work-request observer (stt_wr_observer_t in transport/transport.h). */
#include "transport/transport.h"

static const stt_wr_observer_t *wr_observer;

void stt_wr_observer_set(const stt_wr_observer_t *obs)
{
    __atomic_store_n(&wr_observer, obs, __ATOMIC_RELEASE);
}

const stt_wr_observer_t *stt_wr_observer(void)
{
    return __atomic_load_n(&wr_observer, __ATOMIC_ACQUIRE);
}

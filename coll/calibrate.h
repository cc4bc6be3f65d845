/* Measuring the α-β model's tiers at communicator init (STRATA_CALIBRATE=1). */
#ifndef STC_CALIBRATE_H
#define STC_CALIBRATE_H

#include "strata/strata.h"

/*
 * Collective over the communicator: measures the shared-memory and transport
 * tiers (see calibrate.c) and merges the figures into the communicator's model
 * where neither a profile nor a STRATA_* variable set them.
 */
strata_status_t stc_calibrate(strata_comm_t *comm);

#endif /* STC_CALIBRATE_H */

/*
 * strata-doctor --write-profile FILE: measures this host's fabric through the collective
 * library and writes the profile file the library and strata-plan read (algos/profile.h).
 *
 *   strata-doctor --write-profile FILE [--ranks N] [--nodes K]
 *
 * runs `strata-run -n N --nodes K -- strata-doctor --calibrate-rank FILE` (strata-run from
 * the same folder) with STRATA_CALIBRATE=1: every rank initialises a communicator, whose
 * calibration (coll/calibrate.c) measures the shm tier (node 0's segment broadcast) and the
 * net tier (a ping-pong between local rank 0 of nodes 0 and 1, over the transport); rank 0
 * also times the reduction kernel for γ, then writes the file. K emulated nodes on one host
 * talk over loopback TCP, so the net tier is this host's loopback; on a real cluster, run
 * the rank side under the cluster's launcher with the same environment.
 *
 * Blocking; spawns and reaps one strata-run; writes only FILE.
 */
#ifndef STB_DOCTOR_PROFILE_H
#define STB_DOCTOR_PROFILE_H

/* Defaults: two emulated nodes of two ranks, the smallest shape that measures both tiers. */
#define STB_DOC_PROFILE_RANKS 4
#define STB_DOC_PROFILE_NODES 2

/* The parent side: runs the ranks under strata-run. Returns the exit status (0 = written). */
int stb_doc_profile_run(const char *self, const char *path, int nranks, int nodes);

/* The rank side (--calibrate-rank FILE). Returns the exit status. */
int stb_doc_profile_rank(const char *path);

#endif /* STB_DOCTOR_PROFILE_H */

/*
 * Rails: which NIC each local rank of a node uses for its inter-node traffic.
 *
 * STRATA_RAIL_MAP lists one device index per local rank, comma-separated
 * ("0,1,0,1": local ranks 0 and 2 on NIC 0, 1 and 3 on NIC 1). Without a map,
 * local rank r uses NIC r mod ndev. The hierarchical algorithms run one
 * inter-node ring per local rank, so ranks with the same local rank on every
 * node must use the same rail; the map is therefore per node, the same on all.
 *
 * Pure functions of their arguments; thread-safe.
 */
#ifndef STA_RAIL_H
#define STA_RAIL_H

#include "strata/status.h"

/* Local ranks a map may describe: far above the cores of any host Strata targets
 * (a 2-socket node has at most a few hundred), and it bounds the struct. */
#define STA_RAIL_MAP_MAX 1024

typedef struct sta_rail_map {
    int nentries;                   /* 0: no map (local rank mod ndev) */
    int dev[STA_RAIL_MAP_MAX];      /* device index of each local rank */
} sta_rail_map_t;

/*
 * Parses a rail map for a node of local_size ranks and ndev devices. An empty or NULL spec
 * gives an empty map (the default mapping). Otherwise the spec must hold exactly local_size
 * comma-separated decimal indices, each in 0..ndev-1, with no empty entries; blanks around
 * an entry are allowed. OK, or STRATA_ERR_INVALID (logged with the cause) and *map untouched.
 */
strata_status_t sta_rail_map_parse(const char *spec, int local_size, int ndev,
                                   sta_rail_map_t *map);

/* sta_rail_map_parse() of STRATA_RAIL_MAP's value. */
strata_status_t sta_rail_map_env_read(int local_size, int ndev, sta_rail_map_t *map);

/*
 * The device local_rank uses: the map's entry when the map has one for it, else
 * local_rank mod ndev. map may be NULL. -1 if local_rank < 0 or ndev < 1.
 */
int sta_rail_device(int local_rank, int ndev, const sta_rail_map_t *map);

/*
 * nrails for sta_dims_t: the number of distinct devices local ranks 0..local_size-1 use
 * (min(local_size, ndev) without a map). The model treats the ranks as spread evenly over
 * them; an uneven map ("0,0,0,1") is modelled as if even. 0 if local_size or ndev < 1.
 */
int sta_rail_count(int local_size, int ndev, const sta_rail_map_t *map);

#endif /* STA_RAIL_H */

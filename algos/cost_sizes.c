/*
 * Sizes the cost model derives: from its parameters alone a tier's crossover n* = α·β and the
 * CollNet's piece of a ring step; from a shape's cores the smallest message a cores-bound net
 * is handed (algos/cost_model.h). The times over shapes are in cost_model.c.
 */
#include "algos/cost_model.h"

#include <math.h>

#include "util/compiler.h"

double sta_tier_crossover_bytes(const sta_tier_t *tier)
{
    return tier->alpha_us * tier->beta_gbps * STA_BYTES_PER_US_PER_GBPS;
}

size_t sta_cost_piece_bytes(const sta_model_t *model, size_t block)
{
    if (sta_model_check(model) != STRATA_OK || block == 0)
        return block;
    double c = sqrt((double)block * model->net.alpha_us *
                    model->gamma_gbps * STA_BYTES_PER_US_PER_GBPS);
    return (size_t)STU_MIN((double)block, STU_MAX(c, 1.0));
}

size_t sta_cost_net_msg_min(const sta_model_t *model, const sta_dims_t *dims, size_t stripe)
{
    if (stripe == 0 || dims == NULL || dims->nnodes < 2)
        return 0;
    return sta_cost_net_cpu_bound(model, dims) ? stripe : 0;
}

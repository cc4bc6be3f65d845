/* Tools' window into a communicator (see perf_comm.h). */
#include "coll/introspect.h"

#include "algos/profile.h"
#include "coll/comm.h"

void stb_comm_model(const strata_comm_t *comm, sta_model_t *model_p, sta_dims_t *dims_p)
{
    if (model_p != NULL)
        *model_p = comm->select.model;
    if (dims_p != NULL)
        *dims_p = comm->select.dims;
}

const char *stb_comm_source(const strata_comm_t *comm, sta_field_t field)
{
    if ((unsigned)field >= STA_FIELD_COUNT)
        return "?";
    return sta_source_name(comm->select.model.source[field]);
}

const char *stb_comm_transport(const strata_comm_t *comm)
{
    return comm->ops != NULL ? stt_name(comm->ops) : "none";
}

sta_algo_t stb_comm_algo(const strata_comm_t *comm, sta_coll_t coll, size_t bytes)
{
    return sta_select_lookup(&comm->select, coll, bytes);
}

sta_algo_t stb_comm_forced(const strata_comm_t *comm)
{
    return comm->select.forced;
}

int stb_comm_ranges(const strata_comm_t *comm, sta_coll_t coll, sta_select_range_t *ranges,
                    int max)
{
    int n = 0;
    if ((unsigned)coll >= STA_COLL_COUNT)
        return 0;
    for (; n < comm->select.nranges[coll] && n < max; n++)
        ranges[n] = comm->select.ranges[coll][n];
    return n;
}

double stb_comm_predict_us(const strata_comm_t *comm, sta_coll_t coll, sta_algo_t algo,
                           size_t bytes)
{
    return sta_cost_us(&comm->select.model, &comm->select.dims, coll, algo, bytes);
}

strata_status_t stb_comm_force(strata_comm_t *comm, sta_algo_t algo)
{
    sta_select_t table;
    strata_status_t status = sta_select_build(&comm->select.model, &comm->select.dims, algo,
                                              &table);
    if (status == STRATA_OK)
        comm->select = table;
    return status;
}

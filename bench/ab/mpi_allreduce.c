/*
 * mpi_allreduce: MPI_Allreduce timed the way nccl-tests times ncclAllReduce,
 * printing nccl-tests' columns, so bench/ab/compare.sh puts OpenMPI next to
 * Strata (strata-perf) and Gloo in one table.
 *
 *   mpirun -np 2 --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl vader,self \
 *       build/bench/ab/mpi_allreduce -b 8 -e 256M -f 4
 *
 * Per size: one checked call out of place and one in place (-c 1), then for
 * each placement `-w` untimed calls, a barrier, and `-n` timed calls; a rank's
 * time is its mean per call, and the row shows the mean over ranks (nccl-tests'
 * -a 1). Buffers are allocated and touched once at the largest size, so page
 * faults on fresh memory are not timed (OpenMPI's own temporaries are its
 * business). busbw = algbw * 2(n-1)/n.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab_common.h"

#define PROGRAM "mpi_allreduce"

static MPI_Datatype mpi_dtype(ab_dtype_t t)
{
    switch (t) {
    case AB_FLOAT: return MPI_FLOAT;
    case AB_DOUBLE: return MPI_DOUBLE;
    case AB_INT32: return MPI_INT32_T;
    case AB_INT64: return MPI_INT64_T;
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(ab_op_t op)
{
    switch (op) {
    case AB_SUM: return MPI_SUM;
    case AB_PROD: return MPI_PROD;
    case AB_MIN: return MPI_MIN;
    case AB_MAX: return MPI_MAX;
    }
    return MPI_OP_NULL;
}

typedef struct bench {
    const ab_opts_t *o;
    int rank, nranks;
    char *send, *recv;
    MPI_Datatype dtype;
    MPI_Op op;
} bench_t;

static void allreduce(const bench_t *b, int in_place, size_t count)
{
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : b->send, b->recv, (int)count, b->dtype,
                           b->op, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, PROGRAM ": rank %d: MPI_Allreduce of %zu elements failed: %s\n",
                b->rank, count, text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Elements wrong summed over the ranks, after one call on check data. */
static long check_once(const bench_t *b, int in_place, size_t count)
{
    long wrong, total = 0;

    ab_fill(in_place ? b->recv : b->send, count, b->o->dtype, b->o->op, b->rank);
    allreduce(b, in_place, count);
    wrong = (long)ab_check(b->recv, count, b->o->dtype, b->o->op, b->nranks);
    MPI_Reduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    return total;
}

/* Mean microseconds per call, averaged over ranks (valid on rank 0). */
static double time_calls(const bench_t *b, int in_place, size_t count)
{
    double t0, mine, sum = 0;

    for (int i = 0; i < b->o->warmup; i++)
        allreduce(b, in_place, count);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < b->o->iters; i++)
        allreduce(b, in_place, count);
    mine = (MPI_Wtime() - t0) * 1e6 / b->o->iters;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return sum / b->nranks;
}

static void print_header(const bench_t *b)
{
    char host[MPI_MAX_PROCESSOR_NAME] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    char system[160];
    char *all = NULL;
    long pid = (long)getpid(), *pids = NULL;
    int len = 0;

    MPI_Get_processor_name(host, &len);
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, ",\n")] = '\0';
    if (b->rank == 0) {
        all = calloc((size_t)b->nranks, MPI_MAX_PROCESSOR_NAME);
        pids = calloc((size_t)b->nranks, sizeof(long));
        if (all == NULL || pids == NULL) {
            fprintf(stderr, PROGRAM ": out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    MPI_Gather(&pid, 1, MPI_LONG, pids, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (b->rank == 0) {
        snprintf(system, sizeof(system), "%.*s", (int)sizeof(system) - 1, lib);
        ab_print_header(b->o, PROGRAM, system, b->nranks);
        for (int r = 0; r < b->nranks; r++)
            ab_print_rank(r, pids[r], all + (size_t)r * MPI_MAX_PROCESSOR_NAME);
        ab_print_titles();
    }
    free(all);
    free(pids);
}

int main(int argc, char **argv)
{
    ab_opts_t o;
    bench_t b;
    size_t tsize;
    int rc, status = 0;

    MPI_Init(&argc, &argv);
    memset(&b, 0, sizeof(b));
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.nranks);
    rc = ab_opts_parse(argc, argv, 0, NULL, &o);
    if (rc != 0) {
        MPI_Finalize();
        return rc < 0 ? 2 : 0;
    }
    ab_arm_timeout(&o, PROGRAM);
    tsize = ab_dtype_size(o.dtype);
    if (o.max_bytes / tsize > (size_t)0x7fffffff) {
        if (b.rank == 0)
            fprintf(stderr, PROGRAM ": -e %zu is more elements than MPI's int count\n",
                    o.max_bytes);
        MPI_Finalize();
        return 2;
    }
    b.o = &o;
    b.dtype = mpi_dtype(o.dtype);
    b.op = mpi_op(o.op);
    b.send = malloc(o.max_bytes);
    b.recv = malloc(o.max_bytes);
    if (b.send == NULL || b.recv == NULL) {
        fprintf(stderr, PROGRAM ": rank %d: cannot allocate 2 x %zu bytes\n", b.rank,
                o.max_bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Touch every page now so first-touch faults are not timed. */
    memset(b.send, 0, o.max_bytes);
    memset(b.recv, 0, o.max_bytes);

    print_header(&b);
    for (size_t size = ab_size_first(&o); size != 0; size = ab_size_next(&o, size)) {
        size_t count = size / tsize;
        long wrong[2] = {-1, -1};
        double us[2];

        if (count == 0)
            continue;
        for (int ip = 0; ip < 2; ip++) {
            if (o.check)
                wrong[ip] = check_once(&b, ip, count);
            us[ip] = time_calls(&b, ip, count);
        }
        if (b.rank == 0)
            ab_print_row(&o, count * tsize, b.nranks, us[0], wrong[0], us[1], wrong[1]);
    }
    if (b.rank == 0)
        status = ab_print_footer();
    free(b.send);
    free(b.recv);
    MPI_Finalize();
    return status;
}

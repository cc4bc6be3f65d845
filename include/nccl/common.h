/*
 * The NCCL plugin ABI, part 1: what every plugin interface shares.
 *
 * Written for Strata from the ABI of NCCL 2.28.9 (tag v2.28.9-1). Names and
 * numeric values are NCCL's, because they are the ABI; the text and the
 * grouping are ours. Strata never includes CUDA's or NCCL's installed nccl.h:
 * everything the plugin needs is declared under include/nccl/.
 *
 * Only plugin/ may include these headers (see `make lint`).
 *
 * C11 only (the layout checks are _Static_asserts). They pin sizes and offsets
 * for x86_64 LP64 (Linux, gcc or clang); the numbers were measured by
 * compiling NCCL's own headers, not derived by hand.
 */
#ifndef STRATA_NCCL_COMMON_H
#define STRATA_NCCL_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Layout checks: one line per member whose offset is part of the ABI. */
#define STP_ABI_CHECK_OFFSET(type, member, off) \
    _Static_assert(offsetof(type, member) == (off), #type "." #member " is at offset " #off)
#define STP_ABI_CHECK_SIZE(type, size) \
    _Static_assert(sizeof(type) == (size), "sizeof(" #type ") is " #size)

/* ------------------------------------------------------------------ results */

/*
 * What every plugin entry point returns. A plugin reports OS or hardware
 * failures as ncclSystemError, NCCL misusing the API as ncclInternalError,
 * bad user configuration as ncclInvalidUsage, and a broken peer as
 * ncclRemoteError. ncclInProgress belongs to NCCL's own non-blocking API: a
 * plugin never returns it (a plugin says "not yet" with a NULL output).
 */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

/* ------------------------------------------------------------------ logging */

/* Severity of a log line. NCCL drops lines above the level set by NCCL_DEBUG. */
typedef enum {
    NCCL_LOG_NONE = 0,
    NCCL_LOG_VERSION = 1,
    NCCL_LOG_WARN = 2,
    NCCL_LOG_INFO = 3,
    NCCL_LOG_ABORT = 4,
    NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* Subsystem bits, matched against NCCL_DEBUG_SUBSYS. A plugin logs under NCCL_NET. */
typedef enum {
    NCCL_INIT = 0x1,
    NCCL_COLL = 0x2,
    NCCL_P2P = 0x4,
    NCCL_SHM = 0x8,
    NCCL_NET = 0x10,
    NCCL_GRAPH = 0x20,
    NCCL_TUNING = 0x40,
    NCCL_ENV = 0x80,
    NCCL_ALLOC = 0x100,
    NCCL_CALL = 0x200,
    NCCL_PROXY = 0x400,
    NCCL_NVLS = 0x800,
    NCCL_BOOTSTRAP = 0x1000,
    NCCL_REG = 0x2000,
    NCCL_PROFILE = 0x4000,
    NCCL_RAS = 0x8000,
    NCCL_ALL = ~0
} ncclDebugLogSubSys;

/*
 * NCCL's logger, handed to init. `flags` is a mask of ncclDebugLogSubSys; by
 * NCCL's convention WARN lines pass __FILE__ and INFO/TRACE lines __func__ as
 * `file`. The format is printf's.
 */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);

/* ------------------------------------------------------------------ profiler */

/* Event kinds a net plugin may report through the profiler callback. */
enum {
    ncclProfilerNetEventStart = 0,
    ncclProfilerNetEventStop = 1,
    ncclProfilerNetEventUpdate = 2,
    ncclProfilerNetEventUpdateAndStop = 3,
};

/*
 * Profiler hook given to init (v10 and later). `type` is one of the events
 * above; `phandle` is the per-operation handle NCCL passed to isend/irecv;
 * `eHandle` carries the event between start and stop; `extData` is
 * plugin-defined.
 */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *phandle,
                                               int64_t pluginId, void *extData);

/* ------------------------------------------------------------------ net constants */

/* Bytes of the connection handle listen() fills and connect() reads. */
#define NCCL_NET_HANDLE_MAXSIZE 128

/* Memory types for regMr's `type` and the ptrSupport property (a bit mask). */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/*
 * Receives a comm must accept in flight. Each may group up to maxRecvs
 * buffers, so a send comm must accept NCCL_NET_MAX_REQUESTS * maxRecvs
 * sends. The v6 era budget was 8.
 */
#define NCCL_NET_MAX_REQUESTS 32
#define NCCL_NET_MAX_REQUESTS_V6 8

/* Largest maxP2pBytes / maxCollBytes NCCL accepts from getProperties: 1 TiB. */
#define NCCL_MAX_NET_SIZE_BYTES (1L * 1024 * 1024 * 1024 * 1024)

/*
 * Per-operation limits NCCL assumes for plugins older than v9, which cannot
 * report maxP2pBytes/maxCollBytes: 1 GiB for point to point (a power of two
 * below INT_MAX), 512 MiB for collectives.
 */
#define MAX_NET_SIZE (1024L * 1024 * 1024)
#define MAX_COLLNET_SIZE (512L * 1024 * 1024)

/*
 * Hints NCCL leaves in *request before calling irecv. OPTIONAL_RECV_COMPLETION
 * (LL/LL128, one buffer) says the receiver need not report completion
 * precisely. Whatever the hint, irecv must overwrite *request: with a real
 * request, or with NULL for "try again".
 */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCL_NET_MULTI_REQUEST 0x2

/* Registration flag: keep strict PCIe ordering (no relaxed ordering). */
#define NCCL_NET_MR_FLAG_FORCE_SO (1 << 0)

/* Physical devices one virtual NIC may fuse (vProps.devs). */
#define NCCL_NET_MAX_DEVS_PER_NIC 4

/* Traffic class of a comm config when the application set none (v10 and later). */
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)

/* ------------------------------------------------------------------ collnet types */

/* Element types of collective operations (CollNet's reduceSupport/iallreduce). */
typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

/*
 * Reduction operators. Values from ncclNumOps up are user-defined operators
 * created at run time; ncclMaxRedOp is the largest value that keeps the enum
 * the size of an int, which NCCL guarantees for ABI stability.
 */
typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

_Static_assert(sizeof(void *) == 8 && sizeof(long) == 8 && sizeof(size_t) == 8,
               "the layout checks in include/nccl/ are written for LP64 targets");
_Static_assert(sizeof(ncclResult_t) == 4, "ncclResult_t is an int-sized enum");
_Static_assert(sizeof(ncclDataType_t) == 4, "ncclDataType_t is an int-sized enum");
_Static_assert(sizeof(ncclRedOp_t) == 4, "ncclRedOp_t is an int-sized enum");
_Static_assert(NCCL_MAX_NET_SIZE_BYTES == 1099511627776L, "1 TiB");

#endif /* STRATA_NCCL_COMMON_H */

/*
 * The registry of per-comm counters and the JSON it prints (net_stats.h).
 * Device totals are the sum of the closed comms folded in at close plus the
 * live comms summed at read time, so a comm is never counted twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/net_stats.h"
#include "strata/net_stats.h"
#include "plugin/plugin.h"
#include "util/log.h"
#include "util/param.h"

/* Devices with totals: the physical ones and the virtual ones makeVDevice adds. */
#define STATS_MAX_DEVS (2 * STP_MAX_DEVS)
/* A path after "%p"/"%h" expansion, and the temporary file beside it. */
#define STATS_PATH_MAX 4096
#define STATS_HOST_MAX 256

typedef struct stats_counts {
    uint64_t bytes[2];       /* [0] received, [1] sent */
    uint64_t msgs[2];
    uint64_t errors;
    uint64_t reconnects;
    uint64_t blocked_ns;
    uint64_t comms;
    int nmembers;            /* members of a virtual device, with their sums over its comms,
                                [0] receive comms, [1] send comms */
    stt_member_stats_t members[2][STT_MAX_VDEV_MEMBERS];
} stats_counts_t;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static stp_stats_t *stats_live;       /* open comms, newest first */
static stp_stats_t *stats_closed;     /* closed comms kept as entries, newest first */
static int stats_nclosed;
static uint64_t stats_dropped;        /* closed comms past STP_STATS_MAX_CLOSED */
static uint64_t stats_next_id = 1;
static stats_counts_t stats_devs[STATS_MAX_DEVS];   /* closed comms' sums */

static uint64_t ld(const uint64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

void stp_stats_open(stt_comm_t *comm, int dev, bool send)
{
    stp_stats_t *s = calloc(1, sizeof(*s));

    comm->stats = NULL;
    if (s == NULL) {
        STU_WARN("stats: no memory for the counters of a comm on dev %d; it goes uncounted",
                 dev);
        return;
    }
    s->dev = dev;
    s->send = send;
    s->comm = comm;
    pthread_mutex_lock(&stats_lock);
    s->id = stats_next_id++;
    s->next = stats_live;
    stats_live = s;
    pthread_mutex_unlock(&stats_lock);
    comm->stats = s;
}

/* The member counters of s, from its comm while open (the registry's lock held). */
static int stats_members(const stp_stats_t *s, stt_member_stats_t *out)
{
    if (s->comm == NULL) {
        memcpy(out, s->members, sizeof(s->members));
        return s->nmembers;
    }
    int n = s->comm->nmembers;
    n = n < 0 ? 0 : n > STT_MAX_VDEV_MEMBERS ? STT_MAX_VDEV_MEMBERS : n;
    for (int m = 0; m < n; m++) {
        out[m].bytes = ld(&s->comm->members[m].bytes);
        out[m].msgs = ld(&s->comm->members[m].msgs);
        out[m].errors = ld(&s->comm->members[m].errors);
        out[m].lost = ld(&s->comm->members[m].lost);
    }
    return n;
}

static void stats_fold(stats_counts_t *c, const stp_stats_t *s)
{
    stt_member_stats_t mem[STT_MAX_VDEV_MEMBERS];
    int n = stats_members(s, mem);

    if (n > c->nmembers)
        c->nmembers = n;
    for (int m = 0; m < n; m++) {
        stt_member_stats_t *sum = &c->members[s->send][m];
        sum->bytes += mem[m].bytes;
        sum->msgs += mem[m].msgs;
        sum->errors += mem[m].errors;
        sum->lost += mem[m].lost;
    }
    c->bytes[s->send] += ld(&s->bytes);
    c->msgs[s->send] += ld(&s->msgs);
    c->errors += ld(&s->errors);
    c->reconnects += ld(&s->reconnects);
    c->blocked_ns += ld(&s->blocked_ns);
    c->comms++;
}

void stp_stats_close(stt_comm_t *comm)
{
    stp_stats_t *s = comm->stats;

    if (s == NULL)
        return;
    comm->stats = NULL;
    pthread_mutex_lock(&stats_lock);
    for (stp_stats_t **pp = &stats_live; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    s->nmembers = stats_members(s, s->members);
    s->comm = NULL;
    if (s->dev >= 0 && s->dev < STATS_MAX_DEVS)
        stats_fold(&stats_devs[s->dev], s);
    s->closed = true;
    /* entries of closed comms only for a dump that was asked for (STRATA_STATS): a job that
     * never reads them keeps no memory per connection it has closed */
    if (stats_nclosed < STP_STATS_MAX_CLOSED && stu_param_str(STU_PARAM_STATS)[0] != '\0') {
        s->next = stats_closed;
        stats_closed = s;
        stats_nclosed++;
        s = NULL;
    } else {
        stats_dropped++;
    }
    pthread_mutex_unlock(&stats_lock);
    free(s);
}

void stp_stats_reconnect(stt_comm_t *comm, uint64_t n)
{
    stp_stats_t *s = comm->stats;
    if (s != NULL)
        stp_stats_add(&s->reconnects, n);
}

void stp_stats_reset(void)
{
    pthread_mutex_lock(&stats_lock);
    while (stats_closed != NULL) {
        stp_stats_t *s = stats_closed;
        stats_closed = s->next;
        free(s);
    }
    stats_nclosed = 0;
    stats_dropped = 0;
    memset(stats_devs, 0, sizeof(stats_devs));
    pthread_mutex_unlock(&stats_lock);
}

/* ------------------------------------------------------------------ JSON */

typedef struct jbuf {
    char *buf;
    size_t len;
    size_t need;             /* what the whole document takes, without the NUL */
} jbuf_t;

static void jprintf(jbuf_t *j, const char *fmt, ...) STU_PRINTF(2, 3);
static void jprintf(jbuf_t *j, const char *fmt, ...)
{
    va_list ap;
    size_t room = j->need < j->len ? j->len - j->need : 0;

    va_start(ap, fmt);
    int n = vsnprintf(room > 0 ? j->buf + j->need : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        j->need += (size_t)n;
}

/* Device and interface names are the kernel's ([A-Za-z0-9_.:-]); anything else becomes '?'. */
static void jname(jbuf_t *j, const char *name)
{
    char safe[64];
    size_t i = 0;

    for (; name[i] != '\0' && i + 1 < sizeof(safe); i++) {
        unsigned char ch = (unsigned char)name[i];
        safe[i] = (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') ? '?' : (char)ch;
    }
    safe[i] = '\0';
    jprintf(j, "\"%s\"", safe);
}

static void jcounts(jbuf_t *j, const stats_counts_t *c)
{
    jprintf(j, "\"bytes_sent\":%" PRIu64 ",\"bytes_recv\":%" PRIu64 ",\"msgs_sent\":%" PRIu64
            ",\"msgs_recv\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"reconnects\":%" PRIu64
            ",\"blocked_ns\":%" PRIu64 ",\"comms\":%" PRIu64, c->bytes[1], c->bytes[0],
            c->msgs[1], c->msgs[0], c->errors, c->reconnects, c->blocked_ns, c->comms);
}

/*
 * ,"members":[{"member":0,"name":"veth0","bytes":..,"msgs":..,"errors":..,"state":"up"},..]
 * for a connection on a device of several members (mem[0..n)), names the parts of the
 * device's "a+b" name; for a device (dmem: [0] receive, [1] send sums) bytes and msgs each
 * way and "lost", the comms that lost it, instead of "state".
 */
static void jmembers(jbuf_t *j, int dev, const stt_member_stats_t *mem,
                     const stt_member_stats_t (*dmem)[STT_MAX_VDEV_MEMBERS], int n)
{
    const stt_props_t *p = stp_state_props(dev);
    const char *name = p != NULL ? p->name : "";

    if (n < 2)
        return;
    jprintf(j, ",\"members\":[");
    for (int m = 0; m < n; m++) {
        char part[64] = "";
        size_t len = strcspn(name, "+");
        snprintf(part, sizeof(part), "%.*s", (int)(len < sizeof(part) ? len : sizeof(part) - 1),
                 name);
        name += len + (name[len] == '+');
        jprintf(j, "%s{\"member\":%d,\"name\":", m ? "," : "", m);
        jname(j, part);
        if (dmem != NULL)
            jprintf(j, ",\"bytes_sent\":%" PRIu64 ",\"bytes_recv\":%" PRIu64 ",\"msgs_sent\":%"
                    PRIu64 ",\"msgs_recv\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"lost\":%" PRIu64
                    "}", dmem[1][m].bytes, dmem[0][m].bytes, dmem[1][m].msgs, dmem[0][m].msgs,
                    dmem[0][m].errors + dmem[1][m].errors, dmem[0][m].lost + dmem[1][m].lost);
        else
            jprintf(j, ",\"bytes\":%" PRIu64 ",\"msgs\":%" PRIu64 ",\"errors\":%" PRIu64
                    ",\"state\":\"%s\"}", mem[m].bytes, mem[m].msgs, mem[m].errors,
                    mem[m].lost ? "lost" : "up");
    }
    jprintf(j, "]");
}

static void jconn(jbuf_t *j, const stp_stats_t *s, bool first)
{
    stt_member_stats_t mem[STT_MAX_VDEV_MEMBERS];
    int n = stats_members(s, mem);

    jprintf(j, "%s{\"id\":%" PRIu64 ",\"dev\":%d,\"dir\":\"%s\",\"state\":\"%s\",\"bytes\":%"
            PRIu64 ",\"msgs\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"reconnects\":%" PRIu64
            ",\"blocked_ns\":%" PRIu64, first ? "" : ",", s->id, s->dev,
            s->send ? "send" : "recv", s->closed ? "closed" : "open", ld(&s->bytes),
            ld(&s->msgs), ld(&s->errors), ld(&s->reconnects), ld(&s->blocked_ns));
    jmembers(j, s->dev, mem, NULL, n);
    jprintf(j, "}");
}

size_t stp_stats_json(char *buf, size_t len)
{
    jbuf_t j = {.buf = buf, .len = len, .need = 0};
    const stt_ops_t *ops = stp_state_transport();
    int ndev = stp_state_ndev();

    if (len > 0)
        buf[0] = '\0';
    pthread_mutex_lock(&stats_lock);
    jprintf(&j, "{\"strata_net_stats\":1,\"pid\":%d,\"transport\":\"%s\",\"devices\":[",
            (int)getpid(), ops != NULL ? stt_name(ops) : "");
    bool first = true;
    for (int d = 0; d < STATS_MAX_DEVS; d++) {
        stats_counts_t c = stats_devs[d];
        for (const stp_stats_t *s = stats_live; s != NULL; s = s->next)
            if (s->dev == d)
                stats_fold(&c, s);
        const stt_props_t *p = stp_state_props(d);
        if (c.comms == 0 && (p == NULL || d >= ndev))
            continue;        /* a device that is gone or never carried a comm */
        jprintf(&j, "%s{\"dev\":%d,\"name\":", first ? "" : ",", d);
        jname(&j, p != NULL ? p->name : "");
        jprintf(&j, ",");
        jcounts(&j, &c);
        jmembers(&j, d, NULL, c.members, c.nmembers);
        jprintf(&j, "}");
        first = false;
    }
    jprintf(&j, "],\"connections\":[");
    first = true;
    for (const stp_stats_t *s = stats_live; s != NULL; s = s->next, first = false)
        jconn(&j, s, first);
    for (const stp_stats_t *s = stats_closed; s != NULL; s = s->next, first = false)
        jconn(&j, s, first);
    jprintf(&j, "],\"connections_dropped\":%" PRIu64 "}\n", stats_dropped);
    pthread_mutex_unlock(&stats_lock);
    return j.need;
}

/* path with %p (pid) and %h (host name) expanded; false when it does not fit. */
static bool stats_path_expand(const char *path, char *out, size_t len)
{
    char host[STATS_HOST_MAX] = "unknown";
    size_t o = 0;

    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    for (const char *p = path; *p != '\0'; p++) {
        char piece[STATS_HOST_MAX + 24];
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(piece, sizeof(piece), "%d", (int)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            snprintf(piece, sizeof(piece), "%s", host);
            p++;
        } else {
            piece[0] = *p;
            piece[1] = '\0';
        }
        size_t n = strlen(piece);
        if (o + n + 1 > len)
            return false;
        memcpy(out + o, piece, n + 1);
        o += n;
    }
    return o > 0;
}

strata_status_t stp_stats_write(const char *path)
{
    char full[STATS_PATH_MAX], tmp[STATS_PATH_MAX + 32];
    strata_status_t status = STRATA_ERR_IO;

    if (path == NULL || !stats_path_expand(path, full, sizeof(full))) {
        STU_WARN("stats: cannot use '%s' as the STRATA_STATS file (empty, or longer than %d"
                 " bytes once %%p and %%h are expanded)", path ? path : "(null)",
                 STATS_PATH_MAX - 1);
        return STRATA_ERR_INVALID;
    }
    /* Comms may open between sizing and printing: size again until it fits. */
    char *doc = NULL;
    size_t got = stp_stats_json(NULL, 0), cap = 0;
    while (got + 1 > cap) {
        cap = got + 1 + 1024;
        free(doc);
        if ((doc = malloc(cap)) == NULL) {
            STU_WARN("stats: no memory for a %zu-byte document", cap);
            return STRATA_ERR_NO_MEMORY;
        }
        got = stp_stats_json(doc, cap);
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp%d", full, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        STU_WARN("stats: cannot create %s: %s", tmp, strerror(errno));
        goto err_free;
    }
    bool ok = fwrite(doc, 1, got, f) == got;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, full) != 0) {
        STU_WARN("stats: cannot write %s: %s", full, strerror(errno));
        unlink(tmp);
        goto err_free;
    }
    STU_INFO(STU_LOG_NET, "stats: wrote %zu bytes to %s", got, full);
    status = STRATA_OK;
err_free:
    free(doc);
    return status;
}

void stp_stats_finalize(void)
{
    const char *path = stu_param_str(STU_PARAM_STATS);

    if (path != NULL && path[0] != '\0')
        stp_stats_write(path);
}

/* ------------------------------------------------------------------ exported */

STU_EXPORT size_t strata_net_stats_json(char *buf, size_t len)
{
    return stp_stats_json(buf, len);
}

STU_EXPORT int strata_net_stats_write(const char *path)
{
    return stp_stats_write(path) == STRATA_OK ? 0 : -1;
}

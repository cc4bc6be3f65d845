/* strata-doctor's sysfs checks (tools/doctor/doctor_checks.h). */
#include "tools/doctor/doctor_checks.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DOC_MAX_GIDS 256
#define DOC_ROCE_MTU_MIN 4200      /* a netdev MTU that carries 4096-byte RoCE frames */
#define DOC_MEMLOCK_MIN ((uint64_t)1 << 30)

static const char *const level_tags[STB_DOC_LEVELS] = {"[ ok ]", "[info]", "[warn]", "[FAIL]"};

void stb_doc_report(stb_doc_t *doc, stb_doc_level_t level, const char *what, const char *fmt,
                    ...)
{
    va_list ap;

    doc->count[level]++;
    fprintf(doc->out, "%s %s: ", level_tags[level], what);
    va_start(ap, fmt);
    vfprintf(doc->out, fmt, ap);
    va_end(ap);
    fputc('\n', doc->out);
}

int stb_doc_read(char *buf, size_t len, const char *root, const char *fmt, ...)
{
    char rel[PATH_MAX], path[PATH_MAX * 2];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static int doc_is_zero_gid(const char *gid)
{
    for (const char *p = gid; *p != '\0'; p++)
        if (*p != '0' && *p != ':')
            return 0;
    return 1;
}

/* The uverbs node of dev, from class/infiniband_verbs/uverbsN/ibdev; 0 when none. */
static int doc_uverbs_of(const char *root, const char *dev, char *node, size_t len)
{
    char dir[PATH_MAX], buf[128];
    snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs", root);
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;

    if (d == NULL)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "uverbs", 6) != 0)
            continue;
        if (stb_doc_read(buf, sizeof(buf), root, "class/infiniband_verbs/%s/ibdev", e->d_name) &&
            strcmp(buf, dev) == 0) {
            snprintf(node, len, "%.60s", e->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

/* RoCE: a RoCE v2 GID with an address, and its netdev's MTU. 1 when usable. */
static int doc_check_roce(stb_doc_t *doc, const char *root, const char *dev, const char *port,
                          const char *what)
{
    char gid[128], type[64], ndev[64], mtu[32];
    int v2 = -1, v2_ipv4 = -1;

    for (int i = 0; i < DOC_MAX_GIDS; i++) {
        if (!stb_doc_read(gid, sizeof(gid), root, "class/infiniband/%s/ports/%s/gids/%d", dev, port,
                      i))
            break;
        if (doc_is_zero_gid(gid) ||
            !stb_doc_read(type, sizeof(type), root, "class/infiniband/%s/ports/%s/gid_attrs/types/%d",
                      dev, port, i) ||
            strcmp(type, "RoCE v2") != 0)
            continue;
        if (v2 < 0)
            v2 = i;
        if (v2_ipv4 < 0 && strncmp(gid, "0000:0000:0000:0000:0000:ffff:", 30) == 0)
            v2_ipv4 = i;
    }
    if (v2 < 0) {
        stb_doc_report(doc, STB_DOC_FAIL, what, "no RoCE v2 GID: give the port's netdev an IP "
                       "address (RoCE v2 GIDs are made from its addresses)");
        return 0;
    }
    int idx = v2_ipv4 >= 0 ? v2_ipv4 : v2;
    stb_doc_read(gid, sizeof(gid), root, "class/infiniband/%s/ports/%s/gids/%d", dev, port, idx);
    if (!stb_doc_read(ndev, sizeof(ndev), root, "class/infiniband/%s/ports/%s/gid_attrs/ndevs/%d",
                  dev, port, idx))
        snprintf(ndev, sizeof(ndev), "?");
    stb_doc_report(doc, STB_DOC_OK, what, "RoCE v2 GID index %d %s on %s%s", idx, gid, ndev,
                   v2_ipv4 >= 0 ? " (IPv4)" : " (IPv6 only)");
    if (stb_doc_read(mtu, sizeof(mtu), root, "class/net/%s/mtu", ndev)) {
        if (atoi(mtu) < DOC_ROCE_MTU_MIN)
            stb_doc_report(doc, STB_DOC_WARN, what, "%s has MTU %s: RoCE frames stay below "
                           "4096 bytes (set MTU >= %d, e.g. 9000, on hosts and switches)", ndev,
                           mtu, DOC_ROCE_MTU_MIN);
        else
            stb_doc_report(doc, STB_DOC_OK, what, "%s MTU %s", ndev, mtu);
    }
    return 1;
}

/* One port: state, physical state, link layer, rate and its address. 1 when usable. */
static int doc_check_port(stb_doc_t *doc, const char *root, const char *dev, const char *port)
{
    char what[160], state[64], phys[64], layer[64], rate[96], lid[32];

    snprintf(what, sizeof(what), "%s port %s", dev, port);
    if (!stb_doc_read(state, sizeof(state), root, "class/infiniband/%s/ports/%s/state", dev, port)) {
        stb_doc_report(doc, STB_DOC_FAIL, what, "no state in sysfs");
        return 0;
    }
    if (!stb_doc_read(phys, sizeof(phys), root, "class/infiniband/%s/ports/%s/phys_state", dev,
                  port))
        snprintf(phys, sizeof(phys), "?");
    if (!stb_doc_read(layer, sizeof(layer), root, "class/infiniband/%s/ports/%s/link_layer", dev,
                  port))
        snprintf(layer, sizeof(layer), "?");
    if (!stb_doc_read(rate, sizeof(rate), root, "class/infiniband/%s/ports/%s/rate", dev, port))
        snprintf(rate, sizeof(rate), "?");
    if (strstr(state, "ACTIVE") == NULL) {
        stb_doc_report(doc, STB_DOC_FAIL, what, "state %s, physical %s: %s", state, phys,
                       strstr(phys, "LinkUp") != NULL
                           ? "the link is up but the port is not ACTIVE (InfiniBand: is a "
                             "subnet manager running? `sminfo`)"
                           : "no link (cable, transceiver, switch port, or the netdev is down)");
        return 0;
    }
    stb_doc_report(doc, STB_DOC_OK, what, "ACTIVE, %s, %s, %s", phys, layer, rate);
    if (strcmp(layer, "Ethernet") == 0)
        return doc_check_roce(doc, root, dev, port, what);
    if (!stb_doc_read(lid, sizeof(lid), root, "class/infiniband/%s/ports/%s/lid", dev, port) ||
        strtoul(lid, NULL, 0) == 0) {
        stb_doc_report(doc, STB_DOC_FAIL, what, "InfiniBand port without a LID: no subnet "
                       "manager has swept the fabric (start opensm or the switch's SM)");
        return 0;
    }
    stb_doc_report(doc, STB_DOC_OK, what, "LID %s", lid);
    return 1;
}

static int doc_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int stb_doc_list(const char *root, const char *rel, char ***names_p)
{
    char dir[PATH_MAX * 2];
    struct dirent *e;
    char **names = NULL;
    int n = 0;

    snprintf(dir, sizeof(dir), "%s/%s", root, rel);
    DIR *d = opendir(dir);
    if (d == NULL) {
        *names_p = NULL;
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char **grown = realloc(names, sizeof(*names) * (size_t)(n + 1));
        if (grown == NULL)
            break;
        names = grown;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(*names), doc_name_cmp);
    *names_p = names;
    return n;
}

void stb_doc_list_free(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

int stb_doc_check_rdma(stb_doc_t *doc, const char *sysroot)
{
    char **devs, uverbs[64], dir[PATH_MAX * 2];
    int usable = 0;
    int ndev = stb_doc_list(sysroot, "class/infiniband", &devs);

    if (ndev == 0) {
        stb_doc_report(doc, STB_DOC_WARN, "RDMA devices", "none in %s/class/infiniband: the "
                       "plugin will use TCP (load the driver, or rdma_rxe for Soft-RoCE)",
                       sysroot);
        return 0;
    }
    stb_doc_report(doc, STB_DOC_OK, "RDMA devices", "%d", ndev);
    for (int i = 0; i < ndev; i++) {
        if (doc_uverbs_of(sysroot, devs[i], uverbs, sizeof(uverbs)))
            stb_doc_report(doc, STB_DOC_OK, devs[i], "user verbs through /dev/infiniband/%s",
                           uverbs);
        else
            stb_doc_report(doc, STB_DOC_FAIL, devs[i], "no uverbs node: load ib_uverbs");
        char **ports;
        snprintf(dir, sizeof(dir), "class/infiniband/%s/ports", devs[i]);
        int np = stb_doc_list(sysroot, dir, &ports);
        for (int p = 0; p < np; p++)
            usable += doc_check_port(doc, sysroot, devs[i], ports[p]);
        stb_doc_list_free(ports, np);
    }
    stb_doc_list_free(devs, ndev);
    char mod[64];
    snprintf(dir, sizeof(dir), "%s/module/nvidia_peermem", sysroot);
    DIR *pm = opendir(dir);
    if (pm == NULL) {
        snprintf(dir, sizeof(dir), "%s/module/nv_peer_mem", sysroot);
        pm = opendir(dir);
    }
    snprintf(mod, sizeof(mod), "%s", strrchr(dir, '/') + 1);
    if (pm != NULL) {
        closedir(pm);
        stb_doc_report(doc, STB_DOC_OK, "GPU Direct RDMA", "%s loaded: NICs can reach GPU "
                       "memory", mod);
    } else {
        stb_doc_report(doc, STB_DOC_INFO, "GPU Direct RDMA", "no peer-memory module "
                       "(nvidia_peermem): GPU buffers go through host memory unless DMA-BUF "
                       "works");
    }
    return usable;
}

void stb_doc_check_memlock(stb_doc_t *doc, uint64_t soft_limit_bytes, int unlimited)
{
    if (unlimited)
        stb_doc_report(doc, STB_DOC_OK, "memlock", "unlimited");
    else if (soft_limit_bytes >= DOC_MEMLOCK_MIN)
        stb_doc_report(doc, STB_DOC_OK, "memlock", "%llu MiB",
                       (unsigned long long)(soft_limit_bytes >> 20));
    else
        stb_doc_report(doc, STB_DOC_WARN, "memlock", "%llu KiB: RDMA registrations pin memory "
                       "and fail past this (`ulimit -l unlimited`, or memlock in "
                       "/etc/security/limits.conf)", (unsigned long long)(soft_limit_bytes >> 10));
}

/* 1 when the space-separated list holds word (case-insensitive, as STRATA_TRANSPORT is). */
static int doc_has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p != '\0'; p += strcspn(p, " ")) {
        p += strspn(p, " ");
        if (strncasecmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == ':' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

/* The package that brings a missing transport, from "ib:libibverbs-dev" words; 0 if none. */
static int doc_missing_package(const char *missing, const char *name, char *pkg, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = missing; *p != '\0'; p += strcspn(p, " ")) {
        p += strspn(p, " ");
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            snprintf(pkg, len, "%.*s", (int)strcspn(p + n + 1, " "), p + n + 1);
            return 1;
        }
    }
    return 0;
}

void stb_doc_check_build(stb_doc_t *doc, const stu_build_info_t *info, const char *transport_env,
                         int rdma_ports)
{
    char pkg[64];
    const char *want = transport_env;

    stb_doc_report(doc, STB_DOC_INFO, "build", "%s", info->summary);
    if (want != NULL && *want != '\0' && strcasecmp(want, "auto") != 0 &&
        !doc_has_word(info->transports, want)) {
        if (doc_missing_package(info->missing, want, pkg, sizeof(pkg)))
            stb_doc_report(doc, STB_DOC_FAIL, "build", "STRATA_TRANSPORT=%s is not built in "
                           "(built in: %s): install %s (scripts/setup-debian.sh), then run make "
                           "again", want, info->transports, pkg);
        else
            stb_doc_report(doc, STB_DOC_FAIL, "build", "STRATA_TRANSPORT=%s names no transport "
                           "(built in: %s)", want, info->transports);
    }
    if (rdma_ports > 0 && !doc_has_word(info->transports, "ib")) {
        if (!doc_missing_package(info->missing, "ib", pkg, sizeof(pkg)))
            snprintf(pkg, sizeof(pkg), "libibverbs-dev");
        stb_doc_report(doc, STB_DOC_FAIL, "build", "%d RDMA port(s) are active but this build has "
                       "no ib transport, so traffic goes over TCP: install %s "
                       "(scripts/setup-debian.sh), then run make again", rdma_ports, pkg);
    }
}

void stb_doc_check_library(stb_doc_t *doc, const char *transport, const char *library,
                           const char *why, const char *transport_env, int rdma_ports)
{
    char what[64];

    snprintf(what, sizeof(what), "library %s", transport);
    if (why == NULL) {
        stb_doc_report(doc, STB_DOC_OK, what, "%s loaded", library);
        return;
    }
    int named = transport_env != NULL && strcasecmp(transport_env, transport) == 0;
    int rdma = strcmp(transport, "ib") == 0 && rdma_ports > 0;
    stb_doc_report(doc, named || rdma ? STB_DOC_FAIL : STB_DOC_INFO, what,
                   "%s not loadable: %s; the %s transport is unavailable%s%s", library, why,
                   transport, named ? " but STRATA_TRANSPORT names it" : "",
                   rdma ? ", so traffic over the active RDMA ports goes over TCP: install "
                          "libibverbs1 and ibverbs-providers" : "");
}

# The summary of bench/model.sh: reads the tables of strata-perf --model, each file opened by
# "## shape S coll C rep R", takes each point's median over the repeats (0-byte rows, which
# reduce_scatter and allgather get when -b is below P elements, are left out), and prints selection
# regret (per table and over all points: median, p95 nearest-rank, mean, the worst point) and
# the model's error (signed (model - measured) / measured) for the algorithm auto picks and
# for every algorithm, per table, per size and overall, with how many points lie within 25 %.
# POSIX awk (mawk): no asort, so the helpers sort by insertion.
# With -v POINTS=1 it also lists every point that misses a target (regret over 10 %, or auto's
# algorithm outside ±25 % of its measurement): shape, collective, size, auto's algorithm, the
# fastest, regret, measured and modelled µs of auto's algorithm, error; then the misses of
# ±25 % counted by shape, size band (up to 2 KiB, 8-128 KiB, from 512 KiB) and sign.

function isnum(s) { return s ~ /^[0-9.e+-]+$/ }
function abs(x) { return x < 0 ? -x : x }
# sorts a[1..n] ascending
function sort(a, n,    i, j, v) {
    for (i = 2; i <= n; i++) {
        v = a[i]
        for (j = i - 1; j >= 1 && a[j] > v; j--)
            a[j + 1] = a[j]
        a[j + 1] = v
    }
}
function median(a, n) {
    if (n == 0) return -1
    sort(a, n)
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function pct(a, n, p,    k) {
    if (n == 0) return -1
    sort(a, n)
    k = int(p * n + 0.999999)
    return a[k < 1 ? 1 : k]
}
function mean(a, n,    s, i) { s = 0; for (i = 1; i <= n; i++) s += a[i]; return n ? s / n : -1 }
function within(a, n, lim,    c, i) { c = 0; for (i = 1; i <= n; i++) c += abs(a[i]) <= lim; return c }

BEGIN {
    nalgo = split("ring recursive hierarchical leader", algos, " ")
    LIM = 0.25
}
/^## shape / { shape = $3; coll = $5; next }
/^# Model vs measurement/ { intable = 1; next }
# Sizes from 8 B (the target's range): a 0-byte collective is left out.
intable && /^# +[0-9]+ +[a-z_]+ / && NF == 13 && $2 + 0 > 0 {
    key = shape SUBSEP coll SUBSEP $2
    if (!(key in seen)) {
        seen[key] = 1
        order[++nkeys] = key
        if (!((shape SUBSEP coll) in tseen)) { tseen[shape SUBSEP coll] = 1; tables[++ntab] = shape SUBSEP coll }
        if (!($2 in sseen)) { sseen[$2] = 1; sizes[++nsizes] = $2 + 0 }
    }
    chosen[key] = $3
    for (a = 1; a <= nalgo; a++) {
        p = $(2 + 2 * a); m = $(3 + 2 * a)
        if (isnum(p)) pred[key, a] = p + 0
        if (isnum(m) && m + 0 > 0) { nm = ++nmeas[key, a]; meas[key, a, nm] = m + 0 }
    }
    next
}
/^# Selection regret/ { intable = 0 }
END {
    # Per point: medians over repeats, regret, errors.
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; best = 0; ca = 0
        for (a = 1; a <= nalgo; a++) {
            n = nmeas[key, a]
            if (n == 0) continue
            for (i = 1; i <= n; i++) v[i] = meas[key, a, i]
            med[key, a] = median(v, n)
            if (best == 0 || med[key, a] < med[key, best]) best = a
            if (algos[a] == chosen[key]) ca = a
            if ((key, a) in pred) err[key, a] = (pred[key, a] - med[key, a]) / med[key, a]
        }
        if (best == 0 || ca == 0) continue
        regret[key] = med[key, ca] / med[key, best] - 1
        bestalgo[key] = algos[best]
        chosenidx[key] = ca
    }
    printf "#\n# Summary over %d table(s), %d point(s); errors are (model - measured) / measured\n", ntab, nkeys
    printf "# %-6s %-15s %5s %8s %8s %16s %9s %9s %9s %7s\n", "shape", "collective", "sizes", \
        "regret", "regret", "worst", "err(auto)", "err(auto)", "err(all)", "within"
    printf "# %-6s %-15s %5s %8s %8s %16s %9s %9s %9s %7s\n", "", "", "", "median%", "max%", \
        "at (B)", "median%", "max|.|%", "median%", "25%"
    nr = 0; na = 0; nall = 0
    for (t = 1; t <= ntab; t++) {
        split(tables[t], tc, SUBSEP)
        n = 0; ne = 0; nea = 0; worst = -1; worstsz = 0
        for (k = 1; k <= nkeys; k++) {
            key = order[k]
            if (index(key, tables[t] SUBSEP) != 1 || !(key in regret)) continue
            split(key, kk, SUBSEP)
            r[++n] = regret[key]; R[++nr] = regret[key]; RK[nr] = key
            if (regret[key] > worst) { worst = regret[key]; worstsz = kk[3] }
            if ((key, chosenidx[key]) in err) {
                e[++ne] = abs(err[key, chosenidx[key]]); EA[++na] = err[key, chosenidx[key]]; EAK[na] = key
            }
            for (a = 1; a <= nalgo; a++)
                if ((key, a) in err) { ea[++nea] = abs(err[key, a]); EALL[++nall] = err[key, a]; EALLK[nall] = key SUBSEP a }
        }
        emax = ne ? pct(e, ne, 1.0) : -1
        printf "  %-6s %-15s %5d %8.1f %8.1f %16d %9.0f %9.0f %9.0f %3d/%-3d\n", tc[1], tc[2], n, \
            median(r, n) * 100, worst * 100, worstsz, median(e, ne) * 100, emax * 100, \
            median(ea, nea) * 100, within(e, ne, LIM), ne
    }
    # Overall regret.
    for (i = 1; i <= nr; i++) rr[i] = R[i]
    w = 0
    for (i = 1; i <= nr; i++) if (w == 0 || R[i] > R[w]) w = i
    if (w) {
        split(RK[w], kk, SUBSEP)
        printf "# Regret over all %d points: median %.1f %%, p95 %.1f %%, mean %.1f %%; worst %.1f %% at %s %s %d B (auto %s, fastest %s)\n", \
            nr, median(rr, nr) * 100, pct(rr, nr, 0.95) * 100, mean(R, nr) * 100, R[w] * 100, kk[1], kk[2], kk[3], \
            chosen[RK[w]], bestalgo[RK[w]]
    }
    # Overall model error, auto's algorithm and every algorithm.
    for (i = 1; i <= na; i++) x[i] = abs(EA[i])
    w = 0
    for (i = 1; i <= na; i++) if (w == 0 || abs(EA[i]) > abs(EA[w])) w = i
    if (w) {
        split(EAK[w], kk, SUBSEP)
        printf "# Model error of auto's algorithm: median |err| %.0f %%, p95 %.0f %%; %d of %d points within 25 %%; worst %+.0f %% at %s %s %d B (%s)\n", \
            median(x, na) * 100, pct(x, na, 0.95) * 100, within(EA, na, LIM), na, EA[w] * 100, kk[1], kk[2], kk[3], chosen[EAK[w]]
    }
    for (i = 1; i <= nall; i++) y[i] = abs(EALL[i])
    printf "# Model error of every algorithm: median |err| %.0f %%, p95 %.0f %%; %d of %d points within 25 %%\n", \
        median(y, nall) * 100, pct(y, nall, 0.95) * 100, within(EALL, nall, LIM), nall
    if (POINTS) {
        printf "# %-6s %-15s %9s %13s %13s %8s %10s %10s %7s\n", "shape", "collective", "size(B)", \
            "auto", "fastest", "regret%", "meas(us)", "model(us)", "err%"
        for (k = 1; k <= nkeys; k++) {
            key = order[k]
            if (!(key in regret)) continue
            ca = chosenidx[key]
            ex = (key, ca) in err ? err[key, ca] : 0
            if (regret[key] <= 0.10 && abs(ex) <= LIM) continue
            split(key, kk, SUBSEP)
            printf "  %-6s %-15s %9d %13s %13s %8.1f %10.1f %10.1f %+7.0f\n", kk[1], kk[2], kk[3], \
                chosen[key], bestalgo[key], regret[key] * 100, med[key, ca], pred[key, ca], ex * 100
            if (abs(ex) > LIM) {
                band = kk[3] <= 2048 ? "<=2K" : (kk[3] <= 131072 ? "8K-128K" : ">=512K")
                g = kk[1] SUBSEP band SUBSEP (ex > 0 ? "over" : "under")
                if (!(g in gcount)) gorder[++ng] = g
                gcount[g]++
            }
        }
        printf "# misses of 25 %%: shape, size band, model over or under the measurement: points\n"
        for (i = 1; i <= ng; i++) {
            split(gorder[i], gg, SUBSEP)
            printf "  %-6s %-8s %-6s %4d\n", gg[1], gg[2], gg[3], gcount[gorder[i]]
        }
    }
    # Per size, auto's algorithm: where the model misses.
    sort(sizes, nsizes)
    printf "# %12s %7s %12s %12s %12s\n", "size(B)", "points", "err median%", "err min%", "err max%"
    for (s = 1; s <= nsizes; s++) {
        n = 0; lo = 1e9; hi = -1e9
        for (i = 1; i <= na; i++) {
            split(EAK[i], kk, SUBSEP)
            if (kk[3] + 0 != sizes[s]) continue
            z[++n] = EA[i]
            if (EA[i] < lo) lo = EA[i]
            if (EA[i] > hi) hi = EA[i]
        }
        if (n) printf "  %12d %7d %12.0f %12.0f %12.0f\n", sizes[s], n, median(z, n) * 100, lo * 100, hi * 100
    }
}

# Builds the comparison from extract.awk's lines ("label run size time_us busbw wrong"):
# markdown tables of busbw and time per size and system (medians over runs), the
# ratios ref / system, a summary per system and the verdict on each goal; and a
# gnuplot data file (size, then one busbw column per label, "?" where missing).
#
# Variables (set by compare.sh):
#   labels   the systems in column order, space separated
#   ref      the label ratios are taken against ("" : no ratios)
#   large    bytes from which the summary's "large sizes" line starts
#   goals    "glob:minbytes:ratio" items separated by ";" (ref >= ratio x system at
#            every size >= minbytes, for each system whose label matches glob)
#   datfile  where to write the gnuplot data
#   mb_l, mb_bw, mb_from   the memory bound (compare.sh --membound): ranks L, GB/s, and the
#            first size; mb_l 0: none
# Portable awk (mawk, gawk, busybox): no asort, no gensub.

function human(s) {
    if (s >= 1073741824 && s % 1073741824 == 0) return (s / 1073741824) " GiB"
    if (s >= 1048576 && s % 1048576 == 0) return (s / 1048576) " MiB"
    if (s >= 1024 && s % 1024 == 0) return (s / 1024) " KiB"
    return s " B"
}

# Three significant digits, never an exponent.
function fmt3(v,    d) {
    if (v == "") return "–"
    if (v >= 100) return sprintf("%.0f", v)
    if (v >= 10) return sprintf("%.1f", v)
    if (v >= 1 || v == 0) return sprintf("%.2f", v)
    d = 2 - int(log(v) / log(10) - 1)
    if (d > 9) d = 9
    return sprintf("%." d "f", v)
}

# Ratios: two decimals where they matter, fewer where they are large, three digits when tiny.
function fmtr(r) {
    if (r < 0.1) return fmt3(r)
    if (r >= 100) return sprintf("%.0f", r)
    if (r >= 10) return sprintf("%.1f", r)
    return sprintf("%.2f", r)
}

function median(str,    a, n, i, j, x) {
    n = split(str, a, " ")
    for (i = 2; i <= n; i++) {
        x = a[i] + 0
        for (j = i - 1; j >= 1 && a[j] + 0 > x; j--)
            a[j + 1] = a[j]
        a[j + 1] = x
    }
    if (n % 2) return a[(n + 1) / 2] + 0
    return (a[n / 2] + a[n / 2 + 1]) / 2
}

# The head of a table with one column per label after the size (and `extra`, "" or
# " name |"); its rule right-aligns every column.
function table_head(extra,    line, rule, k) {
    line = "| size |" extra
    rule = "|---:|" (extra == "" ? "" : "---:|")
    for (k = 1; k <= nl; k++) { line = line " " L[k] " |"; rule = rule "---:|" }
    print line
    print rule
}

function glob_re(g) {
    gsub(/\./, "\\.", g)
    gsub(/\*/, ".*", g)
    gsub(/\?/, ".", g)
    return "^" g "$"
}

{
    key = $1 SUBSEP $3
    bus[key] = (key in bus) ? bus[key] " " $5 : $5
    tim[key] = (key in tim) ? tim[key] " " $4 : $4
    if ($6 ~ /^[0-9]+$/ && $6 + 0 > 0)
        bad[key] = 1
    if (!(($1, $2) in runseen)) {
        runseen[$1, $2] = 1
        runs[$1]++
    }
    if (!($3 in sizeseen)) {
        sizeseen[$3] = 1
        nsizes++
        sizes[nsizes] = $3 + 0
    }
}

END {
    nl = split(labels, L, " ")
    # Sizes ascending (insertion sort; a sweep has a few dozen).
    for (i = 2; i <= nsizes; i++) {
        x = sizes[i]
        for (j = i - 1; j >= 1 && sizes[j] > x; j--)
            sizes[j + 1] = sizes[j]
        sizes[j + 1] = x
    }
    for (k = 1; k <= nl; k++)
        for (i = 1; i <= nsizes; i++) {
            key = L[k] SUBSEP sizes[i]
            if (key in bus) {
                mb[key] = median(bus[key])
                mt[key] = median(tim[key])
            }
        }
    haveref = 0
    for (k = 1; k <= nl; k++)
        if (L[k] == ref && runs[ref] > 0)
            haveref = 1

    line = "| size |"
    rule = "|---:|"
    for (k = 1; k <= nl; k++) { line = line " " L[k] " |"; rule = rule "---:|" }
    if (haveref)
        for (k = 1; k <= nl; k++)
            if (L[k] != ref) { line = line " " ref "/" L[k] " |"; rule = rule "---:|" }
    print "busbw (GB/s):"
    print ""
    print line
    print rule
    for (i = 1; i <= nsizes; i++) {
        s = sizes[i]
        line = "| " human(s) " |"
        for (k = 1; k <= nl; k++) {
            key = L[k] SUBSEP s
            cell = (key in mb) ? fmt3(mb[key]) : "–"
            if (key in bad)
                cell = cell " (wrong!)"
            line = line " " cell " |"
        }
        if (haveref)
            for (k = 1; k <= nl; k++) {
                if (L[k] == ref) continue
                rk = ref SUBSEP s
                key = L[k] SUBSEP s
                if ((rk in mb) && (key in mb) && mb[key] > 0) {
                    r = mb[rk] / mb[key]
                    ratio[key] = r
                    line = line " " fmtr(r) " |"
                } else
                    line = line " – |"
            }
        print line
    }

    print ""
    print "time per call (µs):"
    print ""
    table_head("")
    for (i = 1; i <= nsizes; i++) {
        s = sizes[i]
        line = "| " human(s) " |"
        for (k = 1; k <= nl; k++) {
            key = L[k] SUBSEP s
            line = line " " ((key in mt) ? fmt3(mt[key]) : "–") " |"
        }
        print line
    }

    mb_rows = 0
    for (i = 1; i <= nsizes; i++)
        if (sizes[i] >= mb_from + 0) mb_rows++
    if (mb_l + 0 > 0 && mb_bw + 0 > 0 && mb_rows > 0) {
        # time_bound (µs) = (3L - 1) n / (GB/s · 10^3); a cell is time_bound / median time.
        print ""
        printf "Memory bound, one node: time_bound / time, time_bound = (3L-1)·n / membw, L = %d, " \
               "membw %s GB/s (2 threads, read + write):\n", mb_l, mb_bw
        print ""
        table_head(" time_bound (µs) |")
        for (i = 1; i <= nsizes; i++) {
            s = sizes[i]
            if (s < mb_from + 0) continue
            tb = (3 * mb_l - 1) * s / (mb_bw * 1e3)
            line = "| " human(s) " | " fmt3(tb) " |"
            for (k = 1; k <= nl; k++) {
                key = L[k] SUBSEP s
                line = line " " ((key in mt) && mt[key] > 0 ? fmtr(tb / mt[key]) : "–") " |"
            }
            print line
        }
    }

    print ""
    line = "Runs per system: "
    for (k = 1; k <= nl; k++)
        line = line (k > 1 ? ", " : "") L[k] " " (runs[L[k]] + 0)
    print line "."
    for (k = 1; k <= nl; k++)
        for (i = 1; i <= nsizes; i++)
            if ((L[k] SUBSEP sizes[i]) in bad) {
                print ""
                print "**" L[k] " reported wrong results (#wrong > 0); its figures are not valid.**"
                break
            }

    if (haveref) {
        print ""
        print "Summary, ratio " ref " / system (above 1: " ref " is faster):"
        print ""
        for (k = 1; k <= nl; k++) {
            if (L[k] == ref) continue
            lo = ""; lo_s = 0; llo = ""; llo_s = 0; lsum = 0; cnt = 0
            for (i = 1; i <= nsizes; i++) {
                key = L[k] SUBSEP sizes[i]
                if (!(key in ratio)) continue
                r = ratio[key]
                if (lo == "" || r < lo) { lo = r; lo_s = sizes[i] }
                if (sizes[i] >= large && (llo == "" || r < llo)) { llo = r; llo_s = sizes[i] }
                lsum += log(r); cnt++
            }
            if (cnt == 0) {
                print "- " L[k] ": no common sizes"
                continue
            }
            line = sprintf("- %s: lowest %.2f at %s; geometric mean %.2f", L[k], lo,
                           human(lo_s), exp(lsum / cnt))
            if (llo != "")
                line = line sprintf("; from %s up, lowest %.2f at %s", human(large), llo,
                                    human(llo_s))
            print line
        }
        ng = split(goals, G, ";")
        # The heading only where some goal names a label of this table.
        nmatch = 0
        for (g = 1; g <= ng; g++) {
            if (split(G[g], part, ":") != 3) continue
            re = glob_re(part[1])
            for (k = 1; k <= nl; k++)
                if (L[k] != ref && L[k] ~ re) nmatch++
        }
        if (nmatch > 0) {
            print ""
            print "Targets:"
            print ""
        }
        for (g = 1; g <= ng; g++) {
            if (split(G[g], part, ":") != 3) continue
            re = glob_re(part[1])
            for (k = 1; k <= nl; k++) {
                if (L[k] == ref || L[k] !~ re) continue
                miss = ""; nmiss = 0; checked = 0; worst = ""
                for (i = 1; i <= nsizes; i++) {
                    if (sizes[i] < part[2] + 0) continue
                    key = L[k] SUBSEP sizes[i]
                    if (!(key in ratio)) continue
                    checked++
                    if (worst == "" || ratio[key] < worst) worst = ratio[key]
                    if (ratio[key] < part[3] + 0) {
                        nmiss++
                        miss = miss (nmiss > 1 ? ", " : "") human(sizes[i]) \
                               sprintf(" (%.3f)", ratio[key])
                    }
                }
                line = sprintf("- %s >= %s x %s at every size from %s: ", ref, part[3], L[k],
                               human(part[2] + 0))
                if (checked == 0)
                    line = line "no data"
                else if (nmiss == 0)
                    line = line sprintf("**met** (lowest %.3f)", worst)
                else
                    line = line sprintf("**not met** at %d of %d sizes: %s", nmiss, checked,
                                        miss)
                print line
            }
        }
    }

    if (datfile != "") {
        line = "# size"
        for (k = 1; k <= nl; k++) line = line " " L[k]
        print line > datfile
        for (i = 1; i <= nsizes; i++) {
            line = sizes[i]
            for (k = 1; k <= nl; k++) {
                key = L[k] SUBSEP sizes[i]
                line = line " " ((key in mb) && mb[key] > 0 ? sprintf("%.6g", mb[key]) : "?")
            }
            print line > datfile
        }
        close(datfile)
    }
}

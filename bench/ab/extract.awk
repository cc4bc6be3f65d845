# Reads one nccl-tests-format output (nccl-tests itself, strata-perf, or the bench/ab
# peer programs) and prints one line per size:
#     label run size time_us busbw wrong
# for the placement chosen by `place` (oop: out-of-place block, ip: in-place block).
#
# Data rows are the lines whose first two fields are integers (size, count) and that
# have at least the 13 fields of nccl-tests' layout; NCCL INFO lines, launcher noise
# and a leading "N: " rank label (srun --label) are skipped or stripped. The first
# row of a size wins if a file repeats it.
#
# busbw is recomputed from the time column, which nccl-tests prints with more
# significant digits than the bandwidths (0.00 GB/s at 8 B): busbw = size / time *
# factor, where factor = busbw / algbw read from the row with the largest algbw in
# the file (2(n-1)/n for allreduce). Where every algbw prints as 0 (a sweep of tiny
# sizes only), the factor comes from the collective's name in the header and the
# number of "#  Rank" lines; failing that, the printed busbw is kept.
#
# Variables: label, run, place (oop|ip). Portable awk (mawk, gawk, busybox).

BEGIN {
    tcol = place == "ip" ? 10 : 6
    n = 0
    ranks = 0
    coll = ""
    best_alg = 0
    factor = 0
}

function bus_factor(name, n) {
    if (n < 1) return 0
    if (name ~ /all_?reduce/) return 2 * (n - 1) / n
    if (name ~ /all_?gather|reduce_?scatter|alltoall|gather|scatter/) return (n - 1) / n
    if (name ~ /broadcast|bcast|reduce|sendrecv/) return 1
    return 0
}

{
    line = $0
    sub(/^[ \t]*[0-9]+:[ \t]+/, "", line)
    if (line ~ /^#  *Rank  *[0-9]+ /)
        ranks++
    if (coll == "" && line ~ /^#/ && match(line, /(all_?reduce|all_?gather|reduce_?scatter|alltoall|broadcast|bcast|sendrecv|reduce)/))
        coll = substr(line, RSTART, RLENGTH)
    if (line ~ /^[ \t]*#/)
        next
    nf = split(line, f, /[ \t]+/)
    # split() on a leading blank gives an empty first field.
    off = f[1] == "" ? 1 : 0
    if (nf - off < 13)
        next
    size = f[1 + off]
    if (size !~ /^[0-9]+$/ || f[2 + off] !~ /^[0-9]+$/)
        next
    # Size 0 (all_gather with fewer bytes than ranks) has no bandwidth to compare.
    if (size in seen || size + 0 == 0)
        next
    t = f[tcol + off]
    alg = f[tcol + 1 + off]
    bus = f[tcol + 2 + off]
    wrong = f[tcol + 3 + off]
    if (t !~ /^[0-9.eE+-]+$/ || bus !~ /^[0-9.eE+-]+$/)
        next
    seen[size] = 1
    n++
    s_size[n] = size
    s_time[n] = t + 0
    s_bus[n] = bus + 0
    s_wrong[n] = wrong
    if (alg + 0 > best_alg) {
        best_alg = alg + 0
        factor = (bus + 0) / (alg + 0)
    }
}

END {
    if (factor == 0)
        factor = bus_factor(coll, ranks)
    for (i = 1; i <= n; i++) {
        bus = s_bus[i]
        if (factor > 0 && s_time[i] > 0)
            bus = s_size[i] / (s_time[i] * 1e3) * factor
        printf "%s %s %s %.6g %.6g %s\n", label, run, s_size[i], s_time[i], bus, s_wrong[i]
    }
}

#!/bin/bash
# The two-tier allreduce on the emulated 2-node cluster (2 Gbit/s tbf links), forced to
# hierarchical, for two source trees (e.g. one built from main and this one), interleaved per
# round with strata-netperf streaming over the same shaped link (what TCP gets from it).
# usage: bench/hier_overlap.sh OUTDIR ROUNDS BASE_TREE NEW_TREE    (as root; docs/benchmarks.md)
set -u
out=$1; rounds=$2; base=$3; new=$4
mkdir -p $out
for r in $(seq 1 $rounds); do
  for t in $base $new; do
    tag=$(basename $t)
    echo "# round $r tree $t load $(cut -d' ' -f1-3 /proc/loadavg)" > $out/r$r-$tag.txt
    (cd $t && STRATA_ALGO=hierarchical STRATA_NET_BETA_GBPS=0.25 nice -n -15 build/bin/strata-run -n 4 --nodes 2 --netns --inter-rate 2gbit -- build/bin/strata-perf -b 256K -e 64M -f 4 -n 5 -w 1 -c 1) >> $out/r$r-$tag.txt 2>&1
  done
  echo "# round $r netperf load $(cut -d' ' -f1-3 /proc/loadavg)" > $out/np$r.txt
  (cd $new && nice -n -15 build/bin/strata-netperf --netns-rails 1 --rail-rate 2gbit -b 256K -e 64M -f 4 -n 10 -w 2 -T 120) >> $out/np$r.txt 2>&1
done

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Plot cycles/s against the in-flight level, libredlock vs node-redlock,
# from the data file tools/bench-compare.sh writes (medians with min-max
# error bars), as a PNG. Needs gnuplot (Debian: gnuplot-nox).
#   tools/bench-plot.sh DATA OUT.png
# DATA: "# comment" lines, then one line per level:
#   in_flight ours_med ours_min ours_max node_med node_min node_max
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: tools/bench-plot.sh DATA OUT.png" >&2
    exit 2
fi
data=$1
png=$2
[ -r "$data" ] || { echo "bench-plot: cannot read '$data'" >&2; exit 2; }
command -v gnuplot >/dev/null || {
    echo "bench-plot: gnuplot not found (apt-get install gnuplot-nox)" >&2
    exit 1
}
term="pngcairo size 900,560 font 'sans,11'"
gnuplot -e "set terminal $term" >/dev/null 2>&1 || term="png size 900,560"
gnuplot <<GP
set terminal $term
set output '$png'
set title 'Lock cycles (acquire + release) per second, 5 local Redis nodes'
set xlabel 'cycles in flight'
set ylabel 'cycles/s'
set logscale x 2
set xrange [0.8:360]
set xtics (1, 4, 16, 64, 256)
set yrange [0:*]
set format y '%.0f'
set key top left
set grid ytics
plot '$data' using 1:2:3:4 with yerrorlines lw 2 pt 7 title 'libredlock (C)', \
     '$data' using 1:5:6:7 with yerrorlines lw 2 pt 5 title 'node-redlock 5.0.0-beta.2 + ioredis'
GP

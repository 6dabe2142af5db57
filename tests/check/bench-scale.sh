#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# gpushare-bench --streams, as docs/benchmarks.md runs it, small: two live
# 320x240 streams at 30 fps, two consumers each, in both topologies, beside
# the one-process floor, and its picture.  Every frame a producer sent
# reaches every consumer, each row has its figures, the SVG has a curve.
#
#   bench-scale.sh GPUSHARE-BENCH
set -u
bench=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "bench-scale: $*"; cat "$tmp/out"; exit 1; }

# the picture where gnuplot is (.ci/install-deps.sh installs it; the
# GStreamer roots of .ci/run have none)
plot=()
command -v gnuplot > /dev/null && plot=(--plot "$tmp/rows.svg")
"$bench" --streams 1,2 --consumers 2 --sizes 320x240 --frames 90 --fps 30 \
  --modes one-process,gpushare-sysmem "${plot[@]}" --markdown \
  > "$tmp/out" 2>&1 || fail "exit status $?"
# the floor once per K, gpushare per K and topology
[ "$(grep -c '^| one-process | per-process | 320x240 |' "$tmp/out")" = 2 ] \
  || fail "not two floor rows"
for topo in per-process shared; do
  for km in 1x2 2x2; do
    row=$(grep "^| gpushare-sysmem | $topo | 320x240 | $km |" "$tmp/out") \
      || fail "no row $topo $km"
    sent=$((${km%x2} * 2 * 90))
    # delivered of sent, lost (worst consumer): the source may skip a frame
    # when it starts late, never the transport
    echo "$row" | grep -Eq "\| ([0-9]+) / \1 \| 0 \(0\) \|" \
      || fail "frames lost: $row"
    got=$(echo "$row" | sed -E 's/^([^|]*\|){5} *([0-9]+) \/.*/\2/')
    [ "$got" -ge $((sent - 6)) ] || fail "$got of about $sent frames: $row"
    # fps, p50, p99, CPU of both sides and threads are figures
    echo "$row" | grep -Eq "\| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ \| [0-9]+ / [0-9]+ \|" \
      || fail "a figure is missing: $row"
  done
done
if [ ${#plot[@]} -eq 0 ]; then
  echo "bench-scale: ok, without the picture: no gnuplot here"
  exit 0
fi
grep -q '<svg' "$tmp/rows.svg" && grep -q '<path' "$tmp/rows.svg" \
  || fail "no picture"
grep -q 'gpushare-sysmem shared' "$tmp/rows.svg" || fail "no shared curve"
echo "bench-scale: ok"

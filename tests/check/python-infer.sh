#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/gpushare-infer.py against real producers, in system memory (the
# gpu suite runs --gpu): on white NV12 every frame reads mean 235/255,
# no deviation and no edges, with numpy and, where it is installed, with
# torch; a moving picture gives the same figures with both; a producer
# that goes away mid-stream ends it with exit 1 and the reason; its usage
# line names only options it takes.  Needs the Python module on PYTHONPATH
# (meson test sets it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${PYTHON:-python3}
infer=$root/examples/gpushare-infer.py
if ! "$py" -c 'import gpushare, numpy' 2>/dev/null; then
  echo "SKIP: $py has no gpushare module or numpy"
  exit 77
fi
libs=numpy
"$py" -c 'import torch' 2>/dev/null && libs="numpy torch"
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
caps="video/x-raw,format=NV12,width=320,height=240,framerate=30/1"

produce () {  # socket pattern frames
  gst-launch-1.0 -q videotestsrc num-buffers="$3" pattern="$2" ! "$caps" \
    ! gpusharesink socket-path="$1" wait-for-connection=true
}

for lib in $libs; do
  produce "$dir/$lib.sock" white 10 &
  "$py" "$infer" "$dir/$lib.sock" --with "$lib" > "$dir/$lib.log"
  wait
  [ "$(grep -c '^frame [0-9]* pts=[0-9]* mean=0.9216 std=0.0000 edges=0.0000$' \
    "$dir/$lib.log")" -eq 10 ] || { cat "$dir/$lib.log"; exit 1; }
  grep -q "^received 10 frames in .* with $lib$" "$dir/$lib.log"
  echo "gpushare-infer.py with $lib: 10 white frames, each 0.9216, flat"

  produce "$dir/ball-$lib.sock" ball 5 &
  "$py" "$infer" "$dir/ball-$lib.sock" --with "$lib" \
    | grep '^frame' | sed 's/ pts=[0-9]*//' > "$dir/ball-$lib.txt"
  wait
done
if [ "$libs" = "numpy torch" ]; then
  diff "$dir/ball-numpy.txt" "$dir/ball-torch.txt"
  echo "gpushare-infer.py: numpy and torch agree on a moving picture"
else
  echo "gpushare-infer.py: torch not installed, its run left out"
fi

# the producer goes away mid-stream: exit 1, and why
gst-launch-1.0 -q videotestsrc is-live=true ! "$caps" \
  ! gpusharesink socket-path="$dir/gone.sock" & prod=$!
rc=0
"$py" "$infer" "$dir/gone.sock" --with numpy > "$dir/gone.log" 2>&1 &
cons=$!
for _ in $(seq 100); do
  [ "$(grep -c '^frame' "$dir/gone.log")" -ge 5 ] && break
  sleep 0.1
done
kill -9 $prod
wait $cons || rc=$?
tail -3 "$dir/gone.log"
[ $rc -eq 1 ]
grep -q '^error: ' "$dir/gone.log"
echo "gpushare-infer.py: a producer killed mid-stream, exit 1 with the reason"

help=$("$py" "$infer" --help)
usage=$(grep -m1 'gpushare-infer.py SOCKET' "$infer")
for opt in $(grep -o -- '--[a-z-]*' <<< "$usage"); do
  grep -q -- "$opt" <<< "$help" || { echo "usage names $opt, which it does not take"; exit 1; }
done
echo "gpushare-infer.py: its usage line names only options it takes"

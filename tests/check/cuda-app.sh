#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# examples/gpushare-cuda-app fails as a program should, on a machine
# without a GPU: exit 64 on wrong usage; exit 1 with the reason on stderr
# when no producer appears within --timeout and when the producer cannot
# give it GPU memory.  Frames read on a GPU are the gpu suite's
# (gpu_transfer).  The app links libcuda.so.1: here the CUDA toolkit's stub
# library stands in for the driver so that it starts (every CUDA call would
# fail; it makes none before a frame arrives).
#
# usage: cuda-app.sh GPUSHARE_CUDA_APP LIBCUDA_STUB
set -u
app=$1
stub=$2
dir=$(mktemp -d)
producer=
cleanup() {
  [ -n "$producer" ] && kill "$producer" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
if [ ! -r "$stub" ]; then
  echo "SKIP: no CUDA stub library at $stub"
  exit 77
fi
ln -s "$stub" "$dir/libcuda.so.1"
fail=0
# run NAME WANT_RC WANT_TEXT ARGS...: the app's exit status and stderr
run() {
  local name=$1 want=$2 text=$3 rc
  shift 3
  LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    timeout 30 "$app" "$@" > "$dir/out" 2> "$dir/err"
  rc=$?
  if [ $rc -eq "$want" ] && grep -q -- "$text" "$dir/err"; then
    echo "ok: $name: exit $rc, \"$(grep -m1 -- "$text" "$dir/err")\""
  else
    echo "FAIL: $name: exit $rc (want $want), stderr: $(cat "$dir/err")"
    fail=1
  fi
}

run "no socket given" 64 "usage: gpushare-cuda-app SOCKET"
run "--expect malformed" 64 "three values" "$dir/x.sock" --expect 1,2
run "no producer" 1 "^error: No producer appeared before the connection timeout" \
  "$dir/none.sock" --timeout 500

# a producer of system memory only (no driver here): the app asks for GPU
# memory, is refused, and says why
gst-launch-1.0 -q videotestsrc is-live=true ! \
  video/x-raw,width=64,height=48 ! \
  gpusharesink socket-path="$dir/sys.sock" > /dev/null 2>&1 &
producer=$!
run "a producer without GPU memory for it" 1 \
  "^error: The producer offers no memory type this consumer can use: GPU memory was asked for but is not possible" \
  "$dir/sys.sock" --timeout 10000
grep -q "^0 frames read in place" "$dir/out" || {
  echo "FAIL: the count line is missing: $(cat "$dir/out")"; fail=1; }
exit $fail

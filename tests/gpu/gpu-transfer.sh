#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Frames through GPU memory between real processes: gpushare-test-peer as
# the producer and as one or more consumers, each case checking every frame
# (checksum of every plane, timestamps, offsets, flags) and the transport
# the consumer reports.
#
# usage: gpu-transfer.sh PEER [FRAMES]
set -u
peer=$1
frames=${2:-300}

. "$(dirname "$0")/gpu-lib.sh"

for sync in host semaphore event; do
  run "1080p NV12, $sync" 1 cuda-vmm --width 1920 --height 1080 -- \
    --transport cuda --sync "$sync"
  run "4K NV12, $sync" 1 cuda-vmm --width 3840 --height 2160 -- \
    --transport cuda --sync "$sync"
done
run "1080p, CUDA memory in and out" 1 cuda-vmm --width 1920 --height 1080 \
  --gpu-input -- --transport cuda --gpu-output

# semaphore sync, frames handed out in place: the consumer finds each
# frame's ready word in host memory (protocol 1.12) and hands the slot out
# without waiting on the device; where the producer could not register
# that memory (the driver call made to fail), it waits on the device, and
# the frames are the same
ready_words() {
  local desc=$1 lo=$2 hi=$3 seen
  run "1080p NV12, semaphore, CUDA memory out, $desc" 1 cuda-vmm --width 1920 \
    --height 1080 -- --transport cuda --sync semaphore --gpu-output
  seen=$(stat_of "$dir/last-stats.txt" ready-on-host)
  if [ -n "$seen" ] && [ "$seen" -ge "$lo" ] && [ "$seen" -le "$hi" ]; then
    pass "semaphore, $desc: $seen of $frames frames' ready words seen on the host"
  else
    fail "semaphore, $desc: ${seen:-no} ready words seen on the host, want $lo to $hi"
  fi
}
ready_words "ready words in host memory" $((frames / 2)) "$frames"
PRODUCER_ENV="GPUSHARE_TEST_CUDA_FAIL=cuMemHostRegister:1" \
  ready_words "no ready words (registration failed)" 0 0
# a frame whose read in place fails after its word was seen is copied
# (and the frames after it): the word it waited for is counted once
CONSUMER_ENV="GPUSHARE_TEST_FAIL_AT=src:wrap" \
  ready_words "frames copied once a read in place failed" \
  $((frames / 2)) "$frames"
run "1080p, CUDA memory in, system memory out" 1 cuda-vmm --width 1920 \
  --height 1080 --gpu-input -- --transport cuda
run "1080p, three consumers" 3 cuda-vmm --width 1920 --height 1080 -- \
  --transport cuda
run "1080p, system memory asked for" 1 system --width 1920 --height 1080 -- \
  --transport system
run "1080p, CUDA memory in, system transport" 1 system --width 1920 \
  --height 1080 --gpu-input -- --transport system

# legacy IPC memory is writable by the consumer: its reason must say so
for sync in host semaphore event; do
  REASON="cannot be mapped read-only" run "1080p NV12, legacy CUDA IPC, $sync" \
    1 cuda-legacy --width 1920 --height 1080 -- --transport cuda-legacy \
    --sync "$sync"
done

# a real decode: the clip decoded by nvh264dec into gpusharesink in one
# process, gpusharesrc in another, gives the frames a one-process decode
# gives, in every sync mode and with CUDA memory out.  From GStreamer 1.24
# on the decoder pushes frames its stream has not finished: this is where
# reading them without waiting shows (2 to 4 frames of 300 differed at
# 1080p), hence the 300 frames of 1080p.
clip=$(dirname "$0")/../media/clip-h264-1080p.mp4
minor=$(gst-launch-1.0 --version | sed -n 's/^GStreamer [0-9]*\.\([0-9]*\).*/\1/p' | head -1)
decode() {
  local desc=$1 sock="$dir/decode.sock" nref ngot cpid
  shift
  timeout 60 "$peer" consumer --socket "$sock" --timeout 30000 \
    --transport cuda "$@" --out "$dir/c.log" & cpid=$!
  timeout 60 "$peer" producer --socket "$sock" --wait --source "file:$clip" \
    --policy lossless --timeout 30000 --out "$dir/p.log"
  wait $cpid
  decoded_in_place=$(stat_of "$dir/p.log" frames-in-place)
  nref=$(grep -c '^recv ' "$dir/ref.log")
  ngot=$(grep -c '^recv ' "$dir/c.log")
  if [ "$nref" -gt 0 ] && cmp -s <(key "$dir/ref.log") <(key "$dir/c.log") \
      && grep -q 'memory-type=cuda-vmm' "$dir/c.log"; then
    pass "decode, $desc: nvh264dec -> gpusharesink | gpusharesrc gives the $nref pictures a one-process decode gives ($(grep -m1 '^transport' "$dir/c.log" | cut -c1-80))"
  else
    fail "decode, $desc: reference $nref pictures, received $ngot, $(diff <(key "$dir/ref.log") <(key "$dir/c.log") | grep -c '^>') differ"
    diff <(key "$dir/ref.log") <(key "$dir/c.log") | head -5
    grep -h '^error' "$dir"/p.log "$dir"/c.log | head -3
  fi
  rm -f "$dir"/p.log "$dir"/c.log
}
if gst-inspect-1.0 nvh264dec >/dev/null 2>&1; then
  timeout 60 "$peer" consumer --decode "$clip" --out "$dir/ref.log"
  for sync in host semaphore event; do
    decode "sync $sync" --sync "$sync"
  done
  decode "CUDA memory out" --gpu-output
  # from 1.24 on the decoder takes the sink's pool of GPU slots and writes
  # each picture into shared memory itself: no copy in the sink
  nref=$(grep -c '^recv ' "$dir/ref.log")
  if [ "${minor:-0}" -ge 24 ]; then
    if [ "${decoded_in_place:-0}" -ge $((nref / 2)) ]; then
      pass "decode, GStreamer 1.$minor: nvh264dec wrote $decoded_in_place of $nref pictures into the slots (frames-in-place)"
    else
      fail "decode, GStreamer 1.$minor: nvh264dec wrote ${decoded_in_place:-?} of $nref pictures into the slots, copied the others"
    fi
  fi
  rm -f "$dir/ref.log"
else
  fail "decode: nvh264dec is missing"
fi

# Zero copies from GStreamer 1.24 on: cudaupload writes each frame into a
# GPU slot of the sink's pool (frames-in-place), and the consumer's buffers
# are the slots themselves (io=in-place); with 1.22 both ends copy once,
# and say why.  Every frame compared all the same.
sock="$dir/zero.sock"
timeout 60 "$peer" consumer --socket "$sock" --timeout 30000 --transport cuda \
  --gpu-output --out "$dir/zc.log" & cpid=$!
timeout 60 "$peer" producer --socket "$sock" --wait --source videotestsrc \
  --gpu-input --frames "$frames" --width 1920 --height 1080 --policy lossless \
  --timeout 30000 --out "$dir/zp.log"
wait $cpid
pin=$(stat_of "$dir/zp.log" frames-in-place)
cio=$(stat_of "$dir/zc.log" io)
cin=$(stat_of "$dir/zc.log" frames-in-place)
compare "zero copies, GStreamer 1.$minor: frames" "$dir/zp.log" "$dir/zc.log" cuda-vmm
if [ "${minor:-0}" -ge 24 ]; then
  if [ "${pin:-0}" -ge $((frames / 2)) ] && [ "$cio" = in-place ] \
      && [ "${cin:-0}" -ge $((frames / 2)) ]; then
    pass "zero copies, GStreamer 1.$minor: $pin of $frames frames written by cudaupload into the slots, $cin pushed as the slots themselves (io=$cio)"
  else
    fail "zero copies, GStreamer 1.$minor: producer frames-in-place=$pin, consumer io=$cio frames-in-place=$cin"
  fi
elif [ "${pin:-1}" -eq 0 ] && [ "$cio" = copy ] && [ "${cin:-1}" -eq 0 ]; then
  pass "GStreamer 1.$minor: one copy at each end, as documented (producer frames-in-place=0, consumer io=copy: $(stat_of "$dir/zc.log" io-reason | cut -c1-60))"
else
  fail "GStreamer 1.$minor: producer frames-in-place=$pin, consumer io=$cio frames-in-place=$cin"
fi
rm -f "$dir"/zp.log "$dir"/zc.log

# The application's route (gst/gpushare/gpusharemeta.h), on every
# GStreamer version: examples/gpushare-cuda-app asks for
# memory:GpuShareCUDA and reads a white picture where it is, on the GPU,
# through the device address and layout of GstGpuShareCudaMeta (Y 235,
# U and V 128 in every row it reads).
if [ -n "${GPUSHARE_CUDA_APP:-}" ] && [ -x "$GPUSHARE_CUDA_APP" ]; then
  sock="$dir/app.sock"
  timeout 60 "$GPUSHARE_CUDA_APP" "$sock" --frames 100 --expect 235,128,128 \
    > "$dir/app.log" 2>&1 & apid=$!
  timeout 60 gst-launch-1.0 -q videotestsrc num-buffers=100 pattern=white ! \
    video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1 ! \
    gpusharesink socket-path="$sock" wait-for-connection=true \
    policy=lossless > "$dir/app-producer.log" 2>&1
  wait $apid
  arc=$?
  if [ $arc -eq 0 ] && grep -q '^100 frames read in place$' "$dir/app.log"; then
    pass "the application's route: 100 frames read in place through GstGpuShareCudaMeta ($(grep -m1 '^frame 0 ' "$dir/app.log" | cut -c1-80))"
  else
    fail "the application's route: gpushare-cuda-app exited with $arc"
    tail -3 "$dir/app.log"
  fi
  rm -f "$dir"/app.log "$dir"/app-producer.log
elif [ -z "${GPUSHARE_CUDA_APP:-}" ]; then
  # meson names it only where it was built: with the CUDA toolkit
  echo "SKIP the application's route: gpushare-cuda-app is built with the CUDA toolkit only, which this build had not"
else
  fail "the application's route: $GPUSHARE_CUDA_APP is not there"
fi

# fabric handles need an IMEX channel: where there is none, a consumer that
# asks for them gets a clear error, and the producer goes on serving others
sock="$dir/fabric.sock"
"$peer" producer --socket "$sock" --frames 100000 --live --source videotestsrc \
  --width 640 --height 360 --timeout 30000 --out "$dir/p.log" &
ppid=$!
timeout 60 "$peer" consumer --socket "$sock" --timeout 10000 --transport cuda-fabric \
  --out "$dir/fabric.log"
frc=$?
timeout 60 "$peer" consumer --socket "$sock" --timeout 10000 --transport cuda \
  --die-after 20 --out "$dir/after.log"
if [ $frc -ne 0 ] && grep -q '^error .*fabric' "$dir/fabric.log" \
    && [ "$(grep -c '^recv ' "$dir/after.log")" -ge 20 ] \
    && kill -0 $ppid 2>/dev/null; then
  pass "fabric refused cleanly: $(grep -m1 '^error' "$dir/fabric.log" | cut -c1-300)"
elif [ $frc -eq 0 ] && grep -q 'memory-type=cuda-fabric' "$dir/fabric.log"; then
  pass "fabric handles work here (an IMEX channel exists)"
else
  fail "fabric: consumer exit $frc; $(head -c 400 "$dir/fabric.log")"
fi
kill $ppid 2>/dev/null
wait $ppid 2>/dev/null
rm -f "$dir"/*.log

finish

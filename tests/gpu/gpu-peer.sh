#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A consumer on another GPU than the producer's.  On every GPU host: a
# consumer that asks for a GPU that does not exist falls back to system
# memory and says why, or, forced to GPU memory, is refused while the
# producer goes on serving.  With two GPUs or more: the consumer on GPU 1
# reads the producer's slots on GPU 0 in place over peer access (VMM and
# legacy IPC, host and semaphore synchronisation, CUDA memory in and out),
# event synchronisation is refused with its reason, a consumer that cannot
# see the producer's GPU falls back to system memory, and consumers on
# both GPUs share one producer.
#
# usage: gpu-peer.sh PEER [FRAMES]
set -u
peer=$1
frames=${2:-200}

. "$(dirname "$0")/gpu-lib.sh"

n=$(gpu_count)
echo "GPUs here: $n"
nvidia-smi topo -m 2>/dev/null | sed -n '1,/^$/p'

# refused REASON_PATTERN DESC CONSUMER_ARGS...: the consumer (in
# CONSUMER_ENV, if set) exits with an error that matches the pattern, the
# producer serves the next consumer
refused() {
  local pattern=$1 desc=$2 rc
  shift 2
  local sock="$dir/$RANDOM.sock"
  "$peer" producer --socket "$sock" --frames 100000 --live \
    --source videotestsrc --width 640 --height 360 --timeout 30000 \
    --cuda-device 0 --out "$dir/p.log" &
  local ppid=$!
  env ${CONSUMER_ENV:-} timeout 60 "$peer" consumer --socket "$sock" \
    --timeout 10000 --out "$dir/refused.log" "$@"
  rc=$?
  timeout 60 "$peer" consumer --socket "$sock" --timeout 10000 \
    --die-after 20 --out "$dir/after.log"
  if [ $rc -ne 0 ] && grep -q "^error .*$pattern" "$dir/refused.log" \
      && [ "$(grep -c '^recv ' "$dir/after.log")" -ge 20 ] \
      && kill -0 $ppid 2>/dev/null; then
    pass "$desc: $(grep -m1 '^error' "$dir/refused.log" | sed 's/.*message=//' | cut -c1-300)"
  else
    fail "$desc: consumer exit $rc; $(head -c 600 "$dir/refused.log")"
  fi
  kill $ppid 2>/dev/null
  wait $ppid 2>/dev/null
  rm -f "$dir"/*.log
}

# a GPU that does not exist here
REASON="no CUDA device $n" run "consumer on missing GPU $n, auto" 1 system \
  --width 1920 --height 1080 --gpu-input --cuda-device 0 -- --cuda-device "$n"
refused "no CUDA device $n" "consumer on missing GPU $n, transport=cuda" \
  --cuda-device "$n" --transport cuda

if [ "$n" -lt 2 ]; then
  echo "SKIP (not counted): the peer cases need two GPUs, this host has $n"
  finish
fi

for size in "1920 1080" "3840 2160"; do
  set -- $size
  for sync in host semaphore; do
    REASON="peer access" run "${2}p on GPU 0, consumer on GPU 1, $sync" 1 \
      cuda-vmm --width "$1" --height "$2" --cuda-device 0 -- \
      --cuda-device 1 --transport cuda --sync "$sync"
  done
done
REASON="peer access" run "CUDA memory in on GPU 0, CUDA memory out on GPU 1" \
  1 cuda-vmm --width 1920 --height 1080 --gpu-input --cuda-device 0 -- \
  --cuda-device 1 --transport cuda --gpu-output
REASON="peer access" run "auto: consumer on GPU 1 takes GPU memory" 1 \
  cuda-vmm --width 1920 --height 1080 --gpu-input --cuda-device 0 -- \
  --cuda-device 1
for sync in host semaphore; do
  REASON="peer access" run "legacy CUDA IPC across GPUs, $sync" 1 \
    cuda-legacy --width 1920 --height 1080 --cuda-device 0 -- \
    --cuda-device 1 --transport cuda-legacy --sync "$sync"
done

# event synchronisation cannot cross GPUs: refused when forced, system
# memory otherwise, both with the reason
refused "not possible across GPUs" "event sync across GPUs, transport=cuda" \
  --cuda-device 1 --transport cuda --sync event
REASON="not possible across GPUs" run "event sync across GPUs, auto" 1 \
  system --width 1920 --height 1080 --cuda-device 0 -- --cuda-device 1 \
  --sync event

# a consumer that cannot see the producer's GPU
uuid1=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 1)
CONSUMER_ENV="CUDA_VISIBLE_DEVICES=$uuid1" REASON="not visible" \
  run "consumer that sees only GPU 1" 1 system --width 1920 --height 1080 \
  --gpu-input --cuda-device 0 --
CONSUMER_ENV="CUDA_VISIBLE_DEVICES=$uuid1" refused "not visible" \
  "consumer that sees only GPU 1, transport=cuda" --transport cuda

# consumers on both GPUs of one producer: each GPU in its own way
sock="$dir/mixed.sock"
"$peer" consumer --socket "$sock" --timeout 30000 --cuda-device 0 \
  --transport cuda --out "$dir/c0.log" & c0=$!
"$peer" consumer --socket "$sock" --timeout 30000 --cuda-device 1 \
  --transport cuda --out "$dir/c1.log" & c1=$!
"$peer" consumer --socket "$sock" --timeout 30000 --cuda-device 1 \
  --transport system --out "$dir/c2.log" & c2=$!
"$peer" producer --socket "$sock" --frames "$frames" --wait --wait-clients 3 \
  --source videotestsrc --policy lossless --timeout 30000 --gpu-input \
  --cuda-device 0 --out "$dir/p.log"
wait $c0 $c1 $c2
compare "mixed: consumer on GPU 0" "$dir/p.log" "$dir/c0.log" cuda-vmm \
  "both ends on"
compare "mixed: consumer on GPU 1" "$dir/p.log" "$dir/c1.log" cuda-vmm \
  "peer access"
compare "mixed: consumer on GPU 1, system memory" "$dir/p.log" \
  "$dir/c2.log" system
rm -f "$dir"/*.log

finish

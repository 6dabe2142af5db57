#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A soak as a guard: a live producer and four consumers for SOAK_SECONDS
# (180 by default), real processes (gpushare-test-peer), every frame a
# consumer received compared with the frame the producer sent under the
# same offset (the checksum of its pixels, its timestamps' duration), and
# the producer's memory and descriptors sampled every 5 s:
#   fast      a consumer that takes every frame as it comes;
#   slow      one that takes 50 ms a frame (the source gives one every
#             33 ms): skipped now and then, never stalling the others;
#   restarted one killed (SIGKILL) and started again every 2 s;
#   reconnect one with producer-lost=reconnect.
# Passes when no frame differs, the fast consumer got 95% of the frames
# sent after it started, and after the first 20 s the producer's resident
# memory grew by at most 8 MiB and its open descriptors varied by at most
# 8 (the restarted consumer's connection comes and goes). A sample of the
# descriptors is the fewest of three reads 200 ms apart: a consumer's
# handshake holds a descriptor for each slot for as long as it takes to
# send them (a dozen, for a moment, more on a loaded machine), which a
# leak outlives.
#
#   soak.sh GPUSHARE_TEST_PEER [--gpu]
#
# --gpu: the frames in GPU memory (uploaded before the sink), consumers
# that take CUDA memory over the cuda transport and download it to check
# it, and the producer's GPU memory sampled too (nvidia-smi): after the
# first 20 s it may grow by 64 MiB at most (tests/gpu/gpu-soak.sh).
set -euo pipefail
peer=$1
gpu=${2:-}
producer_gpu=()
consumer_gpu=()
if [ "$gpu" = --gpu ]; then
  producer_gpu=(--gpu-input)
  consumer_gpu=(--gpu-output --transport cuda)
fi
seconds=${SOAK_SECONDS:-180}
frames=$(( seconds * 30 + 300 ))
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
sock=$dir/soak.sock

# a frame every 33 ms, for longer than the soak
"$peer" producer --socket "$sock" --frames "$frames" --width 320 \
  --height 240 --live --pause-ms 33 --policy leaky "${producer_gpu[@]}" \
  > "$dir/producer.txt" 2>&1 &
producer=$!
# (30 s: a GPU producer starts CUDA first)
for _ in $(seq 600); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || { cat "$dir/producer.txt"; echo "no producer socket"; exit 1; }

# run in the background: the process itself is the job, so that $! is
# the consumer a kill reaches
consumer () { # NAME [options]
  local name=$1
  shift
  exec "$peer" consumer --socket "$sock" --timeout 10000 \
    "${consumer_gpu[@]}" "$@" >> "$dir/$name.txt" 2>&1
}
consumer fast & fast=$!
consumer slow --hold-ms 50 & slow=$!
consumer reconnect --producer-lost reconnect & reconnect=$!

rss () { awk '/^VmRSS/ {print $2}' "/proc/$producer/status"; }
# the fewest of three reads: a leaked descriptor stays, a handshake's go
fds () {
  local n min=
  for _ in 1 2 3; do
    n=$(ls "/proc/$producer/fd" | wc -l)
    [ -z "$min" ] || [ "$n" -lt "$min" ] && min=$n
    sleep 0.2
  done
  echo "$min"
}
# the producer's GPU memory in MiB (0 without --gpu)
gpu_mib () {
  if [ "$gpu" = --gpu ]; then
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits |
      awk -F', *' -v pid="$producer" '$1 == pid { m += $2 } END { print m + 0 }'
  else
    echo 0
  fi
}

start=$(date +%s)
restarted=
samples=()
next_sample=$start
rss0= fds_min= fds_max= rss_max=0 gpu0= gpu_max=0
while [ $(( $(date +%s) - start )) -lt "$seconds" ]; do
  # the restarted consumer: killed and started again every 2 s
  if [ -n "$restarted" ]; then
    kill -9 "$restarted" 2>/dev/null || true
    wait "$restarted" 2>/dev/null || true
  fi
  consumer restarted & restarted=$!
  now=$(date +%s)
  if [ "$now" -ge "$next_sample" ]; then
    r=$(rss) f=$(fds) g=$(gpu_mib)
    samples+=("$((now - start))s rss=${r}kB fds=$f gpu=${g}MiB")
    if [ $((now - start)) -ge 20 ]; then
      [ -n "$rss0" ] || rss0=$r
      [ -n "$gpu0" ] || gpu0=$g
      [ "$r" -gt "$rss_max" ] && rss_max=$r
      [ "$g" -gt "$gpu_max" ] && gpu_max=$g
      [ -z "$fds_min" ] || [ "$f" -lt "$fds_min" ] && fds_min=$f
      [ -z "$fds_max" ] || [ "$f" -gt "$fds_max" ] && fds_max=$f
    fi
    next_sample=$((now + 5))
  fi
  sleep 2
done
kill -9 "$restarted" 2>/dev/null || true
kill "$fast" "$slow" "$reconnect" 2>/dev/null || true
kill "$producer" 2>/dev/null || true
wait 2>/dev/null || true
printf '%s\n' "${samples[@]}"

# every frame each consumer received is the frame sent under its offset
fail=0
for name in fast slow reconnect restarted; do
  awk -v name="$name" '
    FNR == NR { if ($1 == "sent") { split ($2, o, "="); sent[o[2]] = $NF }
      next }
    $1 == "recv" { split ($2, o, "="); n++
      if (!(o[2] in sent)) { unknown++ }
      else if (sent[o[2]] != $NF) { bad++ } }
    END { printf "%s: %d frames received, %d differ, %d never sent\n",
        name, n, bad, unknown; exit (bad || unknown) ? 1 : 0 }
  ' "$dir/producer.txt" "$dir/$name.txt" || fail=1
done
sent=$(grep -c '^sent' "$dir/producer.txt")
got=$(grep -c '^recv' "$dir/fast.txt")
echo "producer: $sent frames sent"
[ $(( got * 100 )) -ge $(( sent * 95 )) ] ||
  { echo "FAIL the fast consumer got $got of $sent frames"; fail=1; }
if [ -n "$rss0" ]; then
  echo "producer after 20 s: rss from ${rss0} kB to at most ${rss_max} kB, fds $fds_min to $fds_max"
  [ $(( rss_max - rss0 )) -le 8192 ] ||
    { echo "FAIL the producer's memory grew by $(( rss_max - rss0 )) kB"; fail=1; }
  [ $(( fds_max - fds_min )) -le 8 ] ||
    { echo "FAIL the producer's descriptors varied from $fds_min to $fds_max"; fail=1; }
  if [ "$gpu" = --gpu ]; then
    echo "producer after 20 s: GPU memory from ${gpu0} MiB to at most ${gpu_max} MiB"
    [ "$gpu0" -gt 0 ] || { echo "FAIL no GPU memory seen for the producer"; fail=1; }
    [ $(( gpu_max - gpu0 )) -le 64 ] ||
      { echo "FAIL the producer's GPU memory grew by $(( gpu_max - gpu0 )) MiB"; fail=1; }
  fi
fi
[ $fail -eq 0 ] && echo "soak: ${seconds} s, no frame differs, memory and descriptors bounded"
exit $fail

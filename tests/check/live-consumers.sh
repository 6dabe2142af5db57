#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A live camera read by several consumers, every setting at its default:
# each consumer keeps receiving at the source rate, whatever its sink keeps.
# Real gst-launch-1.0 processes, one producer and its consumers, measured
# with gpushare-inspect: after the consumers settle, two statuses 3 s apart,
# and every consumer must have been sent at least 90% of the frames the
# producer rendered in between (and the producer must have rendered at its
# rate, 25 fps, and dropped none).
#
# Rows:
#   the table of the bug this guards (a live source, 4 consumers whose
#   fakesinks keep their last buffer, each got one frame or a handful, then
#   nothing): 3 consumers; 4; 4 with min-consumers=4 wait-for-connection=true;
#   4 with policy=lossless;
#   1, 2, 4, 8 and 16 consumers whose pipelines keep buffers: a sink that
#   keeps its last sample (fakesink), a queue before it, an appsink that
#   nobody pulls from, which holds its 3 newest buffers;
#   K streams in one producer process (LIVE_STREAMS, 4 by default), read by
#   4 consumer processes that each read all K (the three shapes);
#   a consumer whose pipeline stops taking buffers (an appsink that blocks):
#   the producer warns on its bus, the consumer warns on its own, the
#   status shows it STALLED, and the other consumer goes on at the rate.
#
#   live-consumers.sh GPUSHARE_INSPECT [--gpu]
#
# --gpu: the frames are in GPU memory (cudaupload before the sink), the
# consumers ask for CUDA memory and must get GPU memory (tests/gpu/).
set -euo pipefail
inspect=$1
gpu=${2:-}
streams=${LIVE_STREAMS:-4}
only=${LIVE_ROWS:-}
dir=$(mktemp -d)
pids=()
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

caps="video/x-raw,format=NV12,width=320,height=240,framerate=30/1"
# consumers start this far apart: a GPU consumer's handshake (CUDA, the
# import of the slots) takes about a second, and a producer takes at most
# max-pending (8) handshakes at once
stagger=0.2
if [ "$gpu" = --gpu ]; then
  stagger=0.5
  upload="cudaupload !"
  cuda="video/x-raw(memory:CUDAMemory) !"
  want_memory="memory cuda"
else
  upload=
  cuda=
  want_memory="memory system"
fi
# what the consumers' pipelines keep: the last sample; a queue's worth and
# the last sample; the 3 newest buffers, for good
shapes=("$cuda fakesink" "$cuda queue ! fakesink"
  "$cuda appsink max-buffers=3 drop=true")
shape_names=("fakesink" "queue ! fakesink" "appsink holding 3")

wait_for_socket () {
  for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "no socket at $1"; exit 1
}

# producer SOCKET [gpusharesink properties...]
producer () {
  local sock=$1; shift
  gst-launch-1.0 videotestsrc num-buffers=1 ! "$caps" ! $upload \
    imagefreeze is-live=true ! gpusharesink socket-path="$sock" "$@" \
    > "$dir/producer.log" 2>&1 &
  pids+=($!)
  wait_for_socket "$sock"
}

# consumer LOG SOCKET SHAPE-INDEX
consumer () {
  local log=$1 sock=$2 shape=${shapes[$3]}
  # shellcheck disable=SC2086
  gst-launch-1.0 gpusharesrc socket-path="$sock" ! $shape \
    > "$log" 2>&1 &
  pids+=($!)
}

stop_all () {
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
  rm -f "$dir"/*.sock
}

# what the processes said, on a failure
dump_logs () {
  local f
  for f in "$dir"/*.log; do
    echo "--- $(basename "$f"): its errors and warnings, its last lines"
    grep -E -A2 'ERROR|WARN' "$f" | head -n 12 || true
    tail -n 3 "$f" || true
  done
}

# the status of sock until n consumers stream (30 s: a GPU consumer starts
# CUDA first)
wait_ready () {
  local sock=$1 n=$2
  for _ in $(seq 300); do
    "$inspect" --once "$sock" > "$dir/status" 2>&1 || true
    if grep -q "consumers: $n," "$dir/status" &&
        [ "$(grep -c 'state ready' "$dir/status")" -eq "$n" ]; then
      return 0
    fi
    sleep 0.1
  done
  cat "$dir/status"; echo "never $n consumers ready at $sock"; dump_logs
  exit 1
}

field () { # FILE KEY: the number after KEY on the producer's status line
  sed -n "s/.*$2 \([0-9]*\).*/\1/p" "$1" | head -n1
}

# check ROW A B: two statuses of one producer; every consumer sent >= 90%
# of the frames rendered in between, the producer at >= 80% of its 25 fps
# (imagefreeze's rate) and none dropped; prints a line per consumer
check () {
  local row=$1 a=$2 b=$3 rendered dropped pid sent0 sent1 got
  rendered=$(( $(field "$b" "frames rendered") - $(field "$a" "frames rendered") ))
  dropped=$(( $(sed -n 's/.*rendered [0-9]*, dropped \([0-9]*\).*/\1/p' "$b") -
    $(sed -n 's/.*rendered [0-9]*, dropped \([0-9]*\).*/\1/p' "$a") ))
  if [ "$rendered" -lt 60 ] || [ "$dropped" -ne 0 ]; then
    cat "$b"
    echo "FAIL $row: the producer rendered $rendered frames in 3 s, dropped $dropped"
    dump_logs
    exit 1
  fi
  grep -q "$want_memory" "$b" || { cat "$b"; echo "FAIL $row: not $want_memory"; exit 1; }
  for pid in $(sed -n 's/.*consumer [0-9]*: pid \([0-9]*\),.*/\1/p' "$b"); do
    sent0=$(grep "pid $pid," "$a" | sed -n 's/.*frames sent \([0-9]*\),.*/\1/p')
    sent1=$(grep "pid $pid," "$b" | sed -n 's/.*frames sent \([0-9]*\),.*/\1/p')
    got=$(( sent1 - ${sent0:-0} ))
    echo "  $row: consumer pid $pid ($(grep "pid $pid," "$b" | sed -n 's/.*slots held \([0-9]*\), share \([0-9]*\).*/holds \1, share \2/p')): $got of $rendered frames"
    if [ $(( got * 100 )) -lt $(( rendered * 90 )) ]; then
      cat "$b"
      echo "FAIL $row: consumer pid $pid received $got of $rendered frames"
      dump_logs
      exit 1
    fi
  done
}

# measure ROW N SOCKET...: once n consumers stream from each producer and
# a ring that grew was mapped again, two statuses of each, 3 s apart
measure () {
  local row=$1 n=$2 sock k
  shift 2
  for sock in "$@"; do wait_ready "$sock" "$n"; done
  sleep 1.5
  k=0
  for sock in "$@"; do "$inspect" --once "$sock" > "$dir/a$k"; k=$((k + 1)); done
  sleep 3
  k=0
  for sock in "$@"; do "$inspect" --once "$sock" > "$dir/b$k"; k=$((k + 1)); done
  k=0
  for sock in "$@"; do
    check "$row$([ $# -gt 1 ] && echo "-$((k + 1))")" "$dir/a$k" "$dir/b$k"
    k=$((k + 1))
  done
}

want_row () { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }

# row NAME N SHAPES [gpusharesink properties...]: SHAPES "0" every consumer
# a fakesink, "mix" the three shapes in turn
row () {
  local name=$1 n=$2 mix=$3 i
  shift 3
  want_row "$name" || return 0
  producer "$dir/cam.sock" "$@"
  for i in $(seq 0 $((n - 1))); do
    consumer "$dir/c$i.log" "$dir/cam.sock" \
      $([ "$mix" = mix ] && echo $((i % 3)) || echo 0)
    sleep "$stagger"
  done
  measure "$name" "$n" "$dir/cam.sock"
  stop_all
  echo "ok $name: $n consumers ($([ "$mix" = mix ] && echo "fakesink, queue, appsink holding 3" || echo fakesink)) at the source rate"
}

row issue-3 3 0
row issue-4 4 0
row issue-4-wait 4 0 min-consumers=4 wait-for-connection=true
row issue-4-lossless 4 0 policy=lossless
for n in 1 2 4 8 16; do
  row "shapes-$n" "$n" mix
done

# K streams in one process, each read by 4 consumer processes
if want_row streams; then
  launch=()
  for k in $(seq "$streams"); do
    launch+=(videotestsrc num-buffers=1 ! "$caps" ! $upload imagefreeze
      is-live=true ! gpusharesink socket-path="$dir/s$k.sock")
  done
  gst-launch-1.0 -q "${launch[@]}" > "$dir/producer.log" 2>&1 &
  pids+=($!)
  for k in $(seq "$streams"); do wait_for_socket "$dir/s$k.sock"; done
  # each consumer process's branches end in one of the shapes: a sink
  # that keeps its last sample, a queue before it, an appsink that holds
  # its 3 newest buffers (and a fourth process of fakesinks)
  for c in 0 1 2 3; do
    launch=()
    for k in $(seq "$streams"); do
      # shellcheck disable=SC2206
      launch+=(gpusharesrc socket-path="$dir/s$k.sock" ! ${shapes[$c % 3]})
    done
    gst-launch-1.0 -q "${launch[@]}" > "$dir/k$c.log" 2>&1 &
    pids+=($!)
  done
  socks=()
  for k in $(seq "$streams"); do socks+=("$dir/s$k.sock"); done
  measure streams 4 "${socks[@]}"
  stop_all
  echo "ok streams: $streams streams in one process x 4 consumer processes (fakesinks, queues, appsinks holding 3), every one at the source rate"
fi

# a consumer whose pipeline stops taking buffers: said on both sides
if want_row stalled; then
  producer "$dir/cam.sock"
  consumer "$dir/healthy.log" "$dir/cam.sock" 0
  # shellcheck disable=SC2086
  gst-launch-1.0 gpusharesrc socket-path="$dir/cam.sock" ! $cuda \
    appsink max-buffers=1 drop=false > "$dir/stuck.log" 2>&1 &
  stuck=$!
  pids+=($stuck)
  wait_ready "$dir/cam.sock" 2
  for _ in $(seq 100); do
    "$inspect" --once "$dir/cam.sock" > "$dir/status" 2>&1 || true
    grep -q "pid $stuck,.*STALLED" "$dir/status" && break
    sleep 0.1
  done
  cat "$dir/status"
  grep -q "pid $stuck,.*STALLED" "$dir/status" ||
    { echo "FAIL stalled: not shown STALLED"; exit 1; }
  # the healthy one goes on at the rate (measure checks the stuck one too:
  # only its line may fall short)
  healthy=$(grep -v "pid $stuck," "$dir/status" |
    sed -n 's/.*consumer [0-9]*: pid \([0-9]*\),.*/\1/p')
  "$inspect" --once "$dir/cam.sock" > "$dir/a"; sleep 2
  "$inspect" --once "$dir/cam.sock" > "$dir/b"
  r=$(( $(field "$dir/b" "frames rendered") - $(field "$dir/a" "frames rendered") ))
  s0=$(grep "pid $healthy," "$dir/a" | sed -n 's/.*frames sent \([0-9]*\),.*/\1/p')
  s1=$(grep "pid $healthy," "$dir/b" | sed -n 's/.*frames sent \([0-9]*\),.*/\1/p')
  echo "  stalled: the other consumer got $((s1 - s0)) of $r frames"
  [ $(( (s1 - s0) * 100 )) -ge $(( r * 90 )) ] ||
    { echo "FAIL stalled: the other consumer got $((s1 - s0)) of $r"; exit 1; }
  # warnings are posted once, on both sides; gst-launch prints them
  grep -q "WARNING: from element .*gpusharesink.*: A consumer takes no more frames" "$dir/producer.log" ||
    { cat "$dir/producer.log"; echo "FAIL stalled: no warning from the producer"; exit 1; }
  grep -q "WARNING: from element .*gpusharesrc.*: The producer skips this consumer" "$dir/stuck.log" ||
    { cat "$dir/stuck.log"; echo "FAIL stalled: no warning from the consumer"; exit 1; }
  # (the debug log, where GST_DEBUG asks for warnings, says it too)
  [ "$(grep -c '^WARNING: from element .*A consumer takes no more frames' "$dir/producer.log")" -eq 1 ] ||
    { echo "FAIL stalled: more than one warning from the producer"; exit 1; }
  [ "$(grep -c '^WARNING: from element .*The producer skips this consumer' "$dir/stuck.log")" -eq 1 ] ||
    { echo "FAIL stalled: more than one warning from the consumer"; exit 1; }
  grep -A3 "WARNING: from element" "$dir/producer.log"
  grep -A3 "WARNING: from element" "$dir/stuck.log"
  stop_all
  echo "ok stalled: both sides said so once, the other consumer went on"
fi
echo "all rows passed"

#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Peers whose GPU never signals, with the real elements (the test build's
# plugin, whose GPUSHARE_TEST_FAIL_AT makes them so):
#
#  - a producer that announces its frames and never signals them ready
#    (sink:ready): each consumer that waits on the device fails within its
#    wait for a frame (10 s), saying so, and exits, in a copy and in a read
#    in place; before, it waited for ever; one that is set to NULL while it
#    waits stops at once;
#  - a consumer that releases its frames and never signals them done
#    (src:done), beside one that does: the producer drops the first past
#    lease-timeout (2 s here), saying why, and the second gets every frame
#    of the stream to its end; with CUDA memory upstream (the producer's
#    stream, and upstream's after it, would wait for ever) and with system
#    memory (the writer's host wait would end the whole stream in an
#    error).
#
# usage: gpu-stalls.sh PEER
set -u
peer=$1

. "$(dirname "$0")/gpu-lib.sh"

errline() { grep -m1 '^error' "$1" | sed 's/.*message=//' | cut -c1-300; }

# never_ready DESC CONSUMER_ARGS...
never_ready() {
  local desc=$1 rc t0 s
  shift
  local sock="$dir/$RANDOM.sock"
  GPUSHARE_TEST_FAIL_AT=sink:ready "$peer" producer --socket "$sock" \
    --frames 100000 --live --source videotestsrc --width 640 --height 360 \
    --timeout 30000 --out "$dir/p.log" &
  local ppid=$!
  t0=$SECONDS
  timeout 60 "$peer" consumer --socket "$sock" --timeout 30000 \
    --transport cuda --sync semaphore --out "$dir/c.log" "$@"
  rc=$?
  s=$((SECONDS - t0))
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] \
      && grep -q '^error .*ready signal' "$dir/c.log" \
      && ! grep -q '^recv ' "$dir/c.log"; then
    pass "$desc: the consumer failed after ${s} s: $(errline "$dir/c.log")"
  else
    fail "$desc: consumer exit $rc after ${s} s, $(grep -c '^recv ' "$dir/c.log") frames; $(errline "$dir/c.log")"
  fi
  kill $ppid 2>/dev/null
  wait $ppid 2>/dev/null
  rm -f "$dir"/*.log
}

# a consumer stopped while it waits for a frame never signalled: its
# application gives up after 2 s without a frame and sets it to NULL,
# which ends the wait at once (the src's unlock), long before its 10 s
never_ready_stopped() {
  local rc t0 s
  local sock="$dir/$RANDOM.sock"
  GPUSHARE_TEST_FAIL_AT=sink:ready "$peer" producer --socket "$sock" \
    --frames 100000 --live --source videotestsrc --width 640 --height 360 \
    --timeout 30000 --out "$dir/p.log" &
  local ppid=$!
  # connected first, so that the 2 s are the frame's
  sleep 1
  t0=$(date +%s%N)
  timeout 60 "$peer" consumer --socket "$sock" --timeout 2000 \
    --transport cuda --sync semaphore --out "$dir/c.log"
  rc=$?
  s=$((($(date +%s%N) - t0) / 1000000))
  if [ $rc -ne 124 ] && [ $s -lt 8000 ] && ! grep -q '^recv ' "$dir/c.log" \
      && ! grep -q 'did not come within' "$dir/c.log"; then
    pass "a consumer stopped while it waits for a frame never signalled: it stopped after ${s} ms (2 s without a frame, then 2 s for its bus, then NULL)"
  else
    fail "a consumer stopped while it waits for a frame never signalled: exit $rc after ${s} ms; $(grep -m1 '^error' "$dir/c.log" | cut -c1-300)"
  fi
  kill $ppid 2>/dev/null
  wait $ppid 2>/dev/null
  rm -f "$dir"/*.log
}

# never_done DESC PRODUCER_ARGS...
never_done() {
  local desc=$1 rc_a rc_b rc_p sent recv
  shift
  local sock="$dir/$RANDOM.sock"
  GPUSHARE_TEST_FAIL_AT=src:done timeout 90 "$peer" consumer --socket "$sock" \
    --timeout 30000 --transport cuda --sync semaphore --out "$dir/a.log" &
  local apid=$!
  timeout 90 "$peer" consumer --socket "$sock" --timeout 30000 \
    --transport cuda --sync semaphore --out "$dir/b.log" &
  local bpid=$!
  timeout 90 "$peer" producer --socket "$sock" --frames 300 --wait \
    --wait-clients 2 --source videotestsrc --width 640 --height 360 \
    --policy lossless --lease-ms 2000 --timeout 30000 --out "$dir/p.log" "$@"
  rc_p=$?
  wait $apid; rc_a=$?
  wait $bpid; rc_b=$?
  sent=$(grep -c '^sent ' "$dir/p.log")
  recv=$(grep -c '^recv ' "$dir/b.log")
  if [ $rc_p -eq 0 ] && [ "$sent" -eq 300 ] && [ $rc_b -eq 0 ] \
      && [ "$recv" -eq "$sent" ] && [ $rc_a -ne 0 ] \
      && grep -q '^error .*done signal overdue' "$dir/a.log"; then
    pass "$desc: the other consumer got $recv/$sent frames; the one that never signals done: $(errline "$dir/a.log")"
  else
    fail "$desc: producer exit $rc_p, $sent sent; consumer that signals exit $rc_b, $recv frames; the other exit $rc_a, $(grep -c '^recv ' "$dir/a.log") frames, $(errline "$dir/a.log"); producer: $(errline "$dir/p.log")"
  fi
  rm -f "$dir"/*.log
}

never_ready "a producer that never signals ready, copy into system memory"
never_ready "a producer that never signals ready, read in place (CUDA memory out)" \
  --gpu-output
never_ready_stopped
never_done "a consumer that never signals done, CUDA memory upstream" --gpu-input
never_done "a consumer that never signals done, system memory upstream"
finish

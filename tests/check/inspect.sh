#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# gpushare-inspect against real producers and consumers (gst-launch-1.0
# processes):
# 1. a live producer and two consumers: the consumers, with their pids and
#    uid, and the observer itself counted apart;
# 2. a file-like producer waiting for its first consumer (min-consumers=1):
#    an observer does not start it, and a consumer after it gets every
#    frame;
# 3. a producer at max-clients: the observer still gets in, the consumers
#    stay as they are;
# 4. a directory of two producers: both shown;
# 5. the same directory with a socket whose listener accepts nobody and
#    whose backlog is full (a stopped producer): said so, at once, and the
#    two others shown all the same.
#
#   inspect.sh GPUSHARE_INSPECT
set -euo pipefail
inspect=$1
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
uid=$(id -u)
wait_for_socket () {
  for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "no socket at $1"; exit 1
}
# inspect --once until it shows want (consumers need a moment to map)
inspect_until () {
  local want=$1; shift
  for _ in $(seq 50); do
    "$inspect" --once "$@" > "$dir/out" 2>&1 || true
    grep -q "$want" "$dir/out" && return 0
    sleep 0.1
  done
  cat "$dir/out"; echo "never: $want"; exit 1
}

# 1.
gst-launch-1.0 -q videotestsrc is-live=true \
  ! video/x-raw,format=NV12,width=320,height=240,framerate=30/1 \
  ! gpusharesink socket-path="$dir/live.sock" name=camera &
wait_for_socket "$dir/live.sock"
gst-launch-1.0 -q gpusharesrc socket-path="$dir/live.sock" ! fakesink &
c1=$!
gst-launch-1.0 -q gpusharesrc socket-path="$dir/live.sock" ! fakesink &
c2=$!
inspect_until "consumers: 2, observers: 1" "$dir/live.sock"
# a consumer is counted from its first message on; ready once it mapped
inspect_until "pid $c1, uid $uid, .* state ready" "$dir/live.sock"
inspect_until "pid $c2, uid $uid, .* state ready" "$dir/live.sock"
cat "$dir/out"
grep -q "^producer $dir/live.sock$" "$dir/out"
grep -q "name: camera" "$dir/out"
grep -q "caps: video/x-raw, format=(string)NV12, width=(int)320" "$dir/out"
grep -q "consumer [0-9]*: pid $c1, uid $uid, .* state ready, memory system" "$dir/out"
grep -q "consumer [0-9]*: pid $c2, uid $uid, .* state ready, memory system" "$dir/out"
kill $c1 $c2
echo "1: both consumers shown, the observer counted apart"

# 2.
gst-launch-1.0 -q videotestsrc num-buffers=30 \
  ! video/x-raw,format=NV12,width=320,height=240 \
  ! gpusharesink socket-path="$dir/file.sock" min-consumers=1 &
producer=$!
wait_for_socket "$dir/file.sock"
"$inspect" --once "$dir/file.sock" > "$dir/out"
cat "$dir/out"
grep -q "frames rendered 0," "$dir/out"
grep -q "consumers: 0, observers: 1" "$dir/out"
n=$(gst-launch-1.0 -v gpusharesrc socket-path="$dir/file.sock" \
  ! fakesink silent=false | grep -c 'last-message = chain')
wait $producer
[ "$n" -eq 30 ] || { echo "the consumer got $n frames of 30"; exit 1; }
echo "2: an observer did not start the stream; the consumer got every frame"

# 3.
gst-launch-1.0 -q videotestsrc is-live=true \
  ! video/x-raw,format=NV12,width=320,height=240,framerate=30/1 \
  ! gpusharesink socket-path="$dir/full.sock" max-clients=1 &
wait_for_socket "$dir/full.sock"
gst-launch-1.0 -q gpusharesrc socket-path="$dir/full.sock" ! fakesink &
inspect_until "consumers: 1, observers: 1" "$dir/full.sock"
cat "$dir/out"
echo "3: observed at max-clients"

# 4.
mkdir "$dir/run"
for n in a b; do
  gst-launch-1.0 -q videotestsrc is-live=true \
    ! video/x-raw,format=NV12,width=160,height=120,framerate=30/1 \
    ! gpusharesink socket-path="$dir/run/$n.sock" &
  wait_for_socket "$dir/run/$n.sock"
done
"$inspect" --once "$dir/run" > "$dir/out"
cat "$dir/out"
[ "$(grep -c '^producer ' "$dir/out")" -eq 2 ]
[ "$(grep -c '^status of ' "$dir/out")" -eq 2 ]
echo "4: a directory of two producers"

# 5.
python3 - "$dir/run/busy.sock" "$dir/busy.ready" <<'PY' &
import socket, sys, time
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind(sys.argv[1])
l.listen(0)
held = []
while True:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.setblocking(False)
    try:
        c.connect(sys.argv[1])
    except BlockingIOError:
        break
    held.append(c)
open(sys.argv[2], "w").close()
time.sleep(60)
PY
for _ in $(seq 100); do [ -e "$dir/busy.ready" ] && break; sleep 0.05; done
timeout 20 "$inspect" --once "$dir/run" > "$dir/out" 2>&1 || true
cat "$dir/out"
grep -q 'busy.sock: .*listen backlog is full' "$dir/out"
[ "$(grep -c '^status of ' "$dir/out")" -eq 2 ]
echo "5: a producer that accepts nobody, said so; the two others shown"

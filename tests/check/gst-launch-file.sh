#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Two gst-launch-1.0 processes: a producer of N 1080p NV12 frames into
# gpusharesink, and a consumer writing what gpusharesrc gives it to a file.
# The file must be byte for byte what the producer's source makes.
#
# Then a producer that waits for consumers says so (an INFO that
# gst-launch-1.0 prints) and stops on the first Ctrl-C with -e: with no
# consumer at all, its source writing into the sink's pool or its own,
# and after its only consumer is gone.
set -euo pipefail
N=${GPUSHARE_FRAMES:-1000}
caps="video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

gst-launch-1.0 -q gpusharesrc socket-path="$dir/sock" connection-timeout=30000 \
  ! filesink location="$dir/received.raw" &
consumer=$!
gst-launch-1.0 -q videotestsrc num-buffers="$N" pattern=ball ! "$caps" \
  ! gpusharesink socket-path="$dir/sock" wait-for-connection=true
wait "$consumer"

# the reference: the same deterministic source, straight into a hash
want=$(gst-launch-1.0 -q videotestsrc num-buffers="$N" pattern=ball ! "$caps" \
  ! fdsink fd=1 | sha256sum | cut -d' ' -f1)
got=$(sha256sum < "$dir/received.raw" | cut -d' ' -f1)
size=$(stat -c %s "$dir/received.raw")
echo "frames=$N bytes=$size expected=$((N * 3110400))"
echo "want=$want"
echo "got =$got"
[ "$size" -eq $((N * 3110400)) ]
[ "$want" = "$got" ]
echo "received file identical to what the producer sent"

# --- the wait for consumers, and Ctrl-C with -e ---------------------------
small="video/x-raw,format=NV12,width=320,height=240,framerate=30/1"

# waits until the log has COUNT lines matching PATTERN (10 s at most)
wait_log () {
  local log=$1 pattern=$2 count=${3:-1} i
  for i in $(seq 100); do
    [ "$(grep -c -- "$pattern" "$log" || true)" -ge "$count" ] && return 0
    sleep 0.1
  done
  echo "no '$pattern' (x$count) in $log:"; cat "$log"; return 1
}

# one SIGINT, then the producer must end by itself within 5 s, with EOS
interrupt_once () {
  local pid=$1 log=$2 i
  kill -INT "$pid"
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "still running 5 s after one Ctrl-C:"; cat "$log"; return 1
  fi
  wait "$pid"
  grep -q "Got EOS" "$log"
}

for between in "" "identity drop-allocation=true !"; do
  log="$dir/wait.log"
  rm -f "$dir/wait.sock"
  gst-launch-1.0 -e videotestsrc ! "$small" ! $between \
    gpusharesink socket-path="$dir/wait.sock" > "$log" 2>&1 &
  producer=$!
  wait_log "$log" "0 of 1 ready (min-consumers=1"
  interrupt_once "$producer" "$log"
  what="no consumer"
  [ -z "$between" ] || what="no consumer, upstream with a pool of its own"
  echo "$what: the wait said so, one Ctrl-C ended it"
done

# its only consumer gone, the producer waits again, says so again, and
# stops on one Ctrl-C
log="$dir/again.log"
gst-launch-1.0 -e videotestsrc ! "$small" \
  ! gpusharesink socket-path="$dir/again.sock" > "$log" 2>&1 &
producer=$!
wait_log "$log" "0 of 1 ready"
gst-launch-1.0 -q gpusharesrc socket-path="$dir/again.sock" ! fakesink \
  > "$dir/consumer.log" 2>&1 &
consumer=$!
sleep 1
kill -9 "$consumer"
wait "$consumer" 2>/dev/null || true
wait_log "$log" "0 of 1 ready" 2
interrupt_once "$producer" "$log"
echo "its consumer gone: the wait said so again, one Ctrl-C ended it"

# --- a consumer the socket's mode keeps out ------------------------------
# as another uid (root only, with setpriv): the error names socket-mode
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
  perm="$dir/perm"
  mkdir -p "$perm"
  chmod 755 "$dir" "$perm"
  gst-launch-1.0 -q videotestsrc num-buffers=300 ! "$small" \
    ! gpusharesink socket-path="$perm/owner-only.sock" > "$dir/perm-producer.log" 2>&1 &
  producer=$!
  for i in $(seq 100); do [ -S "$perm/owner-only.sock" ] && break; sleep 0.1; done
  rc=0
  setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$perm" \
    GST_REGISTRY_1_0="$perm/registry.bin" gst-launch-1.0 gpusharesrc \
    socket-path="$perm/owner-only.sock" connection-timeout=2000 ! fakesink \
    > "$dir/perm.log" 2>&1 || rc=$?
  kill "$producer" 2>/dev/null || true
  wait "$producer" 2>/dev/null || true
  if grep -q "could not be loaded\|No such element\|no element" "$dir/perm.log"; then
    echo "SKIP the socket-mode case: uid 65534 cannot load the plugin from here"
  else
    cat "$dir/perm.log"
    [ $rc -ne 0 ]
    grep -q "does not let this user connect: the producer's socket-mode" "$dir/perm.log"
    echo "a consumer of another uid kept out by socket-mode: the error names it"
  fi
else
  echo "SKIP the socket-mode case: needs root and setpriv to act as another uid"
fi

# --- re-sharing what gpusharesrc gives, without a copy (1.24+) -----------
# unixfdsink takes nothing but fd memory: gpusharesrc gives it each frame
# as its slot's memfd, and a third process gets the producer's bytes
if gst-inspect-1.0 unixfdsink > /dev/null 2>&1; then
  M=60
  timeout 60 gst-launch-1.0 -q gpusharesrc socket-path="$dir/reshare.sock" \
    connection-timeout=30000 ! unixfdsink socket-path="$dir/unixfd.sock" \
    wait-for-connection=true > "$dir/middle.log" 2>&1 &
  middle=$!
  # unixfdsrc does not wait for its socket: start it once it is there
  for i in $(seq 100); do [ -S "$dir/unixfd.sock" ] && break; sleep 0.1; done
  timeout 60 gst-launch-1.0 -q unixfdsrc socket-path="$dir/unixfd.sock" \
    ! filesink location="$dir/reshared.raw" > "$dir/last.log" 2>&1 &
  last=$!
  timeout 60 gst-launch-1.0 -q videotestsrc num-buffers=$M pattern=ball \
    ! "$small" ! gpusharesink socket-path="$dir/reshare.sock" \
    wait-for-connection=true
  wait "$middle" || { cat "$dir/middle.log"; exit 1; }
  wait "$last" || { cat "$dir/last.log"; exit 1; }
  want=$(gst-launch-1.0 -q videotestsrc num-buffers=$M pattern=ball ! "$small" \
    ! fdsink fd=1 | sha256sum | cut -d' ' -f1)
  got=$(sha256sum < "$dir/reshared.raw" | cut -d' ' -f1)
  [ "$want" = "$got" ] || { echo "re-shared bytes differ"; exit 1; }
  echo "gpusharesrc ! unixfdsink: $M frames re-shared as the slots' fds, each as sent"
else
  echo "SKIP the re-share case: no unixfdsink (GStreamer 1.24+)"
fi

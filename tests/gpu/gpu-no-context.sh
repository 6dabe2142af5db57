#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A consumer whose process cannot have a CUDA context for GStreamer's
# elements (a GPU out of memory, or out of room for more processes'
# contexts, as 64 streams x 4 consumers in processes of their own make it):
# real gst-launch-1.0 processes, one live producer in GPU memory and three
# consumers that ask for CUDA memory.
#
#   - one whose context can never be made (GPUSHARE_TEST_FAIL_AT, which
#     only the test copy of the plugin obeys) fails, saying so, instead of
#     "Downstream does not accept the producer's caps";
#   - one whose context fails at start only gets it once the slots are
#     mapped, and its frames in CUDA memory;
#   - one beside them reads on, and the producer goes on.
#
#   gpu-no-context.sh
set -u
. "$(dirname "$0")/gpu-skip.sh"
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail=0
sock=$dir/cam.sock
# N frames in CUDA memory, 30 s at most
consumer () {
  timeout 30 gst-launch-1.0 -q gpusharesrc socket-path="$sock" \
      transport=cuda num-buffers="$1" ! 'video/x-raw(memory:CUDAMemory)' ! \
      fakesink
}
gst-launch-1.0 -q videotestsrc is-live=true ! \
    video/x-raw,format=NV12,width=320,height=240,framerate=30/1 ! \
    cudaupload ! gpusharesink socket-path="$sock" > "$dir/producer.log" 2>&1 &
producer=$!
consumer 150 > "$dir/steady.log" 2>&1 &
steady=$!
sleep 1
GPUSHARE_TEST_FAIL_AT=src:gpu-context consumer 30 \
    > "$dir/never.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] \
    && grep -q "this process has no CUDA context for GStreamer's elements on GPU 0" \
      "$dir/never.log"; then
  echo "no context at all: the consumer failed (exit $rc), saying why: PASS"
else
  echo "no context at all: exit $rc, expected a failure that says why: FAIL"
  sed 's/^/  | /' "$dir/never.log"
  fail=1
fi
GPUSHARE_TEST_FAIL_AT=src:gpu-context:1 consumer 30 \
    > "$dir/later.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
  echo "no context at start: made once the slots were mapped, 30 frames" \
      "in CUDA memory: PASS"
else
  echo "no context at start: exit $rc, expected 30 frames in CUDA memory: FAIL"
  sed 's/^/  | /' "$dir/later.log"
  fail=1
fi
if timeout 30 tail --pid=$steady -f /dev/null && wait $steady; then
  echo "the consumer beside them: 150 frames in CUDA memory: PASS"
else
  echo "the consumer beside them did not end well: FAIL"
  sed 's/^/  | /' "$dir/steady.log"
  fail=1
fi
if kill -0 $producer 2>/dev/null; then
  echo "the producer goes on: PASS"
else
  echo "the producer ended: FAIL"
  sed 's/^/  | /' "$dir/producer.log"
  fail=1
fi
[ $fail -eq 0 ] && echo PASS || echo FAIL
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Python examples of docs/user-guide.md, against real processes:
# examples/gpushare-consumer.py reads every frame of a gst-launch-1.0
# producer in place with numpy (white NV12: every mean luma 235), the
# producer starting 6 s after it (its --timeout, not a fixed wait, says how
# long it waits); it exits 1 with the reason when no producer comes and
# when the stream ends before --frames; the options of its usage line
# exist.  python-enums.py reads gpushare's enum values the documented way.
# Skips with one line where PyGObject, GStreamer's Python overrides or
# numpy are missing (install-deps.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import gi, numpy; gi.require_version("Gst", "1.0");
gi.require_version("GstVideo", "1.0"); from gi.repository import Gst, GstVideo;
import gi.overrides.Gst' 2>/dev/null; then
    py=$p
    break
  fi
done
if [ -z "$py" ]; then
  echo "SKIP: no python3 with PyGObject, GStreamer's overrides (python3-gst-1.0) and numpy"
  exit 77
fi
dir=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
N=20

consumer_py=$root/examples/gpushare-consumer.py
"$py" "$consumer_py" "$dir/sock" --frames $N --timeout 30000 \
  > "$dir/consumer.log" 2>&1 &
consumer=$!
sleep 6
gst-launch-1.0 -q videotestsrc num-buffers=$N pattern=white \
  ! video/x-raw,format=NV12,width=320,height=240,framerate=30/1 \
  ! gpusharesink socket-path="$dir/sock" wait-for-connection=true
wait "$consumer"
cat "$dir/consumer.log"
[ "$(grep -c '^frame .* mean-y=235.0$' "$dir/consumer.log")" -eq $N ]
grep -q '^stats io=in-place$' "$dir/consumer.log"
grep -q "^received $N frames$" "$dir/consumer.log"
# read in place: no copy of the buffers' bytes
! grep -q 'mapped as copies' "$dir/consumer.log"
echo "gpushare-consumer.py: $N frames read in place, each as sent, from a producer 6 s late"

# no producer within --timeout: exit 1, and why
rc=0
"$py" "$consumer_py" "$dir/nobody.sock" --timeout 1000 \
  > "$dir/nobody.log" 2>&1 || rc=$?
cat "$dir/nobody.log"
[ $rc -eq 1 ]
grep -q '^error: .*producer' "$dir/nobody.log"
echo "gpushare-consumer.py: no producer, exit 1 with the reason"

# the stream ends before --frames: exit 1, and why
rc=0
"$py" "$consumer_py" "$dir/short.sock" --frames 10 \
  > "$dir/short.log" 2>&1 &
consumer=$!
gst-launch-1.0 -q videotestsrc num-buffers=5 \
  ! video/x-raw,format=NV12,width=320,height=240,framerate=30/1 \
  ! gpusharesink socket-path="$dir/short.sock" wait-for-connection=true
wait "$consumer" || rc=$?
cat "$dir/short.log"
[ $rc -eq 1 ]
grep -q '^received 5 frames$' "$dir/short.log"
grep -q '^error: the stream ended after 5 of 10 frames$' "$dir/short.log"
echo "gpushare-consumer.py: a short stream, exit 1 with the reason"

# every option of the usage line in its docstring is one it takes
help=$("$py" "$consumer_py" --help)
usage=$(grep -m1 'gpushare-consumer.py SOCKET' "$consumer_py")
for opt in $(grep -o -- '--[a-z-]*' <<< "$usage"); do
  grep -q -- "$opt" <<< "$help" || { echo "usage names $opt, which it does not take"; exit 1; }
done
echo "gpushare-consumer.py: its usage line names only options it takes"

"$py" "$here/python-enums.py" "$dir/enums.sock" > "$dir/enums.log"
cat "$dir/enums.log"
grep -q '^client-removed goodbye 0$' "$dir/enums.log"
grep -q '^policy auto$' "$dir/enums.log"
echo "enum values read from Python"

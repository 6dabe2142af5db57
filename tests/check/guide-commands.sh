#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs, as written, every command block of docs/user-guide.md marked
#   <!-- check: NAME -->      or      <!-- check: NAME bg -->
# from the project root: the blocks of one NAME together, the bg ones
# first and in the background, then the others in order; each must exit
# 0 within 60 s.  A block whose mark ends with shows=TEXT (no spaces) must
# also print TEXT, what the guide says it shows.  Blocks marked check-gpu (same form) need a GPU: they are
# listed, not run, unless --gpu is given, which runs them and lists the
# others (the gpu suite's guide_gpu; one SKIP line where no GPU is).
# python3 is the first one that has PyGObject and numpy; without one, the
# blocks that run python3 are skipped with one line, and so are those that
# use the Python module gpushare where it is not built (meson test puts
# the build's on PYTHONPATH).
#
#   guide-commands.sh [--gpu] [GPUSHARE_INSPECT]
set -uo pipefail
mode=cpu
if [ "${1:-}" = --gpu ]; then
  mode=gpu
  shift
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no GPU here (nvidia-smi finds none)"
    exit 77
  fi
fi
inspect_bin=${1:+$(realpath "$1")}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
guide=$root/docs/user-guide.md
cd "$root"
work=$(mktemp -d)
cleanup () {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  rm -rf "$work"
  rm -f /tmp/gpushare-guide-*
}
trap cleanup EXIT

# gpushare-inspect of this build (the first argument), as if installed
if [ -n "$inspect_bin" ]; then
  mkdir -p "$work/bin"
  ln -s "$inspect_bin" "$work/bin/gpushare-inspect"
  export PATH=$work/bin:$PATH
fi

# a python3 with what the Python example needs, first in PATH
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import gi, numpy; gi.require_version("Gst", "1.0");
gi.require_version("GstVideo", "1.0"); from gi.repository import Gst, GstVideo;
import gi.overrides.Gst' 2>/dev/null; then
    mkdir -p "$work/bin"
    ln -s "$(command -v "$p")" "$work/bin/python3"
    case ":$PATH:" in *":$work/bin:"*) ;; *) export PATH=$work/bin:$PATH ;; esac
    # the python3 tried above is remembered where it was found
    hash -r
    break
  fi
done

# NAME ROLE FILE per block, in the guide's order
awk -v dir="$work" '
  /^<!-- check(-gpu)?: / {
    kind = ($2 == "check-gpu:") ? "gpu" : "cpu"; name = $3;
    role = ($4 == "bg") ? "bg" : "fg"; want = 1; shows = "";
    for (i = 4; i <= NF; i++)
      if ($i ~ /^shows=/) shows = substr ($i, 7);
    next }
  want && /^```sh$/ { n++; file = dir "/block" n; inblock = 1; want = 0;
    if (shows != "") print shows > (file ".shows");
    print kind, name, role, file; next }
  inblock && /^```$/ { inblock = 0; next }
  inblock { print > file }
' "$guide" > "$work/blocks"
[ -s "$work/blocks" ] || { echo "no checked block in $guide"; exit 1; }

failed=0
names=$(awk '{ print $1 " " $2 }' "$work/blocks" | awk '!seen[$0]++')
while read -r kind name; do
  if [ "$kind" != "$mode" ]; then
    if [ "$kind" = gpu ]; then
      echo "not run here (needs a GPU): $name"
    else
      echo "not run here (guide-commands runs it): $name"
    fi
    continue
  fi
  if grep -q '^python3 ' $(awk -v n="$name" '$2 == n { print $4 }' \
      "$work/blocks") && [ ! -e "$work/bin/python3" ]; then
    echo "SKIP $name: no python3 with PyGObject, python3-gst-1.0 and numpy"
    continue
  fi
  if grep -q 'import gpushare\|gpushare-infer.py\|gpushare-tensor-bench.py' \
      $(awk -v n="$name" '$2 == n { print $4 }' "$work/blocks") \
      && ! python3 -c 'import gpushare' 2>/dev/null; then
    echo "SKIP $name: the Python module gpushare is not built (-Dpython)"
    continue
  fi
  rm -f /tmp/gpushare-guide-*.sock
  pids=()
  while read -r k n role file; do
    [ "$n" = "$name" ] && [ "$role" = bg ] || continue
    timeout 60 bash -e "$file" > "$file.log" 2>&1 &
    pids+=($!)
  done < "$work/blocks"
  ok=yes
  while read -r k n role file; do
    [ "$n" = "$name" ] && [ "$role" = fg ] || continue
    timeout 60 bash -e "$file" > "$file.log" 2>&1 || ok=no
  done < "$work/blocks"
  for pid in "${pids[@]}"; do
    wait "$pid" || ok=no
  done
  for f in $(awk -v n="$name" '$2 == n { print $4 }' "$work/blocks"); do
    if [ -f "$f.shows" ] && ! grep -qF -- "$(cat "$f.shows")" "$f.log"; then
      echo "$name: the block does not show '$(cat "$f.shows")'"
      ok=no
    fi
  done
  if [ $ok = yes ]; then
    echo "ok: $name"
  else
    echo "FAILED: $name"
    for f in $(awk -v n="$name" '$2 == n { print $4 }' "$work/blocks"); do
      echo "--- $(head -c 200 "$f")"
      tail -5 "$f.log"
    done
    failed=1
  fi
done <<< "$names"
exit $failed

#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the codec fuzz target (fuzz_proto.c) with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer, and fuzzes for SECONDS
# (default 60), starting from a copy of the committed corpus.  Fails on any
# crash, sanitizer report, leak or round-trip mismatch; the input that did
# it is kept as WORKDIR/crash-* (replay it with build/tests/fuzz/replay_proto
# FILE), and belongs in tests/fuzz/corpus/proto/ once the bug is fixed.
#
#   tests/fuzz/run-fuzzer.sh [-u] [SECONDS]
#
#   -u  afterwards, add to tests/fuzz/corpus/proto/ the inputs that reach
#       code the corpus does not (libFuzzer -merge=1), for a commit
#
# Environment: CC (default clang), FUZZ_WORKDIR (default a temporary folder,
# removed unless something failed), FUZZ_JOBS (parallel fuzzing processes,
# default 1).
set -euo pipefail

update=0
if [ "${1:-}" = "-u" ]; then
  update=1
  shift
fi
seconds=${1:-60}
case $seconds in
  '' | *[!0-9]*)
    echo "usage: $0 [-u] [SECONDS]" >&2
    exit 2
    ;;
esac

root=$(cd "$(dirname "$0")/../.." && pwd)
corpus=$root/tests/fuzz/corpus/proto
cc=${CC:-clang}
jobs=${FUZZ_JOBS:-1}

if [ -n "${FUZZ_WORKDIR:-}" ]; then
  work=$FUZZ_WORKDIR
  mkdir -p "$work"
  keep=1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/gpushare-fuzz.XXXXXX")
  keep=0
fi
cleanup () {
  if [ "$keep" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "run-fuzzer: kept $work"
  fi
}
trap cleanup EXIT

# the codec needs nothing but GLib; the check of META's entries
# (gpushareframemeta.c, with gpusharetext.c, which it links) is built with
# GStreamer's headers but calls none of it.  -fno-sanitize-recover makes every UBSan report a crash the fuzzer
# stops on
# shellcheck disable=SC2046
"$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I "$root/gst/gpushare" -I "$root/tests/fuzz" \
  $(pkg-config --cflags glib-2.0 gstreamer-1.0 gstreamer-video-1.0) \
  "$root/tests/fuzz/fuzz_proto.c" "$root/gst/gpushare/gpushareproto.c" \
  "$root/gst/gpushare/gpushareframemeta.c" \
  "$root/gst/gpushare/gpusharetext.c" \
  $(pkg-config --libs glib-2.0 gstreamer-1.0 gstreamer-video-1.0) \
  -o "$work/fuzz_proto"

rm -rf "$work/corpus"
mkdir -p "$work/corpus"
cp "$corpus"/* "$work/corpus/"

# largest input: the biggest message and a header to spare, plus the prefix
max_len=$((2 + 2 * (24 + 16384)))
echo "run-fuzzer: fuzzing for ${seconds}s from" \
  "$(find "$work/corpus" -type f | wc -l) inputs"
args=(-max_total_time="$seconds" -max_len="$max_len" -timeout=10
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/")
# -jobs runs each fuzzing process under a supervisor that logs it to
# fuzz-N.log: only when asked for
if [ "$jobs" -gt 1 ]; then
  args+=(-jobs="$jobs" -workers="$jobs")
fi
rc=0
(
  cd "$work"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    ./fuzz_proto "${args[@]}" corpus > fuzz.log 2>&1
) || rc=$?

if [ "$rc" -ne 0 ] || ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* \
    "$work"/oom-* > /dev/null 2>&1; then
  keep=1
  tail -n 80 "$work"/fuzz*.log >&2
  echo "run-fuzzer: FAILED (exit $rc); inputs:" >&2
  ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* \
    >&2 2>/dev/null || true
  exit 1
fi
# the last coverage line and the totals of each fuzzing process (with
# -jobs, fuzz.log repeats what they log)
logs=("$work/fuzz.log")
if [ "$jobs" -gt 1 ]; then
  logs=("$work"/fuzz-*.log)
fi
for log in "${logs[@]}"; do
  grep -E '(DONE|pulse) +cov:' "$log" | tail -n 1 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$log" \
    || true
done

if [ "$update" -eq 1 ]; then
  (cd "$work" && ./fuzz_proto -merge=1 -max_len="$max_len" "$corpus" corpus \
    > merge.log 2>&1) || { tail -n 20 "$work/merge.log" >&2; exit 1; }
  grep 'MERGE-OUTER: .* new files' "$work/merge.log" || true
  echo "run-fuzzer: corpus now $(find "$corpus" -type f | wc -l) files," \
    "$(du -sh "$corpus" | cut -f1)"
fi
echo "run-fuzzer: no crash in ${seconds}s"

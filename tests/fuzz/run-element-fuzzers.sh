#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the elements' fuzz targets (fuzz_src.c: a hostile producer
# against gpusharesrc; fuzz_sink.c: a hostile consumer against
# gpusharesink) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, in a build of their own where the test copy
# of the plugin is instrumented too, and fuzzes each for SECONDS (default
# 60) from a copy of its committed corpus.  Fails on any crash, sanitizer
# report, CRITICAL, descriptor kept, or producer that stops taking frames;
# the input that did it is kept as WORKDIR/TARGET/crash-* (replay it with
# build/tests/fuzz/replay_TARGET FILE), and belongs in
# tests/fuzz/corpus/TARGET/ once the bug is fixed.
#
#   tests/fuzz/run-element-fuzzers.sh [-u] [SECONDS]
#
#   -u  afterwards, add to tests/fuzz/corpus/TARGET/ the inputs that reach
#       code the corpus does not (libFuzzer -merge=1), for a commit
#
# Environment: CC (default clang), FUZZ_BUILD (default build-fuzz in the
# source root), FUZZ_WORKDIR (default a temporary folder, removed unless
# something failed), FUZZ_TARGETS (default "src sink").
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
build=${FUZZ_BUILD:-$root/build-fuzz}
targets=${FUZZ_TARGETS:-src sink}
if [ -n "${FUZZ_WORKDIR:-}" ]; then
  work=$FUZZ_WORKDIR
  mkdir -p "$work"
  keep=1
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/gpushare-fuzz-elements.XXXXXX")
  keep=0
fi
cleanup () {
  if [ "$keep" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "run-element-fuzzers: kept $work"
  fi
}
trap cleanup EXIT

# everything instrumented for coverage, the targets linked with libFuzzer
if [ ! -f "$build/build.ninja" ]; then
  CC=${CC:-clang} meson setup "$build" "$root" -Dtests=enabled \
    -Dexamples=disabled -Dfuzzers=true -Db_sanitize=address,undefined \
    -Db_lundef=false \
    -Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" \
    > "$work/setup.log" 2>&1 || { tail -n 30 "$work/setup.log" >&2; exit 1; }
fi
ninja -C "$build" tests/plugin/libgstgpushare.so \
  $(for t in $targets; do echo "tests/fuzz/fuzz_$t"; done) \
  > "$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; exit 1; }

# GStreamer's own plugins the targets use, alone, and the registry made
# in the fuzzing process itself (the plugin scanner is not instrumented)
pluginsdir=$(pkg-config --variable=pluginsdir gstreamer-1.0)
mkdir -p "$work/plugins"
for p in coreelements app; do
  ln -sf "$pluginsdir/libgst$p.so" "$work/plugins/"
done
export GST_PLUGIN_SYSTEM_PATH_1_0=$work/plugins
export GST_PLUGIN_PATH_1_0=$build/tests/plugin
export GST_REGISTRY_1_0=$work/registry.bin
export GST_REGISTRY_FORK=no
export GST_DEBUG=${GST_DEBUG:-*:0}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

rc=0
for t in $targets; do
  mkdir -p "$work/$t/corpus"
  cp "$root/tests/fuzz/corpus/$t"/* "$work/$t/corpus/"
  echo "run-element-fuzzers: fuzz_$t for ${seconds}s from" \
    "$(find "$work/$t/corpus" -type f | wc -l) inputs"
  trc=0
  (
    cd "$work/$t"
    "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=4096 \
      -timeout=30 -rss_limit_mb=4096 -detect_leaks=0 -print_final_stats=1 \
      -artifact_prefix="$work/$t/" corpus > fuzz.log 2>&1
  ) || trc=1
  if [ "$trc" -ne 0 ] || ls "$work/$t"/crash-* "$work/$t"/leak-* \
      "$work/$t"/timeout-* "$work/$t"/oom-* > /dev/null 2>&1; then
    keep=1
    rc=1
    tail -n 60 "$work/$t/fuzz.log" >&2
    echo "run-element-fuzzers: fuzz_$t FAILED; inputs:" >&2
    ls "$work/$t"/crash-* "$work/$t"/leak-* "$work/$t"/timeout-* \
      "$work/$t"/oom-* >&2 2>/dev/null || true
    continue
  fi
  grep -E '(DONE|pulse) +cov:' "$work/$t/fuzz.log" | tail -n 1 || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' \
    "$work/$t/fuzz.log" || true
  if [ "$update" -eq 1 ]; then
    (cd "$work/$t" && "$build/tests/fuzz/fuzz_$t" -merge=1 -max_len=4096 \
      "$root/tests/fuzz/corpus/$t" corpus > merge.log 2>&1) ||
      { tail -n 20 "$work/$t/merge.log" >&2; exit 1; }
    grep 'MERGE-OUTER: .* new files' "$work/$t/merge.log" || true
  fi
done
[ "$rc" -eq 0 ] && echo "run-element-fuzzers: no finding in ${seconds}s each"
exit $rc

# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Shared by the gpu suite's shell tests: the skip checks and running
# gpushare-test-peer as a producer and N consumers, every frame compared.
#
# The caller sets: peer (gpushare-test-peer), frames; this file sets dir (a
# temporary folder, removed on exit) and failures.

. "$(dirname "${BASH_SOURCE[0]}")/gpu-skip.sh"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

# the number of GPUs this process sees
gpu_count() {
  nvidia-smi -L | grep -c '^GPU '
}

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# compare DESC PRODUCER_LOG CONSUMER_LOG WANT_TRANSPORT [REASON_PATTERN]
compare() {
  local desc=$1 plog=$2 clog=$3 want=$4 pattern=${5:-} sent recv transport
  sent=$(grep -c '^sent ' "$plog")
  recv=$(grep -c '^recv ' "$clog")
  transport=$(grep -m1 '^transport ' "$clog" | sed 's/^transport //')
  if [ "$sent" -ne "$frames" ] || [ "$recv" -ne "$sent" ] \
      || ! cmp -s <(grep '^sent ' "$plog" | cut -c6-) \
                  <(grep '^recv ' "$clog" | cut -c6-) \
      || [[ "$transport" != *"memory-type=$want"* ]] \
      || { [ -n "$pattern" ] && [[ "$transport" != *$pattern* ]]; }; then
    fail "$desc: sent $sent, received $recv, transport: $transport"
    grep -h '^error' "$plog" "$clog" | head -3
  else
    pass "$desc: $recv/$sent frames identical; $transport"
  fi
}

# run DESC N_CONSUMERS WANT PRODUCER_ARGS -- CONSUMER_ARGS
#   every consumer takes CONSUMER_ARGS; PRODUCER_ENV, if set, is put in
#   front of the producer's command, and CONSUMER_ENV, if set, in
#   front of each consumer's command (env VAR=value ...); REASON, if set,
#   must appear in each consumer's transport line
run() {
  local desc=$1 n=$2 want=$3 pargs=() cargs=() i pids=() seen=0
  shift 3
  for a in "$@"; do
    if [ "$a" = "--" ]; then seen=1; continue; fi
    if [ $seen -eq 0 ]; then pargs+=("$a"); else cargs+=("$a"); fi
  done
  local sock="$dir/$RANDOM.sock"
  for ((i = 0; i < n; i++)); do
    env ${CONSUMER_ENV:-} "$peer" consumer --socket "$sock" --timeout 30000 \
      --out "$dir/c$i.log" "${cargs[@]}" & pids+=($!)
  done
  env ${PRODUCER_ENV:-} "$peer" producer --socket "$sock" --frames "$frames" --wait \
    --wait-clients "$n" --source videotestsrc --policy lossless \
    --timeout 30000 --out "$dir/p.log" "${pargs[@]}"
  for p in "${pids[@]}"; do wait "$p"; done
  for ((i = 0; i < n; i++)); do
    compare "$desc${n:+ (consumer $((i + 1))/$n)}" "$dir/p.log" "$dir/c$i.log" \
      "$want" "${REASON:-}"
  done
  # the first consumer's, for what a case checks beyond the frames
  grep '^stats ' "$dir/c0.log" > "$dir/last-stats.txt"
  rm -f "$dir"/*.log
}

# a figure of the last stats line an element printed (gpushare-test-peer)
stat_of() { grep '^stats ' "$1" | tail -1 | sed -n "s/.*$2=([a-z0-9]*)\"\{0,1\}\([^,;\"]*\).*/\1/p"; }
# pts, size and checksum of every picture a consumer printed: what a
# decode is compared by (a reference's buffers are cudadownload's, so
# offsets and flags are not compared)
key() { grep '^recv ' "$1" | sed 's/.* pts=\([-0-9]*\) .* size=\([^ ]*\) sum=\(.*\)/\1 \2 \3/'; }

# the end of every script
finish() {
  if [ $failures -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
  fi
  echo "all cases passed"
  exit 0
}

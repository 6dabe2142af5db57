#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Inference results along a chain of three processes (GStreamer 1.24+ with
# its analytics library): a producer that attaches a detector's results
# (detections, their classifications, the relations between them) to
# every frame, a relay (gpusharesrc ! gpusharesink) that adds a tracker's
# on top, and a consumer.  Each hop gives the next process the frame and
# its GstAnalyticsRelationMeta equal by GStreamer's own accessors: the
# relay's input to what the producer sent, the consumer's to what the relay
# sent, the pictures the producer's; nothing dropped on the way.
#
#   analytics-chain.sh GPUSHARE-TEST-PEER [WIDTH HEIGHT [MASK [TENSOR]]]
#
# MASK (WxH, GStreamer 1.26+): the producer adds a segmentation mask of
# that size to each frame's results; a 1080p one (2 MiB) is past what a
# frame's metas may take inline, and goes through the side memory of each
# ring, read in place by the relay and written once into its own ring's.
# TENSOR (N, GStreamer 1.26+): and a tensor meta of N scores.
#
# CHAIN_PRODUCER_ARGS and CHAIN_CONSUMER_ARGS, where set, go to the
# producer's and to the relay's and consumer's command lines: on a GPU host
# "--source videotestsrc --gpu-input" and "--gpu-output" run the chain in
# CUDA memory (the gpu suite's gpu_analytics_chain).  CHAIN_PAYLOADS
# (system or cuda): every hop's masks and tensors must be in that memory.
set -u
peer=$1
width=${2:-320}
height=${3:-240}
mask=()
[ -n "${4:-}" ] && mask=(--mask "$4")
tensor=()
[ -n "${5:-}" ] && tensor=(--tensor "$5")
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "analytics-chain: $*"
  tail -5 "$tmp"/*.log
  exit 1
}
frames=30

chain() {
  local name=$1
  "$peer" producer --socket "$tmp/a.sock" --frames $frames --width "$width" \
    --height "$height" --wait --policy lossless --analytics "${mask[@]}" \
    "${tensor[@]}" ${CHAIN_PRODUCER_ARGS:-} --out "$tmp/producer.log" &
  pids+=($!)
  "$peer" relay --socket "$tmp/a.sock" --to "$tmp/b.sock" --wait \
    --policy lossless --analytics "${mask[@]}" ${CHAIN_CONSUMER_ARGS:-} \
    --out "$tmp/relay.log" &
  pids+=($!)
  "$peer" consumer --socket "$tmp/b.sock" --analytics "${mask[@]}" \
    ${CHAIN_CONSUMER_ARGS:-} --out "$tmp/consumer.log"
  rc=$?
  [ $rc = 77 ] && { cat "$tmp/consumer.log"; exit 77; }
  [ $rc = 0 ] || fail "$name: consumer exit status $rc"
  for p in "${pids[@]}"; do
    wait "$p" || fail "$name: a producer or the relay ended with $?"
  done
  pids=()

  [ "$(grep -c '^sent ' "$tmp/producer.log")" = $frames ] || fail "$name: the producer sent no $frames frames"
  [ "$(grep -c '^recv ' "$tmp/consumer.log")" = $frames ] || fail "$name: the consumer got no $frames frames"
  # the pictures: the producer's, at the far end
  diff <(col sent "$tmp/producer.log" 2) <(col recv "$tmp/consumer.log" 2) > /dev/null \
    || fail "$name: the pictures differ at the far end"
  # hop 1: the relay got the detector's results as sent
  diff <(col sent "$tmp/producer.log" 3) <(col in "$tmp/relay.log" 3) > /dev/null \
    || fail "$name: hop 1: the metas the relay got differ from the producer's"
  # hop 2: the consumer got the relay's, tracks added
  diff <(col sent "$tmp/relay.log" 3) <(col recv "$tmp/consumer.log" 3) > /dev/null \
    || fail "$name: hop 2: the metas the consumer got differ from the relay's"
  # the relay added something on every frame, and the metas are not empty:
  # 8 to 12 detections, each with its class and two relations (and a track
  # and its relation after the relay)
  paste -d' ' <(col in "$tmp/relay.log" 4) <(col sent "$tmp/relay.log" 4) |
    awk '{ if ($2 < 32 || $4 <= $2) bad++ } END { exit bad > 0 }' \
    || fail "$name: the relay added no tracks, or the detector's results were empty"
  grep -q 'metas-dropped=(guint64)0[,;]' "$tmp/consumer.log" \
    || fail "$name: the consumer dropped metas: $(grep -o 'metas-dropped=[^,;]*' "$tmp/consumer.log")"
  for side in producer relay; do
    grep -q 'metas-not-carried=(guint64)0[,;]' "$tmp/$side.log" \
      || fail "$name: the $side left metas out"
  done
  # CHAIN_PAYLOADS: the memory the masks and tensors are in at every hop
  if [ -n "${CHAIN_PAYLOADS:-}" ]; then
    for f in "sent $tmp/producer.log" "in $tmp/relay.log" "recv $tmp/consumer.log"; do
      set -- $f
      [ "$(grep "^$1 " "$2" | grep -c " payloads=$CHAIN_PAYLOADS\$")" = $frames ] \
        || fail "$name: payloads not in $CHAIN_PAYLOADS memory at $(basename "$2" .log): $(grep "^$1 " "$2" | grep -o 'payloads=[a-z]*' | sort | uniq -c | tr '\n' ' ')"
    done
  fi
  echo "analytics-chain: ok, $name: $frames frames through 3 processes, every hop's metas equal"
}

# the fields each line compares
col() { grep "^$1 " "$2" | sed -E "s/.*offset=([0-9]+).* sum=([0-9a-f]+) analytics=([0-9a-f]+) lines=([0-9]+).*/\\1 \\$3/"; }

if [ ${#tensor[@]} -gt 0 ]; then
  chain "${width}x$height, detections, a ${4} mask and a tensor of $5 scores"
elif [ ${#mask[@]} -gt 0 ]; then
  chain "${width}x$height, detections and a ${4} mask"
else
  chain "${width}x$height, detections"
fi

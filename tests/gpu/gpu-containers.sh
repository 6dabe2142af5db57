#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Decode and inference in separate containers, over GPU memory: the
# producer (nvh264dec -> gpusharesink) in one container, each consumer in
# another, both made by gpu-container.sh the way a container runtime makes
# them (mount, IPC, UTS, network and PID namespaces, /proc of their own, a
# private /dev/shm and /tmp, the NVIDIA device nodes, a root of their own)
# and sharing one directory, the socket's.  Every picture the consumer gets
# is compared with a one-process decode of the clip.
#
#  - sync-mode host and semaphore: every picture, over CUDA VMM memory;
#  - sync-mode event: refused, saying why (across PID namespaces: before
#    anything is mapped; in one PID namespace: IPC events need the
#    producer's /dev/shm); the producer goes on serving the next consumer;
#  - legacy CUDA IPC handles: refused across PID namespaces, saying why;
#    in one PID namespace, what happens is printed;
#  - user namespaces: of one uid outside, admitted with the defaults,
#    every picture; of two, the consumer refuses the producer (the
#    overflow uid), saying so; a root producer refuses a consumer whose
#    root is another uid until allowed-uids names it, then every picture;
#  - a PID namespace whose /proc is the host's (no runtime makes one):
#    CUDA does not start there; the consumer says why and takes system
#    memory, every picture;
#  - MPS: the control daemon on the host, its pipe directory the one more
#    thing shared; whether the containers' processes run under it, with a
#    private IPC namespace and with the host's, is printed.
#
# usage: gpu-containers.sh PEER
set -u
peer=$1
frames=0

. "$(dirname "$0")/gpu-lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
ctr="$here/gpu-container.sh"
clip="$here/../media/clip-h264-1080p.mp4"
if ! (unset LD_LIBRARY_PATH; unshare --mount --ipc --uts --net --pid --fork \
    --mount-proc true) 2>/dev/null; then
  echo "SKIP: this machine does not let this user make namespaces (unshare)"
  exit 77
fi
if ! gst-inspect-1.0 nvh264dec >/dev/null 2>&1; then
  echo "SKIP: nvh264dec is missing"
  exit 77
fi

shared=$dir/sockets
results=$dir/results
mkdir -p "$shared" "$results"
chmod 0755 "$dir" "$shared"
chmod 0777 "$results"
trap 'rm -rf "$dir"; rmdir /tmp/gpushare-container.* 2>/dev/null' EXIT

# stat_of and key: gpu-lib.sh
errline() { grep -h -m1 '^error' "$@" | sed 's/^error //' | cut -c1-400; }

# container NAME [gpu-container options] -- COMMAND...: shares the sockets
# (/run/gpushare) and, as the test's own channel out, /results.  It takes
# the place of the shell that calls it: run it in a subshell, ( ... ), so
# that the subshell's pid is the container's (killing it kills the
# container)
container() {
  local name=$1
  shift
  exec bash "$ctr" --name "$name" --volume "$shared:/run/gpushare" \
    --volume "$results:/results" "$@"
}

# the decode container: nvh264dec -> gpusharesink, lossless, once a
# consumer came; PRODUCER_CTR: more container options, then -- and more
# producer options
decoder() {
  local sock=$1 copts=() popts=() seen=0
  shift
  for a in "$@"; do
    if [ "$a" = -- ]; then seen=1; continue; fi
    if [ $seen -eq 0 ]; then copts+=("$a"); else popts+=("$a"); fi
  done
  container decode ${copts[@]+"${copts[@]}"} -- timeout 90 "$peer" producer \
    --socket "/run/gpushare/$sock" --wait --source "file:$clip" \
    --policy lossless --timeout 30000 --out "/results/p-$sock.log" \
    ${popts[@]+"${popts[@]}"}
}

# the inference container: gpusharesrc -> appsink, every picture printed
inference() {
  local sock=$1 log=$2 copts=() cargs=() seen=0
  shift 2
  for a in "$@"; do
    if [ "$a" = -- ]; then seen=1; continue; fi
    if [ $seen -eq 0 ]; then copts+=("$a"); else cargs+=("$a"); fi
  done
  container infer ${copts[@]+"${copts[@]}"} -- timeout 90 "$peer" consumer \
    --socket "/run/gpushare/$sock" --timeout 30000 --out "/results/$log" \
    ${cargs[@]+"${cargs[@]}"}
}

# pass or fail: the consumer's pictures are the reference's, over WANT
same_pictures() {
  local desc=$1 log=$2 want=$3 nref ngot
  nref=$(grep -c '^recv ' "$dir/ref.log")
  ngot=$(grep -c '^recv ' "$log")
  if [ "$nref" -gt 0 ] && cmp -s <(key "$dir/ref.log") <(key "$log") \
      && grep -q "^transport memory-type=$want" "$log"; then
    pass "$desc: $ngot of $nref pictures as a one-process decode gives them; sync-mode=$(stat_of "$log" sync-mode); $(grep -m1 '^transport' "$log" | cut -c1-160)"
  else
    fail "$desc: reference $nref pictures, received $ngot, $(diff <(key "$dir/ref.log") <(key "$log") | grep -c '^>') differ; $(grep -m1 '^transport' "$log" | cut -c1-160)"
    errline "$log" "$results"/p-*.log
  fi
}

# decode -> consumer, both in containers; the consumer's log is returned in
# $results/NAME.log
run_pair() {
  local name=$1 popts=() copts=() seen=0 cpid
  shift
  for a in "$@"; do
    if [ "$a" = --- ]; then seen=1; continue; fi
    if [ $seen -eq 0 ]; then popts+=("$a"); else copts+=("$a"); fi
  done
  t0=$SECONDS
  rm -f "$shared/$name.sock"
  (inference "$name.sock" "$name.log" ${copts[@]+"${copts[@]}"}) & cpid=$!
  (decoder "$name.sock" ${popts[@]+"${popts[@]}"}) & ppid=$!
  wait $cpid
  # the producer ends with the stream; one whose consumer left early is
  # stopped
  for _ in $(seq 100); do kill -0 $ppid 2>/dev/null || break; sleep 0.1; done
  kill $ppid 2>/dev/null
  wait $ppid
  echo "  ($name: $((SECONDS - t0)) s)"
}

# GPUSHARE_CONTAINER_SECTIONS="2 4": only those of the numbered sections
want() { [[ " ${GPUSHARE_CONTAINER_SECTIONS:-1 2 3 4 5 6 7} " == *" $1 "* ]]; }

echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
timeout 60 "$peer" consumer --decode "$clip" --out "$dir/ref.log"
echo "reference: $(grep -c '^recv ' "$dir/ref.log") pictures decoded in one process"

# 1. host and semaphore sync: every picture over GPU memory
if want 1; then
for sync in host semaphore; do
  run_pair "$sync" --- -- --transport cuda --sync "$sync"
  same_pictures "containers, sync-mode=$sync" "$results/$sync.log" cuda-vmm
done
run_pair gpuout --- -- --transport cuda --sync semaphore --gpu-output
same_pictures "containers, sync-mode=semaphore, CUDA memory out" \
  "$results/gpuout.log" cuda-vmm

fi

# 2. event sync: refused, and only that consumer.  Across PID namespaces
# the consumer refuses before it maps anything (the producer's pid is 0
# there); in one PID namespace with a private /dev/shm, opening the events
# fails, and says why
if want 2; then
live_producer() {
  rm -f "$shared/live.sock"
  (container decode "$@" -- timeout 120 "$peer" producer \
    --socket /run/gpushare/live.sock --frames 100000 --live \
    --source videotestsrc --width 640 --height 360 --timeout 30000 \
    --out /results/p-live.log) & ppid=$!
}
event_case() {
  local desc=$1 want=$2 erc
  shift 2
  live_producer "$@"
  (inference live.sock event.log "$@" -- --transport cuda --sync event)
  erc=$?
  (inference live.sock after.log "$@" -- --transport cuda --sync host \
    --die-after 20)
  if [ $erc -ne 0 ] && grep -q "^error .*$want" "$results/event.log" \
      && ! grep -q '^recv ' "$results/event.log" \
      && [ "$(grep -c '^recv ' "$results/after.log")" -ge 20 ] \
      && kill -0 $ppid 2>/dev/null; then
    pass "$desc, sync-mode=event: refused ($(errline "$results/event.log")); the next consumer got $(grep -c '^recv ' "$results/after.log") frames"
  else
    fail "$desc, sync-mode=event: consumer exit $erc; $(errline "$results/event.log"); next consumer $(grep -c '^recv ' "$results/after.log") frames"
  fi
  kill $ppid 2>/dev/null
  wait $ppid 2>/dev/null
}
event_case "containers" "PID namespace"
event_case "containers sharing the PID namespace" "/dev/shm" --pid host

fi

# 3. legacy CUDA IPC handles: refused across PID namespaces, saying why;
# in one PID namespace with a private /dev/shm, whatever happens is shown
if want 3; then
run_pair legacy --- -- --transport cuda-legacy --sync host
if grep -q '^error .*PID namespace' "$results/legacy.log" \
    && ! grep -q '^recv ' "$results/legacy.log"; then
  pass "containers, legacy CUDA IPC: refused ($(errline "$results/legacy.log"))"
else
  fail "containers, legacy CUDA IPC: $(grep -c '^recv ' "$results/legacy.log") frames; $(errline "$results/legacy.log")"
fi
run_pair legacy-pid --pid host --- --pid host -- --transport cuda-legacy \
  --sync host
if grep -q '^transport memory-type=cuda-legacy' "$results/legacy-pid.log"; then
  same_pictures "containers sharing the PID namespace, legacy CUDA IPC" \
    "$results/legacy-pid.log" cuda-legacy
else
  echo "INFO containers sharing the PID namespace, legacy CUDA IPC: $(errline "$results/legacy-pid.log")"
fi

fi

# 4. user namespaces.  A producer and a consumer whose roots are the same
# uid outside (userns-remap, one rootless user) see each other as their
# own uid: admitted with the defaults
if want 4; then
chmod 1777 "$shared"
run_pair userns --userns 100000 --- --userns 100000 -- --transport cuda \
  --sync host
same_pictures "containers in user namespaces of one uid (100000 outside), defaults" \
  "$results/userns.log" cuda-vmm
# ... of two uids: each sees the other as the overflow uid (65534), and
# the consumer refuses such a producer, saying so
run_pair userns-two --userns 100000 -- --set socket-mode=0666 --- \
  --userns 200000 -- --transport cuda --sync host
if grep -q '^error .*uid 65534.*allowed-producer-uids' "$results/userns-two.log" \
    && ! grep -q '^recv ' "$results/userns-two.log"; then
  pass "containers in user namespaces of two uids: the consumer refuses ($(errline "$results/userns-two.log"))"
else
  fail "containers in user namespaces of two uids: $(grep -c '^recv ' "$results/userns-two.log") frames; $(errline "$results/userns-two.log")"
fi
# a root producer (no user namespace) and a consumer whose root is uid
# 100000: the producer refuses that uid until allowed-uids names it; the
# consumer must trust the producer, whom it sees as 65534
run_pair userns-refused -- --set socket-mode=0666 --- --userns 100000 -- \
  --transport cuda --sync host --set 'allowed-producer-uids=<65534>'
if grep -q '^error .*100000' "$results/userns-refused.log" \
    && ! grep -q '^recv ' "$results/userns-refused.log"; then
  pass "containers, consumer in a user namespace (uid 100000 outside), not admitted: refused ($(errline "$results/userns-refused.log"))"
else
  fail "containers, consumer in a user namespace, not admitted: $(grep -c '^recv ' "$results/userns-refused.log") frames; $(errline "$results/userns-refused.log")"
fi
run_pair userns-admitted -- --set socket-mode=0666 \
  --set 'allowed-uids=<100000>' --- --userns 100000 -- --transport cuda \
  --sync host --set 'allowed-producer-uids=<65534>'
same_pictures "containers, consumer in a user namespace (uid 100000 outside), admitted by allowed-uids" \
  "$results/userns-admitted.log" cuda-vmm

fi

# 5. GPU memory withheld.  A consumer in a user namespace (uid 100000
# outside) admitted by allowed-uids, but not trusted with GPU memory
# (gpu-uids names another uid): every picture all the same, through system
# memory, and the reason says why; asking for GPU memory is an error
if want 5; then
chmod 1777 "$shared"
run_pair userns-withheld -- --set socket-mode=0666 \
  --set 'allowed-uids=<100000>' --set 'gpu-uids=<1>' --- --userns 100000 -- \
  --set 'allowed-producer-uids=<65534>'
same_pictures "containers, consumer in a user namespace (uid 100000 outside), admitted but not in gpu-uids" \
  "$results/userns-withheld.log" system
if grep -q '^transport .*only to the consumers it trusts with it (gpusharesink gpu-uids' \
    "$results/userns-withheld.log"; then
  pass "containers, not in gpu-uids: the reason says why"
else
  fail "containers, not in gpu-uids: $(grep -m1 '^transport' "$results/userns-withheld.log" | cut -c1-300)"
fi
run_pair userns-withheld-cuda -- --set socket-mode=0666 \
  --set 'allowed-uids=<100000>' --set 'gpu-uids=<1>' --- --userns 100000 -- \
  --transport cuda --set 'allowed-producer-uids=<65534>'
if grep -q '^error .*gpu-uids' "$results/userns-withheld-cuda.log" \
    && ! grep -q '^recv ' "$results/userns-withheld-cuda.log"; then
  pass "containers, not in gpu-uids, transport=cuda: refused ($(errline "$results/userns-withheld-cuda.log"))"
else
  fail "containers, not in gpu-uids, transport=cuda: $(grep -c '^recv ' "$results/userns-withheld-cuda.log") frames; $(errline "$results/userns-withheld-cuda.log")"
fi
# trusted through gpu-uids: GPU memory, as without it
run_pair userns-trusted -- --set socket-mode=0666 \
  --set 'allowed-uids=<100000>' --set 'gpu-uids=<100000>' --- --userns 100000 -- \
  --transport cuda --sync host --set 'allowed-producer-uids=<65534>'
same_pictures "containers, consumer in a user namespace (uid 100000 outside), in gpu-uids" \
  "$results/userns-trusted.log" cuda-vmm

fi

# 6. a PID namespace with the host's /proc: no CUDA, and the reason
if want 6; then
run_pair hostproc --- --proc host --
if grep -q "PID namespace" "$results/hostproc.log"; then
  same_pictures "PID namespace without its own /proc: CUDA does not start, the consumer says why" \
    "$results/hostproc.log" system
else
  fail "PID namespace without its own /proc: $(grep -m1 '^transport' "$results/hostproc.log"); $(errline "$results/hostproc.log")"
fi

fi

# 7. MPS: the daemon on the host, its pipe directory shared
if want 7; then
if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  export CUDA_MPS_PIPE_DIRECTORY=$dir/mps-pipe CUDA_MPS_LOG_DIRECTORY=$dir/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  (unset LD_LIBRARY_PATH; nvidia-cuda-mps-control -d)
  mps=(--volume "$CUDA_MPS_PIPE_DIRECTORY:$CUDA_MPS_PIPE_DIRECTORY")
  for ipc in private host; do
    run_pair "mps-$ipc" "${mps[@]}" --ipc "$ipc" --- "${mps[@]}" --ipc "$ipc" \
      -- --transport cuda
    s=$(stat_of "$results/mps-$ipc.log" sync-mode)
    echo "INFO MPS, $ipc IPC namespace: consumer sync-mode=${s:-none} (auto: semaphore when under MPS); $(grep -m1 '^transport' "$results/mps-$ipc.log" | cut -c1-120); $(errline "$results/mps-$ipc.log" "$results/p-mps-$ipc.sock.log")"
    if [ "$ipc" = host ] || grep -q '^recv ' "$results/mps-$ipc.log"; then
      same_pictures "containers under MPS, $ipc IPC namespace" \
        "$results/mps-$ipc.log" cuda-vmm
    fi
  done
  echo quit | (unset LD_LIBRARY_PATH; nvidia-cuda-mps-control)
  tail -5 "$CUDA_MPS_LOG_DIRECTORY"/control.log 2>/dev/null | sed 's/^/  mps: /'
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
else
  echo "INFO MPS: nvidia-cuda-mps-control is not here"
fi
fi

finish

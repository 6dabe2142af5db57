#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The container recipe of examples/containers/, as shipped, on a GPU.  The
# image is the one recipe-image.sh built from the Dockerfile (its root
# filesystem, its config and compose.yaml's services, in RECIPE_DIR); its
# services run from it as compose.yaml says: the user, the named volume
# (new, so a copy of the image's directory there, owner included), the
# GPU reserved and the driver files of the NVIDIA_DRIVER_CAPABILITIES each
# has, the environment, the command.  gpu-container.sh --image makes the
# containers the way a runtime does (their own mount, IPC, UTS, network
# and PID namespaces, a writable layer over the image).
#  1. compose.yaml's two services, as written: the producer listens, the
#     inference service is admitted and streams over GPU memory
#     (gpushare-inspect, run in another container of the image on the
#     volume, as `docker compose run` would);
#  2. every picture: the image's nvh264dec decodes the test clip into
#     gpusharesink in the decode service's container, the inference
#     service's gpusharesrc takes it in CUDA memory into checksumsink, and
#     every picture's checksum is compared with a one-process decode in
#     the image (`docker compose run SERVICE COMMAND`: the service's
#     settings, another command; the clip in one more read-only volume).
# --no-gpu: case 1 on a machine without a GPU, where system memory is the
# outcome and its reason must name the missing driver (not a build
# without CUDA).
#
# usage: gpu-recipe.sh [--no-gpu] [RECIPE_DIR]     (needs root)
set -u
here=$(cd "$(dirname "$0")" && pwd)
gpu=1
if [ "${1:-}" = --no-gpu ]; then gpu=0; shift; fi
recipe=${1:-$here/../../.recipe}
clip=$here/../media/clip-h264-1080p.mp4

if [ ! -r "$recipe/services.sh" ]; then
  echo "SKIP: no image in $recipe: tests/gpu/recipe-image.sh makes it (podman, here)"
  exit 77
fi
if [ $gpu -eq 1 ] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU here (nvidia-smi finds none); --no-gpu runs case 1 without one"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: a container runtime's work needs root"
  exit 77
fi

failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
dir=$(mktemp -d /tmp/gpushare-recipe.XXXXXX)
pids=()
# stop containers as a runtime does: SIGKILL to each one's first process,
# which ends its PID namespace and everything in it.  Each of $@ is the
# unshare(1) that made one (the subshell exec'd into it); its child is the
# container's first process.  Killing unshare alone is not enough: its
# --kill-child is a parent-death signal, which the kernel drops when the
# child changes its credentials (setpriv to the image's user)
stop() {
  local p
  for p in "$@"; do
    pkill -KILL -P "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
  done
}
cleanup() {
  stop ${pids[@]+"${pids[@]}"}
  wait 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

# the image
. "$recipe/image.sh"
. "$recipe/services.sh"
want=$(cat "$recipe/rootfs.sha256")
got=$(cat "$recipe"/rootfs.tar.* | sha256sum | cut -d' ' -f1)
if [ "$want" != "$got" ]; then
  echo "FAIL the image's parts do not add up to what recipe-image.sh wrote"
  exit 1
fi
rootfs=$dir/rootfs
mkdir "$rootfs"
case $(ls "$recipe"/rootfs.tar.* | head -1) in
  *.xz.*) unpack=(xz -d -T0) ;;
  *) unpack=(zstd -d -q) ;;
esac
cat "$recipe"/rootfs.tar.* | "${unpack[@]}" | tar -x --numeric-owner -C "$rootfs" \
  || { echo "FAIL the image's root filesystem does not unpack"; exit 1; }
echo "image: $image_tag, $(du -sh "$rootfs" | cut -f1), user ${image_user:-root}"
[ $gpu -eq 1 ] && echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

# compose's named volumes: new ones, each a copy of what the image has at
# the first mount point (docker's and podman's copy-up), owner and mode
# included
declare -A volume_dir
for s in "${services[@]}"; do
  declare -n vols=svc_${s//-/_}_volumes
  for v in "${vols[@]}"; do
    src=${v%%:*} dst=${v#*:}
    [ -n "${volume_dir[$src]:-}" ] && continue
    volume_dir[$src]=$dir/volumes/$src
    mkdir -p "${volume_dir[$src]}"
    if [ -d "$rootfs$dst" ]; then
      cp -a "$rootfs$dst/." "${volume_dir[$src]}/"
      chown --reference="$rootfs$dst" "${volume_dir[$src]}"
      chmod --reference="$rootfs$dst" "${volume_dir[$src]}"
    fi
  done
  unset -n vols
done

# service NAME [COMMAND...]: a container of compose's service NAME, with
# its command or COMMAND; RECIPE_EXTRA: more gpu-container.sh options
service() {
  local name=$1 key=${1//-/_} opts=() e k
  shift
  declare -n user=svc_${key}_user gpus=svc_${key}_gpus vols=svc_${key}_volumes \
    envs=svc_${key}_env command=svc_${key}_command
  declare -A env=()
  local order=()
  # the image's environment, then the service's over it
  for e in "${image_env[@]}" "${envs[@]}"; do
    k=${e%%=*}
    [ -n "${env[$k]+x}" ] || order+=("$k")
    env[$k]=${e#*=}
  done
  for k in "${order[@]}"; do opts+=(--env "$k=${env[$k]}"); done
  for v in "${vols[@]}"; do opts+=(--volume "${volume_dir[${v%%:*}]}:${v#*:}"); done
  [ -n "${user:-$image_user}" ] && opts+=(--user "${user:-$image_user}")
  [ $gpu -eq 1 ] && [ -n "$gpus" ] && opts+=(--gpus "$gpus")
  [ $# -gt 0 ] || set -- "${command[@]}"
  exec bash "$here/gpu-container.sh" --name "$name" --image "$rootfs" "${opts[@]}" \
    ${RECIPE_EXTRA[@]+"${RECIPE_EXTRA[@]}"} -- "$@"
}

# GPUSHARE_RECIPE_CASES="2": only those cases
want() { [[ " ${GPUSHARE_RECIPE_CASES:-1 2} " == *" $1 "* ]]; }

sockdir=${volume_dir[sockets]:-}
echo "the volume 'sockets': $(stat -c 'owner %u, mode %a' "$sockdir")"

# 1. the services as written
if want 1; then
(service decode) > "$dir/decode.log" 2>&1 & pids+=($!)
sleep 1   # depends_on: started after decode
(service inference) > "$dir/inference.log" 2>&1 & pids+=($!)
# each container scans the image's plugins first (the GPU's codecs probed)
t0=$SECONDS
for _ in 1 2 3 4 5 6 7 8; do
  sleep 5
  (service decode gpushare-inspect --once /run/gpushare/decode.sock) > "$dir/inspect.log" 2>&1
  consumer=$(grep -m1 '^  consumer 1:' "$dir/inspect.log")
  sent=$(echo "$consumer" | sed -n 's/.*frames sent \([0-9]*\).*/\1/p')
  [ "${sent:-0}" -ge 150 ] && break
done
memory=$(echo "$consumer" | sed -n 's/.*, memory \([a-z-]*\),.*/\1/p')
reason=$(grep -m1 'memory reason:' "$dir/inspect.log" | sed 's/^ *memory reason: //')
sock=$(stat -c 'owner %u, mode %a' "$sockdir/decode.sock" 2>/dev/null)
if [ $gpu -eq 1 ]; then expect=cuda-vmm; else expect=system; fi
if [ "${sent:-0}" -ge 150 ] && [ "$memory" = "$expect" ] \
    && { [ $gpu -eq 1 ] || [[ $reason == *"libcuda.so.1 is not installed"* ]]; } \
    && kill -0 "${pids[0]}" "${pids[1]}" 2>/dev/null; then
  pass "compose.yaml's services: the socket ($sock) admits the inference service, $sent frames sent after $((SECONDS - t0)) s, memory $memory: $reason"
else
  fail "compose.yaml's services: socket ${sock:-missing}, consumer: ${consumer:-none}"
  cat "$dir/inspect.log"
  echo "-- decode:"; tail -n 8 "$dir/decode.log"
  echo "-- inference:"; tail -n 8 "$dir/inference.log"
fi
# docker compose down: gst-launch-1.0, pid 1 of its namespace, leaves
# SIGTERM to the runtime's SIGKILL
stop "${pids[@]}"
wait "${pids[@]}" 2>/dev/null
pids=()
fi

# 2. every picture over GPU memory
if [ $gpu -eq 1 ] && want 2; then
  mkdir -p "$dir/media"
  cp "$clip" "$dir/media/clip.mp4"
  RECIPE_EXTRA=(--volume "$dir/media:/media")
  decode=(filesrc location=/media/clip.mp4 ! qtdemux ! h264parse ! nvh264dec)
  checksum=('video/x-raw(memory:CUDAMemory)' ! cudadownload ! checksumsink)
  rm -f "$sockdir/decode.sock"
  (service decode gst-launch-1.0 "${decode[@]}" ! "${checksum[@]}") > "$dir/ref.log" 2>&1
  (service inference gst-launch-1.0 -m gpusharesrc socket-path=/run/gpushare/decode.sock \
    transport=cuda connection-timeout=30000 ! "${checksum[@]}") > "$dir/got.log" 2>&1 &
  cpid=$!
  (service decode gst-launch-1.0 "${decode[@]}" ! gpusharesink \
    socket-path=/run/gpushare/decode.sock socket-mode=0600 min-consumers=1) \
    > "$dir/producer.log" 2>&1 &
  ppid=$!
  pids=($cpid $ppid)
  # both end with the stream; two minutes at most
  for _ in $(seq 1200); do
    kill -0 $cpid 2>/dev/null || kill -0 $ppid 2>/dev/null || break
    sleep 0.1
  done
  stop $cpid $ppid
  wait $ppid; prc=$?
  wait $cpid; crc=$?
  pids=()
  sums() { grep -E '^[0-9]+:[0-9]{2}:[0-9]{2}\.[0-9]{9} [0-9a-f]{40}$' "$1"; }
  nref=$(sums "$dir/ref.log" | wc -l)
  ngot=$(sums "$dir/got.log" | wc -l)
  transport=$(grep -m1 'gpushare-transport' "$dir/got.log" \
    | sed 's/.*memory-type=(string)\([a-z-]*\).*/\1/')
  if [ "$nref" -gt 0 ] && [ $prc -eq 0 ] && [ $crc -eq 0 ] \
      && cmp -s <(sums "$dir/ref.log") <(sums "$dir/got.log") \
      && [ "$transport" = cuda-vmm ]; then
    pass "the image's decode into the inference service: $ngot of $nref pictures, pts and checksums as a one-process decode gives them, memory $transport"
  else
    fail "the image's decode: reference $nref pictures, received $ngot (producer exit $prc, consumer exit $crc, memory ${transport:-?})"
    for l in ref producer got; do echo "-- $l:"; grep -v -E '^[0-9:.]+ [0-9a-f]{40}$' "$dir/$l.log" | tail -n 6; done
    echo "-- cudadownload in the inference service's container:"
    (service inference gst-inspect-1.0 cudadownload) 2>&1 | head -n 3
  fi
fi

if [ $failures -ne 0 ]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "all cases passed"

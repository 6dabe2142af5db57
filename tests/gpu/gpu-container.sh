#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a command in a container made the way a container runtime makes
# one, from util-linux alone (root, or a user that may make user
# namespaces):
#  - namespaces of its own: mount, IPC, UTS, network, PID (with a /proc
#    mounted for it) and, with --userns, user;
#  - a root of its own (pivot_root): a tmpfs with the host's /usr, /etc and
#    the project's tree (the "image": built programs and libraries) bound
#    read-only, a /dev with only null, zero, full, random, urandom and the
#    NVIDIA device nodes (as the NVIDIA container runtime binds them), a
#    private /dev/shm and /tmp, sysfs;
#  - nothing else of the host: only what --volume binds.
#
#   gpu-container.sh [OPTIONS] -- COMMAND [ARG...]
#     --name NAME        the container's hostname
#     --image ROOTFS     the root is this image's root filesystem instead
#                        (with a writable layer of its own, as a runtime
#                        gives), the command runs with only the --env
#                        environment, and the GPU is there only with --gpus
#     --user UID[:GID]   with --image: run the command as this user (the
#                        image's setpriv)
#     --env NAME=VALUE   with --image: the command's environment; repeatable
#     --gpus all|LIST    with --image: these GPUs (indexes or UUIDs, commas)
#                        and the driver's files for the capabilities that
#                        NVIDIA_DRIVER_CAPABILITIES in --env names, mounted
#                        the way the NVIDIA container toolkit mounts them
#     --volume SRC:DST   bind SRC (read-write) at DST; repeatable
#     --userns UID       a user namespace whose root is UID outside
#                        (as rootless runtimes and userns-remap do)
#     --ipc host         keep the host's IPC namespace and /dev/shm
#                        (docker --ipc=host)
#     --proc host        a PID namespace whose /proc is the host's, which
#                        no runtime makes: to see what CUDA does there
#     --pid host         no PID namespace of its own
#
# The command runs as root of the container, in the project's tree, with
# the caller's environment (GST_REGISTRY_1_0: a copy in the private /tmp).
set -eu
tree=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" != --inside ]; then
  name=gpushare volumes=() userns= ipc= proc= pid=yes
  envs=()
  while [ $# -gt 0 ]; do
    case $1 in
      --name) name=$2; shift 2 ;;
      --image) export GPUSHARE_CTR_IMAGE=$2; shift 2 ;;
      --user) export GPUSHARE_CTR_USER=$2; shift 2 ;;
      --env) envs+=("$2"); shift 2 ;;
      --gpus) export GPUSHARE_CTR_GPUS=$2; shift 2 ;;
      --volume) volumes+=("$2"); shift 2 ;;
      --userns) userns=$2; shift 2 ;;
      --ipc) ipc=$2; shift 2 ;;
      --proc) proc=$2; shift 2 ;;
      --pid) [ "$2" = host ] && pid=; shift 2 ;;
      --) shift; break ;;
      *) echo "gpu-container: unknown option $1" >&2; exit 64 ;;
    esac
  done
  ns=(--mount --uts --net)
  [ "$ipc" = host ] || ns+=(--ipc)
  [ -n "$pid" ] && ns+=(--pid)
  pre=()
  if [ -n "$userns" ]; then
    pre=(setpriv "--reuid=$userns" "--regid=$userns" --clear-groups)
    ns=(--user --map-root-user "${ns[@]}")
  fi
  # the carried runtime's libraries are for the command, not for mount(8)
  export GPUSHARE_CONTAINER_LD=${LD_LIBRARY_PATH:-}
  unset LD_LIBRARY_PATH
  exec "${pre[@]}" unshare "${ns[@]}" --fork --kill-child -- bash "$0" --inside "$name" \
    "${ipc:-private}" "${proc:-own}" "${pid:+own}" "${#volumes[@]}" \
    ${volumes[@]+"${volumes[@]}"} "${#envs[@]}" ${envs[@]+"${envs[@]}"} "$@"
fi

shift
name=$1 ipc=$2 proc=$3 pid=$4 nvol=$5
shift 5
volumes=("${@:1:$nvol}")
shift "$nvol"
nenv=$1
shift
envs=("${@:1:$nenv}")
shift "$nenv"
image=${GPUSHARE_CTR_IMAGE:-} user=${GPUSHARE_CTR_USER:-} gpus=${GPUSHARE_CTR_GPUS:-}
unset GPUSHARE_CTR_IMAGE GPUSHARE_CTR_USER GPUSHARE_CTR_GPUS

# --gpus: whether the device node N is one of the container's: the
# control nodes always, /dev/nvidiaK for the GPUs asked for
gpu_node() {
  local n=${1#/dev/nvidia} g
  [ -n "$gpus" ] || return 1
  [[ $n =~ ^[0-9]+$ ]] || return 0
  [ "$gpus" = all ] && return 0
  for g in ${gpus//,/ }; do
    if [[ $g == GPU-* ]]; then
      g=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader \
        | awk -F', ' -v u="$g" '$2 == u { print $1 }')
    fi
    [ "$g" = "$n" ] && return 0
  done
  return 1
}

# --image with --gpus: the driver's files, by capability, as the NVIDIA
# container toolkit mounts them: each library's file bound read-only into
# the image's library directory (ldconfig makes its links at the start)
driver_files() {
  local caps=compute,utility
  for e in ${envs[@]+"${envs[@]}"}; do
    [[ $e == NVIDIA_DRIVER_CAPABILITIES=* ]] && caps=${e#*=}
  done
  [ "$caps" = all ] && caps=compute,utility,video,graphics
  for c in ${caps//,/ }; do
    case $c in
      compute) echo libcuda.so libnvidia-ptxjitcompiler.so libnvidia-nvvm.so \
        libnvidia-gpucomp.so libnvidia-allocator.so libcudadebugger.so ;;
      utility) echo libnvidia-ml.so libnvidia-cfg.so bin:nvidia-smi ;;
      video) echo libnvcuvid.so libnvidia-encode.so libnvidia-opticalflow.so ;;
    esac
  done
}

image_mounts() {
  local f d dirs libdir=/usr/lib/x86_64-linux-gnu found
  [ -n "$gpus" ] || return 0
  dirs="$(ldconfig -p | sed -n 's|.* => \(.*\)/[^/]*$|\1|p' | sort -u) \
    ${GPUSHARE_CONTAINER_LD//:/ } /usr/local/nvidia/lib64 $libdir /usr/lib64"
  for f in $(driver_files); do
    if [[ $f == bin:* ]]; then
      f=$(command -v "${f#bin:}") || continue
      touch "$root/usr/bin/${f##*/}"
      mount --bind -o ro "$f" "$root/usr/bin/${f##*/}"
      continue
    fi
    found=
    for d in $dirs; do
      for l in "$d/$f".[0-9]*.[0-9]*; do
        [ -f "$l" ] && [ ! -L "$l" ] || continue
        [ -e "$root$libdir/${l##*/}" ] && continue
        touch "$root$libdir/${l##*/}"
        mount --bind -o ro "$l" "$root$libdir/${l##*/}"
        found=1
      done
      [ -n "$found" ] && break
    done
  done
}

# --image: the command as the image's user (root without --user), with only
# --env's environment
image_exec() {
  local u=${user%%:*} g home as=()
  ldconfig
  if [ -n "$user" ]; then
    g=${user#*:}
    if [ "$g" = "$user" ]; then
      g=$(getent passwd "$u" | cut -d: -f4)
      g=${g:-$u}
    fi
    as=(setpriv "--reuid=$u" "--regid=$g" --clear-groups --)
  else
    u=0
  fi
  home=$(getent passwd "$u" | cut -d: -f6)
  cd "${home:-/}" 2>/dev/null || cd /
  exec env -i "HOSTNAME=$name" "HOME=${home:-/}" ${envs[@]+"${envs[@]}"} \
    ${as[@]+"${as[@]}"} "$@"
}

mount --make-rprivate /
root=$(mktemp -d /tmp/gpushare-container.XXXXXX)
if [ -n "$image" ]; then
  # the image's files under a writable layer of the container's own
  layer=$(mktemp -d /tmp/gpushare-layer.XXXXXX)
  mount -t tmpfs -o mode=0755 layer "$layer"
  mkdir "$layer/upper" "$layer/work"
  mount -t overlay -o "lowerdir=$image,upperdir=$layer/upper,workdir=$layer/work" \
    "$name" "$root"
  image_mounts
else
mount -t tmpfs -o mode=0755 "$name" "$root"
fi
# the image: the system's programs and libraries (the NVIDIA driver's
# among them) and the project's tree, read-only
[ -n "$image" ] ||
for d in /usr /etc /bin /sbin /lib /lib32 /lib64 /libx32 "$tree"; do
  if [ -L "$d" ]; then
    ln -s "$(readlink "$d")" "$root$d"
  elif [ -d "$d" ]; then
    mkdir -p "$root$d"
    mount --rbind "$d" "$root$d"
    mount -o remount,bind,ro "$root$d"
  fi
done
# /dev: what a GPU container gets
mkdir -p "$root/dev"
mount -t tmpfs -o mode=0755,nosuid dev "$root/dev"
for n in /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/nvidia*; do
  [ -c "$n" ] || continue
  if [ -n "$image" ] && [[ $n == /dev/nvidia* ]] && ! gpu_node "$n"; then
    continue
  fi
  touch "$root$n"
  mount --bind "$n" "$root$n"
done
if [ -d /dev/nvidia-caps ] && { [ -z "$image" ] || [ -n "$gpus" ]; }; then
  mkdir "$root/dev/nvidia-caps"
  mount --rbind /dev/nvidia-caps "$root/dev/nvidia-caps"
fi
mkdir -p "$root/dev/shm"
if [ "$ipc" = host ]; then
  mount --bind /dev/shm "$root/dev/shm"
else
  mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
fi
mkdir -p "$root/proc" "$root/sys" "$root/tmp" "$root/run"
if [ "$pid" = own ] && [ "$proc" = own ]; then
  mount -t proc proc "$root/proc"
else
  mount --rbind /proc "$root/proc"
fi
mount -t sysfs -o ro sysfs "$root/sys" 2>/dev/null \
  || mount --rbind /sys "$root/sys"
mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$root/tmp"
for v in ${volumes[@]+"${volumes[@]}"}; do
  mkdir -p "$root${v#*:}"
  mount --bind "${v%%:*}" "$root${v#*:}"
done
hostname "$name"
# the caller's plugin registry, as an image would have it built: a fresh
# one would scan every plugin again, the GPU's probes included
if [ -z "$image" ] && [ -n "${GST_REGISTRY_1_0:-}" ] && [ -r "$GST_REGISTRY_1_0" ]; then
  cp "$GST_REGISTRY_1_0" "$root/tmp/registry.bin"
fi

cd "$root"
mkdir .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot
if [ -n "$image" ]; then
  image_exec "$@"
fi
cd "$tree"
export LD_LIBRARY_PATH=$GPUSHARE_CONTAINER_LD GST_REGISTRY_1_0=/tmp/registry.bin \
  HOME=/tmp
unset GPUSHARE_CONTAINER_LD
[ -n "$LD_LIBRARY_PATH" ] || unset LD_LIBRARY_PATH
exec "$@"

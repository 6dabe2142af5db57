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
  while [ $# -gt 0 ]; do
    case $1 in
      --name) name=$2; shift 2 ;;
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
    ${volumes[@]+"${volumes[@]}"} "$@"
fi

shift
name=$1 ipc=$2 proc=$3 pid=$4 nvol=$5
shift 5
volumes=("${@:1:$nvol}")
shift "$nvol"

mount --make-rprivate /
root=$(mktemp -d /tmp/gpushare-container.XXXXXX)
mount -t tmpfs -o mode=0755 "$name" "$root"
# the image: the system's programs and libraries (the NVIDIA driver's
# among them) and the project's tree, read-only
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
mkdir "$root/dev"
mount -t tmpfs -o mode=0755,nosuid dev "$root/dev"
for n in /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/nvidia*; do
  [ -c "$n" ] || continue
  touch "$root$n"
  mount --bind "$n" "$root$n"
done
if [ -d /dev/nvidia-caps ]; then
  mkdir "$root/dev/nvidia-caps"
  mount --rbind /dev/nvidia-caps "$root/dev/nvidia-caps"
fi
mkdir "$root/dev/shm"
if [ "$ipc" = host ]; then
  mount --bind /dev/shm "$root/dev/shm"
else
  mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm"
fi
mkdir "$root/proc" "$root/sys" "$root/tmp" "$root/run"
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
if [ -n "${GST_REGISTRY_1_0:-}" ] && [ -r "$GST_REGISTRY_1_0" ]; then
  cp "$GST_REGISTRY_1_0" "$root/tmp/registry.bin"
fi

cd "$root"
mkdir .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot
cd "$tree"
export LD_LIBRARY_PATH=$GPUSHARE_CONTAINER_LD GST_REGISTRY_1_0=/tmp/registry.bin \
  HOME=/tmp
unset GPUSHARE_CONTAINER_LD
[ -n "$LD_LIBRARY_PATH" ] || unset LD_LIBRARY_PATH
exec "$@"

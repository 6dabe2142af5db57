#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Builds the image of examples/containers/Dockerfile from this tree with
# podman, as `docker build` would, and writes what gpu-recipe.sh runs on
# the GPU machine (which has no container runtime and no registry) into
# OUTDIR:
#   rootfs.tar.xz.NN    the image's root filesystem (podman export), in
#                       parts of at most PART_MIB MiB, and its sha256
#   image.sh            the image's user and environment (its config)
#   services.sh         compose.yaml's services (compose-services.py)
# Needs root, podman, debootstrap, xz and python3 with PyYAML.  No
# registry is needed: where podman has no debian:12, it is made here with
# debootstrap the way the official image is made (minbase, with its apt
# settings), and imported under that name.
#
#   recipe-image.sh [OUTDIR [PART_MIB]]     (default: .recipe, 50)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.recipe}
part=${2:-50}
version=$(sed -n "s/^  version : '\(.*\)',$/\1/p" meson.build | head -1)
tag=localhost/gpushare:$version
for p in podman debootstrap xz python3; do
  command -v "$p" >/dev/null || { echo "recipe-image: $p is missing" >&2; exit 1; }
done

if ! podman image exists docker.io/library/debian:12; then
  base=$(mktemp -d)
  trap 'rm -rf "$base"' EXIT
  debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian
  # the official image's apt settings: no package cache, no translations
  cat > "$base/etc/apt/apt.conf.d/docker-clean" <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
  echo 'Acquire::Languages "none";' > "$base/etc/apt/apt.conf.d/docker-no-languages"
  rm -rf "$base"/var/cache/apt/*.bin "$base"/var/lib/apt/lists/*
  tar -C "$base" -c . | podman import - docker.io/library/debian:12
  rm -rf "$base"
  trap - EXIT
fi

# chroot isolation: the builder's RUN steps without an OCI runtime, which
# needs cgroups this machine may not give (GPUSHARE_BUILD_ISOLATION=oci
# where it does)
podman build --pull=never --isolation="${GPUSHARE_BUILD_ISOLATION:-chroot}" \
  -f examples/containers/Dockerfile -t "$tag" .

rm -rf "$out"
mkdir -p "$out"
ctr=$(podman create "$tag" true)
podman export "$ctr" | xz -T0 -9 | split -b "${part}M" -d -a 2 - "$out/rootfs.tar.xz."
podman rm "$ctr" > /dev/null
cat "$out"/rootfs.tar.xz.* | sha256sum | cut -d' ' -f1 > "$out/rootfs.sha256"
{
  echo "image_tag=$tag"
  echo "image_user=$(podman image inspect --format '{{.Config.User}}' "$tag")"
  printf 'image_env=('
  podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$tag" \
    | sed '/^$/d' | while IFS= read -r e; do printf '%q ' "$e"; done
  echo ')'
} > "$out/image.sh"
python3 tests/gpu/compose-services.py examples/containers/compose.yaml > "$out/services.sh"
echo "recipe-image: $tag in $out: $(du -sh "$out" | cut -f1), $(ls "$out"/rootfs.tar.xz.* | wc -l) part(s)"

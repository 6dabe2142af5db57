#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What gst-inspect-1.0 shows as the plugin's origin (meson.build): a clone
# of this project reports the web address of the repository it came from,
# without the user or password in it; a clone from a local path, or no
# clone, GStreamer's "Unknown package origin"; -Dpackage-origin wins.  Each
# case configures a clone of this tree and reads config.h.  Skips with one
# line where the tree is no git clone (a release tarball) or git is missing.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v git > /dev/null ||
    [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" != "$src" ]; then
  echo "SKIP: the source tree is no git clone"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git clone -q --no-checkout "$src" "$dir/src" &&
  git -C "$dir/src" checkout -q HEAD 2> /dev/null || {
  echo "FAIL: cannot clone the tree"; exit 1; }
# the working tree's files as they are, committed or not
(cd "$src" && git ls-files -z | xargs -0 cp --parents -t "$dir/src")
n=0
# case N's origin, from a configure of its own copy of the clone
origin_of() {
  local k=$1
  shift
  meson setup "$dir/b$k" "$dir/src$k" -Dcuda=disabled -Dexamples=disabled \
    "$@" > "$dir/setup$k.log" 2>&1 || { grep ERROR "$dir/setup$k.log"; return 1; }
  sed -n 's/^#define GST_PACKAGE_ORIGIN "\(.*\)"$/\1/p' "$dir/b$k/config.h"
}
# each case configures at once beside the others (a configure is some
# seconds of one core); its line in result.N
case_() {
  local desc=$1 remote=$2 want=$3 k
  shift 3
  n=$((n + 1))
  k=$n
  cp -a "$dir/src" "$dir/src$k"
  if [ -n "$remote" ]; then
    git -C "$dir/src$k" remote set-url origin "$remote" 2> /dev/null ||
      git -C "$dir/src$k" remote add origin "$remote"
  else
    git -C "$dir/src$k" remote remove origin 2> /dev/null
  fi
  (
    got=$(origin_of "$k" "$@")
    if [ "$got" = "$want" ]; then
      echo "ok: $desc: $got"
    else
      echo "FAILED: $desc: '$got', not '$want'"
    fi
  ) > "$dir/result.$k" &
}
case_ "https, with a user and a token" \
  https://someone:secret@example.org/media/gpushare.git https://example.org/media/gpushare
case_ "https, with a port, a path element named as the host" \
  https://example.org:8443/example.org:8443/gpushare https://example.org:8443/example.org:8443/gpushare
case_ "scp-like ssh" git@example.org:media/gpushare.git https://example.org/media/gpushare
case_ "ssh://, with a port" ssh://git@example.org:2222/media/gpushare.git \
  https://example.org/media/gpushare
case_ "a local path" /srv/git/gpushare "Unknown package origin"
case_ "file://" file:///srv/git/gpushare "Unknown package origin"
case_ "no remote" "" "Unknown package origin"
case_ "-Dpackage-origin" git@example.org:media/gpushare.git \
  https://packages.example.net/gpushare -Dpackage-origin=https://packages.example.net/gpushare
wait
failures=0
for k in $(seq "$n"); do
  cat "$dir/result.$k"
  grep -q '^ok: ' "$dir/result.$k" || failures=$((failures + 1))
done
[ $failures -eq 0 ] || exit 1

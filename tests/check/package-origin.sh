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
failures=0
n=0
origin_of() {
  meson setup "$dir/b$n" "$dir/src" -Dcuda=disabled -Dexamples=disabled \
    "$@" > "$dir/setup$n.log" 2>&1 || { grep ERROR "$dir/setup$n.log"; return 1; }
  sed -n 's/^#define GST_PACKAGE_ORIGIN "\(.*\)"$/\1/p' "$dir/b$n/config.h"
}
case_() {
  local desc=$1 remote=$2 want=$3 got
  shift 3
  n=$((n + 1))
  if [ -n "$remote" ]; then
    git -C "$dir/src" remote set-url origin "$remote" 2> /dev/null ||
      git -C "$dir/src" remote add origin "$remote"
  else
    git -C "$dir/src" remote remove origin 2> /dev/null
  fi
  got=$(origin_of "$@")
  if [ "$got" = "$want" ]; then
    echo "ok: $desc: $got"
  else
    echo "FAILED: $desc: '$got', not '$want'"
    failures=$((failures + 1))
  fi
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
[ $failures -eq 0 ] || exit 1

#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# GStreamer's indent style, the options of its gst-indent (GNU indent, run
# twice: one run is not idempotent), over every C source of the project
# (headers are left as written, as GStreamer leaves its own).
#
#   tests/indent.sh [--check] [FILE...]
#
# Without FILEs, every *.c that git tracks.  --check changes nothing: it
# names the files indent would change, with the first lines of the
# change, and fails if there is one (the `indent` test of the cpu suite;
# skipped with one line where GNU indent is not installed).
set -euo pipefail
check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(indent --version 2>&1 || true)
if [[ $version != GNU* ]]; then
  echo "SKIP: GNU indent is not installed (apt-get install indent)"
  exit 77
fi
if [ $# -eq 0 ]; then
  mapfile -t files < <(cd "$root" && git ls-files '*.c')
  [ ${#files[@]} -gt 0 ] || { echo "no C sources found under $root"; exit 1; }
  cd "$root"
else
  files=("$@")
fi

gst_indent () { # IN OUT
  indent --braces-on-if-line --case-brace-indentation0 --case-indentation2 \
    --braces-after-struct-decl-line --line-length80 --no-tabs --cuddle-else \
    --dont-line-up-parentheses --continuation-indentation4 \
    --honour-newlines --tab-size8 --indent-level2 \
    --leave-preprocessor-space "$1" -o "$2"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
changed=0
for f in "${files[@]}"; do
  gst_indent "$f" "$tmp/once.c"
  gst_indent "$tmp/once.c" "$tmp/twice.c"
  if ! cmp -s "$f" "$tmp/twice.c"; then
    changed=$((changed + 1))
    if [ $check -eq 1 ]; then
      echo "$f is not in GStreamer's indent style:"
      diff -u "$f" "$tmp/twice.c" | sed -n '3,14p'
    else
      cp "$tmp/twice.c" "$f"
      echo "indented $f"
    fi
  fi
done
if [ $check -eq 1 ]; then
  if [ $changed -gt 0 ]; then
    echo "$changed of ${#files[@]} files would change: run tests/indent.sh"
    exit 1
  fi
  echo "${#files[@]} files in GStreamer's indent style"
fi

#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The fat binary of the copy kernel that is committed is the one nvcc
# makes of its source now:
#   cuda-kernels.sh NVCC SOURCE FATBIN NVCC-ARGS...
set -eu
nvcc=$1 src=$2 fatbin=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nvcc" "$@" -o "$tmp/copy.fatbin" "$src"
if cmp -s "$tmp/copy.fatbin" "$fatbin"; then
  echo "ok: $(basename "$fatbin") is $(basename "$src") built by $("$nvcc" --version | tail -1)"
else
  echo "FAIL: $(basename "$fatbin") is not what $(basename "$src") builds to:" \
    "run ninja -C BUILD cuda-kernels and commit it"
  exit 1
fi

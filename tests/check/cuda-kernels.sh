#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The fat binary of the copy kernel that is committed is the one nvcc
# makes of its source now:
#   cuda-kernels.sh NVCC RELEASE SOURCE FATBIN NVCC-ARGS...
# RELEASE is the nvcc release that made the committed one: another
# release makes other bytes (or lacks an architecture), so it is skipped
set -eu
nvcc=$1 want=$2 src=$3 fatbin=$4
shift 4
have=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9.]*\),.*/\1/p')
if [ "$have" != "$want" ]; then
  echo "SKIP: $(basename "$fatbin") was built by nvcc $want; this nvcc is ${have:-of no known release}"
  exit 77
fi
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

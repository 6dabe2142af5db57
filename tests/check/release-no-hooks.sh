#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The test hooks are compiled only into the test build (GPUSHARE_TEST_HOOKS):
# the installed plugin must carry neither the crash points of gpusharetest.h
# nor the CUDA fault injection of gpusharecudafault.c, whether as code (their
# symbols) or as the names of the environment variables that arm them (the
# strings getenv would be asked for).  The test copy of the plugin must
# carry those strings: a check that looks at the wrong file, or at a build
# without hooks, fails instead of passing on nothing.
#
# usage: release-no-hooks.sh RELEASE_PLUGIN TEST_PLUGIN cuda|no-cuda
set -u
release=$1
test_copy=$2
cuda=$3

strings=(GPUSHARE_TEST_DIE_AT)
if [ "$cuda" = cuda ]; then
  strings+=(GPUSHARE_TEST_CUDA_FAIL)
fi
symbols='gpushare_test_point|gpushare_cuda_fault_[a-z_]+'
failures=0

for f in "$release" "$test_copy"; do
  if [ ! -r "$f" ]; then
    echo "FAIL: $f cannot be read"
    exit 1
  fi
done

for s in "${strings[@]}"; do
  if LC_ALL=C grep -q -a -F -e "$s" "$release"; then
    echo "FAIL: the installed plugin names $s"
    failures=$((failures + 1))
  else
    echo "ok: the installed plugin does not name $s"
  fi
  if LC_ALL=C grep -q -a -F -e "$s" "$test_copy"; then
    echo "ok: the test copy names $s"
  else
    echo "FAIL: the test copy does not name $s: is it built with the hooks?"
    failures=$((failures + 1))
  fi
done

# the symbol table and the dynamic one: a stripped plugin has only the
# latter, and the strings above still speak for it
if command -v nm > /dev/null 2>&1; then
  found=$({ nm "$release" 2> /dev/null; nm -D "$release" 2> /dev/null; } \
    | grep -E -e "[[:space:]]($symbols)\$" | sort -u)
  if [ -n "$found" ]; then
    echo "FAIL: the installed plugin has hook symbols:"
    echo "$found"
    failures=$((failures + 1))
  else
    echo "ok: the installed plugin has no hook symbol"
  fi
else
  echo "note: no nm here, symbols not checked"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "the installed plugin carries no test hook"

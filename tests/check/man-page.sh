#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# docs/gpushare-inspect.1 against the program: every option --help lists
# is in the man page, and every option the man page gives is one --help
# lists; the page renders without a warning where man(1) is installed.
#
# usage: man-page.sh GPUSHARE_INSPECT MANPAGE
set -u
inspect=$1
page=$2
fail=0
help_opts=$("$inspect" --help | grep -oE '^ +--[a-z-]+' | tr -d ' ' | sort -u)
page_opts=$(sed -n 's/^\.B[I]* \\-\\-\([a-z\\-]*\).*/--\1/p' "$page" |
  sed 's/\\-/-/g; s/=.*//' | sort -u)
[ -n "$help_opts" ] || { echo "FAIL: --help lists no option"; exit 1; }
for o in $help_opts; do
  if grep -qx -- "$o" <<< "$page_opts"; then
    echo "ok: $o is in the man page"
  else
    echo "FAIL: $o is in --help, not in the man page"; fail=1
  fi
done
for o in $page_opts; do
  grep -qx -- "$o" <<< "$help_opts" || {
    echo "FAIL: the man page gives $o, which --help does not list"; fail=1; }
done
if command -v man > /dev/null; then
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 > /dev/null)
  if [ -n "$warnings" ]; then
    echo "FAIL: the man page renders with warnings: $warnings"; fail=1
  else
    echo "ok: the man page renders without a warning"
  fi
fi
exit $fail

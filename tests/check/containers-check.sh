#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/containers/, checked without a container runtime
# (containers-check.py); skips with one line without PyGObject or PyYAML.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import gi, yaml' 2>/dev/null; then
    exec "$p" "$here/containers-check.py" "$here/../../examples/containers" "$@"
  fi
done
echo "SKIP: no python3 with PyGObject (python3-gi) and PyYAML (python3-yaml)"
exit 77

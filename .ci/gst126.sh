#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a command against GStreamer 1.26, in a Debian 13 (trixie) root
# (.ci/gst-root.sh):
#
#   bash .ci/gst126.sh 'meson setup build-126 && ninja -C build-126'
#
# GPUSHARE_GST126_ROOT says where the root lives (default
# /var/tmp/gpushare-gst126).
GPUSHARE_GST_ROOT=${GPUSHARE_GST126_ROOT:-/var/tmp/gpushare-gst126} \
  exec bash "$(dirname "$0")/gst-root.sh" trixie "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a command against the newest GStreamer Debian serves (sid: 1.28 in
# December 2026), in a root of its own (.ci/gst-root.sh):
#
#   bash .ci/gst-newest.sh 'meson setup build-new && ninja -C build-new'
#
# GPUSHARE_GST_NEWEST_ROOT says where the root lives (default
# /var/tmp/gpushare-gst-newest).
GPUSHARE_GST_ROOT=${GPUSHARE_GST_NEWEST_ROOT:-/var/tmp/gpushare-gst-newest} \
  exec bash "$(dirname "$0")/gst-root.sh" sid "$@"

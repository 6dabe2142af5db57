# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Sourced by the gpu suite's shell tests: exits 77 (meson's skip) with one
# line where there is no GPU or no nvcodec plugin.

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU here (nvidia-smi finds none)"
  exit 77
fi
if ! gst-inspect-1.0 cudaupload >/dev/null 2>&1; then
  echo "SKIP: GStreamer's nvcodec plugin (cudaupload, cudadownload) is missing"
  exit 77
fi

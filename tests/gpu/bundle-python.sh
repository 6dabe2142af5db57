#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Python module's GPU test (tests/gpu/python-gpu.py) on a GPU machine
# whose Python has no PyGObject and is not the one the module was built
# for: adds to a GStreamer runtime bundle (BUNDLE, default .device) this
# machine's python3 (the interpreter, its standard library without tests
# and tools), PyGObject, the typelibs of GLib, GObject, Gio and GStreamer,
# and the libraries they need, in BUNDLE/py (about 20 MB).  The C runtime
# is the bundle's where it carries one (the 1.26 bundle: its programs run
# on its own loader, and so does this interpreter, through a wrapper that
# gives the bundle's libraries to it alone, never to the shell that
# sources env.sh); otherwise the GPU machine's, as for the rest of the
# bundle.
#
#   bash tests/gpu/bundle-python.sh [BUNDLE]
#
# (for the 1.26 bundle, in the 1.26 root: bash .ci/gst126.sh
# 'bash tests/gpu/bundle-python.sh .gst126', after
# tests/gpu/bundle-gst126.sh)
#
# then, on the GPU machine, with BUNDLE and the build carried:
#
#   . BUNDLE/env.sh; . BUNDLE/py/env.sh
#   PYTHONPATH=$PWD/build/ext/python:$PYTHONPATH python3 tests/gpu/python-gpu.py
set -eu
bundle=$PWD/${1:-.device}
out=$bundle/py
ml=/usr/lib/x86_64-linux-gnu
py=$(readlink -f /usr/bin/python3)
ver=$(basename "$py")
[ -d "$bundle" ] || {
  echo "bundle-python: no bundle at ${1:-.device}" >&2
  exit 1
}
/usr/bin/python3 -c 'import gi' 2> /dev/null || {
  echo "bundle-python: PyGObject is needed (apt-get install python3-gi)" >&2
  exit 1
}
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/$ver" "$out/lib/python3/dist-packages" \
  "$out/lib/girepository-1.0" "$out/libs"
cp "$py" "$out/bin/$ver"
ln -s "$ver" "$out/bin/python3"
# the standard library, without its tests, tools and compiled caches
(cd "/usr/lib/$ver" && tar cf - --exclude=__pycache__ --exclude=./test \
  --exclude=./idlelib --exclude=./tkinter --exclude=./turtledemo \
  --exclude=./ensurepip --exclude=./lib2to3 --exclude=./pydoc_data \
  --exclude='./config-*' --exclude=./distutils --exclude=./unittest/test \
  --exclude=./site-packages --exclude=./dist-packages \
  --exclude='./lib-dynload/_test*' --exclude='./lib-dynload/xx*' \
  --exclude='./lib-dynload/_ssl*' --exclude='./lib-dynload/_hashlib*' \
  --exclude='./lib-dynload/_sqlite3*' --exclude='./lib-dynload/_dbm*' \
  --exclude='./lib-dynload/_gdbm*' --exclude='./lib-dynload/nis*' \
  --exclude='./lib-dynload/_curses*' --exclude='./lib-dynload/readline*' \
  --exclude='./lib-dynload/_crypt*' --exclude='./lib-dynload/_uuid*' \
  --exclude='./lib-dynload/ossaudiodev*' --exclude='./lib-dynload/_tkinter*' \
  --exclude='./lib-dynload/_lzma*' --exclude='./lib-dynload/_bz2*' .) |
  (cd "$out/lib/$ver" && tar xf -)
(cd /usr/lib/python3/dist-packages && tar cf - --exclude=__pycache__ gi) |
  (cd "$out/lib/python3/dist-packages" && tar xf -)
for t in GLib-2.0 GObject-2.0 GModule-2.0 Gio-2.0 Gst-1.0 GstBase-1.0 \
  GstApp-1.0 GstVideo-1.0; do
  cp "$ml/girepository-1.0/$t.typelib" "$out/lib/girepository-1.0/"
done
# and, where GLib has them (2.80 on: GStreamer 1.26's Debian), the
# typelibs of its Unix parts, which PyGObject loads with GLib and Gio
for t in GLibUnix-2.0 GioUnix-2.0; do
  [ ! -e "$ml/girepository-1.0/$t.typelib" ] ||
    cp "$ml/girepository-1.0/$t.typelib" "$out/lib/girepository-1.0/"
done
# every library the interpreter, its modules and PyGObject need, but the
# C runtime and what the GStreamer bundle has already
for f in "$out/bin/$ver" $(find "$out/lib" -name '*.so'); do
  ldd "$f" | awk '/=>/ {print $3}'
done | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so|ld-linux' |
  while read -r l; do
    [ -e "$bundle/lib/$(basename "$l")" ] || cp -L "$l" "$out/libs/"
  done
cat > "$out/env.sh" << 'E'
# source on the GPU machine, after the GStreamer bundle's env.sh
P=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PYTHONHOME=$P
export PYTHONPATH=$P/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
export GI_TYPELIB_PATH=$P/lib/girepository-1.0
export PATH=$P/bin:$PATH
E
if [ -e "$bundle/lib/ld-linux-x86-64.so.2" ]; then
  # a bundle with its own C runtime: the host's programs must never see
  # its libraries (a host loader with another glibc's libc aborts), so
  # the interpreter alone runs on the bundle's loader and libraries
  mv "$out/bin/$ver" "$out/bin/$ver-bin"
  sed "s/@VER@/$ver/" > "$out/bin/$ver" << 'E'
#!/bin/sh
# the interpreter on the bundle's loader, with the bundle's libraries for
# this process alone (its children are the bundle's programs, which find
# their own, or the host's, which must not get them)
# (the host's LD_LIBRARY_PATH last: where libcuda may be found)
P=$(CDPATH= cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
exec "$P/../lib/ld-linux-x86-64.so.2" \
  --library-path "$P/libs:$P/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  --argv0 "$0" "$P/bin/@VER@-bin" "$@"
E
  chmod +x "$out/bin/$ver"
else
  # the host's C runtime: this bundle's libraries and the GStreamer
  # bundle's (GLib among them, which its programs find through their run
  # path and this interpreter does not) on the library path of what is
  # started from this shell
  cat >> "$out/env.sh" << 'E'
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$P/libs
[ ! -d "$P/../lib" ] || export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(cd "$P/../lib" && pwd)
E
fi
du -sh "$out"

#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks examples/containers/ without a container runtime: the compose
file and the Kubernetes manifest parse; their two services share the
socket directory, as one volume mounted at the directory of the socket
path, and nothing else (no host IPC or PID namespace, no /dev/shm); and
every gst-launch-1.0 command in them parses with the real elements
(unknown elements and properties are errors), without running.

    python3 containers-check.py EXAMPLES_DIR"""

import os
import sys

import gi
import yaml

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAILED: ") + what)
    if not cond:
        failures.append(what)


def check_pipeline(where, command):
    check(command and command[0] == "gst-launch-1.0",
          f"{where}: runs gst-launch-1.0")
    try:
        Gst.parse_launch(" ".join(command[1:]))
        check(True, f"{where}: its pipeline parses")
    except GLib.Error as e:
        check(False, f"{where}: its pipeline parses ({e.message})")


def socket_dir(command):
    for arg in command:
        if arg.startswith("socket-path="):
            return os.path.dirname(arg.split("=", 1)[1])
    return None


def main():
    Gst.init(None)
    here = sys.argv[1]

    with open(os.path.join(here, "compose.yaml")) as f:
        compose = yaml.safe_load(f)
    services = compose["services"]
    check(set(services) == {"decode", "inference"},
          "compose: a decode and an inference service")
    for name, svc in services.items():
        check_pipeline(f"compose {name}", svc["command"])
        sock = socket_dir(svc["command"])
        mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"]}
        check(mounts.get(sock) == "sockets",
              f"compose {name}: the volume 'sockets' at {sock}")
        check(len(mounts) == 1, f"compose {name}: no other mount")
        for key in ("ipc", "pid", "network_mode", "shm_size"):
            check(key not in svc, f"compose {name}: no {key}")

    with open(os.path.join(here, "kubernetes.yaml")) as f:
        pod = yaml.safe_load(f)
    spec = pod["spec"]
    for key in ("hostIPC", "hostPID", "hostNetwork", "shareProcessNamespace"):
        check(not spec.get(key), f"kubernetes: no {key}")
    check([v["name"] for v in spec["volumes"]] == ["sockets"]
          and "emptyDir" in spec["volumes"][0],
          "kubernetes: one emptyDir volume, 'sockets'")
    containers = {c["name"]: c for c in spec["containers"]}
    check(set(containers) == {"decode", "inference"},
          "kubernetes: a decode and an inference container")
    for name, c in containers.items():
        check_pipeline(f"kubernetes {name}", c["command"])
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        sock = socket_dir(c["command"])
        check(mounts == {sock: "sockets"},
              f"kubernetes {name}: 'sockets' at {sock} and nothing else")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

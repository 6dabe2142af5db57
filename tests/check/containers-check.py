#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks examples/containers/ without a container runtime: the compose
file and the Kubernetes manifest parse; their two services share the
socket directory, as one volume mounted at the directory of the socket
path, and nothing else (no host IPC or PID namespace, no /dev/shm); and
every gst-launch-1.0 command in them parses with the real elements
(unknown elements and properties are errors), without running.  Against
the Dockerfile: the image keeps the GPU transport (-Dcuda=enabled, no
toolkit), its socket directory belongs to the uid both services run as
(a new volume there starts as a copy of it), both services use the image
of this version and one GPU, with the driver capabilities GStreamer's
CUDA elements need.  tests/gpu/gpu-recipe.sh runs them on a GPU.

    python3 containers-check.py EXAMPLES_DIR VERSION"""

import os
import re
import shlex
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


def dockerfile_stages(path):
    """the Dockerfile's instructions, continuation lines joined, by stage"""
    stages = []
    text = open(path).read().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append([])
        stages[-1].append((word, " ".join(rest.split())))
    return stages


def check_dockerfile(here, sock_dir):
    stages = dockerfile_stages(os.path.join(here, "Dockerfile"))
    runs = [a for st in stages for w, a in st if w == "RUN"]
    check(any("meson setup" in r and "-Dcuda=enabled" in r for r in runs),
          "Dockerfile: the build keeps the GPU transport (-Dcuda=enabled)")
    check(not any(re.search(r"\bcuda-toolkit|nvidia-cuda-dev|cuda-nvcc", r)
                  for r in runs),
          "Dockerfile: no CUDA toolkit installed (gpushare needs none)")
    final = stages[-1]
    users = [a for w, a in final if w == "USER"]
    uid = users[-1] if users else "0"
    made = False
    for w, a in final:
        if w != "RUN":
            continue
        for cmd in re.split(r"&&|;", a):
            words = shlex.split(cmd)
            if words[:2] == ["install", "-d"] and sock_dir in words \
                    and "-o" in words and words[words.index("-o") + 1] == uid:
                made = True
    check(made, f"Dockerfile: the socket directory {sock_dir} is made, owned "
          f"by uid {uid} (USER)")
    env = {}
    for w, a in final:
        if w == "ENV":
            k, _, v = a.partition("=")
            env[k] = v
    return uid, env


def capabilities(env):
    return set(env.get("NVIDIA_DRIVER_CAPABILITIES", "").split(","))


def main():
    Gst.init(None)
    here = sys.argv[1]
    version = sys.argv[2]
    image = f"gpushare:{version}"

    with open(os.path.join(here, "compose.yaml")) as f:
        compose = yaml.safe_load(f)
    services = compose["services"]
    check(set(services) == {"decode", "inference"},
          "compose: a decode and an inference service")
    uid, image_env = check_dockerfile(
        here, socket_dir(services["decode"]["command"]))
    check(sum("build" in svc for svc in services.values()) == 1,
          "compose: one service builds the image")
    gpus = []
    for name, svc in services.items():
        check(svc.get("image") == image, f"compose {name}: image {image}")
        check(str(svc.get("user")) == uid,
              f"compose {name}: runs as uid {uid}, the owner of the socket "
              "directory in the image")
        devices = (svc.get("deploy", {}).get("resources", {})
                   .get("reservations", {}).get("devices", []))
        gpus.append([d.get("device_ids") for d in devices
                     if d.get("driver") == "nvidia"])
        caps = capabilities({**image_env, **(svc.get("environment") or {})})
        check({"compute", "video"} <= caps,
              f"compose {name}: the driver's compute and video libraries "
              "(GStreamer's CUDA elements need both)")
    check(gpus[0] == gpus[1] and len(gpus[0]) == 1 and gpus[0][0]
          and len(gpus[0][0]) == 1,
          "compose: both services reserve the same one GPU, by id")
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
        docs = {d["kind"]: d for d in yaml.safe_load_all(f)}
    pod = docs["Pod"]
    spec = pod["spec"]
    template = docs.get("ResourceClaimTemplate", {})
    requests = (template.get("spec", {}).get("spec", {}).get("devices", {})
                .get("requests", []))
    check(len(requests) == 1
          and requests[0].get("exactly", {}).get("deviceClassName") == "gpu.nvidia.com"
          and requests[0]["exactly"].get("count", 1) == 1,
          "kubernetes: a resource claim template for one NVIDIA GPU")
    claims = [c["name"] for c in spec.get("resourceClaims", [])
              if c.get("resourceClaimTemplateName") == template["metadata"]["name"]]
    check(len(claims) == 1, "kubernetes: the pod claims one GPU from it")
    check(str(spec.get("securityContext", {}).get("runAsUser")) == uid,
          f"kubernetes: runs as uid {uid}")
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
        check(c.get("image") == image, f"kubernetes {name}: image {image}")
        res = c.get("resources", {})
        check(not any("nvidia.com/gpu" in (res.get(k) or {})
                      for k in ("limits", "requests")),
              f"kubernetes {name}: no GPU of its own (nvidia.com/gpu)")
        check([x["name"] for x in res.get("claims", [])] == claims,
              f"kubernetes {name}: the pod's GPU claim")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

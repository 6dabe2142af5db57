#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes what examples/containers/compose.yaml asks of each service as
bash assignments, for gpu-recipe.sh (the GPU machine has no PyYAML):
image, user, named volumes and their mount points, environment (with
compose's ${VAR:-default} substitution from this environment), the
NVIDIA GPUs it reserves (ids, or all), and the command, as arrays.

    compose-services.py COMPOSE_FILE > services.sh"""

import os
import re
import shlex
import sys

import yaml


def substitute(value):
    """compose's interpolation: ${VAR}, ${VAR:-default}, $$"""
    def one(m):
        name, default = m.group(1), m.group(3)
        got = os.environ.get(name)
        return got if got else (default or "")
    value = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", one, value)
    return value.replace("$$", "$")


def array(name, items):
    return f"{name}=({' '.join(shlex.quote(str(i)) for i in items)})"


def main():
    with open(sys.argv[1]) as f:
        compose = yaml.safe_load(f)
    named = set(compose.get("volumes", {}) or {})
    lines = [array("services", list(compose["services"]))]
    for name, svc in compose["services"].items():
        env = svc.get("environment", {}) or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        vols = []
        for v in svc.get("volumes", []):
            src, dst = v.split(":")[:2]
            if src not in named:
                sys.exit(f"{name}: volume {src} is not a named volume")
            vols.append(f"{src}:{dst}")
        # the GPUs reserved: device_ids, or all of them (count: all, or
        # neither count nor device_ids)
        gpus = []
        for d in (svc.get("deploy", {}).get("resources", {})
                  .get("reservations", {}).get("devices", [])):
            if d.get("driver") != "nvidia" or "gpu" not in d.get("capabilities", []):
                continue
            if "device_ids" in d:
                gpus += [substitute(str(i)) for i in d["device_ids"]]
            elif d.get("count", "all") == "all":
                gpus = ["all"]
            else:
                sys.exit(f"{name}: a count of GPUs is not what this drill runs")
        key = name.replace("-", "_")
        lines += [
            f"svc_{key}_image={shlex.quote(svc.get('image', ''))}",
            f"svc_{key}_user={shlex.quote(str(svc.get('user', '')))}",
            f"svc_{key}_gpus={shlex.quote(','.join(gpus))}",
            array(f"svc_{key}_depends", svc.get("depends_on", [])),
            array(f"svc_{key}_volumes", vols),
            array(f"svc_{key}_env",
                  [f"{k}={substitute(str(v))}" for k, v in env.items()]),
            array(f"svc_{key}_command", svc["command"]),
        ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()

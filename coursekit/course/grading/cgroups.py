"""Where a run's cgroups go and which controllers they can have: the grader's own cgroups, probed once.

Runs nest under the grader's own cgroups (``/proc/self/cgroup``), so a limit put around the grader
holds its runs too; :func:`cgroup_version` says whether this process may create cgroups with the
memory and pids controllers (v2, or v1's separate hierarchies), and :func:`cpu_controller` whether
they can also have a CPU weight. Standard library only; used by :mod:`.sandbox`'s detection and
:mod:`.rungroup`, which makes each run's cgroup.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def own_cgroups(version: str, v1_controllers=("memory", "pids")) -> list[Path]:
    """The folders of this process's own cgroups (``/proc/self/cgroup``) that runs nest under:
    ``[unified]`` for v2, ``[memory, pids]`` for v1. A limit put around the grader holds its runs too."""
    paths = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path.lstrip("/")
    if version == "v2":
        return [CGROUP_ROOT / paths.get("", "")]
    return [CGROUP_ROOT / name / paths.get(name, "") for name in v1_controllers]


def cpu_controller(version: str | None) -> bool:
    """Whether runs' cgroups can have a CPU weight: v2 with ``cpu`` enabled for the grader's
    children, v1 with a writable ``cpu`` hierarchy."""
    try:
        if version == "v2":
            return "cpu" in (own_cgroups("v2")[0] / "cgroup.subtree_control").read_text().split()
        if version == "v1":
            folder = own_cgroups("v1", ("cpu",))[0]
            return (folder / "cpu.shares").exists() and os.access(folder, os.W_OK)
    except OSError:
        pass
    return False


def cgroup_version() -> str | None:
    """"v2" or "v1" when this process may create cgroups with memory and pids controllers under its own."""
    if sys.platform != "linux" or os.environ.get("COURSEKIT_SANDBOX_CGROUP", "1") == "0":
        return None
    for version in ("v2", "v1"):
        if version == "v2" and not (CGROUP_ROOT / "cgroup.controllers").exists():
            continue
        paths = own_cgroups(version)
        if version == "v2":      # the runs' memory and pids limits need the controllers enabled for children
            control = paths[0] / "cgroup.subtree_control"
            if not {"memory", "pids"} <= set(control.read_text().split() if control.exists() else []):
                continue
        probes = [p / f"coursekit-probe-{os.getpid()}" for p in paths]
        try:
            for probe in probes:
                probe.mkdir()
            return version
        except OSError:
            continue
        finally:
            for probe in probes:
                try:
                    probe.rmdir()
                except OSError:
                    pass
    return None

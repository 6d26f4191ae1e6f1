"""The processes of one grading run: its cgroup (nested under the grader's own), finding every process of it, killing them all.

:class:`RunGroup` creates the run's cgroup(s) where the grader may (see
:func:`coursekit.course.grading.sandbox.detect`), sets the memory and process-count limits, tells whether
the run met its memory limit, and kills every process in it at the end. Without a cgroup,
:func:`processes_of_run` finds the run's processes by ancestry and by the run's token in their
environment (a daemon that re-parented itself to init), and :func:`memory_in_use` is what the
runner polls instead of a hard limit. Standard library only, like :mod:`.sandbox`.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from .cgroups import cpu_controller, own_cgroups
from .sandbox import Limits

CPU_WEIGHT = int(os.environ.get("COURSEKIT_GRADE_CPU_WEIGHT", "100"))   # cgroup v2's default; v1: x10.24


class RunGroup:
    """The cgroup(s) of one run (or none); knows every process of the run and kills them all."""

    def __init__(self, name: str, limits: Limits, version: str | None):
        self.version = version
        self.dirs: list[Path] = []
        if version:      # under the grader's own cgroups: a limit around the grader holds its runs too
            self.dirs = [parent / name for parent in own_cgroups(version)]
        try:
            for d in self.dirs:
                d.mkdir(exist_ok=True)
            memory = str(limits.memory_mb * 1024 * 1024)
            if version == "v2":
                (self.dirs[0] / "memory.max").write_text(memory)
                (self.dirs[0] / "memory.swap.max").write_text("0") if (self.dirs[0] / "memory.swap.max").exists() else None
                (self.dirs[0] / "pids.max").write_text(str(limits.processes))
            elif version == "v1":
                (self.dirs[0] / "memory.limit_in_bytes").write_text(memory)
                (self.dirs[1] / "pids.max").write_text(str(limits.processes))
        except OSError:
            self.close()
            self.version, self.dirs = None, []
        self.cpu = bool(self.version) and self._weigh(name)

    def _weigh(self, name: str) -> bool:
        """Give the run its CPU weight (``cpu.weight``, v1 ``cpu.shares``) where a CPU controller is
        there: the machine's CPU is then shared per run, not per process, so a run that starts 48
        spinning processes gets the share of one run. False (nothing set) where there is none."""
        try:
            if self.version == "v2" and cpu_controller("v2"):
                (self.dirs[0] / "cpu.weight").write_text(str(CPU_WEIGHT))
                return True
            if self.version == "v1" and cpu_controller("v1"):
                folder = own_cgroups("v1", ("cpu",))[0] / name
                folder.mkdir(exist_ok=True)
                self.dirs.append(folder)
                (folder / "cpu.shares").write_text(str(CPU_WEIGHT * 1024 // 100))
                return True
        except (OSError, ValueError):
            pass
        return False

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> set[int]:
        found = set()
        for d in self.dirs:
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def out_of_memory(self) -> bool:
        try:
            if self.version == "v2":
                events = (self.dirs[0] / "memory.events").read_text()
                return any(line.split()[0] in ("oom", "oom_kill") and int(line.split()[1]) > 0
                           for line in events.splitlines())
            if self.version == "v1":
                return int((self.dirs[0] / "memory.failcnt").read_text()) > 0
        except (OSError, ValueError, IndexError):
            pass
        return False

    def kill(self) -> None:
        if self.version == "v2" and (self.dirs[0] / "cgroup.kill").exists():
            try:
                (self.dirs[0] / "cgroup.kill").write_text("1")
            except OSError:
                pass
        kill_until_gone(self.pids, rounds=50, pause=0.02)

    def close(self) -> None:
        self.kill()
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def kill_until_gone(find_pids, rounds: int, pause: float = 0.0) -> None:
    """SIGKILL what ``find_pids()`` returns, again and again (processes may fork while we kill)."""
    for _ in range(rounds):
        pids = find_pids()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if pause:
            time.sleep(pause)


def processes_of_run(token: str, root_pids: set[int]) -> set[int]:
    """Every live process of a run without a cgroup: descendants of ``root_pids`` and any process
    whose environment carries the run's token (a daemon that re-parented itself to init)."""
    children: dict[int, list[int]] = {}
    marked = set()
    needle = f"COURSEKIT_RUN_TOKEN={token}".encode()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(pid)
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if needle in handle.read():
                    marked.add(pid)
        except (OSError, ValueError):
            continue
    found, todo = set(), list(root_pids | marked)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, []))
    return found


def memory_in_use(pids: set[int]) -> int:
    """Resident bytes of these processes (Linux /proc; 0 elsewhere)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total


def folder_usage(folders, max_entries: int) -> tuple[int, int]:
    """``(bytes, entries)`` under ``folders`` (links not followed); the walk stops past ``max_entries``."""
    size = entries = 0
    todo = [str(f) for f in folders]
    while todo and entries <= max_entries:
        try:
            with os.scandir(todo.pop()) as listing:
                for entry in listing:
                    entries += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            todo.append(entry.path)
                        else:
                            size += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        pass
        except OSError:
            pass
    return size, entries

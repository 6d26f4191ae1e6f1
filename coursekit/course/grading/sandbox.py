"""Run a student's Jupyter kernel where it can see and harm nothing but its own run.

The grader runs code written to win points. This module wraps the command that starts the kernel
so that, with the operating system's own tools:

* **bubblewrap** (``bwrap``, Linux; needs user namespaces or root): the kernel runs as an
  unprivileged uid (:data:`SANDBOX_UID`) in a user namespace of its own, with every capability
  dropped (root or not: the bounding set is empty) and no way to create another user namespace,
  so nothing it can see can be remounted. It gets a private
  filesystem view — the system's programs and libraries read-only, the Python installation and
  *only the coursekit package* (never the repository: no ``solutions/``), a private ``/tmp`` and
  its own working directory (both size-capped memory filesystems, which the run's cgroup
  counts as its memory), nothing else: no submissions folder, no other student, no reference,
  no grader state. It gets a private process-ID namespace (it cannot see or signal the grader,
  and every process it starts, daemons and new sessions included, dies with it), no network
  (only a loopback of its own) and its own IPC namespace.
* **cgroups** (Linux, when the grader may create them, e.g. as root or with a delegated cgroup):
  a hard memory limit and a process-count limit for the whole run, and a sweep that kills every
  process of the run at its end.
* **resource limits** everywhere (POSIX): CPU seconds, file size, no core files; the process
  count (``RLIMIT_NPROC``) where it means something (not for root). Memory is limited by the
  cgroup, or else by the runner polling the run's resident memory (see :mod:`.rungroup`):
  ``RLIMIT_AS`` would break AddressSanitizer, which checked CUDA launches use.

:func:`detect` says which of these this machine gives (it tries them once); the grader writes
that description into its report. This file imports only the standard library: the runner
starts it by path (``python -I -S sandbox.py exec ...``) as the first link of the kernel's
command, where it applies the limits and then ``exec``s bubblewrap or the kernel.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

LIBRARY_MOUNT = "/opt/coursekit"        # inside the sandbox: the coursekit package, read-only
HOME_MOUNT = "/home/student"            # inside the sandbox: the kernel's working directory
SHARED_CACHE_ENV = "COURSEKIT_CUDA_SHARED_CACHE"
SHARED_CACHE_MOUNT = "/opt/coursekit-shared-cache"
PACKAGE_DIR = Path(__file__).resolve().parents[2]          # .../coursekit
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
CGROUP_ROOT = Path("/sys/fs/cgroup")
SANDBOX_UID = 1000                      # the kernel's uid and gid inside its user namespace (never 0)


@dataclass(frozen=True)
class Limits:
    """What one (student, notebook) run may use. Environment ``COURSEKIT_GRADE_MEMORY_MB`` etc."""

    memory_mb: int = int(os.environ.get("COURSEKIT_GRADE_MEMORY_MB", "3072"))
    cpu_seconds: int = int(os.environ.get("COURSEKIT_GRADE_CPU_SECONDS", "900"))
    processes: int = int(os.environ.get("COURSEKIT_GRADE_PROCESSES", "256"))
    file_mb: int = int(os.environ.get("COURSEKIT_GRADE_FILE_MB", "256"))
    output_mb: int = int(os.environ.get("COURSEKIT_GRADE_OUTPUT_MB", "16"))   # kept outputs per notebook
    disk_mb: int = int(os.environ.get("COURSEKIT_GRADE_DISK_MB", "512"))      # each of /tmp and the home folder


@dataclass(frozen=True)
class Protection:
    """Which protections a run gets on this machine, in words fit for the grader's report."""

    bubblewrap: bool
    cgroup: str | None                   # "v1", "v2" or None
    nproc_limit: bool                    # RLIMIT_NPROC is enforced (not root)
    missing: tuple[str, ...] = field(default=())
    bwrap_flags: tuple[str, ...] = field(default=())   # the optional bubblewrap flags this bwrap accepts

    @property
    def label(self) -> str:
        parts = ["bubblewrap" if self.bubblewrap else "no sandbox"]
        parts.append(f"cgroup {self.cgroup}" if self.cgroup else "no cgroup")
        parts.append("rlimits")
        return " + ".join(parts)

    def describe(self) -> list[str]:
        have = []
        if self.bubblewrap:
            have.append("private filesystem view (system and Python read-only, the coursekit package "
                        "only, no repository, no submissions), own PID namespace, no network")
            have.append(f"own user namespace: the kernel runs as uid {SANDBOX_UID} with no capabilities"
                        + (", cannot create user namespaces (nothing can be remounted)"
                           if "--disable-userns" in self.bwrap_flags else "")
                        + (", /tmp and the working folder size-capped" if "--size" in self.bwrap_flags else ""))
        if self.cgroup:
            have.append(f"cgroup {self.cgroup}: memory and process-count limits, end-of-run kill sweep")
        else:
            have.append("memory limit by polling the run's resident memory (no cgroup)")
        have.append("rlimits: CPU time, file size, no core files"
                    + (", process count" if self.nproc_limit or self.cgroup else ""))
        return have + [f"NOT enforced: {m}" for m in self.missing]


# --------------------------------------------------------------------------------------------
# Detection (done once per grader process).


@functools.lru_cache(maxsize=None)
def detect() -> Protection:
    """Try each protection once on this machine; see :class:`Protection`.

    ``COURSEKIT_SANDBOX=none`` turns bubblewrap off (to measure what it costs, or to debug).
    """
    missing = []
    bwrap_ok = False
    if os.environ.get("COURSEKIT_SANDBOX", "").lower() in ("none", "off", "0"):
        missing.append("filesystem, PID and network isolation (COURSEKIT_SANDBOX=none)")
    elif sys.platform != "linux" or not shutil.which("bwrap"):
        missing.append("filesystem, PID and network isolation (install bubblewrap: `apt-get install "
                       "bubblewrap`; Linux only)")
    else:
        flags = _bwrap_flags()
        bwrap_ok = flags is not None
        if not bwrap_ok:
            missing.append("filesystem, PID and network isolation (bubblewrap is installed but cannot "
                           "create namespaces here: user namespaces disabled?)")
        else:
            if "--disable-userns" not in flags:
                missing.append("a ban on new user namespaces inside the sandbox (bubblewrap older than 0.8)")
            if "--size" not in flags:
                missing.append("size caps on the sandbox's /tmp and working folder (bubblewrap older than 0.6)")
    cgroup = _cgroup_version()
    if not cgroup:
        missing.append("hard memory and process limits (no writable cgroup); memory is polled instead")
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not cgroup and root:
        missing.append("process-count limit (RLIMIT_NPROC does not apply to root)")
    if not bwrap_ok:
        missing.append("a kill sweep of daemons that left the run's process group and cleared their "
                       "environment")
    return Protection(bwrap_ok, cgroup, not root, tuple(missing), tuple(flags) if bwrap_ok else ())


OPTIONAL_FLAGS = ("--disable-userns", "--size")


def _bwrap_flags() -> tuple[str, ...] | None:
    """The optional flags of :data:`OPTIONAL_FLAGS` this bubblewrap accepts (tried in a real
    sandbox), or None when bubblewrap cannot make a sandbox at all here."""
    def works(flags) -> bool:
        probe = [shutil.which("bwrap"), *_bwrap_namespace_args(flags, 1), *_bind_args(), "--", sys.executable,
                 "-I", "-S", "-c", "pass"]
        try:
            return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if not works(()):
        return None
    return tuple(flag for flag in OPTIONAL_FLAGS if works((flag,)))


def own_cgroups(version: str) -> list[Path]:
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
    return [CGROUP_ROOT / name / paths.get(name, "") for name in ("memory", "pids")]


def _cgroup_version() -> str | None:
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


def _bwrap_namespace_args(flags, size_mb: int) -> list[str]:
    """Every namespace, an unprivileged uid with no capabilities in its own user namespace (as root
    too: ``--cap-drop ALL`` empties the bounding set), no further user namespaces where bubblewrap
    can forbid them (so no mount can be made writable again), and a ``/tmp`` of ``size_mb``."""
    args = ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--cap-drop", "ALL", "--die-with-parent", "--hostname", "coursekit-sandbox",
            "--proc", "/proc", "--dev", "/dev"]
    if "--disable-userns" in flags:
        args.append("--disable-userns")
    return args + _tmpfs("/tmp", flags, size_mb)


def _tmpfs(path: str, flags, size_mb: int) -> list[str]:
    """A private memory filesystem at ``path``, capped at ``size_mb`` where bubblewrap can."""
    return (["--size", str(size_mb * 1024 * 1024)] if "--size" in flags else []) + ["--tmpfs", path]


def _python_dirs() -> list[str]:
    """The Python installation and its site-packages, but never the repository the grader runs from."""
    repository = PACKAGE_DIR.parent
    dirs = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
    dirs.update(os.path.realpath(p) for p in sys.path if p and "site-packages" in p or "dist-packages" in p)
    keep = []
    for d in sorted(dirs):
        path = Path(d)
        if not path.is_dir() or path == repository or repository in path.parents and ".venv" not in path.parts \
                and "venv" not in path.name:
            continue
        if any(Path(k) in path.parents for k in keep):
            continue
        keep.append(d)
    return keep


def _bind_args() -> list[str]:
    args = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for d in _python_dirs():
        if not any(d == s or d.startswith(s + "/") for s in SYSTEM_DIRS):
            args += ["--ro-bind", d, d]
    return args


def kernel_command(kernel_argv: list[str], *, workdir, ipc_dir, env: dict[str, str], limits: dict,
                   cgroup_procs: list[str] | None, bubblewrap: bool, report_dir=None,
                   bwrap_flags=()) -> list[str]:
    """The full command that starts a kernel (``kernel_argv``) inside this run's protections.

    ``env`` is what the kernel may see (see :func:`sandbox_env`); ``cgroup_procs`` the run's
    ``cgroup.procs`` files, joined by the launcher before anything can fork; ``report_dir`` the
    folder where graded cells write their observations (see :mod:`coursekit.course.student.check`),
    mounted at the same path; ``bwrap_flags`` the optional flags :func:`detect` found. With
    bubblewrap and no ``workdir``, the kernel's working folder is a private size-capped tmpfs.
    """
    config = {"limits": limits, "cgroup": cgroup_procs, "env": None if bubblewrap else env}
    launcher = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "exec", json.dumps(config), "--"]
    if not bubblewrap:
        return launcher + kernel_argv
    inside_env = dict(env, HOME=HOME_MOUNT, PYTHONPATH=LIBRARY_MOUNT, TMPDIR="/tmp",
                      COURSEKIT_CACHE_DIR="/tmp/coursekit-cache", MPLCONFIGDIR="/tmp/matplotlib",
                      IPYTHONDIR="/tmp/ipython")
    flags = tuple(bwrap_flags)
    size_mb = max(1, int(limits.get("disk_mb", 512)))
    home = ["--bind", str(workdir), HOME_MOUNT] if workdir else _tmpfs(HOME_MOUNT, flags, size_mb)
    args = [shutil.which("bwrap"), *_bwrap_namespace_args(flags, size_mb), *_bind_args(),
            "--ro-bind", str(PACKAGE_DIR), f"{LIBRARY_MOUNT}/coursekit",
            *home,
            "--bind", str(ipc_dir), str(ipc_dir),        # same path inside: the kernel binds its sockets there
            *(["--bind", str(report_dir), str(report_dir)] if report_dir else []),
            *_shared_cache_args(inside_env),
            "--chdir", HOME_MOUNT, "--clearenv"]
    for key, value in sorted(inside_env.items()):
        args += ["--setenv", key, value]
    return launcher + args + ["--"] + kernel_argv


def _shared_cache_args(inside_env: dict[str, str]) -> list[str]:
    """The grader's compiled-kernel cache (coursekit/course/grading/kernel_cache.py), mounted read-only: a run
    reads what the grader built and cannot plant anything there for the next run."""
    shared = inside_env.get(SHARED_CACHE_ENV)
    if not shared or not os.path.isdir(shared):
        inside_env.pop(SHARED_CACHE_ENV, None)
        return []
    inside_env[SHARED_CACHE_ENV] = SHARED_CACHE_MOUNT
    return ["--ro-bind", shared, SHARED_CACHE_MOUNT]


def sandbox_env(env: dict[str, str], bubblewrap: bool) -> dict[str, str]:
    """The environment the kernel sees: only what a notebook needs, never the grader's secrets."""
    keep = {k: v for k, v in env.items()
            if k in ("PATH", "LANG", "LC_ALL", "TZ", "MPLBACKEND", "PYDEVD_DISABLE_FILE_VALIDATION",
                     "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CXX", "CC")
            or k.startswith("COURSEKIT_")}
    keep.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    keep["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), keep["PATH"]])
    if not bubblewrap:
        keep["PYTHONPATH"] = env.get("COURSEKIT_LIBRARY_PATH", str(PACKAGE_DIR.parent))
    return keep


# --------------------------------------------------------------------------------------------
# cgroups and the end-of-run sweep.


# --------------------------------------------------------------------------------------------
# The launcher: first link of the kernel's command (``python -I -S sandbox.py exec CONFIG -- ARGV``).


def _tasks_of_user(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            pass
    return count


def _exec(argv: list[str]) -> None:
    import resource

    config = json.loads(argv[0])
    command = argv[argv.index("--") + 1:]
    for procs in config.get("cgroup") or []:      # join the run's cgroup before anything can fork
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
    limits = config["limits"]
    mb = 1024 * 1024
    for name, value in (("RLIMIT_CPU", limits["cpu_seconds"]), ("RLIMIT_FSIZE", limits["file_mb"] * mb),
                        ("RLIMIT_CORE", 0), ("RLIMIT_NPROC", limits["processes"])):
        if hasattr(resource, name):
            if name == "RLIMIT_NPROC":
                if os.geteuid() == 0:     # not enforced for root (the cgroup limits processes there)
                    continue
                value += _tasks_of_user(os.geteuid())     # the limit counts all of this user's threads
            try:
                resource.setrlimit(getattr(resource, name), (value, value))
            except (ValueError, OSError):
                pass
    if config.get("env") is not None:
        os.execvpe(command[0], command, config["env"])
    os.execvp(command[0], command)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "exec":
        _exec(sys.argv[2:])
    else:
        print(json.dumps({"protection": detect().label, "details": detect().describe()}, indent=1))

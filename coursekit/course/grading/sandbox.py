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
  counts as its memory; without a cgroup they share the run's memory limit), a capped
  ``/dev/shm``, ``/`` and ``/dev`` read-only, nothing else: no submissions folder, no other
  student, no reference, no grader state.
* **an unprivileged host user** for a root grader (:func:`sandbox_user`: ``nobody`` or
  ``COURSEKIT_GRADE_USER``): bubblewrap started by root maps the kernel to root outside, so it
  could read every root-only file; the launcher (:mod:`.launch`) becomes that user first. It gets a private process-ID namespace (it cannot see or signal the grader,
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
that description into its report (``python -m coursekit.course.grading.sandbox`` prints it). The
first link of every kernel's command is :mod:`.launch`, started by path, which joins the run's
cgroup, sets the limits, gives up root and then ``exec``s bubblewrap or the kernel. Standard
library only.
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

from .cgroups import CGROUP_ROOT, cgroup_version, cpu_controller, own_cgroups  # noqa: F401 (CGROUP_ROOT: as before)

LIBRARY_MOUNT = "/opt/coursekit"        # inside the sandbox: the coursekit package, read-only
HOME_MOUNT = "/home/student"            # inside the sandbox: the kernel's working directory
SHARED_CACHE_ENV = "COURSEKIT_CUDA_SHARED_CACHE"
SHARED_CACHE_MOUNT = "/opt/coursekit-shared-cache"
PACKAGE_DIR = Path(__file__).resolve().parents[2]          # .../coursekit
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SANDBOX_UID = 1000                      # the kernel's uid and gid inside its user namespace (never 0)
LAUNCHER = Path(__file__).resolve().parent / "launch.py"   # started by path: joins, limits, drops, execs
USER_ENV = "COURSEKIT_GRADE_USER"       # the host user a root grader's kernels run as (default: nobody)
NOBODY = 65534
SHM_MB = int(os.environ.get("COURSEKIT_GRADE_SHM_MB", "64"))   # the sandbox's /dev/shm


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
    run_as: tuple[int, int] | None = None    # a root grader's kernels run as this (uid, gid) on the host
    cpu_weight: bool = False                 # each run's cgroup has a CPU weight (a CPU controller exists)

    @property
    def label(self) -> str:
        parts = ["bubblewrap" if self.bubblewrap else "no sandbox"]
        parts.append(f"cgroup {self.cgroup}" if self.cgroup else "no cgroup")
        if self.cpu_weight:
            parts.append("cpu weight")
        parts.append("rlimits")
        if self.run_as:
            parts.append(f"uid {self.run_as[0]}")
        return " + ".join(parts)

    def describe(self) -> list[str]:
        have = []
        if self.bubblewrap:
            have.append("private filesystem view (system and Python read-only, the coursekit package "
                        "only, no repository, no submissions), own PID namespace, no network")
            have.append(f"own user namespace: the kernel runs as uid {SANDBOX_UID} with no capabilities"
                        + (", cannot create user namespaces (nothing can be remounted)"
                           if "--disable-userns" in self.bwrap_flags else "")
                        + (", /tmp, /dev/shm and the working folder size-capped" if "--size" in self.bwrap_flags
                           else "") + "; / and /dev read-only")
        if self.run_as:
            have.append(f"a root grader's kernels run as host uid {self.run_as[0]} (gid {self.run_as[1]}, "
                        f"{USER_ENV}), not root: root-only files such as /etc/shadow are unreadable")
        if self.cgroup:
            have.append(f"cgroup {self.cgroup}: memory and process-count limits, end-of-run kill sweep"
                        + (", a CPU weight per run (CPU shared per run, not per process)" if self.cpu_weight else
                           "; no CPU controller: CPU is shared per process, not per run"))
        else:
            have.append("memory limit by polling the run's resident memory (no cgroup)")
        have.append("rlimits: CPU time, file size, no core files"
                    + (", process count" if self.nproc_limit or self.cgroup else ""))
        return have + [f"NOT enforced: {m}" for m in self.missing]


LABEL_PARTS = {
    "bubblewrap": "bubblewrap: private filesystem view, own user, PID and network namespaces, no capabilities",
    "no sandbox": "NOT enforced: filesystem, PID and network isolation (no bubblewrap where these runs executed): "
                  "a kernel could read and write what the kernels' user can",
    "no cgroup": "memory limit by polling the run's resident memory (no cgroup)",
    "cpu weight": "a CPU weight per run (CPU shared per run, not per process)",
    "rlimits": "rlimits: CPU time, file size, no core files",
}


def describe_label(label: str) -> list[str]:
    """What a row's protection label (:attr:`Protection.label`, made where the run executed: a
    cluster's worker, say) says was enforced, in words; parts it does not know are quoted as they are."""
    lines = []
    for part in label.split(" + "):
        if part.startswith("cgroup "):
            lines.append(f"{part}: memory and process-count limits, end-of-run kill sweep")
        elif part.startswith("uid "):
            lines.append(f"the kernels ran as host {part}, not root: root-only files unreadable")
        else:
            lines.append(LABEL_PARTS.get(part, part))
    return lines


# --------------------------------------------------------------------------------------------
# Detection (done once per grader process).


@functools.lru_cache(maxsize=None)
def detect() -> Protection:
    """Try each protection once on this machine; see :class:`Protection`.

    ``COURSEKIT_SANDBOX=none`` turns bubblewrap off (to measure what it costs, or to debug).
    """
    missing = []
    bwrap_ok = False
    run_as = sandbox_user()
    if os.environ.get("COURSEKIT_SANDBOX", "").lower() in ("none", "off", "0"):
        missing.append("filesystem, PID and network isolation (COURSEKIT_SANDBOX=none)")
    elif sys.platform != "linux" or not shutil.which("bwrap"):
        missing.append("filesystem, PID and network isolation (install bubblewrap: `apt-get install "
                       "bubblewrap`; Linux only)")
    else:
        flags = _bwrap_flags(run_as)
        bwrap_ok = flags is not None
        if not bwrap_ok:
            missing.append("filesystem, PID and network isolation (bubblewrap is installed but cannot "
                           "create namespaces here: user namespaces disabled?"
                           + (f" {USER_ENV}'s uid {run_as[0]} may need them)" if run_as else ")"))
        else:
            if "--disable-userns" not in flags:
                missing.append("a ban on new user namespaces inside the sandbox (bubblewrap older than 0.8)")
            if "--size" not in flags:
                missing.append("size caps on the sandbox's /tmp and working folder (bubblewrap older than 0.6)")
    cgroup = cgroup_version()
    if not cgroup:
        missing.append("hard memory and process limits (no writable cgroup); memory is polled instead")
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not cgroup and root:
        missing.append("process-count limit (RLIMIT_NPROC does not apply to root)")
    if not bwrap_ok:
        missing.append("a kill sweep of daemons that left the run's process group and cleared their "
                       "environment")
    if root and not run_as:
        missing.append(f"an unprivileged host user for the kernels ({USER_ENV} names none that exists)")
    return Protection(bwrap_ok, cgroup, not root, tuple(missing), tuple(flags) if bwrap_ok else (),
                      run_as, cpu_controller(cgroup))


OPTIONAL_FLAGS = ("--disable-userns", "--size")


def sandbox_user() -> tuple[int, int] | None:
    """``(uid, gid)`` a root grader's kernels run as on the host; None when the grader is not root.

    ``COURSEKIT_GRADE_USER`` names an account (or a uid); the default is ``nobody`` (65534), which
    every Linux has, so the grader never has to create accounts. A dedicated account
    (``useradd --system --no-create-home coursekit-run``) is better where ``nobody`` owns files
    (NFS): name it in ``COURSEKIT_GRADE_USER``. Root (uid 0) is refused.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd

    name = os.environ.get(USER_ENV, "nobody").strip()
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
        found = (entry.pw_uid, entry.pw_gid)
    except KeyError:
        if name.isdigit():
            found = (int(name), int(name))      # a uid without an account is fine: it owns nothing
        elif name == "nobody":
            found = (NOBODY, NOBODY)
        else:
            raise ValueError(f"{USER_ENV}={name!r}: no such user on this machine; create it "
                             "(useradd --system --no-create-home NAME) or unset it to use nobody") from None
    if found[0] == 0 or found[1] == 0:
        raise ValueError(f"{USER_ENV}={name!r} is root (uid or gid 0): name an unprivileged user")
    return found


def _bwrap_flags(run_as) -> tuple[str, ...] | None:
    """The optional flags of :data:`OPTIONAL_FLAGS` this bubblewrap accepts (tried in a real sandbox,
    through the launcher as the kernels' user), or None when bubblewrap cannot make a sandbox here."""
    def works(flags) -> bool:
        config = {"limits": Limits().__dict__, "run_as": run_as, "expose": _python_dirs()}
        probe = [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), "--", shutil.which("bwrap"),
                 *_bwrap_namespace_args(flags, 1), *_bind_args(), *_readonly_args(flags, 1),
                 "--", sys.executable, "-I", "-S", "-c", "pass"]
        try:
            return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if not works(()):
        return None
    return tuple(flag for flag in OPTIONAL_FLAGS if works((flag,)))


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


def _readonly_args(flags, shm_mb: int) -> list[str]:
    """After every mount: a capped ``/dev/shm``, then ``/dev`` and ``/`` (bubblewrap's own memory
    filesystems, half the RAM each) remounted read-only, so the only writable places are the capped
    ``/tmp``, ``/dev/shm``, the working folder and the run's own folders."""
    return [*_tmpfs("/dev/shm", flags, shm_mb), "--remount-ro", "/dev", "--remount-ro", "/"]


def tmpfs_sizes(limits: dict, cgroup: bool) -> tuple[int, int]:
    """MB for each of ``/tmp`` and the private home, and for ``/dev/shm``. With a cgroup their pages
    count as the run's memory, so ``disk_mb`` each; without one the polled limit cannot see them,
    so together they never exceed the run's memory limit (2/5, 2/5 and at most 1/5 of it)."""
    disk, memory = max(1, int(limits.get("disk_mb", 512))), max(5, int(limits["memory_mb"]))
    if cgroup:
        return disk, max(1, min(SHM_MB, disk))
    return max(1, min(disk, memory * 2 // 5)), max(1, min(SHM_MB, memory // 5))


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
                   bwrap_flags=(), run_as=None, home=None) -> list[str]:
    """The full command that starts a kernel (``kernel_argv``) inside this run's protections.

    ``env`` is what the kernel may see (see :func:`sandbox_env`); ``cgroup_procs`` the run's
    ``cgroup.procs`` files, joined by the launcher before anything can fork; ``report_dir`` the
    folder where graded cells write their observations (see :mod:`coursekit.course.student.check`),
    mounted at the same path; ``bwrap_flags`` the optional flags :func:`detect` found; ``run_as``
    the host ``(uid, gid)`` a root grader's kernel becomes (:mod:`.launch`), which is handed the
    run's folders. With bubblewrap and no ``workdir``, the kernel's working folder is a private
    size-capped tmpfs. ``home`` is the run's own folder for a kernel without bubblewrap (its
    ``HOME`` and caches: nothing it writes there reaches another run).
    """
    own = [str(p) for p in dict.fromkeys((workdir, home, ipc_dir, report_dir)) if p]
    config = {"limits": limits, "cgroup": cgroup_procs, "run_as": list(run_as) if run_as else None,
              "own": own, "own_files_in": [str(ipc_dir)],
              # what the kernels' user must reach: bubblewrap's sources, or the kernel's Python and coursekit
              "expose": [*_python_dirs(), *own] + ([str(PACKAGE_DIR)] if bubblewrap else [str(PACKAGE_DIR.parent)])}
    launcher = [sys.executable, "-I", "-S", str(LAUNCHER)]
    if not bubblewrap:
        config["env"] = dict(env, **run_folders(home)) if home else dict(env)
        if run_as and config["env"].get(SHARED_CACHE_ENV):   # root-owned: nobody reads it, cannot write it
            config["expose"].append(config["env"][SHARED_CACHE_ENV])
        else:   # the kernel is the grader's user: it could plant objects there for every later run
            config["env"].pop(SHARED_CACHE_ENV, None)
        return launcher + [json.dumps(config), "--"] + kernel_argv
    config["env"] = None
    inside_env = dict(env, HOME=HOME_MOUNT, PYTHONPATH=LIBRARY_MOUNT, TMPDIR="/tmp",
                      COURSEKIT_CACHE_DIR="/tmp/coursekit-cache", MPLCONFIGDIR="/tmp/matplotlib",
                      IPYTHONDIR="/tmp/ipython")
    flags = tuple(bwrap_flags)
    size_mb, shm_mb = tmpfs_sizes(limits, bool(cgroup_procs))
    home_args = ["--bind", str(workdir), HOME_MOUNT] if workdir else _tmpfs(HOME_MOUNT, flags, size_mb)
    cache = _shared_cache_args(inside_env)
    config["expose"] += cache[1:2]
    args = [shutil.which("bwrap"), *_bwrap_namespace_args(flags, size_mb), *_bind_args(),
            "--ro-bind", str(PACKAGE_DIR), f"{LIBRARY_MOUNT}/coursekit",
            *home_args,
            "--bind", str(ipc_dir), str(ipc_dir),        # same path inside: the kernel binds its sockets there
            *(["--bind", str(report_dir), str(report_dir)] if report_dir else []),
            *cache,
            *_readonly_args(flags, shm_mb),
            "--chdir", HOME_MOUNT, "--clearenv"]
    for key, value in sorted(inside_env.items()):
        args += ["--setenv", key, value]
    return launcher + [json.dumps(config), "--"] + args + ["--"] + kernel_argv


def run_folders(home) -> dict[str, str]:
    """A kernel without bubblewrap keeps its home, caches and bytecode in its own run's folder, so
    that nothing it writes there (a compiled kernel, a ``.pyc``, a matplotlib or IPython setting)
    is read by a later run. ``PYTHONPYCACHEPREFIX`` makes its Python read and write bytecode only
    there, never coursekit's own ``__pycache__`` (which a kernel running as the grader's user could
    still write on purpose: see docs/teaching.md); each such run compiles the modules it imports."""
    home = str(home)
    return {"HOME": home, "TMPDIR": home, "COURSEKIT_CACHE_DIR": f"{home}/.cache/coursekit",
            "MPLCONFIGDIR": f"{home}/.config/matplotlib", "IPYTHONDIR": f"{home}/.ipython",
            "PYTHONPYCACHEPREFIX": f"{home}/.pycache",
            "XDG_CACHE_HOME": f"{home}/.cache", "XDG_CONFIG_HOME": f"{home}/.config"}


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


if __name__ == "__main__":     # python -m coursekit.course.grading.sandbox
    print(json.dumps({"protection": detect().label, "details": detect().describe()}, indent=1))

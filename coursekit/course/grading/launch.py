"""The first link of a graded kernel's command: join the run's cgroup, set its limits, stop being
root, then ``exec`` bubblewrap (or the kernel itself where there is no bubblewrap).

The runner's child starts every kernel as ``python -I -S launch.py CONFIG -- COMMAND`` (see
:func:`coursekit.course.grading.sandbox.kernel_command`). The order matters and is why this is one small
program of its own:

1. **join the run's cgroup** while we may still write its ``cgroup.procs`` (root-owned), before
   anything can fork, so every process of the run counts against the run's memory and pids limits;
2. **set the resource limits** (CPU seconds, file size, no core files, the process count);
3. **as root, become an unprivileged host user** (:func:`drop_to`, the ``setresuid`` family: the
   kernel's own mechanism, no helper binary), after giving that user the run's own folders and
   nothing else (:func:`hand_over`). bubblewrap started by root maps the sandbox's uid to root
   outside, so file permissions let the kernel read ``/etc/shadow`` and private keys; started by
   ``nobody`` it maps to ``nobody``, and root-only files stay closed. The folders bubblewrap mounts
   (and, without bubblewrap, the kernel's Python and coursekit) are first made reachable by that
   user in a mount namespace of the launcher's own (:func:`expose`), so a Python or a cache under
   ``/root`` (mode 0700) still works;
4. ``exec`` the command, with the environment the runner chose.

Standard library only: started by path, before any of coursekit is imported.
"""

from __future__ import annotations

import json
import os
import sys

def join_cgroups(procs_files) -> None:
    """Move this process into the run's cgroup(s) (``cgroup.procs`` paths; none: nothing to join)."""
    for procs in procs_files or []:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))


def tasks_of_user(uid: int) -> int:
    """Threads that ``uid`` runs now (``RLIMIT_NPROC`` counts them all, not only this run's)."""
    count = 0
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            pass
    return count


def set_limits(limits: dict, run_as, cgroup: bool) -> None:
    """CPU seconds, file size, no core files; the process count where it applies: not to root (a
    cgroup limits processes there), and for a dropped run only without a cgroup (``nobody`` may run
    several runs at once, and the cgroup's ``pids.max`` is exact)."""
    import resource

    mb = 1024 * 1024
    wanted = [("RLIMIT_CPU", limits["cpu_seconds"]), ("RLIMIT_FSIZE", limits["file_mb"] * mb), ("RLIMIT_CORE", 0)]
    uid = run_as[0] if run_as else os.geteuid()
    if uid != 0 and not (run_as and cgroup):
        wanted.append(("RLIMIT_NPROC", limits["processes"] + tasks_of_user(uid)))
    for name, value in wanted:
        if hasattr(resource, name):
            try:
                resource.setrlimit(getattr(resource, name), (value, value))
            except (ValueError, OSError):
                pass


def hand_over(folders, files_in, run_as) -> None:
    """Give the unprivileged user the run's folders (and the files the runner wrote in ``files_in``:
    the kernel's connection file), never following a link."""
    uid, gid = run_as
    for folder in folders:
        os.chown(folder, uid, gid, follow_symlinks=False)
    for folder in files_in:
        for entry in os.scandir(folder):
            if entry.is_file(follow_symlinks=False):
                os.chown(entry.path, uid, gid, follow_symlinks=False)


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        raise OSError(ctypes.get_errno(), f"launch.py: {what}: {os.strerror(ctypes.get_errno())}")


def blocked_at(path: str, run_as) -> str | None:
    """The topmost folder on the way to ``path`` that ``run_as`` (uid, gid) may not pass through
    (no search permission for it), or None when it reaches ``path``."""
    uid, gid = run_as
    parts = os.path.realpath(path).split("/")[1:]
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        info = os.stat(folder)
        bits = 0o100 if info.st_uid == uid else 0o010 if info.st_gid == gid else 0o001
        if not info.st_mode & bits:
            return folder
    return None


def expose(paths, run_as) -> None:
    """Make every one of ``paths`` reachable by ``run_as``, in a mount namespace of this process's own.

    bubblewrap (started by the unprivileged user) resolves its sources, and a kernel without
    bubblewrap runs its Python, with that user's rights; a root grader's Python, cache or run
    folders may live under ``/root`` or another 0700 folder. So, while still root: open each
    needed path, put an empty memory filesystem (mode 0755) over the folder that blocks it *in this
    namespace only*, and mount each path back at its place through its descriptor. The user then
    reaches exactly those paths, with their own permissions, and nothing else of the blocked folder
    (the ``.ci/hostile-unprivileged`` script does the same by hand for its tests).
    """
    blocked: dict[str, list[str]] = {}
    for path in sorted({os.path.realpath(p) for p in paths if os.path.exists(p)}, key=len):
        top = blocked_at(path, run_as)
        if top and not any(path.startswith(kept + "/") or path == kept for kept in blocked.get(top, [])):
            blocked.setdefault(top, []).append(path)
    if not blocked:
        return
    libc = _libc()
    _check(libc.unshare(0x00020000), "unshare(CLONE_NEWNS)")                          # CLONE_NEWNS
    _check(libc.mount(b"none", b"/", None, (1 << 18) | 16384, None), "make / private")  # MS_PRIVATE|MS_REC
    for top in sorted(blocked, key=len):
        fds = [(path, os.open(path, os.O_PATH)) for path in blocked[top]]
        _check(libc.mount(b"tmpfs", top.encode(), b"tmpfs", 0, b"mode=0755,size=1m"), f"cover {top}")
        for path, fd in fds:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                open(path, "a").close()
            _check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, 4096 | 16384, None),
                   f"bind {path}")                                                       # MS_BIND|MS_REC
            os.close(fd)


def drop_to(run_as) -> None:
    """Become ``run_as`` (uid, gid) for good: no supplementary groups, real, effective and saved ids."""
    uid, gid = run_as
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit(f"launch.py: could not become uid {uid}")


def main(argv: list[str]) -> None:
    config = json.loads(argv[0])
    command = argv[argv.index("--") + 1:]
    join_cgroups(config.get("cgroup"))
    run_as = tuple(config["run_as"]) if config.get("run_as") else None
    set_limits(config["limits"], run_as, bool(config.get("cgroup")))
    if run_as:
        hand_over(config.get("own", ()), config.get("own_files_in", ()), run_as)
        expose(config.get("expose", ()), run_as)
        drop_to(run_as)
    if config.get("env") is not None:
        os.execvpe(command[0], command, config["env"])
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])

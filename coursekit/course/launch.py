"""The first link of a graded kernel's command: join the run's cgroup, set its limits, stop being
root, then ``exec`` bubblewrap (or the kernel itself where there is no bubblewrap).

The runner's child starts every kernel as ``python -I -S launch.py CONFIG -- COMMAND`` (see
:func:`coursekit.course.sandbox.kernel_command`). The order matters and is why this is one small
program of its own:

1. **join the run's cgroup** while we may still write its ``cgroup.procs`` (root-owned), before
   anything can fork, so every process of the run counts against the run's memory and pids limits;
2. **set the resource limits** (CPU seconds, file size, no core files, the process count);
3. **as root, become an unprivileged host user** (:func:`drop_to`, the ``setresuid`` family: the
   kernel's own mechanism, no helper binary), after giving that user the run's own folders and
   nothing else (:func:`hand_over`). bubblewrap started by root maps the sandbox's uid to root
   outside, so file permissions let the kernel read ``/etc/shadow`` and private keys; started by
   ``nobody`` it maps to ``nobody``, and root-only files stay closed. The folders bubblewrap mounts
   are first mounted where that user can reach them, in a mount namespace of the launcher's own
   (:func:`stage_binds`), so a Python or a cache under ``/root`` (mode 0700) still works;
4. ``exec`` the command, with the environment the runner chose.

Standard library only: started by path, before any of coursekit is imported.
"""

from __future__ import annotations

import json
import os
import sys

# bubblewrap options and how many arguments each takes (those sandbox.kernel_command emits)
ARITY = {"--bind": 2, "--ro-bind": 2, "--symlink": 2, "--setenv": 2, "--chmod": 2, "--uid": 1, "--gid": 1,
         "--hostname": 1, "--proc": 1, "--dev": 1, "--size": 1, "--tmpfs": 1, "--chdir": 1, "--cap-drop": 1,
         "--remount-ro": 1, "--perms": 1, "--dir": 1}
BINDS = ("--bind", "--ro-bind")
STAGE_ROOT = "/tmp"                       # in the launcher's own mount namespace only
STAGE = "/tmp/coursekit-stage"


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


def stage_binds(command: list[str]) -> list[str]:
    """Mount every source of bubblewrap's ``--bind``/``--ro-bind SRC DEST`` at ``STAGE/N``, in a
    mount namespace of this process's own, and point bubblewrap there.

    bubblewrap started by the unprivileged user resolves each SRC with that user's rights, and a
    root grader's Python, cache or run folder may live under ``/root`` or a 0700 folder: bubblewrap
    0.8's ``--ro-bind-fd`` does not help (it resolves the descriptor's path again). So, while still
    root: open every source, put a small private memory filesystem (mode 0711) on ``/tmp`` *in this
    namespace only*, and bind each source, through its descriptor, below it. Each source keeps its
    own permissions; nothing changes outside this process's mount namespace.
    """
    libc = _libc()
    _check(libc.unshare(0x00020000), "unshare(CLONE_NEWNS)")                          # CLONE_NEWNS
    _check(libc.mount(b"none", b"/", None, (1 << 18) | 16384, None), "make / private")  # MS_PRIVATE|MS_REC
    parsed, index = [], 1
    while index < len(command) and command[index] != "--":
        option = command[index]
        if option.startswith("--") and option not in ARITY and not option.startswith("--unshare") \
                and option not in ("--die-with-parent", "--disable-userns", "--clearenv", "--new-session"):
            raise ValueError(f"launch.py: unknown bubblewrap option {option!r}: add it to ARITY")
        width = ARITY.get(option, 0)
        args = command[index + 1:index + 1 + width]
        parsed.append([option, *args, os.open(args[0], os.O_PATH) if option in BINDS else None])
        index += 1 + width
    _check(libc.mount(b"tmpfs", STAGE_ROOT.encode(), b"tmpfs", 0, b"mode=0711,size=1m"), "stage tmpfs")
    os.makedirs(STAGE, mode=0o711)
    out = [command[0]]
    for number, (option, *args, fd) in enumerate(parsed):
        if fd is not None:
            target = os.path.join(STAGE, str(number))
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.mkdir(target, 0o711)
            else:
                open(target, "x").close()
            _check(libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, 4096 | 16384, None),
                   f"bind {args[0]}")                                                    # MS_BIND|MS_REC
            os.close(fd)
            args = [target, args[1]]
        out += [option, *args]
    return out + command[index:]


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
        if config.get("stage"):
            command = stage_binds(command)
        drop_to(run_as)
    if config.get("env") is not None:
        os.execvpe(command[0], command, config["env"])
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])

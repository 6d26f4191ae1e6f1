"""``coursekit doctor``: what this machine has and lacks for each lesson, and the fix for each gap.

Why: the course runs anywhere Python runs, except for three things a student cannot see from the
README alone. Lessons and exercises 7, 9 and 11 compile CUDA C for a CPU emulator with a C++ compiler;
a real GPU needs CuPy; ``coursekit start`` needs JupyterLab; an instructor's grader isolates each
student's kernel with bubblewrap. Each check below runs the thing (compiles a line of C++17, asks
CuPy for a device), so "found" means "works", not "a file with that name exists".
"""
from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


COMPILER_LESSONS = ("07", "09", "11")
ALL_LESSONS = tuple(f"{n:02d}" for n in range(1, 12))


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    found: str              # what was found, or why not
    needed_by: str          # which lessons (or who) need it
    fix: str                # one line: what to do when it is missing
    required: bool = True   # False: optional (the course runs without it)


def _python() -> Check:
    ok = sys.version_info >= (3, 10)
    return Check("Python >= 3.10", ok, f"Python {platform.python_version()} ({sys.executable})", "every lesson",
                 "install Python 3.10 or newer (python.org, your package manager, or conda) and reinstall coursekit")


def compiler_fix(system: str | None = None) -> str:
    system = system or platform.system()
    if system == "Darwin":
        return ("run `xcode-select --install` (Xcode command line tools' clang++), then `export CXX=clang++` "
                "(the emulator is tested with clang++ on Linux; on macOS, Colab is the tested way)")
    if system == "Windows":
        return ("the CUDA emulator needs a Linux C++ toolchain: use WSL2 (Ubuntu: `sudo apt-get install g++`) "
                "or open the lessons in Colab")
    return "install g++ (Debian/Ubuntu: `sudo apt-get install g++`; Fedora: `sudo dnf install gcc-c++`) or set CXX"


def cxx() -> str:
    """The emulator's compiler, by its rule (coursekit.cuda.compiler.cxx; a test keeps the two equal).
    Not imported from there: ``coursekit doctor`` must answer even where the emulator does not load."""
    return os.environ.get("CXX", "g++")


def _compiler() -> Check:
    tool = cxx()
    found = shutil.which(tool)
    detail = f"{tool}: not found"
    ok = False
    if found:
        with tempfile.TemporaryDirectory() as folder:
            source = Path(folder) / "check.cpp"
            source.write_text("#include <vector>\nint main() { std::vector<int> v{1}; return v[0] - 1; }\n")
            run = subprocess.run([tool, "-std=c++17", "-o", str(Path(folder) / "check"), str(source)],
                                 capture_output=True, text=True)
        ok = run.returncode == 0
        first = (run.stderr.strip().splitlines() or ["(no message)"])[0]
        detail = f"{found} compiles C++17" if ok else f"{found} cannot compile C++17: {first}"
    return Check("C++ compiler (CXX, default g++)", ok, detail,
                 f"lessons and exercises {', '.join(COMPILER_LESSONS)} (CUDA C on the CPU emulator)", compiler_fix())


def _gpu() -> Check:
    fix = "optional: on an NVIDIA GPU with CUDA 12, `pip install coursekit[cuda12]`, or use Colab's T4"
    if importlib.util.find_spec("cupy") is None:
        return Check("CuPy and an NVIDIA GPU", False, "CuPy not installed: lessons use the simulated GPU (labelled so)",
                     "real GPU timings in every lesson", fix, required=False)
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # noqa: BLE001 - any CUDA failure means "no usable GPU", said as found
        return Check("CuPy and an NVIDIA GPU", False, f"CuPy installed but no usable GPU ({type(exc).__name__}: {exc})",
                     "real GPU timings in every lesson", fix, required=False)
    return Check("CuPy and an NVIDIA GPU", count > 0, f"{count} GPU(s), GPU 0: {name}",
                 "real GPU timings in every lesson", fix, required=False)


def _jupyterlab() -> Check:
    spec = importlib.util.find_spec("jupyterlab")
    return Check("JupyterLab", spec is not None, "installed" if spec else "not installed",
                 "`coursekit start` (not needed on Colab or a hub)", "`pip install jupyterlab`", required=False)


def _bubblewrap() -> Check:
    found = shutil.which("bwrap")
    return Check("bubblewrap (instructors)", found is not None, found or "bwrap not found",
                 "the grader's isolation of each student's kernel (instructors only)",
                 "Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap` "
                 "(Linux only; without it the grader says it runs unisolated)", required=False)


def checks() -> list[Check]:
    return [_python(), _compiler(), _gpu(), _jupyterlab(), _bubblewrap()]


def lesson_lines(found: list[Check]) -> list[str]:
    """One line per lesson: ready, or what it lacks."""
    by_name = {c.name: c for c in found}
    python_ok = by_name["Python >= 3.10"].ok
    compiler_ok = by_name["C++ compiler (CXX, default g++)"].ok
    gpu = "real GPU" if by_name["CuPy and an NVIDIA GPU"].ok else "simulated GPU"
    lines = []
    for lesson in ALL_LESSONS:
        lacks = [] if python_ok else ["Python >= 3.10"]
        if lesson in COMPILER_LESSONS and not compiler_ok:
            lacks.append("a C++ compiler")
        state = f"ready ({gpu})" if not lacks else "lacks " + " and ".join(lacks)
        lines.append(f"  lesson and exercise {lesson}: {state}")
    return lines


def report(found: list[Check] | None = None) -> tuple[list[str], int]:
    """The lines ``coursekit doctor`` prints and its exit status (1 when a lesson cannot run)."""
    found = checks() if found is None else found
    lines = [f"coursekit doctor: {platform.system()} {platform.machine()}, Python {platform.python_version()}"]
    for check in found:
        mark = "ok  " if check.ok else ("MISSING" if check.required else "absent ")
        lines.append(f"{mark} {check.name}: {check.found}\n        needed by: {check.needed_by}")
        if not check.ok:
            lines.append(f"        fix: {check.fix}")
    lines.append("per lesson:")
    lines += lesson_lines(found)
    return lines, 0 if all(c.ok for c in found if c.required) else 1

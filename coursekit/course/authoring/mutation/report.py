"""The mutation run as a table (Markdown); :func:`run` is ``python -m coursekit mutate``."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from . import TaskResult, all_tasks, run_task

TARGET = 0.9        # every judge kills at least this share of its non-equivalent mutants


def _rate(result: TaskResult) -> str:
    rate = result.kill_rate
    return "–" if rate is None else f"{100 * rate:.0f}%"


def table(results: list[TaskResult]) -> str:
    """One row per task: mutants, equivalent, killed, % of the non-equivalent ones killed."""
    rows = ["| # | graded cell | mutants | equivalent | killed | killed of non-equivalent |",
            "|---|---|---|---|---|---|"]
    for r in results:
        note = "" if r.baseline == "passed" else f" (solution failed: {r.baseline[:80]})"
        note += "" if r.reproducible else " (observations not reproducible: none set aside)"
        rows.append(f"| {r.task.notebook.name[:2]} | `{r.task.cell_id}`{note} | {r.mutants} | {r.equivalent} | "
                    f"{r.killed} | {_rate(r)} |")
    total = sum(r.mutants for r in results), sum(r.equivalent for r in results), sum(r.killed for r in results)
    judged = total[0] - total[1]
    rows.append(f"| | **all** | {total[0]} | {total[1]} | {total[2]} | "
                f"{'–' if not judged else f'{100 * total[2] / judged:.0f}%'} |")
    return "\n".join(rows)


def survivors(results: list[TaskResult]) -> str:
    lines = []
    for r in results:
        for what in r.survivors:
            lines.append(f"* {r.task.notebook.name[:2]} `{r.task.cell_id}`: {what}")
    return "\n".join(lines) or "none"


def below_target(results: list[TaskResult]) -> list[TaskResult]:
    return [r for r in results if r.baseline != "passed" or (r.kill_rate is not None and r.kill_rate < TARGET)]


def _git_hash() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def document(results: list[TaskResult], limit, seconds: float, commit: str) -> str:
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n\n".join([
        "# Judges tested by mutation",
        f"`python -m coursekit mutate{f' --limit {limit}' if limit else ''}` at git {commit}, {when}, on "
        f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at "
        f"the end (python {platform.python_version()}), "
        f"{seconds / 60:.1f} minutes. CUDA C ran on the CPU emulator (no GPU).",
        "Killed: the graded cell scored 0 under the grader's settings. Equivalent: the mutant's observations "
        "equal the solution's (values, shapes, dtypes) on every input the judge drew, so no judge could tell "
        "them apart there; they are not counted.",
        table(results), "## Survivors", survivors(results)])


def run(args) -> int:
    """Mutate, grade, print the table; exit 1 when a task is under the target or its solution failed."""
    tasks = all_tasks(Path(args.solutions), set(args.task) if args.task else None)
    if not tasks:
        print(f"error: no graded task with a solution region in {args.solutions}/ matches {args.task}", file=sys.stderr)
        return 2
    start, results, commit = time.perf_counter(), [], _git_hash()      # the code the run grades
    for task in tasks:
        result = run_task(task, limit=args.limit, cell_timeout=args.cell_timeout, match=args.match)
        results.append(result)
        print(f"{task.notebook.name[:2]} {task.cell_id}: {result.killed}/{result.judged} killed "
              f"({_rate(result)}), {result.equivalent} equivalent, baseline {result.baseline[:60]}", flush=True)
        if args.out:        # after every task, so that a run stopped early keeps what it measured
            done = f" ({len(results)} of {len(tasks)} tasks so far)" if len(results) < len(tasks) else ""
            text = document(results, args.limit, time.perf_counter() - start, commit + done)
            Path(args.out).write_text(text + "\n")
    print(table(results))
    low = below_target(results)
    if low:
        print(f"below {TARGET:.0%}: {', '.join(r.task.cell_id for r in low)}", file=sys.stderr)
    return 1 if low else 0


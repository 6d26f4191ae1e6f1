"""Deterministic regrades: what graded each row, what changed since, and whose points moved.

Every row of ``grades.csv`` records what its grade depends on:

* ``submission_sha256`` — the SHA-256 of the student's notebook file as handed in ("" when missing);
* ``judge_sha256`` — the SHA-256 of the reference graded cell that restored and judged it (its id,
  points and source: probe, inputs and judge all live in that one cell);
* ``grader`` — the grader's version: the git commit of the coursekit that graded it (``+dirty`` when
  its files differed from that commit) and a hash of the grading package's own source, so a row
  can be traced to the exact code even outside git.

``coursekit grade ... --regrade`` reads the previous ``grades.csv`` and runs again only the
notebooks whose submission or judges changed (a new hand-in, an edited graded cell, a new graded
cell); the other rows are taken from the previous table as they were, so the same inputs always give
the same grades, bit for bit. It then writes a per-student diff of points (:func:`write_diff`).
A change of the grader alone (a new commit) does not re-run anything: run without ``--regrade``
to grade everything again with the new grader. The inputs of a re-run cell are drawn afresh (a new
seed in every run, see :mod:`coursekit.course.student.check`); judges hold for any seed, so an unchanged
answer keeps its points.

A notebook with a row the grader itself failed (``grader_fault``, see :mod:`.scores`: a full disk, a
run that failed on every retry) is always run again, even when its hashes match: its zero says
nothing about the student. Tables written before that column existed are classified by their reasons.

Each regrade keeps its change report: ``<out>-regrade-N.csv``/``.md`` with N one more than the last
one there, so an earlier report is never overwritten. Each run also stores its scope (``--from``,
``--roster``, ``--assignment`` …) in ``<out>.scope.json``, and ``--regrade`` reuses it for every option
not given again (:func:`save_scope`, :func:`reuse_scope`): a regrade that forgets ``--assignment``
cannot export zeros into the columns of exercises nobody was asked to hand in.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from . import submissions
from .escape import csv_cell
from .report import _md, number
from .scores import Score, grader_fault_of

PACKAGE = Path(__file__).resolve().parents[1]      # coursekit/course: the grader's own code (all three rooms)
PROJECT_ROOT = PACKAGE.parents[1]


def file_sha256(path) -> str:
    """SHA-256 of a file's bytes ("" for None: a notebook that was not handed in; also for a link, a
    FIFO or a refused submission, which are never followed or waited on: see .submissions)."""
    return submissions.file_sha256(path)


def judge_sha256(cell) -> str:
    """SHA-256 of one reference graded cell (a :class:`coursekit.course.authoring.graded.GradedCell`)."""
    return hashlib.sha256(f"{cell.id}\0{cell.points}\0{cell.source}".encode()).hexdigest()


@lru_cache(maxsize=1)
def grader_version() -> str:
    """``<commit>[+dirty] code <hash>``: the git commit of this coursekit (when it is a git checkout)
    and a hash of the grading package's sources (always)."""
    code = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        code.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    commit = "no-git"
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                              text=True, timeout=10)
        if head.returncode == 0:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "coursekit"],
                                   cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
            commit = head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return f"{commit} code {code.hexdigest()[:12]}"


@dataclass(frozen=True)
class Fingerprint:
    """What one (student, notebook) grade depends on."""

    submission: str                 # file_sha256 of the hand-in
    judges: dict                    # {cell id: judge_sha256}


def fingerprint(path, reference) -> Fingerprint:
    return Fingerprint(file_sha256(path), {cell.id: judge_sha256(cell) for cell in reference.cells})


def stamp(scores, print_: Fingerprint, version: str):
    """``scores`` with the fingerprint and the grader's version recorded in every row."""
    return [replace(s, submission_sha256=print_.submission, judge_sha256=print_.judges.get(s.cell_id, ""),
                    grader=version, grader_fault=s.grader_fault or grader_fault_of(s.reason)) for s in scores]


def read_previous(path):
    """The rows of an earlier ``grades.csv`` as Scores (a table without the hash columns, written
    before they existed, is read too: nothing in it can be reused)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--regrade: no previous grades at {path}; grade once without --regrade first "
                                f"(or pass the earlier CSV: --regrade OLD.csv).")
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    missing = {"student", "notebook", "cell_id", "points", "max_points", "reason"} - set(rows[0] if rows else {})
    if missing:
        raise ValueError(f"--regrade: {path} is not a grades table written by coursekit grade "
                         f"(no {', '.join(sorted(missing))} column)")
    return [Score(r["student"], r["notebook"], r["cell_id"], float(r["points"]), float(r["max_points"]),
                  r["reason"], r.get("protection", ""), r.get("submission_sha256", ""), r.get("judge_sha256", ""),
                  r.get("grader", ""), _fault(r)) for r in rows]


def _fault(row: dict) -> bool:
    """The row's ``grader_fault`` column, or (a table written before it existed) what its reason says.
    The reason counts either way: a grader that set no flag must not keep its own failure."""
    return row.get("grader_fault", "").strip().lower() in ("true", "1", "yes") or grader_fault_of(row["reason"])


def reusable(previous, key, print_: Fingerprint):
    """The previous rows of ``key`` = (student, notebook) when nothing they depend on changed, else None.

    Reused only when the previous table has a row for every graded cell of the reference now, each
    with the same judge hash, and the same submission hash.
    """
    rows = previous.get(key)
    if not rows or {r.cell_id for r in rows} != set(print_.judges) or any(r.grader_fault for r in rows):
        return None
    if any(r.submission_sha256 != print_.submission or not r.judge_sha256 or r.judge_sha256 != print_.judges[r.cell_id]
           for r in rows):
        return None
    by_cell = {r.cell_id: r for r in rows}
    return [by_cell[cell_id] for cell_id in print_.judges]


def unchanged(previous, prints: dict) -> dict:
    """``{(student, notebook): previous rows}`` for every notebook of ``prints`` (``{key: Fingerprint}``)
    whose previous rows can be kept (:func:`reusable`)."""
    earlier = index(previous)
    kept = {key: reusable(earlier, key, print_) for key, print_ in prints.items()}
    return {key: rows for key, rows in kept.items() if rows is not None}


def grader_failed(previous, keys) -> int:
    """How many notebooks of ``keys`` have a previous row the grader failed (they are run again)."""
    earlier = index(previous)
    return sum(1 for key in keys if any(r.grader_fault for r in earlier.get(key, ())))


def summary_line(previous, prints: dict, rerun: int, kept: int) -> str:
    """The regrade's one line on the terminal: what changed, what the grader failed, what was kept."""
    retried = grader_failed(previous, prints)
    return (f"regrade: {rerun} of {len(prints)} notebooks run again ({retried} of them because the grader failed "
            f"them last time, the rest because their submission or judges changed); {kept} kept from the "
            f"previous grades")


def index(scores) -> dict:
    """``{(student, notebook): [rows]}``."""
    table: dict = {}
    for s in scores:
        table.setdefault((s.student, s.notebook), []).append(s)
    return table


@dataclass(frozen=True)
class Change:
    student: str
    notebook: str
    cell_id: str
    before: float | None            # None: no such row before (a new student, notebook or cell)
    after: float | None             # None: the row is gone
    reason_before: str
    reason_after: str


def diff(previous, scores) -> list[Change]:
    """Every graded cell whose points differ between two tables (rows added or removed included)."""
    old = {(s.student, s.notebook, s.cell_id): s for s in previous}
    new = {(s.student, s.notebook, s.cell_id): s for s in scores}
    changes = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if a is not None and b is not None and a.points == b.points:
            continue
        changes.append(Change(*key, a.points if a else None, b.points if b else None,
                              a.reason if a else "", b.reason if b else ""))
    return changes


def student_totals(changes, previous, scores) -> dict[str, tuple[float, float]]:
    """``{student: (total before, total after)}`` for the students with a change."""
    who = {c.student for c in changes}
    before = {name: sum(s.points for s in previous if s.student == name) for name in who}
    after = {name: sum(s.points for s in scores if s.student == name) for name in who}
    return {name: (before[name], after[name]) for name in sorted(who)}


def report_paths(out_csv) -> tuple[Path, Path]:
    """``<out>-regrade-N.csv`` and ``.md`` with N one more than any report already there: never overwritten."""
    out_csv = Path(out_csv)
    pattern = re.compile(re.escape(out_csv.stem) + r"-regrade-(\d+)\.(?:csv|md)$")
    taken = [int(m.group(1)) for p in out_csv.parent.glob(f"{out_csv.stem}-regrade-*")
             if (m := pattern.match(p.name))]
    csv_path = out_csv.with_name(f"{out_csv.stem}-regrade-{max(taken, default=0) + 1}.csv")
    return csv_path, csv_path.with_suffix(".md")


def write_diff(previous, scores, out_csv, rerun: int, reused: int, retried: int = 0):
    """Write ``<out>-regrade-N.csv`` (one row per changed cell) and ``.md`` (per student: total before and
    after, then each changed cell with both reasons); return the paths and changes. ``retried``: how many
    of the ``rerun`` notebooks were run again because the grader had failed them."""
    csv_path, md_path = report_paths(out_csv)
    graded_now = {s.notebook for s in scores}        # with --assignment, the other exercises are not compared
    previous = [s for s in previous if s.notebook in graded_now]
    changes = diff(previous, scores)

    def show(points):
        return "" if points is None else number(points)

    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "notebook", "cell_id", "points_before", "points_after", "reason_before",
                         "reason_after"])
        for c in changes:
            writer.writerow([csv_cell(c.student), csv_cell(c.notebook), csv_cell(c.cell_id), show(c.before),
                             show(c.after), csv_cell(c.reason_before), csv_cell(c.reason_after)])
    totals = student_totals(changes, previous, scores)
    lines = ["# Regrade", "", f"{rerun} notebooks graded again (submission or judges changed, or the grader had "
             f"failed them: {retried}), {reused} taken unchanged from the previous grades. {len(totals)} students' "
             "points changed.", ""]
    if totals:
        lines += ["| student | before | after |", "|---|---:|---:|"]
        lines += [f"| {_md(name)} | {number(a)} | {number(b)} |" for name, (a, b) in totals.items()]
        lines += ["", "## Changed cells", ""]
        lines += [f"- **{_md(c.student)}** · `{c.notebook}` · `{c.cell_id}`: {show(c.before) or '–'} → "
                  f"{show(c.after) or '–'} ({_md(c.reason_after or 'removed')})" for c in changes]
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return csv_path, md_path, changes


# --------------------------------------------------------------------------------------------
# The scope of a run, kept next to its grades so that a regrade grades the same class.

SCOPE_KEYS = ("assignment", "source", "roster", "missing", "lms_column", "export", "reference")


def scope_path(out_csv) -> Path:
    return Path(out_csv).with_suffix(".scope.json")


def save_scope(out_csv, scope: dict) -> Path:
    """Store ``scope`` (the options of :data:`SCOPE_KEYS`; paths made absolute by the caller) next to the grades."""
    path = scope_path(out_csv)
    path.write_text(json.dumps({k: scope.get(k) for k in SCOPE_KEYS}, indent=1) + "\n", encoding="utf-8")
    return path


def reuse_scope(previous_csv, given: dict) -> tuple[dict, list[str]]:
    """``given`` with every option that is None filled from the scope stored next to ``previous_csv``;
    also ``["--assignment 05", ...]``: what was reused, for the output. No stored scope: nothing reused."""
    path = scope_path(previous_csv)
    if not path.is_file():
        return dict(given), []
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--regrade: {path} cannot be read ({exc}); delete it and pass the options again") from None
    merged, reused = dict(given), []
    for key in SCOPE_KEYS:
        if merged.get(key) is None and stored.get(key) not in (None, [], ""):
            merged[key] = stored[key]
            shown = stored[key] if not isinstance(stored[key], list) else " ".join(stored[key])
            reused.append(f"--{key.replace('_', '-') if key != 'source' else 'from'} {shown}")
    return merged, reused

"""Write the grader's score table: a CSV for spreadsheets and a Markdown summary for people.

Every text written comes from the submissions or passes through them, so each goes through
:mod:`.escape`: CSV cells cannot start a formula, Markdown cannot start markup or HTML.

The CSV has one row per (student, notebook, graded cell) with the reason for every score, so that
any number can be traced back to what happened. The Markdown file sits next to it (same name,
``.md``): a student × notebook table with totals, then every lost point with its reason, then the
grader's warnings (ignored or ambiguous files), then how the runs were isolated.
"""

from __future__ import annotations

import csv
from pathlib import Path

from .escape import csv_cell, markdown_text
from .sandbox import describe_label

COLUMNS = ["student", "notebook", "cell_id", "points", "max_points", "reason", "protection",
           "submission_sha256", "judge_sha256", "grader",   # these three: see coursekit.course.grading.regrade
           "grader_fault"]                                  # the grader caused it: see coursekit.course.grading.scores


def number(value) -> str:
    """Points as people write them: 2, not 2.0; 1.5 stays 1.5."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def write_csv(scores, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for s in scores:
            writer.writerow([csv_cell(s.student), csv_cell(s.notebook), csv_cell(s.cell_id), number(s.points),
                             number(s.max_points), csv_cell(s.reason), csv_cell(s.protection),
                             s.submission_sha256, s.judge_sha256, csv_cell(s.grader),
                             "true" if s.grader_fault else "false"])
    return path


def _md(text) -> str:
    """``text`` as literal Markdown (student names, reasons and warnings come from the submissions)."""
    return markdown_text(text)


def _cell(text: str) -> str:
    return _md(text)


def summary_markdown(scores, warnings=(), protection=(), assigned=(), names=None) -> str:
    """The Markdown summary (see the module docstring). ``names`` (``{student: name}``, from an LMS's
    download or roster, where students are user ids) adds each student's name to the table."""
    notebooks = list(dict.fromkeys(s.notebook for s in scores))
    students = list(dict.fromkeys(s.student for s in scores))
    got, out_of = {}, dict.fromkeys(notebooks, 0)
    for s in scores:
        got[s.student, s.notebook] = got.get((s.student, s.notebook), 0) + s.points
        if s.student == students[0]:  # every student has a row per graded cell, even if missing
            out_of[s.notebook] += s.max_points
    total = sum(out_of.values())

    lines = ["# Grades", ""]
    if assigned:   # --assignment: say which exercises this table covers (see coursekit.course.grading.assignment)
        lines += [f"Assigned: {', '.join(f'`{name}`' for name in assigned)} (only these are graded and totalled).", ""]
    header = ["student"] + [f"{nb} (/{number(out_of[nb])})" for nb in notebooks] + [f"total (/{number(total)})"]
    lines.append("| " + " | ".join(_cell(h) for h in header) + " |")
    lines.append("|" + "---|" + "---:|" * (len(header) - 1))
    for student in students:
        row = [number(got[student, nb]) for nb in notebooks]
        row.append(number(sum(got[student, nb] for nb in notebooks)))
        shown = f"{student} · {names[student]}" if names and names.get(student) else student
        lines.append("| " + " | ".join([_cell(shown)] + row) + " |")

    lines += ["", "## Lost points", ""]
    lost = [s for s in scores if s.points < s.max_points]
    if not lost:
        lines.append("None: every graded cell passed.")
    for s in lost:     # notebook and cell id are the reference's names (validated), never a student's
        lines.append(
            f"- **{_md(s.student)}** · `{s.notebook}` · `{s.cell_id}` "
            f"({number(s.points)}/{number(s.max_points)}): {_md(s.reason)}"
        )
    if warnings:
        lines += ["", "## Warnings", ""] + [f"- {_md(w)}" for w in warnings]
    if protection:
        lines += ["", "## How each run was isolated", ""] + [
            ("  - " if p.startswith("  ") else "- ") + _md(p.strip()) for p in protection]
    return "\n".join(lines) + "\n"


def isolation_lines(scores, local=None) -> list[str]:
    """The "How each run was isolated" section, from the rows themselves: each row's protection
    label was made where its run executed (a Dask worker for ``--cluster``), so the section says
    what really isolated the runs, and warns when they were not all isolated alike. ``local`` (a
    :class:`coursekit.course.grading.sandbox.Protection`) adds its full description to the runs whose label
    is its own; pass it only when the runs executed on this machine."""
    labels: dict[str, int] = {}
    for s in scores:
        if s.protection:
            labels[s.protection] = labels.get(s.protection, 0) + 1
    if not labels:
        return ["no notebook was run"]
    lines = []
    if len(labels) > 1:
        lines.append("WARNING: the runs were not all isolated alike: "
                     + "; ".join(f"{label} ({count} rows)" for label, count in labels.items()))
    for label, count in labels.items():
        lines.append(f"{label} ({count} rows):")
        details = local.describe() if local is not None and label == local.label else describe_label(label)
        lines += [f"  {line}" for line in details]
    return lines


def write_reports(scores, csv_path, warnings=(), protection=(), assigned=(), names=None) -> tuple[Path, Path]:
    """Write the CSV and the Markdown summary next to it; return both paths."""
    csv_path = write_csv(scores, csv_path)
    md_path = csv_path.with_suffix(".md")
    md_path.write_text(summary_markdown(scores, warnings, protection, assigned, names), encoding="utf-8")
    return csv_path, md_path

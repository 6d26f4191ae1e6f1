"""Command line: ``python -m coursekit exercises|grade ...`` (also installed as ``coursekit``).

* ``coursekit exercises [--check]`` regenerates ``exercises/`` from ``solutions/`` (or, with
  ``--check``, only lists the stale files and exits 1 when there are any: the same test CI runs);
* ``coursekit grade SUBMISSIONS --out grades.csv`` grades a folder of student notebooks;
* ``coursekit calibrate [--name NAME]`` measures this machine's GPU and saves it as a cost-model preset
  (see docs/gpu-model.md); without a GPU it says it needs one;
* ``coursekit mutate [--task ID] [--limit N]`` grades mutants of each graded task's solution with the
  task's judge and reports how many each judge kills (see docs/teaching.md);
* ``coursekit gpu-models [NAME...]`` lists the presets of the modelled GPU (built-in and calibrated),
  with their figures and sources;
* ``coursekit start [DIR]`` copies the student course into DIR (never over a student's change) and opens
  JupyterLab on it; ``coursekit doctor`` says what this machine has and lacks for each lesson;
* ``coursekit release OUT`` writes the student folder and zip for an LMS or a hub; ``setup-cells`` and
  ``colab-table`` write the notebooks' setup cell and the README's Colab table (authors).

See docs/teaching.md for the whole workflow. Only the course machinery is imported here, lazily,
so that these commands work even while the array compiler is being changed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from coursekit.config import config
from coursekit.course.student import doctor, start


def usable_cores() -> int:
    """Cores this process may run on (a container's or taskset's share, not the machine's total)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _exercises(args) -> int:
    from coursekit.course.authoring.exercises import ExerciseError, generate

    solutions = Path(args.solutions)
    if not solutions.is_dir():
        print(f"error: {solutions}/ not found (in {Path.cwd()}); run from the repository root or pass "
              f"--solutions DIR.", file=sys.stderr)
        return 2
    try:
        stale = generate(solutions, args.exercises, check=args.check)
    except ExerciseError as exc:
        print(f"error: cannot generate exercises; fix these in {solutions}/:\n{exc}", file=sys.stderr)
        return 2
    from coursekit.course.authoring.exercises import exercise_name

    sources = {exercise_name(p.name): p for p in solutions.glob("*.ipynb")}
    orphans = [p for p in stale if p.parent != solutions and p.name not in sources]
    for path in orphans:
        print(f"{path}: no source in {solutions}/; delete it or add its NN_name_solutions.ipynb there",
              file=sys.stderr)
    remarked = [p for p in stale if p.parent == solutions]
    regenerated = [p for p in stale if p.parent != solutions and p.name in sources]
    if args.check:
        for path in remarked:
            print(f"{path}: graded-cell marks (first line, pass line, nbgrader metadata) not in line",
                  file=sys.stderr)
        for path in regenerated:
            print(f"{path}: out of date with {sources[path.name]}", file=sys.stderr)
        if stale:
            print("run `python -m coursekit exercises` and commit the result.", file=sys.stderr)
            return 1
        print(f"exercises up to date ({len(sources)} notebooks).")
        return 0
    for path in remarked:
        print(f"marked graded cells in {path}")
    for path in regenerated:
        print(f"wrote {path}")
    print(f"{len(regenerated)} of {len(sources)} exercise notebooks regenerated.")
    return 1 if orphans else 0


def _grade(args) -> int:
    from coursekit.course.grading import cluster, export, regrade, roundtrip
    from coursekit.course.grading.grader import grade
    from coursekit.course.grading.report import isolation_lines, number, write_reports
    from coursekit.course.grading.sandbox import detect

    try:
        reused = roundtrip.apply_scope(args)
        formats = export.parse_formats(args.export)
        lms = roundtrip.prepare(args, formats)
        previous = regrade.read_previous(args.regrade or args.out) if args.regrade is not None else None
        if reused:
            print(f"regrade: reusing the last run's scope ({regrade.scope_path(args.regrade or args.out)}): "
                  f"{', '.join(reused)}; pass an option again to change it (--assignment all: every exercise)")
        scores, warnings = grade(
            args.submissions, args.reference, cell_timeout=args.cell_timeout,
            notebook_timeout=args.notebook_timeout, jobs=args.jobs, executed_dir=args.executed,
            progress=not args.no_progress, assignment=args.assignment, cluster=args.cluster, previous=previous,
            source=args.source,
        )
        warnings += roundtrip.report(lms, scores, args.submissions, formats)
    except (FileNotFoundError, ValueError, cluster.ClusterError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: running notebooks were stopped; no grades written.", file=sys.stderr)
        return 130
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    isolation = isolation_lines(scores, None if args.cluster else detect())   # from the rows: where runs ran
    print("isolation:", *isolation, sep="\n  ", file=sys.stderr)
    assigned = list(dict.fromkeys(s.notebook for s in scores)) if args.assignment else []
    csv_path, md_path = write_reports(scores, args.out, warnings, isolation, assigned,
                                      lms.names if lms else None)
    roundtrip.save(args)
    students = len({s.student for s in scores})
    got, out_of = sum(s.points for s in scores), sum(s.max_points for s in scores)
    if assigned:
        print(f"assigned: {', '.join(assigned)}")
    print(f"graded {students} students: {number(got)}/{number(out_of)} points in all.")
    print(f"wrote {csv_path} and {md_path}")
    if previous is not None:
        counts = _regrade_counts(previous, scores) + (regrade.grader_failed(previous, _keys(scores)),)
        diff_csv, diff_md, changes = regrade.write_diff(previous, scores, csv_path, *counts)
        print(f"regrade: {len({c.student for c in changes})} students' points changed; {counts[2]} notebooks "
              f"re-run because the grader had failed them; wrote {diff_csv} and {diff_md}")
    for path in export.write_exports(scores, csv_path, formats, assigned, regrade.grader_version(), lms):
        print(f"wrote {path}")
    return 0


def _keys(scores) -> set:
    return {(s.student, s.notebook) for s in scores}


def _regrade_counts(previous, scores) -> tuple[int, int]:
    """(notebooks graded again, notebooks kept): a kept notebook's rows are the previous rows, unchanged."""
    earlier = set(previous)
    notebooks = {(s.student, s.notebook) for s in scores}
    rerun = {(s.student, s.notebook) for s in scores if s not in earlier}
    return len(rerun), len(notebooks - rerun)


def _calibrate(args) -> int:
    from coursekit.costmodel import calibrate, presets

    if args.name is not None and (not presets.NAME_RE.match(args.name) or args.name in presets.PRESETS):
        print(f"error: --name {args.name!r}: use lowercase letters, digits, '-', '_' or '.', and not a built-in "
              f"preset ({', '.join(presets.PRESETS)})", file=sys.stderr)
        return 2
    try:
        spec, path = calibrate.calibrate(args.name, repeats=args.repeats)
    except calibrate.NoGPU as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"measured {spec.name}:\n{calibrate.describe(spec)}")
    print(f"saved {path}\nuse it with COURSEKIT_FLAGS=gpu_model={spec.key} "
          f"or coursekit.config.change(gpu_model={spec.key!r})")
    return 0


def _gpu_models(args) -> int:
    from coursekit.costmodel import calibrate, presets

    names = args.names or presets.available()
    for name in names:
        try:
            spec = presets.get(name)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        chosen = " (config.gpu_model now)" if spec.key == config.gpu_model else ""
        kind = "measured by calibrate" if spec.measured else "each figure's source: datasheet, published, calibration or guess"
        print(f"{spec.key}{chosen}: {spec.name} [{kind}]\n{calibrate.describe(spec)}")
        if args.names:
            print("  sources:\n" + "\n".join(f"    - {source}" for source in spec.sources))
            if spec.figure_sources:
                print("  per figure:\n" + "\n".join(f"    {name}: {kind} ({where})"
                                                     for name, kind, where in spec.figure_sources))
    return 0


def _start(args) -> int:
    try:
        copied = start.copy_course(args.dir, update=args.update)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    folder = Path(args.dir)
    print(f"course folder: {folder.resolve()}")
    for line in copied.lines(folder):
        print(line)
    if args.no_lab:
        print(f"open {folder / start.FIRST_LESSON} in Jupyter to begin (or run `coursekit start {folder}`).")
        return 0
    return start.open_lab(folder)


def _doctor(args) -> int:
    lines, status = doctor.report()
    print("\n".join(lines))
    return status


def _authoring(args) -> int:
    from coursekit.course.authoring import commands

    return getattr(commands, args.authoring)(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coursekit", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    ex = commands.add_parser("exercises", help="generate exercises/ from solutions/",
                             description="Regenerate the student notebooks from the solutions notebooks.")
    ex.add_argument("--check", action="store_true", help="write nothing; exit 1 listing stale exercises")
    ex.add_argument("--solutions", default="solutions", help="source notebooks (default: solutions)")
    ex.add_argument("--exercises", default="exercises", help="generated notebooks (default: exercises)")
    ex.set_defaults(func=_exercises)

    gr = commands.add_parser("grade", help="grade a folder of student submissions",
                             description="Grade SUBMISSIONS/<student>/<NN_name>.ipynb (or "
                                         "SUBMISSIONS/<student>__<NN_name>.ipynb) against the reference.")
    gr.add_argument("submissions", help="folder of submissions")
    gr.add_argument("--out", default="grades.csv", help="CSV to write; the Markdown summary goes next to it "
                                                        "(default: grades.csv)")
    gr.add_argument("--reference", help="reference notebooks (default: exercises)")
    gr.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell (default: 60)")
    gr.add_argument("--notebook-timeout", type=int, default=600, help="seconds per notebook (default: 600)")
    gr.add_argument("--jobs", type=int, default=usable_cores(),
                    help=f"notebooks graded at once (default: this machine's usable cores, {usable_cores()})")
    gr.add_argument("--executed", metavar="DIR", help="also save each executed notebook as DIR/<student>/<NN_name>.ipynb")
    gr.add_argument("--no-progress", action="store_true", help="no progress bar")
    gr.add_argument("--assignment", metavar="LIST", help="grade and total only these exercises: numbers or names, "
                                                          "comma-separated (e.g. 03,05)")
    gr.add_argument("--export", metavar="FORMATS", help="also write gradebook files next to --out: canvas, moodle, "
                                                         "json (comma-separated)")
    gr.add_argument("--regrade", nargs="?", const="", metavar="PREVIOUS_CSV",
                    help="re-run only notebooks whose submission or judges changed since PREVIOUS_CSV (default: "
                         "the --out file), and those the grader failed; reuse its scope (--assignment, --from, "
                         "--roster ...) unless given; write <out>-regrade-N.csv/.md (numbered, never overwritten)")
    gr.add_argument("--from", dest="source", choices=["canvas", "moodle"],
                    help="SUBMISSIONS is an LMS's download as it comes: Canvas's flat files or Moodle's folders; "
                         "students are keyed by the LMS's user id")
    gr.add_argument("--roster", metavar="FILE", help="the LMS's gradebook file (Canvas: the gradebook export; "
                                                     "Moodle: the grading worksheet): names, ids and the columns "
                                                     "the export fills")
    gr.add_argument("--missing", choices=["blank", "zero"], help="export cell of a roster student who handed in "
                                                                  "nothing (default: blank, and the summary says so)")
    gr.add_argument("--lms-column", action="append", metavar="NN=COLUMN",
                    help="the Canvas gradebook column of an exercise, e.g. 05=\"Lab 5 (12345)\" (repeatable)")
    gr.add_argument("--cluster", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786 or a scheduler "
                                                          "file) instead of --jobs local runs")
    gr.set_defaults(func=_grade)

    ca = commands.add_parser("calibrate", help="measure this machine's GPU and save a cost-model preset",
                             description="Measure memory and link bandwidth, launch latency, allocation cost and "
                                         "peak FLOP/s of GPU 0 with CuPy micro-benchmarks and save the result "
                                         "as a preset for the modelled GPU (needs a real NVIDIA GPU).")
    ca.add_argument("--name", help="preset name (default: from the card's name, e.g. nvidia-h100-80gb-hbm3)")
    ca.add_argument("--repeats", type=int, default=5, help="repeats per measurement (default: 5)")
    ca.set_defaults(func=_calibrate)

    gm = commands.add_parser("gpu-models", help="list the modelled GPU's presets",
                             description="Show the GPU presets of the cost model (select one with "
                                         "COURSEKIT_FLAGS=gpu_model=NAME); with names, also their sources.")
    gm.add_argument("names", nargs="*", help="presets to show in full (default: all, without sources)")
    gm.set_defaults(func=_gpu_models)

    st = commands.add_parser("start", help="copy the student course into a folder and open JupyterLab on it",
                             description="Copy the lessons and exercises out of the installed package into DIR "
                                         "and open JupyterLab there at lesson 1. A notebook you changed is never "
                                         "overwritten; a later start adds what is new and says what it kept.")
    st.add_argument("dir", nargs="?", default=start.DEFAULT_DIR, help=f"course folder (default: {start.DEFAULT_DIR})")
    st.add_argument("--update", action="store_true", help="also replace notebooks you have not changed with their "
                                                          "newer version (after upgrading coursekit)")
    st.add_argument("--no-lab", action="store_true", help="copy only; do not open JupyterLab")
    st.set_defaults(func=_start)

    dr = commands.add_parser("doctor", help="what this machine has and lacks for each lesson",
                             description="Check Python, the C++ compiler (lessons 7, 9, 11), CuPy and a GPU, "
                                         "JupyterLab and bubblewrap, and print the fix for each gap.")
    dr.set_defaults(func=_doctor)

    rl = commands.add_parser("release", help="write the student folder and zip (for an LMS or a hub)",
                             description="Write the student course (lessons and exercises, no solutions) to OUT "
                                         "and OUT.zip, and check both for answer lines.")
    rl.add_argument("out", help="a new folder")
    rl.set_defaults(func=_authoring, authoring="run_release")

    sc = commands.add_parser("setup-cells", help="write the setup cell into every lesson and solution (authors)")
    sc.add_argument("--check", action="store_true", help="write nothing; exit 1 listing notebooks to update")
    sc.set_defaults(func=_authoring, authoring="run_setup_cells")

    ct = commands.add_parser("colab-table", help="write README.md's Open in Colab table and the notebooks' "
                                                  "Colab links (authors)")
    ct.add_argument("--check", action="store_true", help="write nothing; exit 1 when the table is out of date")
    ct.set_defaults(func=_authoring, authoring="run_colab_table")

    tp = commands.add_parser("text-pairs", help="write each lesson's text pair, notebooks/text/NN_name.py (authors)")
    tp.add_argument("--check", action="store_true", help="write nothing; exit 1 listing pairs out of date")
    tp.set_defaults(func=_authoring, authoring="run_text_pairs")

    mu = commands.add_parser("mutate", help="test the graded cells' judges by mutating the solutions",
                             description="Mutate each graded task's solution region, grade every mutant with the "
                                         "task's judge and report the share of non-equivalent mutants killed "
                                         "(docs/teaching.md, 'Judges tested by mutation').")
    mu.add_argument("--solutions", default="solutions", help="source notebooks (default: solutions)")
    mu.add_argument("--task", action="append", help="cell id, NN or NN:cell-id (repeatable; default: all)")
    mu.add_argument("--limit", type=int, default=None, help="at most N mutants per task, spread evenly")
    mu.add_argument("--match", default=None, help="only mutants whose description holds TEXT (e.g. __syncthreads)")
    mu.add_argument("--cell-timeout", type=float, default=60, help="seconds per cell (default: 60)")
    mu.add_argument("--out", default=None, help="also write the results as Markdown to this file")
    mu.set_defaults(func=_authoring, authoring="run_mutate")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

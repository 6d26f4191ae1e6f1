"""Reading an LMS's submission download as it comes: Canvas's flat files, Moodle's folders.

``coursekit grade DIR --from canvas|moodle`` grades the unzipped download itself; nobody renames
files by hand. Each student is keyed by the LMS's own user id, so the grades line up with the
roster (:mod:`.roster`) and the gradebook import, whatever the student named the file.

**Canvas** ("Download Submissions" of an assignment) writes every file flat into one zip.
Canvas's own code (``lib/content_zipper.rb`` in instructure/canvas-lms: ``get_filename``,
``add_upload_submission``, ``sanitize_user_name``) names each file

    <sortable name>[_LATE]_<user id>_<attachment id>_<the student's file name>

where the sortable name ("Doe, Jane") is lowercased with every non-word character removed
(``doejane``) and any ``_digits_`` in it collapsed, so the first ``_<digits>_<digits>_`` of a name
is the pair of ids; ``LATE`` (written ``late`` by some versions: matched either way) marks late
work; anonymous grading writes ``anon_<id>`` instead of the user id (and no name). The second number
is the file's attachment id (the issue calls it the submission id). A file a student uploaded twice
under one name carries Canvas's ``-1`` … ``-7`` (or ``-<uuid>``) suffix (``Attachment.make_unique_filename``).

The student's own file name is matched to an exercise by the course's usual rules after that suffix
is dropped (exact name, the pre-rename name, an unambiguous ``NN_`` prefix: see
:mod:`.submissions`). A notebook that still matches nothing is graded as the assignment's exercise
only when exactly one exercise is assigned (``--assignment 05``: a Canvas assignment is normally one
notebook), and the summary says so; two such notebooks of one student are refused as ambiguous
(0 points, the reason names both), never guessed.

**Moodle** ("Download all submissions", in folders: the default since Moodle 3.1) writes one folder
per student named ``<Full Name>_<participant id>_assignsubmission_file_`` (``mod/assign/locallib.php``:
``download_submissions``, the name cleaned by ``clean_filename`` with ``_`` in the name turned into
spaces). The participant id is the assignment's own id for the student (``get_uniqueid_for_user``),
the one its grading worksheet calls ``Participant 123456``. Files of other plugins
(``assignsubmission_onlinetext_``) are listed as ignored. The older flat layout (the same prefix
before each file name) is read too.

Everything :mod:`.submissions` refuses stays refused: links are never followed (a linked file or
folder scores 0 with the reason), paths must stay inside the download, files are read later through
``O_NOFOLLOW``. Standard library only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .escape import printable_name
from .submissions import Refused, inside, link_in_path, walk_files, _exact, _match

SOURCES = ("canvas", "moodle")
CANVAS_RE = re.compile(r"^(?:(?P<name>.*?)_)??(?:(?P<late>late)_)?(?P<uid>\d+|anon_[A-Za-z0-9]+)_(?P<fid>\d+)_"
                       r"(?P<file>.+)$", re.IGNORECASE)
CANVAS_COPY_RE = re.compile(r"-(?:\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
MOODLE_RE = re.compile(r"^(?P<name>.+)_(?P<uid>\d+)_(?P<plugin>assignsubmission_[a-z]+)_(?P<file>.*)$")


def parse_canvas(filename: str) -> dict | None:
    """``{"uid", "name", "late", "file"}`` of a Canvas download's file name, or None if it is not one."""
    found = CANVAS_RE.match(filename)
    if not found:
        return None
    return {"uid": found["uid"], "name": found["name"] or "", "late": bool(found["late"]), "file": found["file"]}


def parse_moodle(name: str) -> dict | None:
    """``{"uid", "name", "plugin", "file"}`` of a Moodle download's folder (or flat file) name, or None."""
    found = MOODLE_RE.match(name)
    if not found:
        return None
    return {"uid": found["uid"], "name": found["name"], "plugin": found["plugin"], "file": found["file"]}


def canvas_stem(own_name: str) -> str:
    """The student's file name without ``.ipynb`` and without Canvas's ``-N`` re-upload suffix."""
    return CANVAS_COPY_RE.sub("", Path(own_name).stem)


class LmsLayoutError(ValueError):
    """The folder is not the download it was said to be; the message says what was expected."""


def collect(download, source: str) -> tuple[dict, dict, list[str]]:
    """``({uid: [(path, own name) or Refused]}, {uid: name}, warnings)`` of a download folder.

    Links are not followed: a linked entry of a student becomes a :class:`Refused` with the reason.
    """
    download = Path(download)
    if source not in SOURCES:
        raise LmsLayoutError(f"--from {source!r}: choose canvas or moodle")
    if not download.is_dir():
        raise FileNotFoundError(f"download folder {download} does not exist.")
    files: dict = {}
    names: dict = {}
    warnings: list[str] = []
    for entry in sorted(download.iterdir()):
        if entry.name.startswith("."):
            continue
        shown = printable_name(entry.name)
        parsed = parse_canvas(entry.name) if source == "canvas" else parse_moodle(entry.name)
        if parsed is None:
            warnings.append(f"ignored {shown}: not a {source} download name ({_expected(source)})")
            continue
        uid = parsed["uid"]
        names.setdefault(uid, parsed["name"])
        if entry.is_symlink():
            files.setdefault(uid, []).append(Refused(shown, f"refused: the submitted entry {shown} is a symbolic "
                                                            "link; hand in the work itself"))
        elif source == "moodle" and parsed["plugin"] != "assignsubmission_file":
            warnings.append(f"{uid}: ignored {shown}: not a file submission ({parsed['plugin']})")
        elif entry.is_dir():
            _add_folder(download, entry, uid, files, warnings)
        elif entry.suffix == ".ipynb":
            files.setdefault(uid, []).append((entry, parsed["file"]))
        else:
            warnings.append(f"{uid}: ignored {shown}: not a notebook")
    if not files:
        held = sorted(printable_name(p.name) for p in download.iterdir() if not p.name.startswith("."))
        shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "") or "nothing"
        raise LmsLayoutError(f"--from {source}: {download} holds no {source} submission (it holds {shown}); "
                             f"{_expected(source)}. Unzip the download itself there, or grade a folder per student "
                             f"without --from")
    return files, names, warnings


def _add_folder(download: Path, folder: Path, uid: str, files: dict, warnings: list[str]) -> None:
    found, links = walk_files(folder)
    for path in found:
        if path.suffix != ".ipynb":
            warnings.append(f"{uid}: ignored {printable_name(path.relative_to(download))}: not a notebook")
        elif os.path.islink(path) or link_in_path(download, path.parent) or not inside(download, path):
            files.setdefault(uid, []).append(Refused(printable_name(path.name), "refused: the notebook is, or is "
                                                     "reached through, a symbolic link; hand in the work itself"))
        else:
            files.setdefault(uid, []).append((path, path.name))
    if links:
        warnings.append(f"{uid}: symbolic links not followed: {', '.join(links[:5])}")


def _expected(source: str) -> str:
    if source == "canvas":
        return "expected Canvas's <sortablename>[_late]_<userid>_<fileid>_<file>.ipynb"
    return "expected Moodle's '<Full Name>_<participantid>_assignsubmission_file_' folders"


def hint(folder) -> list[str]:
    """A warning when a folder graded without ``--from`` looks like an LMS download (else ``[]``)."""
    try:
        entries = [e for e in Path(folder).iterdir() if not e.name.startswith(".")]
    except OSError:
        return []
    for source, parse in (("moodle", parse_moodle), ("canvas", parse_canvas)):
        named = [e for e in entries if parse(e.name) and (source == "moodle" or e.suffix == ".ipynb")]
        if named and len(named) * 2 >= len(entries):
            return [f"{len(named)} of the {len(entries)} entries are named like a {source} download "
                    f"({printable_name(named[0].name)}): grade it with --from {source} to key students by user id"]
    return []


def find_lms_submissions(download, source: str, references: list, assigned: list):
    """Map each LMS user id to ``{reference name: path or Refused}``; also return warnings and names.

    ``references`` are all the exercises (a file is matched against every one by name);
    ``assigned`` the ones graded now (the fallback for a file whose name matches none, when there is
    exactly one). Returns ``(students, warnings, names)``.
    """
    files, names, warnings = collect(download, source)
    all_names = [ref.name for ref in references]
    only = assigned[0].name if len(assigned) == 1 else None
    students: dict = {}
    for uid, entries in files.items():
        chosen: dict = {}
        guessed: dict = {}
        for entry in entries:
            if isinstance(entry, Refused):
                students[uid] = {name: entry for name in all_names}
                break
            path, own = entry
            stem = canvas_stem(own) if source == "canvas" else Path(own).stem
            name = _match(stem, all_names)
            if name is None and only is not None:
                guessed.setdefault(only, []).append(path)
                continue
            if name is None:
                warnings.append(f"{uid}: ignored {printable_name(own)}: it matches no exercise ({', '.join(all_names)}); "
                                "with one exercise per LMS assignment, grade with --assignment NN")
                continue
            exact = _exact(stem, all_names) is not None
            chosen.setdefault(name, []).append((not exact, printable_name(path.name), path))
        else:
            students[uid] = _settle(uid, chosen, guessed, warnings)
    return students, warnings, names


def _settle(uid: str, chosen: dict, guessed: dict, warnings: list[str]) -> dict:
    """One notebook per exercise: an exact name wins with a warning; unnamed guesses must be alone."""
    result = {}
    for name, candidates in chosen.items():
        candidates.sort(key=lambda c: (c[0], c[1]))
        if len(candidates) > 1:
            warnings.append(f"{uid}: {len(candidates)} submissions for {name} "
                            f"({', '.join(c[1] for c in candidates)}); graded {candidates[0][1]}")
        result[name] = candidates[0][2]
    for name, paths in guessed.items():
        shown = ", ".join(printable_name(p.name) for p in paths)
        if name in result:
            warnings.append(f"{uid}: ignored {shown}: {name} was handed in under its own name")
        elif len(paths) > 1:
            result[name] = Refused(shown, f"refused: {len(paths)} notebooks ({shown}) could each be {name}; "
                                          f"hand in one, named {name}.ipynb")
            warnings.append(f"{uid}: {result[name].reason}")
        else:
            result[name] = paths[0]
            warnings.append(f"{uid}: graded {shown} as {name} (the only exercise assigned)")
    return result

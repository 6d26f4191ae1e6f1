"""The answer-line check: no line of a solution may reach a student through the package.

An *answer line* is a line of code inside a solution region of ``solutions/*.ipynb`` (markers and hints
left out) that appears in no public file: no exercise, no lesson, no module of the library. Such a line
exists only because a solution exists, so finding one in a wheel, an sdist or a released folder means a
solution leaked (a solutions notebook packaged, a test with answers shipped, an answer pasted into a
lesson). Lines are compared whole, after stripping indentation; a notebook is read cell by cell (its
JSON escapes would hide a line from a plain text search).

Used by ``coursekit release`` on what it wrote, and by tests/test_package.py on the built wheel and
sdist (and on an archive with a solutions notebook slipped in, to show that the check can fail).
"""
from __future__ import annotations

import json
import tarfile
import zipfile
from pathlib import Path

from .exercises import ANY_MARKER_RE, find_regions


def _cell_lines(text: str) -> set[str]:
    """Stripped lines of a text; for a notebook (JSON with cells), of its cells' sources and outputs."""
    lines = set(text.splitlines())
    if text.lstrip().startswith("{") and '"cells"' in text:
        try:
            nb = json.loads(text)
        except ValueError:
            nb = None
        for cell in (nb or {}).get("cells", []) if isinstance(nb, dict) else []:
            source = cell.get("source", "")
            lines.update(("".join(source) if isinstance(source, list) else str(source)).splitlines())
            for output in cell.get("outputs", []) or []:
                text_out = output.get("text", "")
                lines.update(("".join(text_out) if isinstance(text_out, list) else str(text_out)).splitlines())
    return {line.strip() for line in lines if line.strip()}


def solution_lines(solutions_dir) -> dict[str, str]:
    """``{stripped line: "NN_name_solutions.ipynb"}`` for every line inside a solution region."""
    found: dict[str, str] = {}
    for path in sorted(Path(solutions_dir).glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for number, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            lines = source.splitlines()
            for region in find_regions(source, f"{path.name}, cell {number}"):
                for line in lines[region.begin + 1:region.end]:
                    if line.strip() and not ANY_MARKER_RE.search(line):
                        found.setdefault(line.strip(), path.name)
    return found


def answer_lines(root) -> dict[str, str]:
    """Solution lines of the checkout at ``root`` that no exercise, lesson or library module contains."""
    root = Path(root)
    public: set[str] = set()
    for pattern in ("notebooks/*.ipynb", "exercises/*.ipynb", "coursekit/**/*.py"):
        for path in root.glob(pattern):
            public |= _cell_lines(path.read_text(encoding="utf-8", errors="replace"))
    return {line: where for line, where in solution_lines(root / "solutions").items() if line not in public}


def archive_texts(path) -> dict[str, str]:
    """``{member name: text}`` of every file in a wheel/zip, an sdist (tar.gz) or a folder."""
    path = Path(path)
    if path.is_dir():
        return {p.relative_to(path).as_posix(): p.read_text(encoding="utf-8", errors="replace")
                for p in sorted(path.rglob("*")) if p.is_file()}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return {info.filename: archive.read(info).decode("utf-8", errors="replace")
                    for info in archive.infolist() if not info.is_dir()}
    if tarfile.is_tarfile(path):
        texts = {}
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    texts[member.name] = archive.extractfile(member).read().decode("utf-8", errors="replace")
        return texts
    raise ValueError(f"{path}: not a folder, a wheel/zip or a tar archive; give the built wheel or sdist")


def leaks(path, answers: dict[str, str]) -> list[str]:
    """One line per file of ``path`` that holds answer lines: the file, how many, and one example."""
    found = []
    for name, text in archive_texts(path).items():
        hits = sorted(_cell_lines(text) & set(answers))
        if hits:
            found.append(f"{name}: {len(hits)} answer lines of {answers[hits[0]]}, e.g. {hits[0]!r}")
    return found


def with_extra_member(archive, name: str, data: bytes, out) -> Path:
    """A copy of a wheel/zip with one more member: how the tests slip a solution into a wheel."""
    out = Path(out)
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info, source.read(info))
        target.writestr(name, data)
    return out


__all__ = ["answer_lines", "archive_texts", "leaks", "solution_lines", "with_extra_member"]

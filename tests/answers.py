"""Substitute an answer into a solution notebook's solution region (a helper of test_graded_answers)."""

from __future__ import annotations

import textwrap

from coursekit.course.authoring.exercises import BEGIN_RE, END_RE


def substitute(nb, anchor: str, code: str):
    """Replace the solution region holding (or else the first one after) the first line that starts
    with ``anchor`` (``def f(``, ``NAME = r\"\"\"``) with ``code``, at the region's indentation. In place."""
    for cell in nb.cells:
        lines = cell.source.splitlines()
        starts = [i for i, line in enumerate(lines) if line.strip().startswith(anchor)]
        if cell.cell_type != "code" or not starts:
            continue
        opened = [i for i in range(starts[0] + 1) if BEGIN_RE.match(lines[i])]
        closed = [i for i in range(starts[0]) if END_RE.match(lines[i])]
        inside = opened and (not closed or closed[-1] < opened[-1])
        begin = opened[-1] if inside else next(i for i in range(starts[0], len(lines)) if BEGIN_RE.match(lines[i]))
        end = next(i for i in range(begin, len(lines)) if END_RE.match(lines[i]))
        indent = BEGIN_RE.match(lines[begin]).group("indent")
        body = textwrap.indent(textwrap.dedent(code).strip("\n"), indent).splitlines()
        cell.source = "\n".join(lines[:begin] + body + lines[end + 1:])
        return nb
    raise KeyError(f"no code cell with a line starting {anchor!r}")

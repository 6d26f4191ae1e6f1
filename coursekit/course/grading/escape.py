"""Text from submissions made safe for the places the grader writes it.

Student names, file names, error messages and assertion texts come from the submissions, so the
grader treats them as hostile wherever it writes them (helpers here are also what the grade
exports to learning platforms use):

* :func:`csv_cell` — a spreadsheet executes a cell that starts with ``=``, ``+``, ``-``, ``@``, a
  tab or a carriage return (CSV injection, OWASP); such a cell gets a leading ``'``, which the
  spreadsheet shows as text.
* :func:`markdown_text` — one line of literal Markdown that is also inert HTML: no heading, list,
  table cell, link, emphasis, code span or tag can start inside it.
* :func:`terminal_text` — no escape sequence or control character reaches the instructor's terminal.
* :func:`printable_name` — a file name whose bytes are not UTF-8 (legal on Linux) as text, the
  undecodable bytes written as ``\\xNN``, so reporting it can never raise.

Standard library only.
"""

from __future__ import annotations

import os
import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# ANSI/VT escape sequences (CSI ... final byte, OSC ... BEL or ST, two-byte ESC x), then every other
# C0 and C1 control character and DEL.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Markdown's markup characters, and underscores that can open or close emphasis (not those inside a
# word like infinite_loop, which CommonMark leaves alone): "NameError: name '__name__' ..." must not
# render as bold.
_MARKUP = re.compile(r"[\\`*\[\]|#!~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_NAME_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")     # in a name even a tab or a newline is escaped
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def terminal_text(text) -> str:
    """``text`` without terminal escape sequences or control characters (tabs and newlines kept)."""
    return _CONTROLS.sub("", _ESCAPES.sub("", str(text)))


def one_line(text) -> str:
    """``text`` as one line of printable text: controls stripped, every run of white space one blank."""
    return " ".join(terminal_text(text).split())


def csv_cell(text) -> str:
    """``text`` for a CSV cell a spreadsheet shows and never runs: a formula's first character is
    preceded by ``'``; controls are stripped. Numbers the grader wrote itself need no help."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return str(text)                 # a number is a number, never a formula, "-1.5" included
    text = str(text)
    if text.startswith(FORMULA_STARTS):
        text = "'" + text
    return terminal_text(text).replace("\n", " ")


def markdown_text(text) -> str:
    """``text`` as one line of literal Markdown that is inert HTML too (see the module docstring)."""
    text = _MARKUP.sub(lambda m: "\\" + m.group(0), one_line(text))
    text = re.sub(r"[&<>]", lambda m: _HTML[m.group(0)], text)
    # a line start that Markdown reads as a list item or a heading underline: "- x", "+ x", "1. x", "==="
    return re.sub(r"^([-+=]|\d+[.)])", r"\\\1", text)


def printable_name(path) -> str:
    """A path as printable text, whatever its bytes: undecodable bytes as ``\\xNN``, controls escaped."""
    raw = os.fsencode(path) if not isinstance(path, bytes) else path
    text = raw.decode("utf-8", errors="backslashreplace")
    return _NAME_CONTROLS.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)

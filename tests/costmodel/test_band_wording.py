"""No lesson or doc passes in-sample agreement off as the model's error (issue 35).

The cost model's band is quoted HELD OUT (docs/gpu-model.md, "How wrong the model is"): a band fitted
on the corpus contains the corpus by construction, so a row inside it validates nothing.  Two rules, read
sentence by sentence from the lessons' and solutions' prose, code and stored outputs, and from the docs:

* a sentence that says "validated" / "validation" about the model says "held out" (or "out of sample"),
  or says that what it describes is in-sample;
* a sentence that quotes the in-sample band (x0.79-1.46, -21%/+46%) says "in-sample".
"""
from __future__ import annotations

import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IN_SAMPLE_BAND = re.compile(r"[-−]21\s?%\s?/\s?\+46\s?%|0\.79\s?(?:…|\.\.\.|-|–|to)\s?1\.46")
VALIDATED = re.compile(r"\bvalidat(?:ed|ion|es|e)\b(?!\s+(?:and test|errors?|sets?|loss|data|split))", re.I)
SAYS_HELD_OUT = re.compile(r"held[- ]out|out of sample|out-of-sample", re.I)
SAYS_IN_SAMPLE = re.compile(r"in[- ]sample", re.I)
ABOUT_THE_MODEL = re.compile(r"model|band|corpus|predict", re.I)


def _texts():
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            for index, cell in enumerate(nb.cells):
                yield f"{path.name} cell {index}", cell.source, cell.cell_type == "code"
                for output in cell.get("outputs", ()):
                    yield f"{path.name} cell {index} (output)", str(output.get("text") or
                                                                   output.get("data", {}).get("text/plain", "")), True
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield path.name, path.read_text(encoding="utf-8"), False


def _sentences(text, by_line):
    """Prose: sentences (ending at . ; ! ? or a blank line or table row); code and printed output: lines."""
    blocks = text.splitlines() if by_line else re.split(r"\n\s*\n|\n(?=\|)", text)
    for block in blocks:
        yield from (s for s in re.split(r"(?<=[.;!?])\s+", block) if s.strip())


def violations(texts):
    found = []
    for where, text, by_line in texts:
        for sentence in _sentences(text, by_line):
            if IN_SAMPLE_BAND.search(sentence) and not SAYS_IN_SAMPLE.search(sentence):
                found.append(f"{where}: quotes the in-sample band as the error: {sentence.strip()[:200]!r}")
            if (VALIDATED.search(sentence) and ABOUT_THE_MODEL.search(sentence)
                    and not (SAYS_HELD_OUT.search(sentence) or SAYS_IN_SAMPLE.search(sentence))):
                found.append(f"{where}: calls agreement 'validated' without saying held out: {sentence.strip()[:200]!r}")
    return found


def test_no_lesson_or_doc_calls_in_sample_agreement_the_models_error():
    found = violations(_texts())
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", [
    "The model is validated: every H100 row falls inside its band.",
    "133 µs modelled (h100, -21%/+46%) vs 128.9 µs measured",
    "measured = modelled × 0.79 … 1.46, shown as the model's error",
])
def test_the_check_catches_each_kind_of_claim(text):
    assert violations([("planted", text, False)]) and violations([("planted", text, True)])


@pytest.mark.parametrize("text", [
    "Held out (one workload left out at a time) the band is -24%/+79%; the model was validated held out.",
    "Fitted and judged on the same rows the spread is -21%/+46%: in-sample agreement, not an error.",
])
def test_the_check_lets_honest_wording_through(text):
    assert not violations([("honest", text, False)])

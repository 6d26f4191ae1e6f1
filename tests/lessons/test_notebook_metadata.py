"""Every notebook of the course names its kernel the way JupyterLab itself writes it.

JupyterLab rewrites ``metadata.kernelspec`` on save with the running kernel's own spec
(``python3`` / "Python 3 (ipykernel)"). A notebook stored with another display name therefore
opens as modified and its first save changes the file, so ``git status`` and ``git pull`` fight a
student who has only read a lesson. One spelling across the course, checked here, avoids that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb"))
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kernelspec_is_the_one_jupyterlab_writes(path):
    kernelspec = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("kernelspec")
    assert kernelspec == KERNELSPEC, (
        f"{path.relative_to(ROOT)} stores kernelspec {kernelspec!r}; JupyterLab would rewrite it to "
        f"{KERNELSPEC!r} on the first save. Set metadata.kernelspec to that.")


def test_there_are_notebooks_to_check():
    assert len(NOTEBOOKS) >= 30

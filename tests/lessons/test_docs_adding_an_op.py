"""docs/adding-an-op.md: its examples are run here, block by block, so the page cannot rot."""
import re
from pathlib import Path

import coursekit as theano

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-an-op.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_shows_the_three_routes():
    text = DOC.read_text()
    for heading in ("## 1. A composition of existing ops", "## 2. A row of the scalar table", "## 3. A class"):
        assert heading in text


def test_every_example_runs():
    namespace = {"__name__": "adding_an_op_example"}
    for block in _blocks():  # each block holds its own asserts: what the page says is what runs
        exec(compile(block, str(DOC), "exec"), namespace)
    assert {"softsign", "cbrt", "Roll", "Doubled"} <= set(namespace)
    with theano.config.change(device="sim"):
        x = theano.tensor.fmatrix("x")
        f = theano.function([x], namespace["Roll"](axis=1)(x, 1).sum())
    assert "GpuRoll" in [type(n.op).__name__ for n in f.toposort()]

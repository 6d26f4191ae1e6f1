"""docs/adding-an-op.md: its worked example is run here, block by block, so the page cannot rot."""
import re
from pathlib import Path

import coursekit as theano

DOC = Path(__file__).resolve().parent.parent / "docs" / "adding-an-op.md"


def test_the_worked_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 3, "the page's three example blocks (class, CPU use, GPU device use)"
    namespace = {"__name__": "adding_an_op_example"}
    for block in blocks:  # each block holds its own asserts: what the page says is what runs
        exec(compile(block, str(DOC), "exec"), namespace)
    with theano.config.change(device="sim"):
        x = theano.tensor.fmatrix("x")
        f = theano.function([x], namespace["Roll"](axis=1)(x, 1).sum())
    assert "GpuRoll" in [type(n.op).__name__ for n in f.toposort()]

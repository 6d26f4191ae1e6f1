"""The mutation tool (``python -m coursekit mutate``): its mutants, its verdicts, and a real sample.

A judge that checks nothing must kill 0% of the mutants; a judge that checks the answer kills them
all except the one that computes the same answer on the judge's inputs, which is set aside as
equivalent. Then one real graded task of ``solutions/`` is run on a small sample of its mutants.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from coursekit.course.authoring import mutation
from coursekit.course.authoring.mutation import operators

ROOT = Path(__file__).resolve().parents[3]

SOLUTION = '''def scale(x, k):
    """x times k, plus one."""
    ### BEGIN SOLUTION
    return x * k + 1
    ### END SOLUTION
'''

GRADED = '''import numpy as np
from coursekit.course.student.check import graded_check


def inputs(rng, small):
    return {"x": rng.standard_normal(7), "k": 1.0}      # k = 1: x * k and x / k agree here


def probe(x, k):
    return {"got": np.asarray(scale(x, k), dtype=float)}     # None (a deleted return) reports NaN


def judge(x, k, got):
    JUDGE_BODY


graded_check("scale", inputs, probe, judge, seed=5)
'''


def _notebook(tmp_path, judge_body):
    nb = nbformat.v4.new_notebook()
    graded = nbformat.v4.new_code_cell(GRADED.replace("JUDGE_BODY", judge_body))
    graded.metadata.update({"tags": ["graded"], "coursekit": {"id": "scale", "points": 1}})
    nb.cells = [nbformat.v4.new_code_cell("import numpy as np"), nbformat.v4.new_markdown_cell("## Task 1"),
                nbformat.v4.new_code_cell(SOLUTION), graded]
    path = tmp_path / "01_toy_solutions.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_judge_that_checks_nothing_kills_nothing(tmp_path):
    (task,) = mutation.find_tasks(_notebook(tmp_path, "pass"))
    result = mutation.run_task(task, cell_timeout=30)
    assert result.baseline == "passed" and result.mutants >= 5
    assert result.killed == 0 and result.kill_rate == 0.0, result
    assert len(result.survivors) == result.mutants - result.equivalent


def test_a_judge_that_checks_the_answer_kills_every_non_equivalent_mutant(tmp_path):
    body = 'assert got.shape == x.shape and np.allclose(got, x * k + 1), "wrong"'
    (task,) = mutation.find_tasks(_notebook(tmp_path, body))
    result = mutation.run_task(task, cell_timeout=30)
    assert result.baseline == "passed" and result.reproducible
    assert result.kill_rate == 1.0, result.survivors
    # x / k with k = 1 computes what x * k computes on the judge's inputs: equivalent, not a survivor
    assert result.equivalent >= 1


def test_python_mutants_touch_only_the_solution_region():
    source = "y = 1 + 2\n" + SOLUTION
    lines = mutation.region_lines(source)
    found = operators.python_mutants(source, lines)
    assert found and all(m.source.startswith("y = 1 + 2") for m in found)
    whats = " ".join(m.what for m in found)
    assert "Add -> Sub" in whats and "Mult -> Div" in whats and "line 1:" not in whats


def test_kernel_mutants_include_the_plausible_bugs():
    kernel = '''__global__ void k(float *out, const float *in, int rows, int cols) {
    __shared__ float tile[32];
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) tile[threadIdx.x] = in[c];
    __syncthreads();
    if (c < cols) out[c] = tile[threadIdx.x] * 2.0f;
}'''
    whats = [what for what, _ in operators.cuda_mutants(kernel)]
    text = " | ".join(whats)
    assert "__syncthreads() dropped" in text and "__syncthreads() moved under if (c < cols)" in text
    assert "< -> <=" in text and "if guard made 1" in text and "blockIdx.x -> blockIdx.y" in text
    assert "blockIdx * blockDim + threadIdx" not in text          # members are not transposed as names
    # a pointer in a declaration is never turned into a division
    assert not any("* -> /" in w and "line 1" in w for w in whats)
    for _, code in operators.cuda_mutants(kernel):
        assert "".join(t for _, t in operators.tokens(code)) == code


@pytest.mark.slow
def test_a_real_task_on_a_sample_of_its_mutants():
    (task,) = mutation.all_tasks(ROOT / "solutions", {"10:fan-in-uniform"})
    result = mutation.run_task(task, limit=6, cell_timeout=60)
    assert result.baseline == "passed" and result.mutants == 6
    assert result.kill_rate is not None and result.kill_rate >= 0.9, result.survivors


@pytest.mark.slow
def test_a_kernel_task_kills_its_barrier_and_guard_mutants():
    # CUDA C mutants through the token mutator, graded on the emulator by exercise 11's own cell
    (task,) = mutation.all_tasks(ROOT / "solutions", {"11:scan-blocks"})
    result = mutation.run_task(task, limit=3, cell_timeout=60, match="__syncthreads")
    assert result.baseline == "passed" and result.mutants == 3
    assert result.killed == 3, result.survivors

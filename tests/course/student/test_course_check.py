"""The safe format of graded checks' observations, and the judge's side (no kernel is started).

The report folder is writable by the student's kernel, so everything read from it is hostile: the
tests plant pickles, object arrays, links, FIFOs, oversized and foreign reports and check that each
is refused with a reason, never loaded.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from coursekit.course.student import check
from coursekit.course.student.check import NotReported, decode, encode, read_report
from coursekit.course.grading.judge import judge_cells

CELL = '''import numpy as np
from coursekit.course.student.check import graded_check


def inputs(rng, small):
    return {"x": rng.standard_normal(7)}


def probe(x):
    return {"got": np.exp(x)}


def judge(x, got):
    assert np.allclose(got, np.exp(x)), f"exp is wrong at x = {x[0]:.3f}"


graded_check("exp-cell", inputs, probe, judge, seed=5)
print("PASSED")
'''


def test_observations_round_trip_with_their_types():
    seen = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "f": 1.5, "g": np.float32(2.5), "n": None,
            "names": [("GpuFromHost", "transfer"), ("Elemwise", "cpu")], "flag": True, "s": "text",
            "d": {"k": [1, 2]}, "u": np.array(["x", "yz"])}
    back = decode(encode("nonce", "cell", seen), nonce="nonce", cell_id="cell")
    assert back["a"].dtype == np.float32 and np.array_equal(back["a"], seen["a"])
    assert type(back["f"]) is float and back["g"].dtype == np.float32 and back["n"] is None
    assert back["names"] == [["GpuFromHost", "transfer"], ["Elemwise", "cpu"]]
    assert back["flag"] is True and back["s"] == "text" and back["d"] == {"k": [1, 2]}
    assert back["u"].tolist() == ["x", "yz"]


@pytest.mark.parametrize("value, words", [
    (np.array([object()], dtype=object), "object arrays are refused"),
    (lambda: 1, "is a function"),
    ([1, {2: 3}], "is a dict"),
])
def test_what_is_not_plain_data_is_refused_with_its_name(value, words):
    with pytest.raises(TypeError, match=words) as info:
        encode("n", "c", {"value": value})
    assert "value" in str(info.value)


def test_a_pickle_or_a_foreign_report_is_never_loaded(tmp_path):
    good = encode("run-1", "cell", {"x": np.ones(3)})
    with pytest.raises(NotReported, match="another cell or another run"):
        decode(good, nonce="run-2", cell_id="cell")
    with pytest.raises(NotReported, match="another cell"):
        decode(good, nonce="run-1", cell_id="other")
    with pytest.raises(NotReported, match="unreadable"):
        decode(pickle.dumps({"x": np.ones(3)}), nonce="run-1", cell_id="cell")
    import io
    import json
    import zipfile

    buffer = io.BytesIO()     # a report whose array member is a pickled object array
    with zipfile.ZipFile(buffer, "w") as archive:
        member = io.BytesIO()
        np.lib.format.write_array(member, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
        archive.writestr("arrays/x.npy", member.getvalue())
        archive.writestr("observations.json", json.dumps({"nonce": "run-1", "cell": "cell", "values": {}}))
    with pytest.raises(NotReported, match="unreadable"):
        decode(buffer.getvalue(), nonce="run-1", cell_id="cell")


def test_links_fifos_and_huge_reports_are_refused(tmp_path, monkeypatch):
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    os.symlink(secret, tmp_path / "linked.npz")
    with pytest.raises(NotReported, match="reported nothing"):
        read_report(str(tmp_path), "linked")
    os.mkfifo(tmp_path / "fifo.npz")
    with pytest.raises(NotReported, match="not a regular file"):
        read_report(str(tmp_path), "fifo")
    monkeypatch.setattr(check, "REPORT_LIMIT", 100)
    (tmp_path / "big.npz").write_bytes(b"x" * 101)
    with pytest.raises(NotReported, match="larger than"):
        read_report(str(tmp_path), "big")
    with pytest.raises(ValueError, match="more than the 100"):
        encode("n", "c", {"x": np.zeros(1000)})


def test_interactively_the_cell_judges_itself_with_its_own_seed(monkeypatch, capsys):
    monkeypatch.delenv(check.REPORT_DIR_ENV, raising=False)
    monkeypatch.delenv(check.NONCE_ENV, raising=False)
    exec(CELL, {})
    assert capsys.readouterr().out == "PASSED\n"
    with pytest.raises(AssertionError, match="exp is wrong"):
        exec(CELL.replace("np.exp(x)}", "np.exp(x) + 1}"), {})


def test_the_judge_uses_the_runs_seed_and_the_reported_observations(tmp_path, monkeypatch):
    monkeypatch.setenv(check.REPORT_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(check.NONCE_ENV, "run-7")
    exec(CELL, {})                                  # the kernel's side writes the report
    assert (tmp_path / "exp-cell.npz").exists()
    reported = decode(read_report(str(tmp_path), "exp-cell"), nonce="run-7", cell_id="exp-cell")
    interactive = np.exp(np.random.default_rng(5).standard_normal(7))
    assert not np.allclose(reported["got"], interactive), "a grading run must not use the interactive seed"
    assert judge_cells([(3, "exp-cell", CELL)], str(tmp_path), "run-7") == {3: ("passed", "passed")}
    assert judge_cells([(3, "exp-cell", CELL)], str(tmp_path), "run-8")[3][0] == "unreported"
    forged = encode("run-7", "exp-cell", {"got": np.zeros(7)})
    (tmp_path / "exp-cell.npz").write_bytes(forged)
    status, reason = judge_cells([(3, "exp-cell", CELL)], str(tmp_path), "run-7")[3]
    assert status == "failed" and reason.startswith("failed assertion: exp is wrong at x = ")
    extra = encode("run-7", "exp-cell", {"got": np.exp(np.zeros(7)), "bonus": 1})
    (tmp_path / "exp-cell.npz").write_bytes(extra)
    assert judge_cells([(3, "exp-cell", CELL)], str(tmp_path), "run-7")[3][1].startswith("error: TypeError")


def test_the_judges_comparisons_check_shape_and_dtype_before_values():
    # issue 39: np.allclose broadcasts, so an empty (0, 1) observation "matched" any answer
    from coursekit.course.student.check import close, close_each, equal

    want = np.array([1.0, 2.0, 3.0])
    assert np.allclose(np.zeros((0, 1)), want)                  # the hole the helpers close
    for bad in (np.zeros((0, 1)), np.ones(1), np.ones((3, 1)), np.float64(1.0), [1.0, 2.0], None, "1", True):
        for compare in (close, close_each, equal):
            with pytest.raises(AssertionError):
                compare(bad, want)
    with pytest.raises(AssertionError, match="expected float32, got float64"):
        close(want, want, dtype=np.float32)
    assert close(want.astype(np.float32), want, dtype="float32") and equal([1, 2, 3], want)
    assert not close(want + 1, want) and close_each(want, want).shape == (3,)

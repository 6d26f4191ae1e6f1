"""coursekit.printing: debugprint, pp, pydotprint and the Jupyter view of a function."""
from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.printing import debugprint, function_html, pp, pydotprint
from fake_gpu_ops import FakeGpuExp, FakeTransfer


def gpu_like_function():
    x = T.fvector("x")
    w = theano.shared(np.ones(4, dtype="float32"), name="w")
    on_device = FakeGpuExp()(FakeTransfer("GpuFromHost")(x * w))
    return theano.function([x], FakeTransfer("HostFromGpu")(on_device) + 1, name="fake_gpu")


# ---------------------------------------------------------------- debugprint
def test_debugprint_variable_shows_types_ids_and_shared_subtrees_once():
    x = T.fvector("x")
    y = T.exp(x)
    z = y * y
    text = debugprint(z, file="str")
    lines = text.splitlines()
    assert lines[0] == "Elemwise{mul} [id A] <TensorType(float32, vector)> ''"
    assert lines[1] == " |Elemwise{exp} [id B] <TensorType(float32, vector)> ''"
    assert lines[2] == " | |x [id C] <TensorType(float32, vector)>"
    # the second use of exp(x) is referenced by its id, without repeating its inputs
    assert lines[3] == " |Elemwise{exp} [id B] <TensorType(float32, vector)> ''"
    assert len(lines) == 4


def test_debugprint_options_and_stdout(capsys):
    x = T.fvector("x")
    out = T.exp(x) + 1
    out.name = "result"
    assert debugprint(out) is None
    printed = capsys.readouterr().out
    assert "'result'" in printed and "TensorConstant{" in printed
    plain = debugprint(out, file="str", print_type=False, ids="")
    assert "[id" not in plain and "<TensorType" not in plain
    numbered = debugprint([out, x], file="str", ids="int")
    assert "[id 0]" in numbered and numbered.splitlines()[-1].startswith("x [id")
    with pytest.raises(ValueError, match="ids"):
        debugprint(out, ids="nope")


def test_debugprint_function_shows_toposort_index_and_updates():
    x = T.fvector("x")
    w = theano.shared(np.ones(3, dtype="float32"), name="w")
    f = theano.function([x], [T.exp(x) * w, T.sum(x)], updates={w: w * 2})
    text = debugprint(f, file="str")
    order = {str(node.op): i for i, node in enumerate(f.nodes)}
    apply_lines = [line for line in text.splitlines() if line.lstrip(" |").startswith(tuple(order))]
    assert apply_lines
    for line in apply_lines:
        op_text = line.lstrip(" |").split(" [id")[0]
        assert re.search(rf"''   {order[op_text]}\b", line), line
    assert "(update of w)" in text
    assert debugprint(f.maker.fgraph, file="str") == text


def test_pp_is_infix_with_needed_parentheses_only():
    x, y, z = T.fscalar("x"), T.fscalar("y"), T.fscalar("z")
    assert pp((x + y) * z) == "(x + y) * z"
    assert pp(x + y * z) == "x + y * z"
    assert pp(T.exp(x) - y) == "exp(x) - y"
    assert pp(x - (y - z)) == "x - (y - z)"


# ---------------------------------------------------------------- pydotprint
def _svg_texts(svg):
    root = ET.fromstring(svg)  # well-formed XML or this raises
    return root, " ".join(t for t in root.itertext())


def test_pydotprint_svg_is_xml_with_every_op_and_a_distinct_transfer_style():
    f = gpu_like_function()
    picture = pydotprint(f)
    bundle = picture._repr_mimebundle_()
    assert bundle["image/png"][:8] == b"\x89PNG\r\n\x1a\n", "untrusted notebooks and GitHub need the PNG"
    svg = bundle["image/svg+xml"]
    root, text = _svg_texts(svg)
    for node in f.nodes:
        assert str(node.op) in text
    ns = "{http://www.w3.org/2000/svg}"
    styles = {}
    for group in root.iter(f"{ns}g"):
        cls = group.get("class", "")
        if cls.startswith("node "):
            shape = group.find(f"{ns}rect")
            if shape is not None:
                styles.setdefault(cls.split()[1], set()).add((shape.get("fill"), shape.get("stroke"),
                                                              shape.get("stroke-width")))
    assert {"cpu", "gpu", "transfer"} <= set(styles)
    assert styles["transfer"].isdisjoint(styles["cpu"] | styles["gpu"])
    assert "⇅ transfer op" in text and "shared variable" in text


def test_pydotprint_legend_stays_under_the_title_however_wide_the_graph():
    x = T.fvector("x")
    outputs = [T.exp(x) * float(i) for i in range(40)]   # a very wide graph
    picture = pydotprint(outputs)
    root, _ = _svg_texts(picture.svg)
    ns = "{http://www.w3.org/2000/svg}"
    legend = next(g for g in root.iter(f"{ns}g") if g.get("class") == "legend")
    xs = [float(t.get("x")) for t in legend.iter(f"{ns}text")]
    ys = [float(t.get("y")) for t in legend.iter(f"{ns}text")]
    assert float(root.get("width")) > 2000
    assert max(xs) < 600 and max(ys) < 80, "the legend must stay at the top left, in view"


def test_pydotprint_of_variables_and_saving(tmp_path):
    x = T.fvector("x")
    w = theano.shared(np.zeros(2, dtype="float32"), name="w")
    out = T.exp(x) + w
    picture = pydotprint(out)
    _, text = _svg_texts(picture.svg)
    assert "Elemwise{exp}" in text and "w" in text
    picture.save(tmp_path / "g.svg")
    ET.parse(tmp_path / "g.svg")
    target = tmp_path / "g.png"
    png_picture = pydotprint(gpu_like_function(), outfile=target, format="png")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bundle = png_picture._repr_mimebundle_()
    assert bundle["image/png"][:4] == b"\x89PNG" and "image/svg+xml" not in bundle


# -------------------------------------------------------------- function_html
def test_function_html_lists_ops_device_picture_and_source():
    f = gpu_like_function()
    page = function_html(f)
    for node in f.nodes:
        assert html.escape(str(node.op)) in page
    assert f.device.label in page and '<img src="data:image/png;base64,' in page and "<details>" in page
    assert "<svg" not in page, "sanitised (untrusted) HTML drops inline SVG: embed the PNG"
    assert html.escape(f.source.splitlines()[0]) in page
    assert f._repr_html_() == page


def test_function_html_skips_picture_of_big_graphs():
    x = T.fvector("x")
    y = x
    for _ in range(65):
        y = T.exp(y)
    f = theano.function([x], y, mode="FAST_COMPILE")
    assert len(f.nodes) > 60
    page = function_html(f)
    assert "<img" not in page and "picture skipped" in page


def test_pydotprint_marks_the_simulated_devices_transfer_ops():
    with theano.config.change(device="sim"):
        x = T.fvector("x")
        f = theano.function([x], T.exp(x))
    root, text = _svg_texts(pydotprint(f).svg)
    transfer_groups = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node transfer"]
    names = {node.op.__class__.__name__ for node in f.nodes if getattr(node.op, "is_transfer", False)}
    assert names == {"GpuFromHost", "HostFromGpu"} and len(transfer_groups) == 2
    assert "simulated" in text

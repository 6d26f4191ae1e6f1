"""Pictures of the modelled GPU: the roofline's roofs and points, and the timeline of one call."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import coursekit as theano  # noqa: E402
import coursekit.tensor as T  # noqa: E402
from coursekit.profiling import predict  # noqa: E402
from coursekit import costmodel  # noqa: E402
from coursekit.costmodel import presets  # noqa: E402
from coursekit.printing import gpu_plots  # noqa: E402


@pytest.fixture
def call():
    with theano.config.change(device="sim"):
        m = theano.shared(np.ones((64, 64), "float32"))
        x = T.fmatrix("x")
        f = theano.function([x], [T.dot(m, x), T.exp(x)])
        return predict.predict_call(f, np.ones((64, 64), "float32"), model=costmodel.CostModel("t4"))


def test_roof_is_bandwidth_bound_left_of_the_ridge_and_flat_right_of_it():
    spec = presets.get("h100")
    ridge = spec.fp32_flops / spec.memory_bandwidth
    assert gpu_plots.roof(spec, ridge / 10) == pytest.approx(ridge / 10 * spec.memory_bandwidth)
    assert gpu_plots.roof(spec, ridge * 10) == spec.fp32_flops
    assert gpu_plots.roof(spec, 1e3, "float64") == spec.fp64_flops


def test_points_sit_under_the_roof_of_their_card(call):
    points = gpu_plots.roofline_points(call)
    assert {p["name"] for p in points} == {"GpuDot", "GpuElemwise{exp}"}
    spec = presets.get("t4")
    for p in points:
        assert 0 < p["flops_per_s"] <= gpu_plots.roof(spec, p["intensity"])
    ax = gpu_plots.plot_roofline(points)
    # three roofs, three ridges, the points, and a tensor-core roof for the T4 and the H100 (not the GTX 580)
    assert len(ax.get_lines()) == 3 + 3 + len(points) + 2 and "modelled" in ax.get_title()
    plt.close(ax.figure)
    ax = gpu_plots.plot_roofline(points, tensor_dtype=None)
    assert len(ax.get_lines()) == 3 + 3 + len(points)
    plt.close(ax.figure)


def test_tensor_core_roof_is_above_the_vector_roof_and_absent_without_tensor_cores():
    h100 = presets.get("h100")
    assert gpu_plots.tensor_roof(h100, 1e4) == h100.fp16_tensor_flops > gpu_plots.roof(h100, 1e4, "float16")
    assert gpu_plots.tensor_roof(h100, 1e4, "float64") == h100.fp64_tensor_flops
    assert gpu_plots.tensor_roof(presets.get("gtx580"), 1e4) is None


def test_timeline_lays_the_modelled_parts_end_to_end(call):
    spans = gpu_plots.timeline(call)
    assert spans[0][0] == 0 and spans[-1][1] == pytest.approx(call.device)
    assert all(a[1] == pytest.approx(b[0]) for a, b in zip(spans, spans[1:]))
    assert {part for _, _, part, _ in spans} == {"alloc", "launch", "kernel", "transfer", "sync"}
    ax = gpu_plots.plot_timeline(call)
    assert len(ax.patches) == len(spans) and call.label in ax.get_title()
    plt.close(ax.figure)

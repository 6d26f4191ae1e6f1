"""`python -m coursekit calibrate`: the fitting logic on synthetic measurements, saving, and no-GPU refusal.

The micro-benchmarks need a real GPU; what they feed into (fits, the preset, where it is saved and how it
is selected) is plain arithmetic and files, tested here with measurements made up from known figures.
"""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
from coursekit.__main__ import main
from coursekit import costmodel
from coursekit.costmodel import calibrate, presets

MiB = 2 ** 20


def synthetic(latency, bandwidth, sizes, rng, noise=0.2):
    """Five repeats per size; noise only ever slows a copy down (as in real life)."""
    return [[latency + s / bandwidth * (1 + noise * rng.rand()) if k else latency + s / bandwidth
             for k in range(5)] for s in sizes]


def measurements(rng):
    link = [s * MiB for s in (0.0625, 1, 16, 64)]
    copy = [s * MiB for s in (4, 16, 64, 256)]
    return dict(
        name="Test GPU 9000", date="2026-01-01", sm_count=80, threads_per_sm=2048,
        link_sizes=link, pageable_seconds=synthetic(9e-6, 11e9, link, rng),
        pinned_seconds=synthetic(7e-6, 24e9, link, rng),
        copy_sizes=copy, copy_seconds=synthetic(3e-6, 900e9, copy, rng),
        launch_seconds=[4.1e-6, 3.9e-6, 5.5e-6],
        gemm_flops={"float32": (2.0 * 4096 ** 3, [0.012, 0.011]), "float64": (2.0 * 2048 ** 3, [0.003, 0.0031])},
        malloc_seconds=[150e-6, 120e-6], malloc_small_seconds=[60e-6, 45e-6], pool_seconds=[1.5e-6, 1.2e-6])


def test_fit_link_recovers_latency_and_bandwidth_from_the_best_repeats():
    rng = np.random.RandomState(0)
    sizes = [s * MiB for s in (0.0625, 1, 16, 64)]
    latency, bandwidth = calibrate.fit_link(sizes, synthetic(9e-6, 11e9, sizes, rng, noise=0.5))
    assert latency == pytest.approx(9e-6, rel=1e-6) and bandwidth == pytest.approx(11e9, rel=1e-6)
    with pytest.raises(ValueError, match="two different sizes"):
        calibrate.fit_link([MiB, MiB], [[1e-3], [1e-3]])
    with pytest.raises(ValueError, match="do not grow with size"):
        calibrate.fit_link([MiB, 2 * MiB], [[2e-3], [1e-3]])


def test_build_spec_turns_measurements_into_a_measured_preset():
    spec = calibrate.build_spec(measurements(np.random.RandomState(1)))
    assert spec.key == "test-gpu-9000" and spec.measured and "calibrated" in spec.name
    assert spec.link_pageable == pytest.approx(11e9, rel=1e-6) and spec.link_pinned == pytest.approx(24e9, rel=1e-6)
    assert spec.link_latency == pytest.approx(8e-6, rel=1e-6)
    assert spec.memory_bandwidth == pytest.approx(900e9, rel=1e-6)
    assert spec.fp32_flops == pytest.approx(2.0 * 4096 ** 3 / 0.011)
    assert spec.fp16_flops == spec.fp32_flops  # not measured: falls back to float32
    assert (spec.launch_latency, spec.alloc_no_pool, spec.alloc_pool) == (3.9e-6, 120e-6, 1.2e-6)
    assert spec.alloc_no_pool_small == 45e-6 and spec.sync_latency == 0.0  # no queued launches measured
    queued = calibrate.build_spec(dict(measurements(np.random.RandomState(1)), launch_queued_seconds=[2.9e-6, 3e-6]))
    assert (queued.launch_latency, queued.sync_latency) == pytest.approx((2.9e-6, 1.0e-6))
    assert spec.memory_efficiency == spec.compute_efficiency == 1.0  # measured rates are achievable rates
    assert (spec.sm_count, spec.resident_threads) == (80, 80 * 2048)
    assert "calibrated test-gpu-9000" in costmodel.CostModel(spec).label


def test_a_saved_preset_is_selected_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CONFIG_DIR", str(tmp_path))
    spec = calibrate.build_spec(measurements(np.random.RandomState(2)), key="lab-gpu")
    path = presets.save(spec)
    assert path == tmp_path / "gpu_models" / "lab-gpu.json"
    assert "lab-gpu" in presets.available() and presets.get("lab-gpu") == spec
    costmodel.forget_saved()
    with theano.config.change(gpu_model="lab-gpu"):
        assert costmodel.model().spec == spec
    with pytest.raises(ValueError, match="built-in"):
        presets.save(spec.replace(key="h100"))
    path.write_text('{"key": "lab-gpu"}')
    with pytest.raises(ValueError, match="not a coursekit GPU preset.*re-run"):
        presets.get("lab-gpu")


def test_preset_names_come_from_the_card():
    assert calibrate.preset_name("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert calibrate.preset_name("T4") == "t4-calibrated"  # never shadows a built-in preset


def test_calibrate_without_a_gpu_says_it_needs_one(monkeypatch, capsys):
    monkeypatch.setattr("coursekit.devices.cupy_status", lambda: (None, "CuPy sees no usable NVIDIA GPU"))
    assert main(["calibrate"]) == 2
    err = capsys.readouterr().err
    assert "measures a real NVIDIA GPU" in err and "gpu_model=" in err
    assert main(["calibrate", "--name", "h100"]) == 2
    assert "not a built-in preset" in capsys.readouterr().err


def test_gpu_models_lists_presets_and_their_sources(capsys):
    assert main(["gpu-models"]) == 0
    out = capsys.readouterr().out
    assert all(f"{key}" in out for key in presets.PRESETS) and "192.4 GB/s" in out
    assert main(["gpu-models", "h100"]) == 0
    out = capsys.readouterr().out
    assert "sources:" in out and "Hopper" in out and "gtx580" not in out
    assert main(["gpu-models", "rtx9090"]) == 2
    assert "not a known GPU preset" in capsys.readouterr().err


def test_a_calibrated_card_models_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSEKIT_CONFIG_DIR", str(tmp_path))

    class RealCard:  # what a real CUDA device object says about itself
        model, simulated, is_gpu, card = None, False, True, "Test GPU 9000"

    assert costmodel.model_for(RealCard()).spec.key == theano.config.gpu_model  # nothing calibrated yet
    spec = calibrate.build_spec(measurements(np.random.RandomState(3)))
    presets.save(spec)
    assert costmodel.model_for(RealCard()).spec == spec and "calibrated" in costmodel.model_for(RealCard()).label
    RealCard.simulated = True  # a simulated device never pretends to be a calibrated card
    assert costmodel.model_for(RealCard()).spec.key == theano.config.gpu_model

"""The asynchronous simulated GPU (coursekit.costmodel.timeline): queued launches, synchronize(), streams.

Everything here reads the model's virtual clock, never the wall clock, so the figures are exact and the
same under any machine load; the assertions compare them with the cost model's own arithmetic.
"""
from __future__ import annotations

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import devices
from coursekit import costmodel
from coursekit.costmodel.timeline import Timeline

N = 2 ** 21  # 8 MiB of float32: a kernel long enough to outlast its launch


@pytest.fixture
def sim():
    with theano.config.change(device="sim", floatX="float32"):
        yield devices.get("sim")


def kernel_fn(n=N):
    x = theano.shared(np.ones(n, "float32"), name="x")
    return theano.function([], theano.Out(theano.gpu_from_host(T.exp(x)), borrow=True))


def loop(timeline, fn, calls):
    fn()
    devices.synchronize()
    start = timeline.now()
    for _ in range(calls):
        fn()
    queued = timeline.now() - start
    devices.synchronize()
    return queued, timeline.now() - start


def test_an_unsynchronised_clock_under_reports_by_the_kernel_over_launch_ratio(sim):
    timeline = Timeline("t4")
    fn = timeline.watch(kernel_fn())
    with timeline.attached(sim):
        queued, finished = loop(timeline, fn, 20)
    spec = costmodel.model("t4").spec
    kernel = costmodel.model("t4").kernel_time(
        costmodel.model("t4").node_cost(fn.nodes[0], [(N,)], ["float32"]).work)[0]
    assert queued == pytest.approx(20 * spec.launch_latency)
    assert finished == pytest.approx(spec.launch_latency + 20 * kernel + spec.sync_latency, rel=1e-9)
    assert finished / queued >= 5
    assert (timeline.launches, timeline.syncs) == (21, 2)


def test_the_same_experiment_gives_the_same_numbers(sim):
    results = []
    for _ in range(2):
        timeline = Timeline("h100")
        fn = timeline.watch(kernel_fn(N // 4))
        with timeline.attached(sim):
            results.append(loop(timeline, fn, 5))
    assert results[0] == results[1]


def test_a_copy_on_another_stream_overlaps_the_kernel(sim):
    v = T.fvector("v")
    upload = theano.function([v], theano.Out(theano.gpu_from_host(v), borrow=True))
    kernel = kernel_fn()
    data = np.ones(N, "float32")
    ends = {}
    for how in ("serial", "overlapped"):
        timeline = Timeline("t4", pinned=True)  # page-locked host memory: copies are asynchronous too
        timeline.watch(upload), timeline.watch(kernel)
        with timeline.attached(sim):
            if how == "serial":
                upload(data)
                kernel()
            else:
                with timeline.stream("copies"):
                    upload(data)
                kernel()
            devices.synchronize()
        ends[how] = timeline.now()
        timeline.unwatch(upload), timeline.unwatch(kernel)
        assert not upload.hooks and not kernel.hooks
    assert ends["overlapped"] < ends["serial"] and timeline.model.pinned  # copies at the pinned rate
    spans = {span.kind: span for span in timeline.spans}   # the overlapped run's copy and kernel
    assert spans["copy"].stream == "copies" and spans["kernel"].stream == "default"
    assert spans["kernel"].start < spans["copy"].end        # the kernel ran while the copy was going on
    # what overlapping saves is the shorter of the two
    shorter = min(spans["copy"].end - spans["copy"].start, spans["kernel"].end - spans["kernel"].start)
    assert ends["serial"] - ends["overlapped"] == pytest.approx(shorter, rel=0.05)  # allocations aside


def test_pageable_copies_keep_the_host_waiting_and_attach_restores_the_device(sim):
    timeline = Timeline("t4")
    timeline.copy(1e-3)
    assert timeline.now() == pytest.approx(1e-3)  # pageable: the host waited
    timeline.launch(5e-3)
    assert timeline.now() == pytest.approx(1e-3 + timeline.model.spec.launch_latency)
    with timeline.attached(sim):
        assert sim.timeline is timeline
        devices.synchronize()
    assert sim.timeline is None and timeline.syncs == 1
    assert timeline.now() == pytest.approx(timeline.busy_until())
    assert timeline.label == "modelled (t4, uncalibrated), asynchronous timeline"

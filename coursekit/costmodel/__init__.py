"""The cost model: what a GPU *would* take for a graph, and how sure we are.

Everything about modelled GPU time lives here, one floor above ``devices``
(it reads a device's own model and the current device) and below
``profiling`` (which owns "where the time went", measured and modelled, and
imports this package plainly):

* :mod:`~coursekit.costmodel.presets`: the cards' figures, each with its
  source (datasheet, published, calibration or guess), and each calibrated
  preset's error band from the measured corpus;
* :mod:`~coursekit.costmodel.pricing`: one node's modelled time on a preset
  (roofline, waves, launches, transfers, allocations): :func:`model`,
  :func:`model_for`;
* :mod:`~coursekit.costmodel.call`: a whole call priced node by node
  (:class:`ModelledCall`, :func:`price_nodes`);
* :mod:`~coursekit.costmodel.timeline`: the same work laid out on a virtual
  asynchronous clock (queued launches, streams, ``synchronize()``);
* :mod:`~coursekit.costmodel.calibrate`: fits a preset on a real card.

What an op *does* (its bytes, FLOPs, launches) is not here: ops declare it
in :mod:`coursekit.work`, far below, so the tensor layer can describe its
work without knowing any card.  Every figure this package produces is a
prediction and is labelled ``modelled (<preset>)``.
"""
from __future__ import annotations

from . import presets
from .call import LARGE_COPY, ModelledCall, format_time, is_modelled, price_nodes
from .pricing import CostModel, NodeCost, forget_saved, model, model_for

__all__ = ["CostModel", "LARGE_COPY", "ModelledCall", "NodeCost", "forget_saved", "format_time", "is_modelled",
           "model", "model_for", "presets", "price_nodes"]

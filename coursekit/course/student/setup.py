"""What the setup cell at the top of every lesson and exercise does once coursekit is importable.

The cell itself (``coursekit.course.authoring.setup_cell.SOURCE``) only installs coursekit where it
is missing (Colab, a hub image without it, a downloaded notebook) and then calls
:func:`notebook_setup`. Keeping the work here, not in 22 copies of a cell, means a fix reaches every
notebook with the package.

It chooses where the notebook's work runs, and says so in one line:

* ``COURSEKIT_FLAGS`` / ``THEANO_FLAGS`` name a device: the student chose; nothing is changed.
* CuPy sees an NVIDIA GPU (Colab's T4): ``device=gpu``; the cost model is calibrated on that card once
  (a short ``coursekit calibrate``, saved under its name, reused by later notebooks) so that the
  modelled rows describe the card the student has; a T4 keeps the ``t4`` preset if calibration fails.
* Otherwise: the simulated GPU, labelled so in every row.

The notebooks read no data file by path (a test checks their code cells), so nothing needs finding.
"""
from __future__ import annotations

import os

from ...config import config
from ...costmodel import presets
from ...devices import cupy_status
from ...costmodel.calibrate import calibrate as run_calibration

ONE_GPU_TIMES = 1  # repeats of each calibration measurement: short, the setup cell must not take minutes


def _card_name(cupy) -> str:
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def _chosen_device() -> str | None:
    for variable in ("COURSEKIT_FLAGS", "THEANO_FLAGS"):
        for item in os.environ.get(variable, "").split(","):
            if item.strip().startswith("device="):
                return f"{variable} sets {item.strip()}"
    return None


def _calibrate(key: str):
    return run_calibration(key, repeats=ONE_GPU_TIMES, progress=lambda *_: None)


def notebook_setup(calibrate=_calibrate, say=print) -> str:
    """Pick the device (and GPU preset) for this notebook; return the device chosen."""
    chosen = _chosen_device()
    if chosen:
        say(f"coursekit: {chosen}; using device={config.device}, gpu_model={config.gpu_model}.")
        return config.device
    cupy, reason = cupy_status()
    if cupy is None:
        say("coursekit: no GPU here, so this notebook uses the simulated GPU (same graphs and transfers, CPU "
            f"timings, every row labelled). Why: {reason}.")
        return config.device
    card = _card_name(cupy)
    config.device = "gpu"
    if "T4" in card.upper():
        config.gpu_model = "t4"
    key = presets.preset_name(card)
    if key in presets.saved_names():
        config.gpu_model = key
        say(f"coursekit: GPU {card}: device=gpu, modelled rows calibrated on this card (gpu_model={key}).")
        return config.device
    try:
        spec, _ = calibrate(key)
    except Exception as exc:  # noqa: BLE001 - a failed calibration must not stop the lesson
        say(f"coursekit: GPU {card}: device=gpu; calibrating it failed ({type(exc).__name__}: {exc}), so modelled "
            f"rows use the {config.gpu_model} preset. Run `coursekit calibrate` in a terminal to retry.")
        return config.device
    config.gpu_model = spec.key
    say(f"coursekit: GPU {card}: device=gpu; calibrated the cost model on it (gpu_model={spec.key}).")
    return config.device

"""The porting report: which Theano names a program used and how each one fared under coursekit.

Every read through a ``theano.*`` alias module is counted (see :mod:`.finder`).  At the end of a run the
names fall in three groups:

* **ran as in Theano**: coursekit implements the name with Theano's meaning;
* **differs**: implemented, with a difference a porting engineer should know (listed in
  :data:`DIFFERENCES`, each with what differs);
* **missing**: the program asked for it and coursekit has none, so the program stopped there (or its
  ``try: ... except ImportError`` took the other branch).
"""
from __future__ import annotations

import collections
import json

# Theano name -> how coursekit's version differs (names not listed behave as Theano documented them)
DIFFERENCES = {
    "theano.tensor.nnet.ultra_fast_sigmoid": "exact sigmoid; Theano's was a piecewise approximation "
                                             "(absolute error up to about 0.02)",
    "theano.tensor.nnet.sigmoid.ultra_fast_sigmoid": "exact sigmoid; Theano's was an approximation",
    "theano.tensor.nnet.conv3d2d": "conv3d computed directly (one op), not as Theano's stack of 2-D convolutions",
    "theano.tensor.signal.downsample": "the pre-0.9 module name; pool_2d's padding/mode arguments as in 0.9",
    "theano.compile.mode.get_default_mode": "modes differ in rewrites only; every mode runs NumPy thunks",
    "theano.printing.pydotprint": "draws with matplotlib (no pydot/graphviz needed)",
    "theano.gpuarray": "Theano's libgpuarray back end is not coursekit's: pygpu_activated is False, no cuDNN; "
                       "device=gpu runs coursekit's own GPU path",
    "theano.sandbox.cuda": "Theano's old CUDA back end is not coursekit's: cuda_enabled is False",
    "theano.tensor.signal.pool.pool_2d": "window sizes, strides and padding must be ints (Theano 0.9+ also took "
                                         "symbolic ones)",
    "theano.tensor.nnet.neighbours.images2neibs": "modes 'valid' and 'ignore_borders' only",
    "theano.tensor.nnet.abstract_conv.AbstractConv2d_gradInputs": "num_groups=1 and shared weights only",
    "theano.tensor.nnet.abstract_conv.AbstractConv2d_gradWeights": "num_groups=1 and shared weights only",
    "theano.function": "mode/linker flags accepted, no C code is compiled",
}


class Record:
    """What the running program read through the alias (one per process)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.names = collections.Counter()
        self.missing_names = collections.Counter()
        self.modules = []

    def used(self, where, value=None):
        self.names[where] += 1

    def missing(self, where):
        self.missing_names[where] += 1

    def imported(self, module):
        if module not in self.modules:
            self.modules.append(module)
            self.names[module] += 1

    def summary(self):
        """A dict with the three groups (names sorted), for tests and ``--report-json``."""
        differs = {n: DIFFERENCES[n] for n in sorted(self.names) if n in DIFFERENCES}
        same = [n for n in sorted(self.names) if n not in DIFFERENCES]
        return {"modules": list(self.modules), "as_theano": same, "differs": differs,
                "missing": sorted(self.missing_names)}

    def text(self, program="the program"):
        groups = self.summary()
        lines = [f"coursekit porting report for {program}",
                 f"  {len(groups['as_theano']) + len(groups['differs'])} Theano names used, "
                 f"{len(groups['differs'])} with a difference, {len(groups['missing'])} missing"]
        if groups["missing"]:
            lines.append("  missing (coursekit has no such name; the program stopped there or took "
                         "its fallback):")
            lines += [f"    {name}  (asked {self.missing_names[name]}x)" for name in groups["missing"]]
        if groups["differs"]:
            lines.append("  differs from Theano:")
            lines += [f"    {name}: {why}" for name, why in groups["differs"].items()]
        lines.append("  ran as in Theano:")
        lines += [f"    {name}" for name in groups["as_theano"]]
        return "\n".join(lines)

    def write(self, path, program="the program"):
        with open(path, "w", encoding="utf-8") as out:
            if str(path).endswith(".json"):
                json.dump(self.summary(), out, indent=1)
            else:
                out.write(self.text(program) + "\n")


RECORD = Record()

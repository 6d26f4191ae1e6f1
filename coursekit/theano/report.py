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

from ..config import config

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

# Names only the alias has (a port that changes its imports to ``import coursekit as theano`` has no such
# name): what that port writes instead.  A whole module is listed by its name.  Every other public name the
# alias offers is coursekit's own object (tests/compat/test_two_routes.py checks both halves).
ALIAS_ONLY = {
    "theano.__version__": "the Theano API the alias follows (0.9.0); coursekit.__version__ is coursekit's own",
    "theano.theano": "Theano's package bound itself; import coursekit as theano is the same thing",
    "theano.gof": "coursekit.graph (Variable, Apply, Op, Constant, graph_inputs, clone_replace) and "
                  "coursekit.fgraph; the rewrite API is coursekit.rewriting.registration (OpRemove, local_optimizer)",
    "theano.gof.graph": "coursekit.graph (graph_inputs is inputs; apply_nodes_between is io_toposort)",
    "theano.gpuarray": "Theano's libgpuarray back end: coursekit's GPU is config.device='gpu' (no cuDNN)",
    "theano.sandbox": "Theano's old GPU package: coursekit.gpu_from_host / host_from_gpu, "
                      "coursekit.devices.kernel_inputs.gpu_contiguous, coursekit.random.MRG_RandomStreams",
    "theano.sandbox.cuda": "coursekit.devices (the old CUDA back end's flag cuda_enabled is False; CudaNdarray.zeros "
                           "is coursekit.devices.kernel_device().zeros(shape, 'float32'))",
    "theano.sandbox.cuda.basic_ops": "coursekit.devices.transfer and coursekit.devices.kernel_inputs",
    "theano.sandbox.rng_mrg": "coursekit.random (MRG_RandomStreams)",
    "theano.sandbox.softsign": "coursekit.tensor.nnet.softsign",
    "theano.misc": "nothing to import: PyCUDA shares coursekit's device already (drop `import theano.misc.pycuda_init`)",
    "theano.compat": "Python 2/3 helpers: Python 3 has them (izip is zip, OrderedDict is collections')",
    "theano.scan_module.scan_utils": "equal_computations: compare graphs with coursekit.theano.gof.is_same_graph",
    "theano.tensor.opt": "coursekit.rewriting.registration (register_canonicalize ...) or coursekit.rewriting."
                         "local_rewrite",
    "theano.tensor.signal.downsample": "coursekit.tensor.signal.pool.pool_2d (ws=, stride=, pad=)",
    "theano.tensor.shared_randomstreams": "coursekit.random (RandomStreams)",
}

FLOAT64_FIX = ("floatX was float64 in this run (Theano's default, which the alias applies). A port that changes "
               "its imports (import coursekit as theano) computes in coursekit's float32 instead: set "
               "coursekit.config.floatX = 'float64' before building the graph (or run with "
               "COURSEKIT_FLAGS=floatX=float64) to get this run's numbers.")


def alias_only(name):
    """Why ``name`` (``theano.x.y``) exists only under the alias, or None: the entry of the longest listed prefix."""
    parts = name.split(".")
    for k in range(len(parts), 1, -1):
        if ".".join(parts[:k]) in ALIAS_ONLY:
            return ALIAS_ONLY[".".join(parts[:k])]
    return None


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
        only = {n: alias_only(n) for n in sorted(self.names) if alias_only(n)}
        return {"modules": list(self.modules), "as_theano": same, "differs": differs,
                "missing": sorted(self.missing_names), "alias_only": only, "floatX": config.floatX}

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
        if groups["alias_only"]:
            lines.append("  only under the alias (with import coursekit as theano, write instead):")
            lines += [f"    {name}: {why}" for name, why in groups["alias_only"].items()]
        if groups["floatX"] == "float64":
            lines.append("  " + FLOAT64_FIX)
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

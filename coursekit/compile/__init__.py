"""Compiling graphs into callables: shared variables, ``function``, modes.

Following ``function()`` from a graph to the thunks that run it takes eight
files, read in this order:

1. ``coursekit/graph.py`` — ``Variable``, ``Apply``, ``Op``: what a graph is, and
   ``Op.make_thunk`` (the default thunk calls ``perform``);
2. ``compile/function.py`` — the front door: checks inputs, outputs, updates
   and givens, clones the graph and builds a FunctionGraph;
3. ``coursekit/fgraph.py`` — ``FunctionGraph``: the compiler's copy of the graph,
   with client lists, ``replace`` and its declared fields;
4. ``compile/mode.py`` — the mode: a query over rewrite tags;
5. ``rewriting/__init__.py`` — the rewrite database and the passes that apply
   the selected rewrites, stage by stage (the rewrites themselves live in
   the other ``rewriting/`` modules);
6. ``compile/linker.py`` — ``Function``: a storage cell per variable, a thunk
   per node (``op.make_thunk``), hooks, errors that name the user's line;
7. ``compile/aliasing.py`` — which results may share memory (``view_map``,
   ``destroy_map``): what is copied, what is freed, where a private copy is needed;
8. ``compile/callgen.py`` — the call itself, written as straight-line Python
   (``f.source``).

Beside that path: ``hooks.py`` (the linker hooks the profiler and DebugMode
use), ``io.py`` (``In``/``Out``), ``sharedvalue.py`` and ``shared_storage.py``
(shared variables and where their values live).
"""
from .function import MissingInputError, UnusedInputError, function  # noqa: F401
from .clone import clone  # noqa: F401
from .io import In, Out, Param  # noqa: F401
from .mode import Mode, get_mode  # noqa: F401
from .monitormode import MonitorMode  # noqa: F401
from .nanguardmode import NanGuardMode  # noqa: F401
from .viewop import ViewOp, view_op  # noqa: F401
from .sharedvalue import SharedVariable, shared  # noqa: F401

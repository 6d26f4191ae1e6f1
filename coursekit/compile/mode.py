"""Compilation modes: which graph rewrites run before linking.

A mode is a query over the rewrite tags (see :mod:`coursekit.rewriting`): a
rewrite runs when it has one of the ``include`` tags, all the ``require``
tags and none of the ``exclude`` tags.  Every rewrite is tagged with its
stage, its name and ``fast_run``; a few also with ``fast_compile``.

* ``FAST_RUN`` includes ``fast_run``: every rewrite;
* ``FAST_COMPILE`` includes ``fast_compile``: merging duplicates, GPU
  placement and cutting transfer pairs;
* ``DebugMode`` runs FAST_RUN and checks it against the unrewritten graph.

``mode.excluding("fusion")``, ``mode.including("stabilize")`` and
``mode.requiring("gpu")`` make a new mode with the query changed;
Whole-call CUDA graphs are on by default: a function on a real GPU replays its
device work as one CUDA graph after its first two calls, wherever that is safe
(see :mod:`coursekit.compile.cudagraph`); ``mode.with_cuda_graphs(after=k)``
changes when, ``mode.without_cuda_graphs()`` keeps every call ordinary.
"""
from __future__ import annotations

import copy

from .. import wiring
from ..config import config
from ..rewriting import apply_stages


class Mode:
    """A named query over the rewrite tags (``include``: any of, ``require``: all of, ``exclude``: none of).

    ``Mode("m", ("canonicalize",))`` runs the canonicalize stage only (stage names are tags).
    """

    def __init__(self, name="custom", include=("fast_run",), exclude=(), require=(), *, linker=None,
                 optimizer="default"):
        """``linker`` and ``optimizer`` are Theano's: ``Mode(linker='py', optimizer='fast_compile')``.

        ``optimizer``: ``'fast_run'`` (or ``'default'``, ``'o1'``-``'o4'``) keeps ``include``;
        ``'fast_compile'``, ``'merge'`` and ``None`` select the fast_compile rewrites (merging,
        placement on the device, cutting transfer pairs: what a graph needs to run at all).
        ``linker``: Theano's names are accepted; coursekit has one linker (Python thunks), and the
        ``_nogc`` names keep intermediate buffers between calls (``allow_gc=False``).
        """
        if optimizer in ("fast_compile", "merge", None, "None"):
            include = ("fast_compile",)
        elif optimizer not in ("default", "fast_run", "o1", "o2", "o3", "o4"):
            raise ValueError(f"Mode(optimizer={optimizer!r}): use 'fast_run', 'fast_compile', 'merge' or None")
        if linker is not None and linker not in LINKERS:
            raise ValueError(f"Mode(linker={linker!r}): use one of Theano's linker names {LINKERS}")
        self.linker, self.optimizer = linker, optimizer
        self.name = name
        self.include, self.exclude, self.require = _tags(include), _tags(exclude), _tags(require)

    def rewrite(self, fgraph):
        apply_stages(fgraph, self)

    def _changed(self, **fields):
        new = copy.copy(self)
        for key, value in fields.items():
            setattr(new, key, value)
        return new

    def including(self, *tags):
        return self._changed(include=self.include + tags)

    def excluding(self, *tags):
        return self._changed(exclude=self.exclude + tags)

    def requiring(self, *tags):
        return self._changed(require=self.require + tags)

    # capture a function's device work as one CUDA graph after this many calls (0: never).  On by default: a
    # step of many small kernels pays the host's launch cost per kernel, and a graph pays it once per call;
    # cudagraph.py captures only what stays correct and falls back (and recaptures) on any change it can see
    cuda_graphs = 2

    def without_cuda_graphs(self):
        """This mode with every call ordinary (one launch per kernel): no CUDA graph is ever captured."""
        return self._changed(cuda_graphs=0)

    def with_cuda_graphs(self, after=2):
        """This mode, with whole-call CUDA graphs: captured after ``after`` calls, then one launch per call."""
        if int(after) < 1:
            raise ValueError(f"with_cuda_graphs(after={after!r}): capture after at least 1 ordinary call "
                             "(its buffers and kernels must exist first)")
        return self._changed(cuda_graphs=int(after))

    def __repr__(self):
        return f"Mode({self.name})"


LINKERS = ("cvm", "vm", "py", "c", "c|py", "cvm_nogc", "vm_nogc", "c|py_nogc")


def _tags(tags):
    return (tags,) if isinstance(tags, str) else tuple(tags)


MODES = {
    "FAST_RUN": Mode("FAST_RUN", ("fast_run",)),
    "FAST_COMPILE": Mode("FAST_COMPILE", ("fast_compile",)),
}


_FACTORIES = {}  # name -> callable making a new Mode each time (DebugMode registers itself here)


def register_mode(name, make):
    """Let ``mode=name`` (and ``config.mode``) mean ``make()``: a mode that lives in a module above this one."""
    _FACTORIES[name] = make


def get_mode(mode):
    """A Mode from None (config.mode), a name, or a Mode instance."""
    if isinstance(mode, Mode):
        return _with_config_tags(mode)
    name = mode or config.mode
    if name not in _FACTORIES and name not in MODES:
        wiring.get("registered_modes")  # modes defined above the compiler (DebugMode) register on import
    if name in _FACTORIES:
        return _FACTORIES[name]()
    if mode is None and name == "FAST_RUN" and config.optimizer in ("fast_compile", "merge", "None", "o1"):
        name = "FAST_COMPILE"  # Theano's optimizer flag chooses the rewrites of the default mode
    try:
        return _with_config_tags(MODES[name])
    except KeyError:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(list(MODES) + list(_FACTORIES))}") from None


def _with_config_tags(mode):
    """Theano's ``optimizer_excluding``/``optimizer_including`` flags (names or tags, ':'-separated)."""
    exclude = tuple(t for t in config.optimizer_excluding.split(":") if t)
    include = tuple(t for t in config.optimizer_including.split(":") if t)
    if exclude:
        mode = mode.excluding(*exclude)
    if include:
        mode = mode.including(*include)
    return mode

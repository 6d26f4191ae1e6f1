"""Linker hooks: watch (or check) a compiled function without touching its insides.

A hook is an object with any of the methods of :class:`LinkerHook`; install it
with ``f.add_hook(hook)`` and take it off with ``f.remove_hook(hook)``.  The
profiler (per-thunk timings) and DebugMode (per-thunk checks, a reference run
per call) are both hooks; so is anything a lesson wants to add.

Why hooks instead of wrapping ``f``: the compiled call is generated Python
(``f.source``).  When a hook is installed the linker regenerates that code
with the hook's calls written in at the right places, and when none is
installed the code is exactly the straight-line call with nothing extra, so
an unprofiled function pays nothing for the feature.

Only the methods a hook *overrides* are called (the base class's no-ops are
left out of the generated code).  In one call, in this order:

* ``call_started(args)`` — first thing, with the arguments as passed;
* ``thunk_started(index)`` / ``thunk_finished(index)`` — around the thunk of
  ``f.nodes[index]``; hooks are nested: the first installed is outermost;
* ``call_failed(index, exc)`` — a thunk (or a thunk hook) raised ``exc``;
  the function then raises its own error naming the node.  Nothing is updated;
* ``call_computed(outputs, update_values)`` — every output and update value
  is ready, no shared variable has changed yet: raising here aborts the call
  and leaves every shared variable as it was (DebugMode's comparison);
* ``call_finished()`` — the updates are applied; the result is about to be
  returned.

``attached(fn)`` is called once when the hook is installed (with the
compiled function, so a hook can read ``fn.nodes`` and ``fn.storage_map``).
"""
from __future__ import annotations

EVENTS = ("call_started", "thunk_started", "thunk_finished", "call_failed", "call_computed", "call_finished")


class LinkerHook:
    """Base class for hooks; override the events you need (see the module docs)."""

    def attached(self, fn):
        pass

    def call_started(self, args):
        pass

    def thunk_started(self, index):
        pass

    def thunk_finished(self, index):
        pass

    def call_failed(self, index, exc):
        pass

    def call_computed(self, outputs, update_values):
        pass

    def call_finished(self):
        pass


def hook_methods(hooks, event):
    """The bound ``event`` methods of ``hooks`` that do something (the base no-ops are skipped)."""
    found = []
    for hook in hooks:
        method = getattr(hook, event, None)
        if method is None:
            continue
        if getattr(type(hook), event, None) is getattr(LinkerHook, event):
            continue
        found.append(method)
    return found

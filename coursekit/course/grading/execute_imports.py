"""What the runner's child imports before it drives a kernel, in one place.

:mod:`coursekit.course.grading.execute` calls :func:`load` first thing; the grader's forkserver
(:mod:`coursekit.course.grading.child`) imports this module once, so that each forked child starts with
all of it already loaded. Standard library and Jupyter's client libraries only: nothing here reads
the environment a run is given (the fork sets that afterwards).
"""

import sys


def load() -> None:
    # nbformat imports jsonschema, which imports rfc3987_syntax when it is installed (jupyter-events
    # brings it) for URI formats a notebook never uses; it builds a parser at import: 0.7 s of every
    # run at load 1, 3.3 s at load 7 on 2 cores. Marked absent, jsonschema skips those formats.
    sys.modules.setdefault("rfc3987_syntax", None)
    import jupyter_client.asynchronous  # noqa: F401
    import jupyter_client.manager  # noqa: F401
    import nbclient  # noqa: F401
    import nbclient.util  # noqa: F401
    import nbformat  # noqa: F401
    import numpy  # noqa: F401  (the judges' arrays)
    import zmq  # noqa: F401


load()

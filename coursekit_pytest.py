"""pytest's entry point for coursekit (``pytest11`` in pyproject.toml): the ``--coursekit-reference`` option.

``python -m pytest --nbval-lax --coursekit-reference exercises/ submissions/alice/`` checks each
student notebook the way ``python -m coursekit grade`` grades it; the work is done by
:mod:`coursekit.course.grading.pytest_plugin`.

pytest imports every installed plugin at start-up, in every run of every project in the
environment. So this module lives outside the ``coursekit`` package and imports nothing but pytest:
importing anything under ``coursekit`` first imports the whole array compiler (about a third of a
second, and a library that does not import would break every pytest run, including the one that
would report it). The plugin itself is loaded only when the option is given.
"""

import importlib

OPTION = "--coursekit-reference"


def pytest_addoption(parser):
    group = parser.getgroup("coursekit", "coursekit: check student notebooks as the grader does")
    group.addoption(
        OPTION, metavar="DIR", dest="coursekit_reference", default=None,
        help="check each notebook collected as a student's submission against the reference notebook "
             "of the same name in DIR (normally exercises/): graded cells restored from the reference, "
             "run and judged as `python -m coursekit grade` does; one test per graded cell",
    )
    group.addoption(
        "--coursekit-cell-timeout", metavar="SECONDS", dest="coursekit_cell_timeout", type=int, default=60,
        help="with --coursekit-reference: seconds per cell, as `coursekit grade --cell-timeout` (default: 60)",
    )


def pytest_configure(config):
    if config.getoption("coursekit_reference") is None:
        return
    plugin = importlib.import_module("coursekit.course.grading.pytest_plugin")
    config.pluginmanager.register(plugin.ReferenceCheck(config), "coursekit-reference-check")

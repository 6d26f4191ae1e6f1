"""``python -m coursekit.theano [--report] [--report-to FILE] [--shadow-real-theano] script.py [args]`` (or ``-m module``).

Runs the program with ``import theano`` resolving to coursekit (see :mod:`coursekit.theano`), as
``python script.py`` / ``python -m module`` would run it: same ``sys.argv``, ``__name__ == "__main__"``.
With ``--report`` the porting report is printed to stderr when the program ends, however it ends.
"""
from __future__ import annotations

import argparse
import atexit
import os
import runpy
import sys

from . import install, report


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m coursekit.theano",
        description="Run a Theano program unchanged on coursekit (import theano resolves to coursekit).")
    parser.add_argument("--report", action="store_true", help="print the porting report to stderr at exit")
    parser.add_argument("--report-to", default=None, metavar="FILE",
                        help="write the porting report to FILE at exit (FILE.json: as JSON)")
    parser.add_argument("--shadow-real-theano", action="store_true",
                        help="use coursekit even though a real Theano is installed")
    parser.add_argument("-m", dest="module", default=None, help="run a library module as a script (like python -m)")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="script.py and its arguments")
    args = parser.parse_args(argv)
    if args.module is None and not args.program:
        parser.error("name a script (python -m coursekit.theano script.py) or a module (-m pytest ...)")
    return args


def main(argv=None):
    args = _parse(sys.argv[1:] if argv is None else argv)
    install(shadow_real_theano=args.shadow_real_theano)
    target = args.module or args.program[0]
    if args.report:
        atexit.register(lambda: print(report(program=target), file=sys.stderr))
    if args.report_to:
        atexit.register(report, args.report_to, target)
    if args.module is not None:
        sys.argv = [args.module, *args.program]
        runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(args.program)
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main()

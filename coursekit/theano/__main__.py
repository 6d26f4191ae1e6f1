"""``python -m coursekit.theano [--report] [--report-to FILE] [--shadow-real-theano] script.py [args]`` (or ``-m module``).

Runs the program with ``import theano`` resolving to coursekit (see :mod:`coursekit.theano`), as
``python script.py`` / ``python -m module`` would run it: same ``sys.argv``, ``__name__ == "__main__"``.
With ``--report`` the porting report is printed to stderr when the program ends, however it ends.
"""
from __future__ import annotations

import argparse  # only its Namespace: the program's own options must pass through untouched
import atexit
import os
import runpy
import sys

from . import install, report
from .report import RECORD


USAGE = ("usage: python -m coursekit.theano [--report] [--report-to FILE] [--shadow-real-theano] "
         "(script.py | -m module) [args...]")


def _parse(argv):
    """Options up to the script or ``-m module``; everything after belongs to the program (as with python)."""
    args = argparse.Namespace(report=False, report_to=None, shadow_real_theano=False, module=None, program=[])
    i = 0
    while i < len(argv):
        item = argv[i]
        if item in ("-h", "--help"):
            print(USAGE + "\n\n" + (__doc__ or ""))
            raise SystemExit(0)
        if item == "--report":
            args.report = True
        elif item == "--shadow-real-theano":
            args.shadow_real_theano = True
        elif item in ("--report-to", "-m") and i + 1 < len(argv):
            if item == "-m":
                args.module, args.program = argv[i + 1], argv[i + 2:]
                return args
            args.report_to = argv[i + 1]
            i += 1
        elif item.startswith("-"):
            raise SystemExit(f"{USAGE}\npython -m coursekit.theano: unknown option {item!r} (options of the "
                             "program go after the script or the module)")
        else:
            args.program = argv[i:]
            return args
        i += 1
    raise SystemExit(f"{USAGE}\npython -m coursekit.theano: name a script (script.py) or a module (-m pytest ...)")


def _note_missing():
    """Without --report, still say at exit which Theano names the program asked for in vain."""
    missing = RECORD.summary()["missing"]
    if missing:
        print(f"coursekit.theano: the program asked for {len(missing)} Theano name(s) coursekit does not have: "
              f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''} (python -m coursekit.theano --report "
              "... lists everything it used)", file=sys.stderr)


def main(argv=None):
    args = _parse(sys.argv[1:] if argv is None else argv)
    install(shadow_real_theano=args.shadow_real_theano)
    target = args.module or args.program[0]
    if args.report:
        atexit.register(lambda: print(report(program=target), file=sys.stderr))
    else:
        atexit.register(_note_missing)
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

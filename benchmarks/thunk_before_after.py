#!/usr/bin/env python
"""The elementwise CPU thunk before and after issue 24's merge, interleaved in one process.

    python benchmarks/thunk_before_after.py [--rounds 15]

Before (commit 1bd286e), ``Elemwise.make_thunk`` picked one of several hand-written closures; after,
:mod:`coursekit.scalar.cpu` writes one thunk per case from a generator.  The closures of the old code
that the workloads reach are copied below (the 0-d operator case of W2's scalars, the two-input
general case of W2's vectors and of large arrays, the one-input case of W1's ``exp``), and each is
timed against the new thunk for the same node in alternating bursts; a row is the median of
new/old over the rounds, so the machine's load moves both sides alike.
"""
from __future__ import annotations

import argparse
import operator
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import coursekit.tensor as T  # noqa: E402
from coursekit.scalar.cpu import broadcast_checker, cpu_thunk, fits_buffer  # noqa: E402


def old_zero_d(cell, a, b, operator_fn=operator.add):
    asarray = np.asarray

    def thunk():
        cell[0] = asarray(operator_fn(a[0][()], b[0][()]))
    return thunk


def old_general1(impl, a, cell):
    ndarray, asarray = np.ndarray, np.asarray

    def thunk():
        x = a[0]
        out = cell[0]
        if type(out) is ndarray and out.shape == x.shape:
            cell[0] = impl(x, out=out)
        else:
            r = impl(x)
            cell[0] = r if type(r) is ndarray else asarray(r)
    return thunk


def old_general2(node, impl, a, b, cell):
    ndarray, asarray = np.ndarray, np.asarray
    check, fits = broadcast_checker(node), fits_buffer

    def thunk():
        x, y = a[0], b[0]
        out = cell[0]
        if type(out) is ndarray and (getattr(x, "shape", ()) == out.shape == getattr(y, "shape", ())
                                     or fits(out.shape, (x, y), check)):
            cell[0] = impl(x, y, out=out)
        else:
            r = impl(x, y)
            cell[0] = r if type(r) is ndarray else asarray(r)
            if getattr(x, "shape", ()) != r.shape or getattr(y, "shape", ()) != r.shape:
                check((x, y), r.shape)
    return thunk


def cases():
    rng = np.random.default_rng(0)
    for label, make, value, calls in [("W2: 0-d float32 add", T.fscalar, np.float32(1.5), 50000),
                                      ("W2: 10-element float32 add", T.fvector, rng.random(10, "float32"), 50000),
                                      ("400x784 float32 add", T.fmatrix, rng.random((400, 784), "float32"), 200)]:
        a, b = make(), make()
        node = (a + b).owner
        cells = [[value], [value]]
        old_cell, new_cell = [None], [None]
        old = old_zero_d(old_cell, *cells) if value.ndim == 0 else old_general2(node, np.add, *cells, old_cell)
        yield label, old, cpu_thunk(node, node.op.scalar_op, cells, new_cell), calls, (old_cell, new_cell)
    x = T.fvector()
    node = T.exp(x).owner
    cell = [rng.random(230400, "float32")]
    old_cell, new_cell = [None], [None]
    yield ("W1: exp of 230400 float32", old_general1(np.exp, cell, old_cell),
           cpu_thunk(node, node.op.scalar_op, [cell], new_cell), 50, (old_cell, new_cell))


def burst(thunk, calls):
    start = time.perf_counter()
    for _ in range(calls):
        thunk()
    return time.perf_counter() - start


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    for label, old, new, calls, (old_cell, new_cell) in cases():
        old(), new()
        assert np.array_equal(old_cell[0], new_cell[0]), label
        ratios = [burst(new, calls) / burst(old, calls) for _ in range(args.rounds)]
        print(f"{label:28} new/old thunk time: median {statistics.median(ratios):.3f} "
              f"(range {min(ratios):.3f}-{max(ratios):.3f}, {args.rounds} rounds)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

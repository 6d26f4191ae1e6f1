"""The Theano tutorial's blocks issue 38 named, run through both porting routes (written here in the tutorial's idiom).

    python benchmarks/tutorial_blocks.py          # prints a Markdown table; --json for the raw outcomes

Each block runs in a fresh interpreter three ways: through the alias (``python -m coursekit.theano``, Theano's
float64 default), with changed imports (``import coursekit as theano``: coursekit's float32 default), and with
changed imports plus ``COURSEKIT_FLAGS=floatX=float64`` (the fix the porting report names).  A block passes
when it runs to the end and prints what the tutorial prints (its last line is compared).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]

HEAD = {"alias": "import theano\nimport theano.tensor as T\nfrom theano import sparse\n"
                 "from theano.tensor.shared_randomstreams import RandomStreams\n"
                 "from theano.sandbox.rng_mrg import MRG_RandomStreams\n",
        "imports": "import coursekit as theano\nimport coursekit.tensor as T\nfrom coursekit import sparse\n"
                   "from coursekit.random import RandomStreams, MRG_RandomStreams\n"}

# name -> (body, what the tutorial prints last)
BLOCKS = {
    "sparse: all_dtypes": ("print(sorted(sparse.all_dtypes)[:3])", "['complex128', 'complex64', 'float32']"),
    "sparse: to and fro": ("""
        import numpy as np, scipy.sparse as sp
        x = sparse.csc_matrix(name='x', dtype='float32')
        z = sparse.csc_from_dense(sparse.dense_from_sparse(x))
        print(theano.function([x], z)(sp.csc_matrix(np.eye(2, dtype='float32'))).toarray().tolist())""",
                           "[[1.0, 0.0], [0.0, 1.0]]"),
    "sparse: properties and construction": ("""
        import numpy as np, scipy.sparse as sp
        x = sparse.csc_matrix(name='x', dtype='int64')
        data, indices, indptr, shape = sparse.csm_properties(x)
        f = theano.function([x], sparse.CSR(data, indices, indptr, shape))
        print(f(sp.csc_matrix(np.asarray([[0, 1, 1], [0, 0, 0], [1, 0, 0]]))).toarray().tolist())""",
                                            "[[0, 0, 1], [1, 0, 0], [1, 0, 0]]"),
    "sparse: structured_add": ("""
        import numpy as np, scipy.sparse as sp
        x = sparse.csc_matrix(name='x', dtype='float32')
        f = theano.function([x], sparse.structured_add(x, 2))
        a = sp.csc_matrix(np.asarray([[0, 0, -1], [0, -2, 1], [3, 0, 0]], dtype='float32'))
        print(f(a).toarray().tolist())""", "[[0.0, 0.0, 1.0], [0.0, 0.0, 3.0], [5.0, 0.0, 0.0]]"),
    "sparse: structured_dot gradient": ("""
        import numpy as np, scipy.sparse as sp
        x = sparse.csr_matrix(name='x'); W = theano.shared(np.ones((3, 2), dtype=theano.config.floatX))
        g = T.grad(sparse.structured_dot(x, W).sum(), W)
        print(theano.function([x], g)(sp.csr_matrix(np.eye(3, dtype=theano.config.floatX))).tolist())""",
                                        "[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]"),
    "random: state get/seed/set": ("""
        srng = RandomStreams(seed=234)
        rv_u = srng.uniform((2, 2))
        f = theano.function([], rv_u)
        nearly_zeros = theano.function([], rv_u + rv_u - 2 * rv_u)
        rng_val = rv_u.rng.get_value(borrow=True); rng_val.seed(89234); rv_u.rng.set_value(rng_val, borrow=True)
        srng.seed(902340)
        state_after_v0 = rv_u.rng.get_value().get_state()
        nearly_zeros()  # this affects rv_u's generator
        v1 = f(); rng = rv_u.rng.get_value(borrow=True); rng.set_state(state_after_v0)
        rv_u.rng.set_value(rng, borrow=True); v2 = f(); v3 = f()
        print((v1 == v2).all(), (v1 == v3).all())""", "False True"),
    "random: copying state (printed values)": ("""
        class Graph():
            def __init__(self, seed=123):
                self.rng = RandomStreams(seed)
                self.y = self.rng.uniform(size=(1,))
        g1 = Graph(seed=123); f1 = theano.function([], g1.y)
        g2 = Graph(seed=987); f2 = theano.function([], g2.y)
        print(f1(), f2())
        for (su1, su2) in zip(g1.rng.state_updates, g2.rng.state_updates):
            su2[0].set_value(su1[0].get_value())
        print(f1(), f2())""", "[0.59044123] [0.59044123]"),
    "random: MRG copying state (rstate)": ("""
        g1, g2 = MRG_RandomStreams(123), MRG_RandomStreams(987)
        y1, y2 = g1.uniform(size=(1,)), g2.uniform(size=(1,))
        f1, f2 = theano.function([], y1), theano.function([], y2)
        g2.rstate = g1.rstate
        for (su1, su2) in zip(g1.state_updates, g2.state_updates):
            su2[0].set_value(su1[0].get_value())
        print(f1() == f2())""", "[ True]"),
    "gradients: Jacobian through scan": ("""
        x = T.dvector('x'); y = x ** 2
        J, updates = theano.scan(lambda i, y, x: T.grad(y[i], x), sequences=T.arange(y.shape[0]),
                                 non_sequences=[y, x])
        print(theano.function([x], J, updates=updates)([4, 4]).tolist())""", "[[8.0, 0.0], [0.0, 8.0]]"),
    "gradients: Hessian through scan": ("""
        x = T.dvector('x'); cost = (x ** 2).sum(); gy = T.grad(cost, x)
        H, updates = theano.scan(lambda i, gy, x: T.grad(gy[i], x), sequences=T.arange(gy.shape[0]),
                                 non_sequences=[gy, x])
        print(theano.function([x], H, updates=updates)([4, 4]).tolist())""", "[[2.0, 0.0], [0.0, 2.0]]"),
    "basics: logistic function (floatX matrix, float64 data)": ("""
        import numpy as np
        x = T.matrix('x'); s = 1 / (1 + T.exp(-x))
        print(theano.function([x], s)(np.array([[0, 1], [-1, -2]])).round(6).tolist())""",
                                                                "[[0.5, 0.731059], [0.268941, 0.119203]]"),
}

ROUTES = {"alias": ("alias", {}), "changed imports": ("imports", {}),
          "changed imports + floatX=float64": ("imports", {"COURSEKIT_FLAGS": "floatX=float64"})}


def run_block(body, route):
    head, extra = ROUTES[route]
    env = {k: v for k, v in os.environ.items() if k not in ("THEANO_FLAGS", "COURSEKIT_FLAGS")}
    env.update(extra, PYTHONPATH=str(REPO))
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / "block.py"
        script.write_text(HEAD[head] + textwrap.dedent(body))
        cmd = [sys.executable] + (["-m", "coursekit.theano"] if head == "alias" else []) + [str(script)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    error = (proc.stderr.strip().splitlines() or [""])[-1] if proc.returncode else ""
    return {"rc": proc.returncode, "last": last, "error": error[:160]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {name: {route: run_block(body, route) for route in ROUTES} for name, (body, _) in BLOCKS.items()}
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print("| block | " + " | ".join(ROUTES) + " |\n|---|" + "---|" * len(ROUTES))
    for name, (_, expected) in BLOCKS.items():
        cells = []
        for route in ROUTES:
            r = results[name][route]
            cells.append("as the tutorial" if r["rc"] == 0 and r["last"] == expected else
                         f"differs: `{r['last']}`" if r["rc"] == 0 else f"stops: {r['error']}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

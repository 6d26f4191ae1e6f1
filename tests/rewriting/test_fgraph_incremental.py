"""Issue 17: the FunctionGraph changes locally, so compile time grows linearly with the graph.

Counts, never timings: how many whole-graph walks a compilation makes (it must not grow with
depth), and that after any sequence of replacements the incremental client lists are exactly
what a rebuild from scratch gives.
"""
import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit import fgraph as fgraph_module
from coursekit.fgraph import FunctionGraph


def mlp_step(depth, width=4):
    rng = np.random.RandomState(0)
    x, y = T.matrix("x"), T.matrix("y")
    params = [(theano.shared(rng.randn(width, width).astype("float32")), theano.shared(np.zeros(width, "float32")))
              for _ in range(depth)]
    h = x
    for W, b in params:
        h = T.tanh(T.dot(h, W) + b)
    cost = ((h - y) ** 2).mean()
    flat = [p for pair in params for p in pair]
    grads = T.grad(cost, flat)
    return [x, y], cost, [(p, p - 0.01 * g) for p, g in zip(flat, grads)]


def whole_graph_walks(monkeypatch, depth):
    calls = []
    real = fgraph_module.apply_nodes_between

    def counting(inputs, outputs):
        calls.append(1)
        return real(inputs, outputs)

    inputs, cost, updates = mlp_step(depth)
    monkeypatch.setattr(fgraph_module, "apply_nodes_between", counting)
    theano.function(inputs, cost, updates=updates)
    monkeypatch.undo()
    return len(calls)


def test_whole_graph_walks_do_not_grow_with_depth(monkeypatch):
    """A replacement used to re-walk the whole graph (708 walks at 100 layers): quadratic compile time.
    Now the number of walks is a property of the pipeline, not of the graph's size."""
    shallow, deep = whole_graph_walks(monkeypatch, 3), whole_graph_walks(monkeypatch, 12)
    assert deep <= shallow + 2, (shallow, deep)
    assert deep < 30


def snapshot(fg):
    clients = {var: sorted((id(c) if c != "output" else -1, i) for c, i in readers)
               for var, readers in fg.clients.items() if readers}
    return set(fg.apply_nodes), clients, [n for n in fg.toposort()]


@pytest.mark.parametrize("seed", range(5))
def test_incremental_replace_agrees_with_a_rebuild(seed):
    """Random replacements (new subgraphs reading old values, values replaced by others already in the
    graph, outputs replaced): clients, nodes and order are exactly what a rebuild computes."""
    rng = np.random.default_rng(seed)
    x, y = T.fvectors("x,y")
    layer = [x, y]
    for _ in range(12):
        a, b = rng.choice(len(layer), 2)
        op = [T.add, T.mul, T.sub, lambda u, v: T.exp(u)][rng.integers(4)]
        layer.append(op(layer[a], layer[b]))
    fg = FunctionGraph([x, y], [layer[-1], layer[-3]])
    for _ in range(8):
        variables = [v for v in fg.variables() if v.owner is not None]
        if not variables:
            break
        old = variables[rng.integers(len(variables))]
        candidates = [v for v in fg.variables() if v is not old and v.type == old.type and v not in _descendants(fg, old)]
        if rng.random() < 0.5 or not candidates:
            new = T.tanh(old.owner.inputs[0]) * 2  # a new subgraph that reads what old read
        else:
            new = candidates[rng.integers(len(candidates))]
        if new.type != old.type:
            continue
        fg.replace(old, new)
        incremental = snapshot(fg)
        fresh = FunctionGraph(fg.inputs, list(fg.outputs))
        assert incremental[0] == set(fresh.apply_nodes)
        assert incremental[1] == snapshot(fresh)[1]
        order = incremental[2]
        position = {n: k for k, n in enumerate(order)}
        assert all(position[i.owner] < position[n] for n in order for i in n.inputs if i.owner in position)


def _descendants(fg, var):
    out, stack = set(), [var]
    while stack:
        v = stack.pop()
        for c, _ in fg.clients.get(v, []):
            if c != "output":
                for o in c.outputs:
                    if o not in out:
                        out.add(o)
                        stack.append(o)
    return out

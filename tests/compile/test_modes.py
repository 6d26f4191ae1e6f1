"""Modes are queries over rewrite tags; rewrites declare the ops they track; FunctionGraph declares its fields."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import coursekit as theano
import coursekit.tensor as T
from coursekit.fgraph import FunctionGraph
from coursekit.graph import Op
from coursekit import gradient
from coursekit.compile.mode import get_mode
from coursekit.rewriting import RewriteQuery, local_rewrite, registered
from coursekit.scalar.ops import get
from coursekit.tensor.elemwise import DimShuffle, Elemwise


def test_fast_compile_merges_duplicates():
    x = T.dvector("x")
    f = theano.function([x], [T.exp(x) + 1, T.exp(x) + 1], mode="FAST_COMPILE")
    assert len(f.nodes) == 2  # one exp, one add: the duplicates were merged
    assert any(name.startswith("merge") for _, name, _ in f.maker.fgraph.rewrite_log)
    a, b = f(np.zeros(2))
    np.testing.assert_array_equal(a, [2.0, 2.0])
    assert a is not b  # merged, but the caller still gets two arrays


def test_fast_compile_does_not_run_fast_run_only_rewrites():
    x = T.dvector("x")
    f = theano.function([x], T.tanh(x * 2 + 1), mode="FAST_COMPILE")
    assert len(f.nodes) == 3  # no fusion
    g = theano.function([x], T.tanh(x * 2 + 1), mode="FAST_RUN")
    assert len(g.nodes) == 1


def test_query_include_require_exclude():
    by_name = {rw.name: rw for rw in registered()}
    gemm, merge = by_name["gemm_inplace"], by_name["merge_canonicalize"]
    assert RewriteQuery(("fast_run",)).selects(gemm)
    assert not RewriteQuery(("fast_compile",)).selects(gemm) and RewriteQuery(("fast_compile",)).selects(merge)
    assert not RewriteQuery(("fast_run",), require=("inplace",)).selects(merge)
    assert RewriteQuery(("fast_run",), require=("inplace", "blas")).selects(gemm)
    assert not RewriteQuery(("fast_run",), exclude=("gemm",)).selects(gemm)
    assert RewriteQuery(("gemm_inplace",)).selects(gemm)  # a rewrite's own name is a tag


def test_mode_methods_keep_the_mode_and_change_the_query():
    mode = get_mode("FAST_RUN").excluding("fusion").requiring("algebra").including("gpu")
    assert mode.include == ("fast_run", "gpu") and mode.exclude == ("fusion",) and mode.require == ("algebra",)
    assert get_mode("FAST_RUN").exclude == ()  # the registered mode is unchanged
    debug = get_mode("DebugMode").excluding("fusion")
    assert type(debug).__name__ == "DebugMode" and debug.exclude == ("fusion",)


def test_requiring_a_tag_runs_only_those_rewrites():
    x = T.dvector("x")
    # only the stabilize rewrites: log(1 + exp(x)) becomes softplus, nothing is fused
    f = theano.function([x], T.log(1 + T.exp(x)), mode=theano.Mode("m", ("fast_run",), require=("stabilize",)))
    assert [str(n.op) for n in f.nodes] == ["Elemwise{softplus}"]
    np.testing.assert_allclose(f(np.array([1000.0])), [1000.0])


def test_rewrites_only_see_the_ops_they_track():
    seen = []

    @local_rewrite("canonicalize", "test_tracks", tracks=[DimShuffle])
    def look(fgraph, node):
        seen.append(type(node.op))
        return None

    try:
        x = T.dmatrix("x")
        theano.function([x], T.exp(x).T + 1)
        assert seen and set(seen) == {DimShuffle}
        assert look.rewrite.looks_at(DimShuffle((False, False), (1, 0)))
        assert not look.rewrite.looks_at(T.exp(x).owner.op)
    finally:
        from coursekit import rewriting

        rewriting._DB["canonicalize"] = [r for r in rewriting._DB["canonicalize"] if r.name != "look"]


def test_every_library_local_rewrite_declares_what_it_tracks():
    untracked = [rw.name for rw in registered() if rw.kind == "local" and rw.tracks is None]
    assert untracked == ["constant_folding"]  # the one rewrite that really concerns every node
    # op classes, or op instances: a pattern rule tracks exactly the ops its patterns start with
    assert all(isinstance(t, (type, Op)) for rw in registered() if rw.tracks for t in rw.tracks)
    assert any(Elemwise in (rw.tracks or ()) for rw in registered())
    assert any(Elemwise(get("neg")) in (rw.tracks or ()) for rw in registered())


def test_function_graph_declares_its_fields():
    x = T.dvector("x")
    fg = FunctionGraph([x], [T.exp(x)])
    assert (fg.n_outputs, fg.update_targets, fg.rewrite_log, fg.device, fg.placed, fg.reference) == \
        (1, [], [], None, False, None)
    with pytest.raises(AttributeError):
        fg.some_new_field = 1
    with pytest.raises(ValueError, match="update values"):
        FunctionGraph([x], [T.exp(x)], n_outputs=0)


def test_the_backward_sweep_does_not_rewrite():
    """Differentiation itself knows nothing of graph rewriting: stabilising the cost is grad's separate,
    explicit step (gradient.stabilized), taken before the sweep and skipped with stabilize=False."""
    sweep = inspect.getsource(gradient.backward)
    assert "stabiliz" not in sweep and "rewrit" not in sweep
    assert "stabilized(" in inspect.getsource(gradient.grad)


def test_grad_still_differentiates_the_stabilised_cost():
    z = T.dvector("z")
    cost = -T.log(1 / (1 + T.exp(-z))).sum()  # log(sigmoid(z)) written out
    g = theano.function([z], theano.grad(cost, z))
    np.testing.assert_allclose(g(np.array([-800.0, 0.0])), [-1.0, -0.5])

"""``coursekit.sparse`` (Theano's ``theano.sparse``): the tutorial's sparse page, products with gradients checked
by finite differences, and what happens on a GPU device (the sparse ops stay on the host)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import coursekit as theano
import coursekit.tensor as T
from coursekit import sparse

A = np.asarray([[0, 0, -1], [0, -2, 1], [3, 0, 0]], dtype="float32")


# ---------------------------------------------------------------- the tutorial's blocks, with its printed results
def test_all_dtypes_is_theanos_set():
    assert sparse.all_dtypes == {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                 "float32", "float64", "complex64", "complex128"}


def test_to_and_fro():
    x = sparse.csc_matrix(name="x", dtype="float32")
    y = sparse.dense_from_sparse(x)
    z = sparse.csc_from_dense(y)
    out, dense = theano.function([x], [z, y])(sp.csc_matrix(A))
    assert out.format == "csc" and out.dtype == np.float32 and out.nnz == 4
    np.testing.assert_array_equal(out.toarray(), A) and np.testing.assert_array_equal(dense, A)
    assert isinstance(x.toarray().owner.op, sparse.basic.DenseFromSparse)


def test_properties_and_construction_give_the_transpose():
    x = sparse.csc_matrix(name="x", dtype="int64")
    data, indices, indptr, shape = sparse.csm_properties(x)
    y = sparse.CSR(data, indices, indptr, shape)
    f = theano.function([x], y)
    a = sp.csc_matrix(np.asarray([[0, 1, 1], [0, 0, 0], [1, 0, 0]]))
    out = f(a)
    assert out.format == "csr"
    np.testing.assert_array_equal(out.toarray(), [[0, 0, 1], [1, 0, 0], [1, 0, 0]])  # the tutorial's print
    props = theano.function([x], [data, indices, indptr, shape])(a)
    assert [p.tolist() for p in props] == [a.data.tolist(), a.indices.tolist(), a.indptr.tolist(), [3, 3]]


def test_structured_add_touches_only_the_stored_entries():
    x = sparse.csc_matrix(name="x", dtype="float32")
    y = sparse.structured_add(x, 2)
    out = theano.function([x], y)(sp.csc_matrix(A))
    np.testing.assert_array_equal(out.toarray(), [[0, 0, 1], [0, 0, 3], [5, 0, 0]])  # the tutorial's print


def test_a_sparse_input_refuses_a_dense_array_and_names_the_conversion():
    x = sparse.csr_matrix("x", dtype="float64")
    f = theano.function([x], sparse.dense_from_sparse(x))
    with pytest.raises(TypeError, match="scipy.sparse.csr_matrix"):
        f(np.eye(2))
    np.testing.assert_array_equal(f(sp.csc_matrix(np.eye(2))), np.eye(2))  # the other format is converted
    with pytest.raises(TypeError, match="all_dtypes"):
        sparse.csr_matrix(dtype="float16")


# ------------------------------------------------------------------------------- products and gradients
def _numeric(f, Xv, Wv, eps=1e-6):
    """Central differences of f(X, W) over X's stored entries and every entry of W."""
    gX = np.zeros(Xv.nnz)
    for k in range(Xv.nnz):
        plus, minus = Xv.copy(), Xv.copy()
        plus.data[k] += eps
        minus.data[k] -= eps
        gX[k] = (f(plus, Wv) - f(minus, Wv)) / (2 * eps)
    gW = np.zeros_like(Wv)
    for idx in np.ndindex(*Wv.shape):
        plus, minus = Wv.copy(), Wv.copy()
        plus[idx] += eps
        minus[idx] -= eps
        gW[idx] = (f(Xv, plus) - f(Xv, minus)) / (2 * eps)
    return gX, gW


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_structured_dot_and_dot_values_and_gradients_by_finite_differences(fmt):
    X, W = sparse.matrix(fmt, "X", dtype="float64"), T.dmatrix("W")
    Xv = sp.random(4, 5, density=0.4, format=fmt, random_state=3)
    Wv = np.random.default_rng(0).standard_normal((5, 3))
    for product in (sparse.structured_dot, sparse.dot):
        y = product(X, W)
        cost = (y ** 2).sum() + T.sin(y).sum()
        gX, gW = T.grad(cost, [X, W])
        f = theano.function([X, W], [y, cost, gX, gW])
        out, c, gx, gw = f(Xv, Wv)
        np.testing.assert_allclose(out, Xv @ Wv)
        cost_only = theano.function([X, W], cost)
        num_gX, num_gW = _numeric(lambda a, b: float(cost_only(a, b)), Xv, Wv)
        np.testing.assert_allclose(gw, num_gW, rtol=1e-6, atol=1e-6)
        coo = Xv.tocoo()
        if product is sparse.structured_dot:  # structured: a sparse matrix of X's pattern
            assert sp.issparse(gx) and gx.format == fmt and gx.nnz == Xv.nnz
            got = np.asarray(gx.toarray()[coo.row, coo.col])
        else:  # Theano's dot: the full dense gradient, g @ W.T
            assert isinstance(gx, np.ndarray) and gx.shape == (4, 5)
            got = gx[coo.row, coo.col]
        np.testing.assert_allclose(got, num_gX, rtol=1e-6, atol=1e-6)  # tocoo() keeps the order of Xv.data


def test_dot_of_dense_times_sparse_and_its_gradient():
    A_, X = T.dmatrix("A"), sparse.csc_matrix("X", dtype="float64")
    Av = np.arange(6.0).reshape(2, 3)
    Xv = sp.csc_matrix(np.array([[1.0, 0, 2], [0, 0, 3], [4, 0, 0]]))
    y = sparse.dot(A_, X)
    g = T.grad(y.sum(), A_)
    out, gv = theano.function([A_, X], [y, g])(Av, Xv)
    np.testing.assert_allclose(out, Av @ Xv.toarray())
    np.testing.assert_allclose(gv, np.ones((2, 3)) @ Xv.toarray().T)
    with pytest.raises(TypeError, match="one of the two arguments must be sparse"):
        sparse.dot(A_, A_)


def test_transpose_dense_from_sparse_gradient_and_arithmetic():
    X = sparse.csr_matrix("X", dtype="float64")
    Xv = sp.csr_matrix(np.array([[0.0, 2.0], [3.0, 0.0], [0.0, -1.0]]))
    assert X.T.format == "csc"
    t, n, s, m = theano.function([X], [X.T, -X, X + X, X * 3.0])(Xv)
    np.testing.assert_array_equal(t.toarray(), Xv.toarray().T)
    np.testing.assert_array_equal(n.toarray(), -Xv.toarray())
    np.testing.assert_array_equal(s.toarray(), 2 * Xv.toarray())
    np.testing.assert_array_equal(m.toarray(), 3 * Xv.toarray())
    # the gradient of dense_from_sparse is structured: zeros where X stores nothing are not in it
    g = theano.function([X], T.grad((sparse.dense_from_sparse(X) * np.arange(6.0).reshape(3, 2)).sum(), X))(Xv)
    assert sp.issparse(g) and g.nnz == Xv.nnz
    np.testing.assert_array_equal(g.toarray(), np.where(Xv.toarray() != 0, np.arange(6.0).reshape(3, 2), 0))


def test_on_the_simulated_gpu_the_sparse_ops_stay_on_the_host_and_give_the_same_numbers():
    X, W = sparse.csr_matrix("X", dtype="float32"), theano.shared(np.ones((3, 2), dtype="float32"), name="W")
    Xv = sp.csr_matrix(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with theano.config.change(device="sim", floatX="float32"):
            f = theano.function([X], T.tanh(sparse.structured_dot(X, W)))
    names = [type(n.op).__name__ for n in f.toposort()]
    assert "StructuredDot" in names and not any(n.startswith("Gpu") and "Dot" in n for n in names), names
    np.testing.assert_allclose(np.asarray(f(Xv)), np.tanh(A @ np.ones((3, 2))), rtol=1e-6)


@pytest.mark.parametrize("build", [lambda X: X * 3.0, lambda X: X + X, lambda X: -X, lambda X: X.T.T,
                                   lambda X: sparse.structured_add(X, 1.5)],
                         ids=["mul", "add", "neg", "transpose", "structured_add"])
def test_gradients_through_the_sparse_arithmetic_by_finite_differences(build):
    X, W = sparse.csr_matrix("X", dtype="float64"), T.dmatrix("W")
    Xv = sp.random(3, 4, density=0.5, format="csr", random_state=2)
    Wv = np.random.default_rng(1).standard_normal((4, 2))
    cost = (sparse.structured_dot(build(X), W) ** 2).sum()
    g = theano.function([X, W], T.grad(cost, X))(Xv, Wv)
    assert sp.issparse(g)  # structured all the way: a sparse gradient
    cost_only = theano.function([X, W], cost)
    numeric, _ = _numeric(lambda a, b: float(cost_only(a, b)), Xv, Wv)
    coo = Xv.tocoo()
    np.testing.assert_allclose(g.toarray()[coo.row, coo.col], numeric, rtol=1e-5, atol=1e-6)

"""MRG32k3a: L'Ecuyer's combined multiple-recursive generator, vectorised over streams.

Why this generator: its whole state is six integers per stream and a step
is integer arithmetic that fits in int64, so NumPy on the host and CuPy on a
GPU produce *bit-identical* numbers from the same state.  That is what lets
``MRG_RandomStreams`` run on either device and still be reproducible.

Each stream is a row of a ``(n_streams, 6)`` int64 state array
``[x10, x11, x12, x20, x21, x22]``.  One step of every stream is a handful of
array operations; a sample of ``n`` numbers takes ``ceil(n / n_streams)``
steps, and element ``i`` comes from stream ``i % n_streams``.  Streams start
2**76 steps apart (L'Ecuyer's "substreams"): the jump is the recurrence
matrix raised to that power, computed once with Python's exact integers.

The step functions take ``xp`` (NumPy or CuPy) so one implementation serves
both devices.
"""
from __future__ import annotations

import numpy as np

M1 = 4294967087
M2 = 4294944443
A12, A13N = 1403580, 810728
A21, A23N = 527612, 1370589
NORM = 1.0 / (M1 + 1)  # 2.328306549295728e-10: results lie strictly inside (0, 1)

# one step of each component as a 3x3 matrix acting on (x_{n-3}, x_{n-2}, x_{n-1})
_A1 = ((0, 1, 0), (0, 0, 1), (-A13N % M1, A12, 0))
_A2 = ((0, 1, 0), (0, 0, 1), (-A23N % M2, 0, A21))


def _matmul_mod(a, b, m):
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)) for i in range(3))


def _matpow_mod(a, e, m):
    result = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    while e:
        if e & 1:
            result = _matmul_mod(result, a, m)
        a = _matmul_mod(a, a, m)
        e >>= 1
    return result


_JUMP1 = _matpow_mod(_A1, 2 ** 76, M1)
_JUMP2 = _matpow_mod(_A2, 2 ** 76, M2)


def _mulmod(a, x, m, xp):
    """``(a * x) % m`` for a < 2**32 (Python int) and int64 arrays x < 2**32, without int64 overflow."""
    hi, lo = x >> 16, x & 0xFFFF
    return ((a * hi) % m * 65536 + a * lo) % m


def _apply_matrix(mat, states, m, xp):
    """``mat @ states`` mod m for states of shape (n, 3), exactly."""
    cols = [states[:, k] for k in range(3)]
    rows = []
    for i in range(3):
        acc = xp.zeros_like(cols[0])
        for k in range(3):
            if mat[i][k]:
                acc = (acc + _mulmod(mat[i][k], cols[k], m, xp)) % m
        rows.append(acc)
    return xp.stack(rows, axis=1)


def seed_to_state(seed):
    """The first stream's state for an integer seed (every component in its valid range, never all zero)."""
    words = np.random.SeedSequence(int(seed) & (2 ** 63 - 1)).generate_state(6, dtype=np.uint32).astype(np.int64)
    first, second = words[:3] % M1, words[3:] % M2
    first[0] = first[0] or 1
    second[0] = second[0] or 1
    return np.concatenate([first, second])


def substreams(start, n_streams, xp=np):
    """``n_streams`` states, each 2**76 steps after the previous, beginning at ``start`` (6 ints).

    Built by doubling: streams [n, 2n) are streams [0, n) jumped n substreams
    ahead, so it takes log2(n_streams) vectorised matrix products.
    """
    states = xp.asarray(np.asarray(start, dtype=np.int64).reshape(1, 6))
    jump1, jump2 = _JUMP1, _JUMP2
    while states.shape[0] < n_streams:
        ahead = xp.concatenate([_apply_matrix(jump1, states[:, :3], M1, xp),
                                _apply_matrix(jump2, states[:, 3:], M2, xp)], axis=1)
        states = xp.concatenate([states, ahead], axis=0)
        jump1, jump2 = _matmul_mod(jump1, jump1, M1), _matmul_mod(jump2, jump2, M2)
    return states[:n_streams]


def next_start(start):
    """The state one *stream* (2**127 steps) after ``start``: where the next random variable begins."""
    big1, big2 = _matpow_mod(_A1, 2 ** 127, M1), _matpow_mod(_A2, 2 ** 127, M2)
    s = [int(v) for v in start]
    first = [sum(big1[i][k] * s[k] for k in range(3)) % M1 for i in range(3)]
    second = [sum(big2[i][k] * s[3 + k] for k in range(3)) % M2 for i in range(3)]
    return np.asarray(first + second, dtype=np.int64)


def uniform_steps(state, n, xp=np):
    """(new state, ``n`` float64 uniforms in (0, 1)) from an (n_streams, 6) int64 state; the input is not modified."""
    n_streams = state.shape[0]
    steps = -(-n // n_streams) if n else 0
    x10, x11, x12, x20, x21, x22 = (state[:, k] for k in range(6))
    out = xp.empty((steps, n_streams), dtype=xp.float64)
    for k in range(steps):
        p1 = (A12 * x11 - A13N * x10) % M1
        x10, x11, x12 = x11, x12, p1
        p2 = (A21 * x22 - A23N * x20) % M2
        x20, x21, x22 = x21, x22, p2
        diff = p1 - p2
        out[k] = xp.where(diff > 0, diff, diff + M1) * NORM
    new_state = xp.stack([x10, x11, x12, x20, x21, x22], axis=1)
    return new_state, out.reshape(-1)[:n]


_BELOW_ONE_32 = np.nextafter(np.float32(1), np.float32(0))


def to_dtype(samples, dtype, xp=np):
    """Cast float64 uniforms to ``dtype``, keeping them strictly below 1 (float32 rounding could reach 1.0)."""
    if dtype == "float64":
        return samples
    out = samples.astype(dtype)
    return xp.minimum(out, _BELOW_ONE_32) if dtype == "float32" else out

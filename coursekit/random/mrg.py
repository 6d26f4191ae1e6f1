"""MRG31k3p: L'Ecuyer and Touzin's combined multiple-recursive generator, Theano's ``MRG_RandomStreams``.

The generator (P. L'Ecuyer and R. Touzin, "Fast combined multiple recursive generators with multipliers
of the form a = +-2^q +-2^r", Winter Simulation Conference 2000) combines two recurrences of order 3::

    x1[n] = (2^22 x1[n-2] + (2^7 + 1)  x1[n-3]) mod m1,   m1 = 2^31 - 1
    x2[n] = (2^15 x2[n-1] + (2^15 + 1) x2[n-3]) mod m2,   m2 = 2^31 - 21069
    u[n]  = (x1[n] - x2[n]) mod m1, scaled by 2^-31 (m1 when the difference is 0 or below)

Why this generator: a stream's whole state is six integers, and a step is integer arithmetic that fits in
int64, so NumPy on the host and CuPy on a GPU give *bit-identical* numbers; and it is the generator Theano's
``MRG_RandomStreams`` used, laid out as Theano laid it out, so a program gets Theano's numbers for its seed.

Each stream is a row ``[x1[n-1], x1[n-2], x1[n-3], x2[n-1], x2[n-2], x2[n-3]]`` of an ``(n_streams, 6)`` int32
state (Theano's ``rstate``).  A sample of ``n`` numbers takes ``ceil(n / n_streams)`` steps; element ``i``
comes from stream ``i % n_streams``.  Streams of one draw start 2^72 steps apart, and each new random
variable starts 2^134 steps after the previous one's first stream: the recurrence's matrix raised to those
powers, computed once with Python's exact integers.  A float32 sample is computed as Theano's C code did
(the integer difference as a float32, times the float32 ``4.6566126e-10``, which keeps it below 1).
"""
from __future__ import annotations

import numpy as np

M1 = 2147483647  # 2^31 - 1
M2 = 2147462579  # 2^31 - 21069
NORM = 4.656612873077392578125e-10  # 2^-31
NORM32 = np.float32(4.6566126e-10)   # the largest float32 with float32(m1 * NORM32) < 1

# one step of each component as a 3x3 matrix acting on (x[n-1], x[n-2], x[n-3])
_A1 = ((0, 4194304, 129), (1, 0, 0), (0, 1, 0))
_A2 = ((32768, 0, 32769), (1, 0, 0), (0, 1, 0))


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


_JUMP1, _JUMP2 = _matpow_mod(_A1, 2 ** 72, M1), _matpow_mod(_A2, 2 ** 72, M2)      # between streams
_NEXT1, _NEXT2 = _matpow_mod(_A1, 2 ** 134, M1), _matpow_mod(_A2, 2 ** 134, M2)    # between variables


def _apply_matrix(mat, states, m, xp):
    """``mat @ states`` mod m for int64 states of shape (n, 3) below 2^31, exactly (products stay below 2^62)."""
    cols = [states[:, k].astype(xp.int64) for k in range(3)]
    rows = []
    for i in range(3):
        acc = xp.zeros_like(cols[0])
        for k in range(3):
            if mat[i][k]:
                acc = (acc + mat[i][k] * cols[k]) % m
        rows.append(acc)
    return xp.stack(rows, axis=1)


def seed_to_state(seed):
    """Theano's first state for ``seed``: an int ``s`` (0 < s < m2) is ``[s] * 6``; six ints are taken as given."""
    if isinstance(seed, (int, np.integer)):
        seed = int(seed)
        if not 0 < seed < M2:
            raise ValueError(f"MRG_RandomStreams: the seed must be an int in 1 .. {M2 - 1} (Theano's rule), got {seed}")
        return np.full(6, seed, dtype=np.int32)
    state = [int(s) for s in seed]
    if len(state) != 6:
        raise ValueError(f"MRG_RandomStreams: a seed is an int or 6 ints (a stream state), got {len(state)} values")
    if not (all(0 <= s < M1 for s in state[:3]) and all(0 <= s < M2 for s in state[3:])
            and any(state[:3]) and any(state[3:])):
        raise ValueError(f"MRG_RandomStreams: a 6-int seed needs its first 3 below {M1}, its last 3 below {M2}, "
                         f"and neither triple all zero; got {state}")
    return np.asarray(state, dtype=np.int32)


def substreams(start, n_streams, xp=np):
    """``n_streams`` int32 states, each 2^72 steps after the previous, beginning at ``start`` (6 ints).

    Built by doubling: streams [n, 2n) are streams [0, n) jumped n streams ahead, so it takes
    log2(n_streams) vectorised matrix products.
    """
    states = xp.asarray(np.asarray(start, dtype=np.int64).reshape(1, 6))
    jump1, jump2 = _JUMP1, _JUMP2
    while states.shape[0] < n_streams:
        ahead = xp.concatenate([_apply_matrix(jump1, states[:, :3], M1, xp),
                                _apply_matrix(jump2, states[:, 3:], M2, xp)], axis=1)
        states = xp.concatenate([states, ahead], axis=0)
        jump1, jump2 = _matmul_mod(jump1, jump1, M1), _matmul_mod(jump2, jump2, M2)
    return states[:n_streams].astype(xp.int32)


def next_start(start):
    """The state 2^134 steps after ``start``: where the next random variable's first stream begins."""
    s = [int(v) for v in start]
    first = [sum(_NEXT1[i][k] * s[k] for k in range(3)) % M1 for i in range(3)]
    second = [sum(_NEXT2[i][k] * s[3 + k] for k in range(3)) % M2 for i in range(3)]
    return np.asarray(first + second, dtype=np.int32)


def uniform_steps(state, n, xp=np, dtype="float64"):
    """(new int32 state, ``n`` uniforms of ``dtype`` in (0, 1)) from an (n_streams, 6) state; the input is kept."""
    n_streams = state.shape[0]
    steps = -(-n // n_streams) if n else 0
    x11, x12, x13, x21, x22, x23 = (state[:, k].astype(xp.int64) for k in range(6))
    diffs = xp.empty((steps, n_streams), dtype=xp.int64)
    for k in range(steps):
        y1 = (4194304 * x12 + 129 * x13) % M1
        x11, x12, x13 = y1, x11, x12
        y2 = (32768 * x21 + 32769 * x23) % M2
        x21, x22, x23 = y2, x21, x22
        d = x11 - x21
        diffs[k] = xp.where(d <= 0, d + M1, d)
    new_state = xp.stack([x11, x12, x13, x21, x22, x23], axis=1).astype(xp.int32)
    flat = diffs.reshape(-1)[:n]
    if dtype == "float32":
        return new_state, flat.astype(xp.float32) * NORM32
    return new_state, (flat * NORM).astype(dtype)


def guess_n_streams(size):
    """Theano's number of streams for a draw of ``size``: a sixth of the elements (all of them up to 6), at most
    60 * 256; 60 * 256 when the size is not a tuple of Python ints known when the graph is built."""
    if isinstance(size, (tuple, list)) and all(isinstance(s, int) and not isinstance(s, bool) for s in size):
        n = int(np.prod(size, dtype=np.int64))
        return max(min(n // 6 if n > 6 else n, 60 * 256), 1)
    return 60 * 256

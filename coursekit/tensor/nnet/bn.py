"""``T.nnet.bn``: batch normalisation, as Theano's functions, written as elementwise graphs and reductions.

``batch_normalization`` applies given statistics; ``batch_normalization_train`` computes them over
``axes`` of the batch (and updates running averages when given); ``batch_normalization_test`` applies
running averages.  Every result is an ordinary graph, so gradients and GPU placement come with it.
"""
from __future__ import annotations

from ..math import mean as tmean, sqrt, var as tvar
from ..var import as_tensor_variable


def batch_normalization(inputs, gamma, beta, mean, std, mode="low_mem"):
    """(inputs - mean) * gamma / std + beta (``mode`` only chose Theano's memory/speed trade-off)."""
    if mode not in ("low_mem", "high_mem"):
        raise ValueError(f"batch_normalization(mode={mode!r}): use 'low_mem' or 'high_mem'")
    return (as_tensor_variable(inputs) - mean) * (gamma / std) + beta


def _axes(axes, ndim):
    if axes == "per-activation":
        return (0,)
    if axes == "spatial":
        return (0,) + tuple(range(2, ndim))
    return tuple(int(a) for a in axes)




def _expand(param, axes, ndim):
    """Theano let gamma/beta/statistics skip the normalised axes; put them back as broadcastable axes."""
    param = as_tensor_variable(param)
    if param.type.ndim == ndim - len(axes):
        kept = iter(range(param.type.ndim))
        return param.dimshuffle(*("x" if a in axes else next(kept) for a in range(ndim)))
    return param


def _like(stat, param, axes, skipped=None):
    """``stat`` (reduced with keepdims) in the shape ``param`` was given in (``skipped``: it was given
    without the reduced axes, if ``param`` is already expanded)."""
    if skipped if skipped is not None else as_tensor_variable(param).type.ndim < stat.type.ndim:
        return stat.dimshuffle(*(a for a in range(stat.type.ndim) if a not in axes))
    return stat


def batch_normalization_train(inputs, gamma, beta, axes="per-activation", epsilon=1e-4,
                              running_average_factor=0.1, running_mean=None, running_var=None):
    """(out, mean, invstd[, new running mean, new running var]): normalise with the batch's statistics.

    As in Theano, ``mean`` and ``invstd`` come in the shape ``gamma`` was given in: with the reduced axes
    (size 1) when ``gamma`` has them, without when it skips them (Keras 1.x gives a vector per channel and
    averages the returned mean into its vector of running means).  The running variance is updated with
    the unbiased variance, as Theano's was."""
    inputs = as_tensor_variable(inputs)
    axes = _axes(axes, inputs.type.ndim)
    skipped = as_tensor_variable(gamma).type.ndim == inputs.type.ndim - len(axes) != inputs.type.ndim
    gamma, beta = (_expand(p, axes, inputs.type.ndim) for p in (gamma, beta))
    mean = tmean(inputs, axis=axes, keepdims=True)
    var = tvar(inputs, axis=axes, keepdims=True)
    invstd = 1.0 / sqrt(var + epsilon)
    out = (inputs - mean) * invstd * gamma + beta
    stats = [_like(s, gamma, axes, skipped) for s in (mean, invstd)]
    if running_mean is None and running_var is None:
        return (out, *stats)
    m = 1
    for a in axes:
        m = m * inputs.shape[a]
    unbiased = var * (m / (m - 1.0))
    results = [out, *stats]
    if running_mean is not None:
        results.append(running_mean * (1 - running_average_factor)
                       + _like(mean, running_mean, axes) * running_average_factor)
    if running_var is not None:
        results.append(running_var * (1 - running_average_factor)
                       + _like(unbiased, running_var, axes) * running_average_factor)
    return tuple(results)


def batch_normalization_test(inputs, gamma, beta, mean, var, axes="per-activation", epsilon=1e-4):
    """Normalise with given (running) statistics: (inputs - mean) / sqrt(var + epsilon) * gamma + beta."""
    inputs = as_tensor_variable(inputs)
    axes = _axes(axes, inputs.type.ndim)
    gamma, beta, mean, var = (_expand(p, axes, inputs.type.ndim) for p in (gamma, beta, mean, var))
    return (inputs - mean) / sqrt(var + epsilon) * gamma + beta

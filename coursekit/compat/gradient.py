"""``theano.gradient``: :mod:`coursekit.gradient` together with the helpers of :mod:`coursekit.gradient_extras`."""
from __future__ import annotations

from ..gradient import *  # noqa: F401,F403
from ..gradient import (DisconnectedInputError, UndefinedGrad, UndefinedGradientError, grad,  # noqa: F401
                        numeric_grad, verify_grad)
from ..gradient_extras import (consider_constant, disconnected_grad, grad_clip, grad_scale, hessian,  # noqa: F401
                               jacobian, zero_grad)
from ..rop import Lop, Rop  # noqa: F401

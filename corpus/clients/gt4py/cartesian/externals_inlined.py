"""Compile-time switches and constants through externals, as GT4Py ports
configure schemes (`from __externals__ import ...` with `__INLINED`).

Exercises externals read as constants, an `if __INLINED(...)` branch
resolved at compile time (the other branch is never lowered), and an
external constant in a conditional expression on field values.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, __INLINED, Field, computation, interval

EXTERNALS = {"USE_LIMITER": True, "GAMMA": 0.25, "QMIN": -0.1}


def definition(q: Field[np.float64], out: Field[np.float64]):
    from __externals__ import GAMMA, QMIN, USE_LIMITER

    with computation(PARALLEL), interval(...):
        smooth = q + GAMMA * (q[1, 0, 0] - 2.0 * q + q[-1, 0, 0])
        if __INLINED(USE_LIMITER):
            out = smooth if smooth > QMIN else QMIN
        else:
            out = smooth

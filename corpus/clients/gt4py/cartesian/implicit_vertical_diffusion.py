"""Backward-Euler vertical diffusion of a tracer, as the physics of ICON and
FV3 write it: a tridiagonal system whose top and bottom rows differ.

Exercises `computation(FORWARD)` and `computation(BACKWARD)` each split into
`interval(0, 1)`, `interval(1, -1)` and `interval(-1, None)`, reads of an
input field at `[0, 0, -1]` and `[0, 0, 1]`, temporaries carried between
levels and float scalars. The diffusivity is made positive with `abs`, so
the system is diagonally dominant.
"""

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, Field, computation, interval

SCALARS = {"dt": 0.4, "rdz2": 2.5}
TOLERANCE = {"rtol": 1e-10, "atol": 1e-10}


def definition(
    q: Field[np.float64],
    kh: Field[np.float64],
    q_new: Field[np.float64],
    *,
    dt: float,
    rdz2: float,
):
    with computation(FORWARD):
        with interval(0, 1):
            c = -dt * rdz2 * abs(kh[0, 0, 1])
            b = 1.0 - c
            cp = c / b
            dp = q / b
        with interval(1, -1):
            a = -dt * rdz2 * abs(kh)
            c = -dt * rdz2 * abs(kh[0, 0, 1])
            denom = 1.0 - a - c - a * cp[0, 0, -1]
            cp = c / denom
            dp = (q - a * dp[0, 0, -1]) / denom
        with interval(-1, None):
            a = -dt * rdz2 * abs(kh)
            denom = 1.0 - a - a * cp[0, 0, -1]
            dp = (q - a * dp[0, 0, -1]) / denom
    with computation(BACKWARD):
        with interval(-1, None):
            q_new = dp
        with interval(0, -1):
            q_new = dp - cp * q_new[0, 0, 1]

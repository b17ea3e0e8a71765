"""A tridiagonal solve per column (the Thomas algorithm), modelled on
`tridiagonal_solver` of GT4Py's test suite.

Exercises `computation(FORWARD)` with `interval(0, 1)` / `interval(1, None)`
and `computation(BACKWARD)` with `interval(-1, None)` / `interval(0, -1)`,
temporaries carried from one level to the next (`cp[0, 0, -1]`,
`out[0, 0, 1]`). The diagonal is shifted by 3 so that the random system is
diagonally dominant and the reference is well conditioned.
"""

import numpy as np
from gt4py.cartesian.gtscript import BACKWARD, FORWARD, Field, computation, interval

TOLERANCE = {"rtol": 1e-10, "atol": 1e-10}


def definition(
    inf: Field[np.float64],
    diag: Field[np.float64],
    sup: Field[np.float64],
    rhs: Field[np.float64],
    out: Field[np.float64],
):
    with computation(FORWARD):
        with interval(0, 1):
            cp = sup / (3.0 + diag)
            dp = rhs / (3.0 + diag)
        with interval(1, None):
            denom = 3.0 + diag - cp[0, 0, -1] * inf
            cp = sup / denom
            dp = (rhs - inf * dp[0, 0, -1]) / denom
    with computation(BACKWARD):
        with interval(-1, None):
            out = dp
        with interval(0, -1):
            out = dp - cp * out[0, 0, 1]

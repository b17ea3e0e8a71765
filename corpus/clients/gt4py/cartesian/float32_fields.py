"""A single-precision smoothing and limiter, as mixed-precision dynamical cores
run parts of their physics in float32.

Exercises `Field[np.float32]` inputs and outputs, a float32 temporary read
at offsets, and explicit `float32(...)` casts of float64 literals.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def definition(inp: Field[np.float32], out: Field[np.float32], lim: Field[np.float32]):
    with computation(PARALLEL), interval(...):
        half = float32(0.5)
        smooth = half * inp + float32(0.125) * (
            inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0]
        )
        out = smooth - half * smooth[1, 0, 0]
        lim = min(max(smooth, -half), half)

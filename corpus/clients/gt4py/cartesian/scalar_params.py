"""A relaxation step with float and int scalar parameters, as time-step and
sub-cycle counts reach a stencil.

Exercises a `float` scalar in arithmetic, an `int` scalar both in float
arithmetic and bounding a `while` loop (`n_sub` sub-steps), and a `float`
scalar in a comparison.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

SCALARS = {"tau": 0.3, "n_sub": 4, "threshold": 0.2}


def definition(
    inp: Field[np.float64],
    out: Field[np.float64],
    *,
    tau: float,
    n_sub: int,
    threshold: float,
):
    with computation(PARALLEL), interval(...):
        x = inp
        step = 0
        while step < n_sub:
            x = x - tau / n_sub * (x - threshold)
            step = step + 1
        out = x if inp > threshold else x * n_sub

"""Newton's iteration for the cube root, stopped on convergence or after a
maximum number of steps, as saturation adjustment schemes iterate.

Exercises a `while` whose condition combines a float test and an integer
guard with `and`, nested in an `if` on field values. Starting above the root
of the convex x^3 - t, Newton's steps decrease monotonically to it, so the
loop converges in a few trips; the guard bounds it regardless.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

TOLERANCE = {"rtol": 1e-9, "atol": 1e-9}


def definition(a: Field[np.float64], root: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        if a > -0.5:
            target = 1.0 + 4.0 * abs(a)
            x = target
            it = 0
            while abs(x * x * x - target) > 1e-12 and it < 60:
                x = x - (x * x * x - target) / (3.0 * x * x)
                it = it + 1
            root = x
        else:
            root = -1.0

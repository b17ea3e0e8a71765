"""Vertical and diagonal differences: centred in the interior and one-sided at
the top and bottom levels.

Exercises 3-D offsets including K (`inp[0, 0, -1]`, `inp[0, 0, 2]`,
`inp[1, -1, 1]`, `inp[-1, 1, -1]`), a `computation(PARALLEL)` split into
`interval(0, 1)`, `interval(1, -1)` and `interval(-1, None)`, so that the
fields need K halos of different depths.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(inp: Field[np.float64], dz: Field[np.float64], diag: Field[np.float64]):
    with computation(PARALLEL):
        with interval(0, 1):
            dz = -1.5 * inp + 2.0 * inp[0, 0, 1] - 0.5 * inp[0, 0, 2]
        with interval(1, -1):
            dz = 0.5 * (inp[0, 0, 1] - inp[0, 0, -1])
        with interval(-1, None):
            dz = 1.5 * inp - 2.0 * inp[0, 0, -1] + 0.5 * inp[0, 0, -2]
    with computation(PARALLEL), interval(1, -1):
        diag = inp[1, -1, 1] - inp[-1, 1, -1] + inp[1, 1, 0] * inp[0, 0, -1]

"""The vertical integral of a column written to a 2-D field, then used to
normalise the column (as a column-mass or precipitable-water diagnostic).

Exercises a running sum in `computation(FORWARD)` carried in a temporary
(`acc[0, 0, -1]`), a write to a 2-D output field (`Field[IJ, np.float64]`)
on the last level, and a later `computation(PARALLEL)` reading it.
"""

import numpy as np
from gt4py.cartesian.gtscript import FORWARD, IJ, PARALLEL, Field, computation, interval


def definition(q: Field[np.float64], total: Field[IJ, np.float64], frac: Field[np.float64]):
    with computation(FORWARD):
        with interval(0, 1):
            acc = 1.0 + abs(q)
        with interval(1, None):
            acc = acc[0, 0, -1] + 1.0 + abs(q)
    with computation(FORWARD), interval(-1, None):
        total = acc
    with computation(PARALLEL), interval(...):
        frac = (1.0 + abs(q)) / total

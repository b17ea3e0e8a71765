"""FV3-style edge extrapolation of a temporary inside horizontal regions, then
a difference that reads the temporary across the edge.

Exercises a temporary written everywhere and overwritten inside
`horizontal(region[I[0], :])` / `region[I[-1] + 1, :]` (a region just past
the domain end), then read at `[1, 0, 0]`, so GT4Py must extend both the
temporary and the regions into the halo.
"""

import numpy as np
from gt4py.cartesian.gtscript import (
    PARALLEL,
    Field,
    I,
    computation,
    horizontal,
    interval,
    region,
)


def definition(q: Field[np.float64], dq: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        edge = 0.5 * (q[-1, 0, 0] + q)
        with horizontal(region[I[0], :]):
            edge = 1.5 * q - 0.5 * q[1, 0, 0]
        with horizontal(region[I[-1] + 1, :]):
            edge = 1.5 * q[-1, 0, 0] - 0.5 * q[-2, 0, 0]
        dq = edge[1, 0, 0] - edge

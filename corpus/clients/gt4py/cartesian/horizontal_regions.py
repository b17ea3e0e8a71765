"""Boundary conditions on the edges and corners of the compute domain with
horizontal regions, as FV3 writes its cubed-sphere edge treatments.

Exercises `with horizontal(region[...])` on single edges (`I[0]`, `I[-1]`,
`J[0]`, `J[-1]`), on an edge segment (`I[0] : I[0] + 2`) and on a corner, with
reads off the edge into the halo (`inp[-1, 0, 0]`) overriding an interior
update.
"""

import numpy as np
from gt4py.cartesian.gtscript import (
    PARALLEL,
    Field,
    I,
    J,
    computation,
    horizontal,
    interval,
    region,
)


def definition(inp: Field[np.float64], out: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        out = 0.25 * (inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0])
        with horizontal(region[I[0], :]):
            out = 1.5 * inp - 0.5 * inp[-1, 0, 0]
        with horizontal(region[I[-1], :]):
            out = 1.5 * inp - 0.5 * inp[1, 0, 0]
        with horizontal(region[:, J[0]], region[:, J[-1]]):
            out = 2.0 * inp
        with horizontal(region[I[0] : I[0] + 2, J[-1]]):
            out = out + 10.0
        with horizontal(region[I[-1], J[0]]):
            out = -inp[0, -1, 0]

"""Laplacian of the Laplacian (biharmonic hyperdiffusion) through a
`gtscript.function`.

Exercises a GTScript helper function with offsets, inlined twice: once on an
argument field and once on a temporary, which is therefore read at offsets
and must be computed one point into the halo.
"""

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

SCALARS = {"nu": 0.05}


@gtscript.function
def lap(f):
    return f[1, 0, 0] + f[-1, 0, 0] + f[0, 1, 0] + f[0, -1, 0] - 4.0 * f[0, 0, 0]


def definition(inp: Field[np.float64], out: Field[np.float64], *, nu: float):
    with computation(PARALLEL), interval(...):
        tmp = lap(inp)
        out = inp - nu * lap(tmp)

"""Reads at absolute vertical levels: every level relative to the surface
level and to the model top, as diagnostics referencing a fixed level do.

Exercises absolute K indexing (`inp.at(K=0)`, `inp.at(K=top)` with `top`
an int scalar), which GT4Py added to GTScript for such lookups. GT4Py's
numpy backend does not implement it yet, so the reference is its `debug`
backend.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

REFERENCE_BACKEND = "debug"
SCALARS = {"top": 4}


def definition(inp: Field[np.float64], out: Field[np.float64], *, top: int):
    with computation(PARALLEL), interval(...):
        out = inp - inp.at(K=0) + 0.5 * inp.at(K=top)

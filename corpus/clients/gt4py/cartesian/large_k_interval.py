"""Intervals offset far from both ends of the column, modelled on
`large_k_interval` of GT4Py's test suite.

Exercises a `computation(PARALLEL)` split at `interval(0, 6)`,
`interval(6, -10)` and `interval(-10, None)` on a 24-level domain, so the
middle interval's bounds are offsets from both ends.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

DOMAIN = (5, 4, 24)


def definition(in_field: Field[np.float64], out_field: Field[np.float64]):
    with computation(PARALLEL):
        with interval(0, 6):
            out_field = in_field
        with interval(6, -10):
            out_field = in_field + 1.0
        with interval(-10, None):
            out_field = in_field

"""A `while` loop per grid point: halve a value until it falls below 1 and
count the halvings (a data-dependent trip count, like a sub-stepping loop of
the microphysics).

Exercises `while` inside `computation(PARALLEL)`, an integer temporary
incremented in the loop body, and an int32 output field. The start value
is at most 65, so the loop ends after at most 7 trips.

The reference is GT4Py's `debug` backend: its `numpy` backend re-evaluates
the loop condition before each statement of the body (it masks every
statement with `np.where(cond, ...)` on the current values), so once `x`
drops below 1 the last trip's `n = n + 1` is skipped and `count` comes out
one short of the trips the loop ran.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

REFERENCE_BACKEND = "debug"


def definition(inp: Field[np.float64], out: Field[np.float64], count: Field[np.int32]):
    with computation(PARALLEL), interval(...):
        x = 64.0 * abs(inp) + 1.0
        n = 0
        while x >= 1.0:
            x = x * 0.5
            n = n + 1
        out = x
        count = n

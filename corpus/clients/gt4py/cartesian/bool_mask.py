"""A boolean mask selecting where an update applies, and a boolean output
combining comparisons, as land/ice masks are handled.

Exercises `Field[np.bool_]` inputs (read centred and at an offset) and
outputs, a mask as an `if` condition, and boolean `and` / `or` / `not` of
comparisons.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(
    mask: Field[np.bool_],
    inp: Field[np.float64],
    out: Field[np.float64],
    flag: Field[np.bool_],
):
    with computation(PARALLEL), interval(...):
        if mask:
            out = inp * 2.0
        else:
            out = inp[1, 0, 0]
        flag = (inp > 0.0 and not mask) or mask[0, 1, 0]

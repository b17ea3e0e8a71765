"""A vertical lookup through an integer field of offsets, as vertical remapping
and interpolation to pressure levels read levels chosen at run time.

Exercises a variable K offset (`inp[0, 0, shift]` with `shift` an int32
field), the offset clamped with `min` / `max` per interval. GT4Py does not
widen a field's K bounds for variable offsets (its SDFG array spans the
compute domain only), so the clamps keep every read inside the domain:
[0, 2] on the two bottom levels, [-2, 0] on the two top ones.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(inp: Field[np.float64], shift: Field[np.int32], out: Field[np.float64]):
    with computation(PARALLEL):
        with interval(0, 2):
            out = inp[0, 0, min(max(shift, 0), 2)]
        with interval(2, -2):
            out = inp[0, 0, min(max(shift, -2), 2)]
        with interval(-2, None):
            out = inp[0, 0, min(max(shift, -2), 0)]

"""Integer fields: land/sea type indices and level counters combined with
integer arithmetic and used to select float values.

Exercises `Field[np.int32]` and `Field[np.int64]` inputs and outputs,
integer addition, multiplication and comparison, `int` to `float64` casts,
and `if` branches chosen by an integer field.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(
    kind: Field[np.int32],
    count: Field[np.int64],
    x: Field[np.float64],
    total: Field[np.int64],
    y: Field[np.float64],
):
    with computation(PARALLEL), interval(...):
        total = 3 * count + kind - kind[1, 0, 0]
        if kind > 0:
            y = float64(kind) * x
        elif kind == 0:
            y = float64(count[0, 1, 0])
        else:
            y = -x

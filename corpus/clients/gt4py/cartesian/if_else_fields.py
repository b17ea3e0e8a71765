"""Branching on field values: nested `if` / `elif` / `else` statements and
conditional expressions.

Exercises statement-level control flow inside a `computation(PARALLEL)`
whose branches write different outputs and a temporary, conditions combining
comparisons with `and` / `or` / `not`, and a conditional expression reading
a neighbour.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(
    a: Field[np.float64],
    b: Field[np.float64],
    out: Field[np.float64],
    sign: Field[np.float64],
):
    with computation(PARALLEL), interval(...):
        if a > 0.5:
            tmp = a * b
            sign = 1.0
        elif a < -0.5 or b > 0.8:
            tmp = a - b
            sign = -1.0
        else:
            if not (b < 0.0 and a < 0.0):
                tmp = a + b
            else:
                tmp = 2.0 * b
            sign = 0.0
        out = tmp if tmp > a[1, 0, 0] else a[1, 0, 0] - tmp

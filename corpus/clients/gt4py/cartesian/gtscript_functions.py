"""Helper functions written with `gtscript.function`, as GT4Py's model ports
factor out their physics: nested calls, calls with offsets, keyword
arguments and a function returning two values.

Exercises inlining of functions that call other functions, that read their
field argument at offsets (`upwind(q, u)` reads `q[-1, 0, 0]`), and a tuple
return assigned to two temporaries.
"""

import numpy as np
from gt4py.cartesian import gtscript
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


@gtscript.function
def clip(v, lo, hi):
    return min(max(v, lo), hi)


@gtscript.function
def upwind(q, u):
    return u * q[-1, 0, 0] if u > 0.0 else u * q


@gtscript.function
def flux_and_speed(q, u, cmax=0.8):
    c = clip(u, -cmax, cmax)
    return upwind(q, c), abs(c)


def definition(q: Field[np.float64], u: Field[np.float64], q_new: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        flux, speed = flux_and_speed(q, u, cmax=0.6)
        q_new = q - (flux[1, 0, 0] - flux) + 0.1 * speed * q

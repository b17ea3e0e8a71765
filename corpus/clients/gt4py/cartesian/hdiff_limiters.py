"""Horizontal diffusion with its flux limiters written as `if` statements, as
the dynamical cores write them (`if flx * (inp[1, 0, 0] - inp) > 0: flx = 0`).

Exercises statement-level `if` on temporaries that are later read at
horizontal offsets, so GT4Py must compute the masked temporaries on an
extended domain, and a scalar diffusion coefficient.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(inp: Field[np.float64], out: Field[np.float64], *, alpha: float):
    with computation(PARALLEL), interval(...):
        lap = inp[1, 0, 0] + inp[-1, 0, 0] + inp[0, 1, 0] + inp[0, -1, 0] - 4.0 * inp
        flx = lap[1, 0, 0] - lap
        if flx * (inp[1, 0, 0] - inp) > 0.0:
            flx = 0.0
        fly = lap[0, 1, 0] - lap
        if fly * (inp[0, 1, 0] - inp) > 0.0:
            fly = 0.0
        out = inp - alpha * (flx - flx[-1, 0, 0] + fly - fly[0, -1, 0])

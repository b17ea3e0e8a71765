"""Level-dependent updates in one `computation(PARALLEL)`: boundary levels
treated apart from the interior, several statements per interval.

Exercises a `computation(PARALLEL)` split into `interval(0, 1)`,
`interval(1, -1)` and `interval(-1, None)`, several statements per interval
chaining temporaries, and a second `computation(PARALLEL)` over
`interval(...)` reading the first's outputs.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(
    u: Field[np.float64], v: Field[np.float64], ke: Field[np.float64], w: Field[np.float64]
):
    with computation(PARALLEL):
        with interval(0, 1):
            ke = 0.5 * (u * u + v * v)
            w = 0.0
        with interval(1, -1):
            uc = 0.5 * (u + u[0, 0, -1])
            vc = 0.5 * (v + v[0, 0, -1])
            ke = 0.5 * (uc * uc + vc * vc)
            w = uc - vc
        with interval(-1, None):
            ke = 0.5 * (u * u + v * v)
            w = -u
    with computation(PARALLEL), interval(...):
        ke = ke + 0.1 * w

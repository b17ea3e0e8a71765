"""First-order upwind advection in flux form on a C-grid, the simplest of the
transport schemes of FV3 (`fvtp2d`) and ICON.

Exercises temporaries holding face fluxes, chosen by the sign of the
Courant number with conditional expressions reading `q[-1, 0, 0]` or
`q[0, -1, 0]`, then read at `[1, 0, 0]` / `[0, 1, 0]` for the divergence;
float scalars for the time step and grid spacing.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval

SCALARS = {"dt": 0.2, "rdx": 1.0, "rdy": 1.25}


def definition(
    q: Field[np.float64],
    u: Field[np.float64],
    v: Field[np.float64],
    q_new: Field[np.float64],
    *,
    dt: float,
    rdx: float,
    rdy: float,
):
    with computation(PARALLEL), interval(...):
        fx = u * (q[-1, 0, 0] if u > 0.0 else q)
        fy = v * (q[0, -1, 0] if v > 0.0 else q)
        q_new = q - dt * (rdx * (fx[1, 0, 0] - fx) + rdy * (fy[0, 1, 0] - fy))

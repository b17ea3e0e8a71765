"""Fields with a data dimension: a wind vector of 3 components per grid point
and a 2x2 matrix applied to its horizontal part, as tracer arrays and
vector fields are passed in GT4Py ports.

Exercises `Field[(np.float64, (3,))]` and `Field[(np.float64, (2, 2))]`
read component-wise (`vel[0, 0, 0][1]`, `rot[0, 0, 0][1, 0]`), a component
read at a horizontal offset, and a write to a component of a
data-dimension output.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(
    vel: Field[(np.float64, (3,))],
    rot: Field[(np.float64, (2, 2))],
    speed: Field[np.float64],
    out: Field[(np.float64, (2,))],
):
    with computation(PARALLEL), interval(...):
        speed = sqrt(vel[0, 0, 0][0] ** 2 + vel[0, 0, 0][1] ** 2 + vel[0, 0, 0][2] ** 2)
        out[0, 0, 0][0] = (
            rot[0, 0, 0][0, 0] * vel[0, 0, 0][0] + rot[0, 0, 0][0, 1] * vel[1, 0, 0][1]
        )
        out[0, 0, 0][1] = (
            rot[0, 0, 0][1, 0] * vel[0, 0, 0][0] + rot[0, 0, 0][1, 1] * vel[0, 0, 0][1]
        )

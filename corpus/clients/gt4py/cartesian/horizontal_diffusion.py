"""Fourth-order horizontal diffusion with monotonic flux limiters, modelled on
`horizontal_diffusion` of GT4Py's test suite (the COSMO `hdiff` benchmark).

Exercises temporaries read at horizontal offsets (`lap[1, 0, 0]`,
`flx[-1, 0, 0]`) and limiters written as conditional expressions on field
values, which GT4Py extends into the halo before the final update.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(in_field: Field[np.float64], out_field: Field[np.float64], coeff: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        lap = 4.0 * in_field - (
            in_field[1, 0, 0] + in_field[-1, 0, 0] + in_field[0, 1, 0] + in_field[0, -1, 0]
        )
        res = lap[1, 0, 0] - lap
        flx = 0.0 if res * (in_field[1, 0, 0] - in_field) > 0.0 else res
        res = lap[0, 1, 0] - lap
        fly = 0.0 if res * (in_field[0, 1, 0] - in_field) > 0.0 else res
        out_field = in_field - coeff * (flx - flx[-1, 0, 0] + fly - fly[0, -1, 0])

"""Pressure on hybrid sigma-pressure levels, p = ak + bk * ps, as FV3 and ICON
derive it from their vertical coordinate, and the layer thickness in
pressure.

Exercises K-only fields (`Field[K, np.float64]`, the coefficients `ak`,
`bk`) read at a K offset (`ak[1]`), and a 2-D field (`Field[IJ, np.float64]`,
the surface pressure) broadcast over the column.
"""

import numpy as np
from gt4py.cartesian.gtscript import IJ, PARALLEL, Field, K, computation, interval


def definition(
    ak: Field[K, np.float64],
    bk: Field[K, np.float64],
    ps: Field[IJ, np.float64],
    p: Field[np.float64],
    dp: Field[np.float64],
):
    with computation(PARALLEL), interval(...):
        p = ak + bk * (1.0 + ps)
        dp = ak[1] - ak + (bk[1] - bk) * (1.0 + ps)

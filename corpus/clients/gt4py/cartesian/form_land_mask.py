"""A boolean land mask from a signed distance field, modelled on
`form_land_mask` of GT4Py's test suite.

Exercises a boolean output field (`Field[np.bool_]`) assigned a comparison
of a float field.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(phi: Field[np.float64], mask: Field[np.bool_]):
    with computation(PARALLEL), interval(...):
        mask = phi >= 0.0

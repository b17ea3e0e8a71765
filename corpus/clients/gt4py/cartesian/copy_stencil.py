"""A plain copy, modelled on `copy_stencil` of GT4Py's test suite.

The smallest stencil GT4Py can write: one `computation(PARALLEL)` over the
whole column, one centred read, one write. Anything that fails here fails
everywhere.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(field_a: Field[np.float64], field_b: Field[np.float64]):
    with computation(PARALLEL), interval(...):
        field_b = field_a

"""GTScript's native math functions on arguments kept inside their domains.

Exercises `sqrt`, `exp`, `log`, `log10`, `abs`, `min`, `max`, `floor`,
`ceil`, `trunc`, `sin`, `cos`, `tan`, `tanh`, `asin`, `atan`, `sinh`,
`cbrt`, `erf`, `mod`, and powers through `**` (integer and fractional
exponents), as physics parameterisations use them. `mod` gets a positive
dividend: GT4Py's numpy backend takes `np.remainder` and its DaCe backends
`fmod`, which differ in sign otherwise.
"""

import numpy as np
from gt4py.cartesian.gtscript import PARALLEL, Field, computation, interval


def definition(
    x: Field[np.float64],
    y: Field[np.float64],
    out_a: Field[np.float64],
    out_b: Field[np.float64],
    out_c: Field[np.float64],
):
    with computation(PARALLEL), interval(...):
        pos = 1.0 + abs(x)
        out_a = sqrt(pos) + exp(-pos) + log(pos) + log10(pos) + cbrt(x) + pos**2.5
        out_b = min(x, y) * max(x, y) + floor(4.0 * x) - ceil(3.0 * y) + trunc(5.0 * x)
        out_c = (
            sin(x) * cos(y)
            + tan(0.5 * x)
            + tanh(3.0 * y)
            + asin(0.9 * x)
            + atan(y)
            + sinh(x)
            + erf(y)
            + mod(7.0 * pos, 2.0)
            + y**3
        )

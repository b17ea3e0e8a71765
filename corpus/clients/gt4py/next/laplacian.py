"""The five-point Laplacian on a Cartesian (I, J) domain: a field operator
shifting its input with Cartesian offsets (`f(I + 1)`, `f(J - 1)`), called from
a program. The input field carries a halo of one point on each side, so its
domain starts at -1 and the SDFG's range-start symbols are not zero."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import float64

I = gtx.Dimension("I")
J = gtx.Dimension("J")

NI, NJ = 7, 6

offset_provider = {}


@gtx.field_operator
def lap(f: gtx.Field[gtx.Dims[I, J], float64]) -> gtx.Field[gtx.Dims[I, J], float64]:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@gtx.program
def laplacian(
    f: gtx.Field[gtx.Dims[I, J], float64], out: gtx.Field[gtx.Dims[I, J], float64]
):
    lap(f, out=out)


program = laplacian


def arguments(rng):
    return {
        "f": gtx.as_field(
            gtx.domain({I: (-1, NI + 1), J: (-1, NJ + 1)}), rng.uniform(-1, 1, (NI + 2, NJ + 2))
        ),
        "out": gtx.as_field(gtx.domain({I: (0, NI), J: (0, NJ)}), np.zeros((NI, NJ))),
    }

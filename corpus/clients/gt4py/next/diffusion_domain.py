"""One step of fourth-order diffusion, `f - alpha * lap(lap(f))`, written
only on the interior: the program passes a `domain=` smaller than the
fields, its bounds taken from integer arguments, so the output's boundary
keeps its value. Exercises a field operator calling another one twice, a
float64 scalar argument and a domain bounded by scalar arguments."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import float64, int32

I = gtx.Dimension("I")
J = gtx.Dimension("J")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NJ, NK = 9, 8, 3
HALO = 2

offset_provider = {}

IJKField = gtx.Field[gtx.Dims[I, J, K], float64]


@gtx.field_operator
def lap(f: IJKField) -> IJKField:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@gtx.field_operator
def hyperdiffuse(f: IJKField, alpha: float64) -> IJKField:
    return f - alpha * lap(lap(f))


@gtx.program
def diffusion_domain(
    f: IJKField,
    out: IJKField,
    alpha: float64,
    i_start: int32,
    i_end: int32,
    j_start: int32,
    j_end: int32,
    nk: int32,
):
    hyperdiffuse(
        f, alpha, out=out, domain={I: (i_start, i_end), J: (j_start, j_end), K: (0, nk)}
    )


program = diffusion_domain


def arguments(rng):
    shape = (NI, NJ, NK)
    return {
        "f": gtx.as_field([I, J, K], rng.uniform(-1, 1, shape)),
        "out": gtx.as_field([I, J, K], rng.uniform(-1, 1, shape)),
        # GT4Py makes a scalar argument an SDFG symbol, of type double here,
        # and a case binds integer symbols only: an integral value.
        "alpha": np.float64(0.0625),
        "i_start": np.int32(HALO),
        "i_end": np.int32(NI - HALO),
        "j_start": np.int32(HALO),
        "j_end": np.int32(NJ - HALO),
        "nk": np.int32(NK),
    }

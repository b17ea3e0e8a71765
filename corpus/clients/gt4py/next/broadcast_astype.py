"""Type conversion and broadcasting: an int32 field converted with `astype`,
a one-dimensional vertical profile (K) and a scalar `broadcast` to the
(I, J, K) domain, and an int32 result computed alongside the float64 one,
both written from one field operator returning a tuple."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import astype, broadcast, float64, int32

I = gtx.Dimension("I")
J = gtx.Dimension("J")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NJ, NK = 5, 4, 6

offset_provider = {}

IJKFloat = gtx.Field[gtx.Dims[I, J, K], float64]
IJKInt = gtx.Field[gtx.Dims[I, J, K], int32]


@gtx.field_operator
def scale(
    counts: IJKInt, profile: gtx.Field[gtx.Dims[K], float64], factor: float64
) -> tuple[IJKFloat, IJKInt]:
    weight = broadcast(factor, (I, J, K))
    scaled = astype(counts, float64) * profile + weight
    return scaled, counts * 2 + astype(profile, int32)


@gtx.program
def broadcast_astype(
    counts: IJKInt,
    profile: gtx.Field[gtx.Dims[K], float64],
    factor: float64,
    out: IJKFloat,
    out_int: IJKInt,
):
    scale(counts, profile, factor, out=(out, out_int))


program = broadcast_astype


def arguments(rng):
    shape = (NI, NJ, NK)
    return {
        "counts": gtx.as_field([I, J, K], rng.integers(-50, 50, shape).astype(np.int32)),
        "profile": gtx.as_field([K], rng.uniform(-3, 3, NK)),
        # GT4Py makes a scalar argument an SDFG symbol, of type double here,
        # and a case binds integer symbols only: an integral value.
        "factor": np.float64(0.375),
        "out": gtx.as_field([I, J, K], np.zeros(shape)),
        "out_int": gtx.as_field([I, J, K], np.zeros(shape, dtype=np.int32)),
    }

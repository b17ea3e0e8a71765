"""A flux-limiter-like expression built from GT4Py's math built-ins:
`minimum`, `maximum`, `abs`, `sqrt` and `exp`, with a vertical Cartesian
shift (`f(K + 1)`), on a domain one level short of the fields' (its bounds
the program's int32 arguments), so that the shift stays inside the input."""

import numpy as np

import gt4py.next as gtx
from gt4py.next import abs, exp, float64, maximum, minimum, sqrt  # noqa: A004

I = gtx.Dimension("I")
K = gtx.Dimension("K", kind=gtx.DimensionKind.VERTICAL)

NI, NK = 7, 5

offset_provider = {}

IKField = gtx.Field[gtx.Dims[I, K], float64]


@gtx.field_operator
def limited(f: IKField) -> IKField:
    jump = f(K + 1) - f
    ratio = jump / maximum(abs(f), 1e-3)
    phi = maximum(0.0, minimum(1.0, ratio))
    return sqrt(abs(jump)) * exp(-phi) + minimum(f, -phi)


@gtx.program
def math_builtins(f: IKField, out: IKField, ni: gtx.int32, nk: gtx.int32):
    limited(f, out=out, domain={I: (0, ni), K: (0, nk - 1)})


program = math_builtins


def arguments(rng):
    return {
        "f": gtx.as_field([I, K], rng.uniform(-1, 1, (NI, NK))),
        "out": gtx.as_field([I, K], np.zeros((NI, NK))),
        "ni": np.int32(NI),
        "nk": np.int32(NK),
    }

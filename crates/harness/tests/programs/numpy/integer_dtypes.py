"""NumPy 2's type rules (NEP 50) for integers: `np.power` of int32 and
uint32 arrays stays int32 / uint32 (wrapping around), `np.floor` and
`np.ceil` of integers keep the integer type (so `floor(u) - 1` of a uint32
0 wraps to 4294967295)."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(a: dc.int32[N], u: dc.uint32[N], p: dc.int64[N], q: dc.int64[N], f: dc.int64[N], c: dc.int64[N]):
    p[:] = np.power(a, 21)
    q[:] = np.power(u, u)
    f[:] = np.floor(u) - 1
    c[:] = np.ceil(a) * 3


@dc.program
def initialize(a: dc.int32[N], u: dc.uint32[N]):
    for i in dc.map[0:N]:
        a[i] = i + 2
        u[i] = i


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["p", "q", "f", "c"],
    "presets": {"test": {"N": 6}},
}

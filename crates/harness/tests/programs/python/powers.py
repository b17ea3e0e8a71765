"""An integer to a negative constant power is a float (`10**-2` is 0.01),
in arrays expressions and in scalars alike."""
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N], B: dc.float64[N], s: dc.float64[1]):
    B[:] = A * 10**-2 + 2**-1
    s[0] = N**-1 + 4**-2


@dc.program
def initialize(A: dc.float64[N]):
    for i in dc.map[0:N]:
        A[i] = i + 1.5


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["B", "s"],
    "presets": {"test": {"N": 8}},
}

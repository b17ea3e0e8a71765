"""`a or b` is `a` if `a` is true, else `b`; `a and b` is `a` if `a` is
false, else `b`: the result is an operand, not a bool."""
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(x: dc.float64[N], out: dc.float64[6]):
    out[0] = False or N
    out[1] = N and N + 1
    out[2] = 0 and N
    out[3] = N or 7
    for i in dc.map[0:1]:
        out[4] = x[0] or 2.5
        out[5] = x[1] and 3.5


@dc.program
def initialize(x: dc.float64[N]):
    for i in dc.map[0:N]:
        x[i] = i * 1.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["out"],
    "presets": {"test": {"N": 5}},
}

"""A view written by device code and read by host code afterwards: the
write through `v` (a kernel, once offloaded) must be what the host's branch
and copy read."""
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N], out: dc.float64[2]):
    v = A[1:5]
    v[:] = v + 10.0
    if A[2] > 11.0:
        out[0] = 1.0
    else:
        out[0] = 2.0
    out[1] = A[3]


@dc.program
def initialize(A: dc.float64[N]):
    for i in dc.map[0:N]:
        A[i] = i * 1.0


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["A", "out"],
    "presets": {"test": {"N": 8}},
}

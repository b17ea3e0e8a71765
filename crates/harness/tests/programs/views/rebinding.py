"""Names bound more than once hold their own values: rebinding a name that
held a view does not write the viewed array, a value carried through a loop
and a name bound in two branches mean what Python means."""
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(A: dc.float64[N], B: dc.float64[N], s: dc.float64[N]):
    x = A[0:4]
    x = x * 2.0
    B[0:4] = x
    acc = A * 0.0
    for t in range(3):
        acc = acc + A
    s[:] = acc
    if A[1] > 0.5:
        y = A[2:6]
    else:
        y = A[0:4]
    B[4:8] = y


@dc.program
def initialize(A: dc.float64[N]):
    for i in dc.map[0:N]:
        A[i] = i * 0.5


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["A", "B", "s"],
    "presets": {"test": {"N": 8}},
}

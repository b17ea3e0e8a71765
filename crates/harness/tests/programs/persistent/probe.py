"""A persistent kernel whose threads all read a condition one of them
computes into device memory once per iteration of a loop whose branch may
run no state (issue #39's probe): without a barrier after the read, the
first thread writes the next iteration's condition before the others have
read this one's, and `y` comes out wrong. The `exec` stage runs it in every
interleaving of the emulated GPU's threads."""
import numpy as np
import dace as dc

M = dc.symbol("M", dtype=dc.int64)
N = dc.symbol("N", dtype=dc.int64)


@dc.program
def kernel(flags: dc.int32[M], x: dc.float64[N], y: dc.float64[M, N]):
    for k in range(1, 4):
        for j in range(N):
            x[j] = x[j] * 0.5
        if x[0] > 0.0:
            for m in range(1, M):
                if flags[m] > 0:
                    for j in range(N):
                        y[m, j] = y[m - 1, j] + x[j] * k


@dc.program
def initialize(flags: dc.int32[M], x: dc.float64[N]):
    for m in dc.map[0:M]:
        flags[m] = (m * 7) % 3 == 0
    for j in dc.map[0:N]:
        x[j] = j + 1


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "outputs": ["x", "y"],
    "presets": {"test": {"M": 9, "N": 300}},
}

"""Nussinov (PolyBench): RNA secondary-structure dynamic programme on an
int32 base sequence (bases 0..3; 0-3 and 1-2 pair).  The table is filled
from the last row up (negative-step loop), each entry the max over four
cases and over split points k."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)


@dc.program
def match(b1: dc.int32, b2: dc.int32):
    if b1 + b2 == 3:
        return 1
    else:
        return 0


@dc.program
def kernel(seq: dc.int32[N]):
    table = np.zeros((N, N), dtype=np.int32)
    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            if j - 1 >= 0:
                table[i, j] = np.maximum(table[i, j], table[i, j - 1])
            if i + 1 < N:
                table[i, j] = np.maximum(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    table[i, j] = np.maximum(table[i, j],
                                             table[i + 1, j - 1] + match(seq[i], seq[j]))
                else:
                    table[i, j] = np.maximum(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = np.maximum(table[i, j], table[i, k] + table[k + 1, j])
    return table


@dc.program
def initialize(seq: dc.int32[N]):
    for i in dc.map[0:N]:
        seq[i] = (i + 1) % 4


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 20},
        "S": {"N": 40},
        "M": {"N": 90},
        "L": {"N": 200},
        "paper": {"N": 500},
    },
    "tolerance": {"rtol": 1e-5, "atol": 1e-8, "norm_error": 1e-5},
}

"""Multilayer perceptron (NPBench deep learning): three dense layers, ReLU
after the first two and a softmax over the last axis after the third.

The softmax reductions are spelled as NPBench's DaCe version spells them,
``np.maximum.reduce`` and ``np.add.reduce`` with ``keepdims=True``: DaCe's
``np.max`` and ``np.sum`` take no ``keepdims``.  Deviation: the helpers are
declared on ``[N, S]`` here, where NPBench declares them on their own
symbols ``[N1, N2]`` (both are bound from the arguments' shapes)."""
import numpy as np
import dace as dc

C_in, N, S0, S1, S2 = (dc.symbol(s, dtype=dc.int64) for s in ("C_in", "N", "S0", "S1", "S2"))
S = dc.symbol("S", dtype=dc.int64)


@dc.program
def relu(x: dc.float32[N, S]):
    return np.maximum(x, 0)


@dc.program
def softmax(x: dc.float32[N, S]):
    tmp_max = np.maximum.reduce(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.add.reduce(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


@dc.program
def kernel(input: dc.float32[N, C_in], w1: dc.float32[C_in, S0], b1: dc.float32[S0],
           w2: dc.float32[S0, S1], b2: dc.float32[S1], w3: dc.float32[S1, S2],
           b3: dc.float32[S2]):
    x1 = relu(input @ w1 + b1)
    x2 = relu(x1 @ w2 + b2)
    x3 = softmax(x2 @ w3 + b3)
    return x3


@dc.program
def initialize(input: dc.float32[N, C_in], w1: dc.float32[C_in, S0], b1: dc.float32[S0],
               w2: dc.float32[S0, S1], b2: dc.float32[S1], w3: dc.float32[S1, S2],
               b3: dc.float32[S2]):
    # Values in [0, 1), like NPBench's uniform random draws, centred for the
    # weights so that the ReLUs see both signs.
    for i, j in dc.map[0:N, 0:C_in]:
        input[i, j] = ((i * 7 + j * 3 + 1) % 11) / 11
    for i, j in dc.map[0:C_in, 0:S0]:
        w1[i, j] = ((i * 13 + j * 5 + 2) % 17) / 17 - 0.5
    for i, j in dc.map[0:S0, 0:S1]:
        w2[i, j] = ((i * 11 + j * 7 + 3) % 19) / 19 - 0.5
    for i, j in dc.map[0:S1, 0:S2]:
        w3[i, j] = ((i * 17 + j * 3 + 5) % 23) / 23 - 0.5
    for i in dc.map[0:S0]:
        b1[i] = ((i * 3 + 1) % 7) / 7 - 0.5
    for i in dc.map[0:S1]:
        b2[i] = ((i * 5 + 2) % 9) / 9 - 0.5
    for i in dc.map[0:S2]:
        b3[i] = ((i * 7 + 3) % 13) / 13 - 0.5


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"C_in": 3, "N": 4, "S0": 20, "S1": 12, "S2": 8},
        "S": {"C_in": 3, "N": 8, "S0": 30000, "S1": 2000, "S2": 2000},
        "M": {"C_in": 3, "N": 8, "S0": 30000, "S1": 10000, "S2": 10000},
        "L": {"C_in": 3, "N": 8, "S0": 30000, "S1": 30000, "S2": 30000},
        "paper": {"C_in": 3, "N": 8, "S0": 30000, "S1": 10000, "S2": 1000},
    },
    "tolerance": {"rtol": 1e-4, "atol": 1e-6, "norm_error": 1e-4},
}

"""2-D convolution with bias (NPBench deep learning): a valid NHWC
convolution computed per output pixel as a 5-D broadcast product reduced over
three axes, then a bias added per output channel."""
import numpy as np
import dace as dc

C_in, C_out, H, K, N, W = (dc.symbol(s, dtype=dc.int64)
                           for s in ("C_in", "C_out", "H", "K", "N", "W"))


@dc.program
def conv2d(input: dc.float32[N, H, W, C_in], weights: dc.float32[K, K, C_in, C_out]):
    output = np.empty((N, H - K + 1, W - K + 1, C_out), dtype=np.float32)
    for i in range(H - K + 1):
        for j in range(W - K + 1):
            output[:, i, j, :] = np.sum(
                input[:, i:i + K, j:j + K, :, np.newaxis] *
                weights[np.newaxis, :, :, :],
                axis=(1, 2, 3),
            )
    return output


@dc.program
def kernel(input: dc.float32[N, H, W, C_in], weights: dc.float32[K, K, C_in, C_out],
           bias: dc.float32[C_out]):
    return conv2d(input, weights) + bias


@dc.program
def initialize(input: dc.float32[N, H, W, C_in], weights: dc.float32[K, K, C_in, C_out],
               bias: dc.float32[C_out]):
    # Values in [0, 1), like NPBench's uniform random draws.
    for n, h, w, c in dc.map[0:N, 0:H, 0:W, 0:C_in]:
        input[n, h, w, c] = ((n * 5 + h * 7 + w * 11 + c * 3 + 1) % 13) / 13
    for a, b, c, d in dc.map[0:K, 0:K, 0:C_in, 0:C_out]:
        weights[a, b, c, d] = ((a * 3 + b * 5 + c * 7 + d * 2 + 1) % 17) / 17
    for d in dc.map[0:C_out]:
        bias[d] = ((d * 3 + 1) % 7) / 7


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 2, "C_in": 3, "C_out": 4, "K": 2, "H": 6, "W": 7},
        "S": {"N": 8, "C_in": 3, "C_out": 16, "K": 2, "H": 32, "W": 32},
        "M": {"N": 8, "C_in": 3, "C_out": 8, "K": 5, "H": 64, "W": 64},
        "L": {"N": 8, "C_in": 3, "C_out": 8, "K": 10, "H": 128, "W": 128},
        "paper": {"N": 8, "C_in": 3, "C_out": 16, "K": 20, "H": 256, "W": 256},
    },
    "tolerance": {"rtol": 1e-4, "atol": 1e-6, "norm_error": 1e-4},
}

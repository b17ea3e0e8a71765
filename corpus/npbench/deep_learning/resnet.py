"""ResNet bottleneck block (NPBench deep learning, inference): a 1x1
convolution into a zero-padded buffer, batch normalisation and ReLU, a 3x3
convolution, normalisation and ReLU, a 1x1 convolution back to the input's
channels, normalisation, the residual added and a final ReLU. The helpers are
generic over their shapes (S0..S5), bound anew at every call."""
import numpy as np
import dace as dc

N, H, W, C1, C2, S0, S1, S2, S3, S4, S5 = (
    dc.symbol(s, dtype=dc.int64)
    for s in ("N", "H", "W", "C1", "C2", "S0", "S1", "S2", "S3", "S4", "S5"))


@dc.program
def relu(x: dc.float32[S0, S1, S2, S3]):
    return np.maximum(x, 0)


@dc.program
def conv2d(input: dc.float32[S0, S1, S2, S3], weights: dc.float32[S4, S4, S3, S5]):
    # A valid, stride-1 NHWC convolution, one output pixel at a time.
    output = np.ndarray((S0, S1 - S4 + 1, S2 - S4 + 1, S5), dtype=np.float32)
    for i in range(S1 - S4 + 1):
        for j in range(S2 - S4 + 1):
            output[:, i, j, :] = np.sum(
                input[:, i:i + S4, j:j + S4, :, np.newaxis] *
                weights[np.newaxis, :, :, :],
                axis=(1, 2, 3),
            )
    return output


@dc.program
def batchnorm2d(x: dc.float32[S0, S1, S2, S3]):
    # Normalised over the batch axis; the "std" is the variance, as in NPBench.
    mean = np.ndarray((1, S1, S2, S3), dtype=np.float32)
    mean[:] = np.mean(x, axis=0)
    std = np.ndarray((1, S1, S2, S3), dtype=np.float32)
    std[:] = np.sqrt(np.sum((x - mean) * (x - mean), axis=0) / np.float32(S0))
    return (x - mean) / np.sqrt(std + 1e-5)


@dc.program
def kernel(input: dc.float32[N, H, W, C1], conv1: dc.float32[1, 1, C1, C2],
           conv2: dc.float32[3, 3, C2, C2], conv3: dc.float32[1, 1, C2, C1]):
    padded = np.zeros((N, H + 2, W + 2, C2), dtype=np.float32)
    padded[:, 1:-1, 1:-1, :] = conv2d(input, conv1)
    x = batchnorm2d(padded)
    x1 = relu(x)
    x2 = conv2d(x1, conv2)
    x3 = batchnorm2d(x2)
    x4 = relu(x3)
    x5 = conv2d(x4, conv3)
    x6 = batchnorm2d(x5)
    return relu(x6 + input)


@dc.program
def initialize(input: dc.float32[N, H, W, C1], conv1: dc.float32[1, 1, C1, C2],
               conv2: dc.float32[3, 3, C2, C2], conv3: dc.float32[1, 1, C2, C1]):
    # Values in [0, 1), like NPBench's uniform random draws.
    for n, h, w, c in dc.map[0:N, 0:H, 0:W, 0:C1]:
        input[n, h, w, c] = ((n * 7 + h * 5 + w * 11 + c * 3 + 1) % 23) / 23
    for c, d in dc.map[0:C1, 0:C2]:
        conv1[0, 0, c, d] = ((c * 5 + d * 3 + 1) % 19) / 19
        conv3[0, 0, d, c] = ((c * 7 + d * 2 + 2) % 17) / 17
    for a, b, c, d in dc.map[0:3, 0:3, 0:C2, 0:C2]:
        conv2[a, b, c, d] = ((a * 3 + b * 5 + c * 7 + d * 2 + 1) % 13) / 13


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 3, "H": 5, "W": 6, "C1": 4, "C2": 3},
        "S": {"N": 8, "H": 14, "W": 14, "C1": 32, "C2": 8},
        "M": {"N": 8, "H": 28, "W": 28, "C1": 64, "C2": 16},
        "L": {"N": 8, "H": 56, "W": 56, "C1": 128, "C2": 32},
        "paper": {"N": 8, "H": 56, "W": 56, "C1": 256, "C2": 64},
    },
    "tolerance": {"rtol": 1e-4, "atol": 1e-5, "norm_error": 1e-4},
}

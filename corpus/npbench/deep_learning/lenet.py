"""LeNet-5 (NPBench deep learning, inference): two 5x5 convolutions, each
with bias, ReLU and a 2x2 max pool (a two-axis max reduction per output
pixel), then the feature maps flattened by a reshape into three dense layers.
C_before_fc1 is the flattened size, 16 * ((H - 4) // 2 - 4) // 2 *
((W - 4) // 2 - 4) // 2, given by each preset."""
import numpy as np
import dace as dc

N, H, W, C_before_fc1, S0, S1, S2, S3, S4, S5 = (
    dc.symbol(s, dtype=dc.int64)
    for s in ("N", "H", "W", "C_before_fc1", "S0", "S1", "S2", "S3", "S4", "S5"))


@dc.program
def relu2(x: dc.float32[S0, S1]):
    return np.maximum(x, 0)


@dc.program
def relu4(x: dc.float32[S0, S1, S2, S3]):
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
def maxpool2d(x: dc.float32[S0, S1, S2, S3]):
    output = np.ndarray([S0, S1 // 2, S2 // 2, S3], dtype=np.float32)
    for i in range(S1 // 2):
        for j in range(S2 // 2):
            output[:, i, j, :] = np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return output


@dc.program
def kernel(input: dc.float32[N, H, W, 1], conv1: dc.float32[5, 5, 1, 6],
           conv1bias: dc.float32[6], conv2: dc.float32[5, 5, 6, 16],
           conv2bias: dc.float32[16], fc1w: dc.float32[C_before_fc1, 120],
           fc1b: dc.float32[120], fc2w: dc.float32[120, 84], fc2b: dc.float32[84],
           fc3w: dc.float32[84, 10], fc3b: dc.float32[10]):
    x1 = relu4(conv2d(input, conv1) + conv1bias)
    x2 = maxpool2d(x1)
    x3 = relu4(conv2d(x2, conv2) + conv2bias)
    x4 = maxpool2d(x3)
    x5 = np.reshape(x4, (N, C_before_fc1))
    x6 = relu2(x5 @ fc1w + fc1b)
    x7 = relu2(x6 @ fc2w + fc2b)
    return x7 @ fc3w + fc3b


@dc.program
def initialize(input: dc.float32[N, H, W, 1], conv1: dc.float32[5, 5, 1, 6],
               conv1bias: dc.float32[6], conv2: dc.float32[5, 5, 6, 16],
               conv2bias: dc.float32[16], fc1w: dc.float32[C_before_fc1, 120],
               fc1b: dc.float32[120], fc2w: dc.float32[120, 84], fc2b: dc.float32[84],
               fc3w: dc.float32[84, 10], fc3b: dc.float32[10]):
    # Values in [0, 1), like NPBench's uniform random draws, except that the
    # weights are centred on zero so that the ReLUs cut some values off.
    for n, h, w in dc.map[0:N, 0:H, 0:W]:
        input[n, h, w, 0] = ((n * 7 + h * 5 + w * 11 + 1) % 23) / 23
    for a, b, d in dc.map[0:5, 0:5, 0:6]:
        conv1[a, b, 0, d] = ((a * 3 + b * 5 + d * 7 + 1) % 19) / 19 - 0.45
    for a, b, c, d in dc.map[0:5, 0:5, 0:6, 0:16]:
        conv2[a, b, c, d] = ((a * 3 + b * 5 + c * 7 + d * 2 + 1) % 17) / 17 - 0.5
    for d in dc.map[0:6]:
        conv1bias[d] = ((d * 3 + 1) % 7) / 7 - 0.5
    for d in dc.map[0:16]:
        conv2bias[d] = ((d * 5 + 2) % 11) / 11 - 0.5
    for i, j in dc.map[0:C_before_fc1, 0:120]:
        fc1w[i, j] = ((i * 13 + j * 7 + 3) % 29) / 29 - 0.5
    for i, j in dc.map[0:120, 0:84]:
        fc2w[i, j] = ((i * 11 + j * 5 + 1) % 31) / 31 - 0.5
    for i, j in dc.map[0:84, 0:10]:
        fc3w[i, j] = ((i * 7 + j * 3 + 2) % 37) / 37 - 0.5
    for d in dc.map[0:120]:
        fc1b[d] = ((d * 3 + 1) % 13) / 13
    for d in dc.map[0:84]:
        fc2b[d] = ((d * 5 + 1) % 17) / 17
    for d in dc.map[0:10]:
        fc3b[d] = ((d * 7 + 1) % 19) / 19


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 2, "H": 20, "W": 24, "C_before_fc1": 96},
        "S": {"N": 4, "H": 28, "W": 28, "C_before_fc1": 256},
        "M": {"N": 8, "H": 56, "W": 56, "C_before_fc1": 1936},
        "L": {"N": 8, "H": 176, "W": 176, "C_before_fc1": 26896},
        "paper": {"N": 16, "H": 256, "W": 256, "C_before_fc1": 59536},
    },
    "tolerance": {"rtol": 1e-4, "atol": 1e-5, "norm_error": 1e-4},
}

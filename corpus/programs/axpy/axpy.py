import numpy as np


def initialize(N):
    x = np.fromfunction(lambda i: (i % 7) / 7.0, (N,), dtype=np.float64)
    y = np.fromfunction(lambda i: 1.0 + i / N, (N,), dtype=np.float64)
    return x, y

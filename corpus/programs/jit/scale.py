import numpy as np


def initialize(N):
    A = np.fromfunction(lambda i, j: i * 0.5 + j, (N, N), dtype=np.float64)
    B = np.fromfunction(lambda i, j: i - 2.0 * j, (N, N), dtype=np.float64)
    return A, B

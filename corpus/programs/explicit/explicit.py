import numpy as np


def initialize_transpose(M, N):
    A = np.fromfunction(lambda i, j: i * 0.5 - j, (M, N), dtype=np.float32)
    B = np.zeros((N, M), dtype=np.float32)
    return A, B


def initialize_dataflow(N):
    x = np.fromfunction(lambda i: (i % 5) * 0.75 + 0.5, (N,), dtype=np.float64)
    W = np.fromfunction(lambda i, j: i + j * 0.25, (N, 3), dtype=np.float64)
    hist = np.zeros(4, dtype=np.int64)
    total = np.zeros(1, dtype=np.float64)
    s = np.zeros(4, dtype=np.float64)
    rows = np.zeros(N, dtype=np.float64)
    Z = np.zeros((N, 3), dtype=np.float64)
    return x, W, hist, total, s, rows, Z

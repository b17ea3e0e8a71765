import numpy as np


def row_norms(A):
    A[0] *= 2.0
    return np.sqrt(np.sum(A * A, axis=1, keepdims=True))

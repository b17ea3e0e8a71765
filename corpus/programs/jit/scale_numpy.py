def scale(A, alpha, B):
    B[:] = alpha * A + B.T

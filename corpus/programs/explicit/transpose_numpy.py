def transpose(A, B):
    B[:] = A.T

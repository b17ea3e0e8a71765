def axpy(a, x, y):
    y[:] = a * x + y

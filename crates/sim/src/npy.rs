//! NumPy `.npy` files (to come).

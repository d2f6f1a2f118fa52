"""njit: imperative Python (loops, branches, in-place updates) compiled with NumPy semantics."""

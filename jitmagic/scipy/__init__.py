"""jax.scipy-style functions (only jitmagic.scipy.linalg so far)."""
from . import linalg  # noqa: F401

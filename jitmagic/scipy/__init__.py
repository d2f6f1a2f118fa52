"""jax.scipy-style functions (only jitmagic.scipy.linalg so far)."""

from jitmagic.scipy import linalg  # noqa: F401

"""Indexing with traced values or integer/boolean arrays (gather)."""
from __future__ import annotations

from ..errors import UnsupportedOperationError


def getitem(x, idx):
    raise UnsupportedOperationError(
        "indexing a traced array with a traced value or an integer/boolean array is not "
        "supported yet; use static ints and slices, or lax.dynamic_slice")

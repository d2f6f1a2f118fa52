"""numba.core as Numba programs import from it: `types`, `errors`, `config`.

`numba.core.types` is `numba.types` and `numba.core.config` is `numba.config` (the same
modules, registered under both names, so a setting made through one is seen through the
other)."""

from __future__ import annotations

import sys

from jitmagic.numba import config, types
from jitmagic.numba.core import errors

sys.modules[__name__ + ".types"] = types
sys.modules[__name__ + ".config"] = config

__all__ = ["types", "errors", "config"]

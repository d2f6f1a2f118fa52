"""njit: imperative Python (loops, branches, in-place updates) compiled with NumPy's semantics.

convert.py    the AST pass: control flow -> hook calls (break/continue/return as flags)
trace.py      the hooks, traced: loops and branches as njit equations with sub-IRs
tracers.py    values and references (arrays in memory) with NumPy's semantics
namespace.py  what njit code sees for numpy, math and the builtins
indexing.py   advanced indexing with NumPy's checks
function.py   jitmagic.njit: keys by type, variants, calls, results
"""

from jitmagic.imperative.function import NjitFunction, njit  # noqa: F401

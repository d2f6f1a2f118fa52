"""The one lock over jitmagic's calls into LLVM (llvmlite.binding).

llvmlite serialises LLVM calls behind a process-wide lock of its own, which knows nothing of
fork: a process forked while another thread is inside LLVM gives a child whose first compile
waits forever on that lock (or on one of LLVM's mutexes). Every binding call of jitmagic holds
LOCK, and the forking thread takes it too (core/forksafe.py), so a fork waits for the call in
progress to finish and the child starts with LLVM at rest.
"""

from __future__ import annotations

import llvmlite.binding as llvm

from jitmagic.core import forksafe

LOCK = forksafe.hold_across_fork(forksafe.rlock())

# llvmlite's own lock is taken by calls jitmagic does not make under LOCK too: an llvmlite
# object's destructor (an engine or module collected in any thread) frees it under that lock.
# So the fork holds it as well, after LOCK (the order every compile takes them in). It is a
# private member of llvmlite (ffi.lib._lock, a context manager); without it, only LOCK.
_LLVMLITE = getattr(getattr(llvm.ffi, "lib", None), "_lock", None)
if _LLVMLITE is not None and hasattr(_LLVMLITE, "__enter__"):
    forksafe.hold_across_fork(
        _LLVMLITE, _LLVMLITE.__enter__, lambda: _LLVMLITE.__exit__(None, None, None)
    )


def add_symbol(name: str, address: int):
    """Make `name` resolve to `address` in code LLVM links from now on."""
    with LOCK:
        llvm.add_symbol(name, address)

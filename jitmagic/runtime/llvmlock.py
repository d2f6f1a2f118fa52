"""The one lock over jitmagic's calls into LLVM (llvmlite.binding).

llvmlite serialises LLVM calls behind a process-wide lock of its own, which knows nothing of
fork: a process forked while another thread is inside LLVM gives a child whose first compile
waits forever on that lock (or on one of LLVM's mutexes). Every binding call of jitmagic holds
LOCK, and the forking thread takes it too (core/forksafe.py), so a fork waits for the call in
progress to finish and the child starts with LLVM at rest.
"""

from __future__ import annotations

from jitmagic.core import forksafe

LOCK = forksafe.hold_across_fork(forksafe.rlock())
_loaded = []


def binding():
    """llvmlite.binding, imported by the first call that needs LLVM: loading LLVM's shared
    library is most of what `import llvmlite.binding` costs (~20 ms), which `import jitmagic`
    does not pay."""
    if _loaded:
        return _loaded[0]
    with LOCK:  # held: a fork in another thread sees the list of held locks before or after
        if not _loaded:
            import llvmlite.binding as llvm  # heavy: LLVM's shared library, on first use

            _hold_llvmlite_lock(llvm)
            _loaded.append(llvm)
    return _loaded[0]


def _hold_llvmlite_lock(llvm):
    # llvmlite's own lock is taken by calls jitmagic does not make under LOCK too: an llvmlite
    # object's destructor (an engine or module collected in any thread) frees it under that
    # lock. So the fork holds it as well, after LOCK (the order every compile takes them in).
    # It is a private member of llvmlite (ffi.lib._lock, a context manager); without it, only
    # LOCK. jitmagic makes no llvmlite object before this runs.
    lock = getattr(getattr(llvm.ffi, "lib", None), "_lock", None)
    if lock is not None and hasattr(lock, "__enter__"):
        forksafe.hold_across_fork(lock, lock.__enter__, lambda: lock.__exit__(None, None, None))


def add_symbol(name: str, address: int):
    """Make `name` resolve to `address` in code LLVM links from now on."""
    llvm = binding()
    with LOCK:
        llvm.add_symbol(name, address)

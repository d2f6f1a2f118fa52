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
        _release_on_error(lock)
        forksafe.hold_across_fork(lock, lock.__enter__, lambda: lock.__exit__(None, None, None))


def _release_on_error(lock):
    """Make llvmlite's lock let go when its callbacks raise.

    llvmlite's lock calls registered callbacks after taking its RLock and before releasing it,
    without try/finally; Numba registers two (timing events). A RecursionError in such a
    callback (any LLVM call made near Python's recursion limit, as a test of unbounded
    recursion does) left the RLock held by a thread that goes on as if it were free, and the
    next LLVM call of another thread (a background tier-up) waited for ever. The lock object
    is shared by every llvmlite function wrapper, so its class is swapped for one whose
    __enter__/__exit__ release on the way out of an error."""
    base = type(lock)
    if getattr(base, "_jitmagic_safe", False) or not hasattr(lock, "_lock"):
        return
    if not hasattr(lock, "_cblist"):
        return  # another llvmlite layout: left as it is

    class _ReleasingLLVMLock(base):
        _jitmagic_safe = True

        def __enter__(self):
            self._lock.acquire()
            try:
                for acq_fn, _ in self._cblist:
                    acq_fn()
            except BaseException:
                self._lock.release()
                raise

        def __exit__(self, *exc_details):
            try:
                for _, rel_fn in self._cblist:
                    rel_fn()
            finally:
                self._lock.release()

    _ReleasingLLVMLock.__name__ = base.__name__
    lock.__class__ = _ReleasingLLVMLock


def add_symbol(name: str, address: int):
    """Make `name` resolve to `address` in code LLVM links from now on."""
    llvm = binding()
    with LOCK:
        llvm.add_symbol(name, address)

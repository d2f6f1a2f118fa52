"""prange, the number of threads parallel loops use, and the chunk size (Numba's names)."""

from __future__ import annotations

import numpy as np

from jitmagic.runtime import threadpool


class prange:
    """range(...) whose iterations may run on several threads in a parallel=True njit
    function; run by Python (or in a function without parallel=True) it is range."""

    __jm_prange__ = True  # (njit code recognises it: imperative/namespace.is_prange)

    def __new__(cls, *args):
        return range(*args)


def set_num_threads(n):
    """The number of threads prange loops split over (1 .. the machine's, as Numba)."""
    n = int(n)
    limit = threadpool.threads()
    if not 1 <= n <= limit:
        raise ValueError(f"The number of threads must be between 1 and {limit}")
    threadpool.set_parallel_threads(n)


def get_num_threads():
    return threadpool.parallel_threads()


def get_thread_id():
    """0 outside compiled code (the calling thread)."""
    return 0


_chunksize = [0]


def set_parallel_chunksize(n):
    """Numba's hint for how many iterations a thread takes at a time (0: Numba's default),
    returning the previous one. jitmagic splits a prange loop into one chunk per thread
    whatever the hint; the results are the same (called from Python; not in njit code)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError("The parallel chunksize must be an integer")
    if n < 0:
        raise ValueError("chunksize must be greater than or equal to zero")
    old, _chunksize[0] = _chunksize[0], int(n)
    return old


def get_parallel_chunksize():
    return _chunksize[0]


class parallel_chunksize:
    """with parallel_chunksize(n): ... sets the hint for the block (Python code)."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.old = set_parallel_chunksize(self.n)

    def __exit__(self, *exc):
        set_parallel_chunksize(self.old)

"""prange and the number of threads parallel loops use (Numba's names)."""

from __future__ import annotations

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

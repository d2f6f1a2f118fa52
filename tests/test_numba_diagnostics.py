"""jitmagic.numba's Dispatcher reports as Numba's does where it can: parallel_diagnostics
lists each prange loop split over the thread pool, by the line of its source."""

from __future__ import annotations

import inspect

import numpy as np

import jitmagic.numba as nb


def test_parallel_diagnostics_name_each_prange_loop_by_line(capsys):
    @nb.njit(parallel=True)
    def total(a):
        s = 0.0
        for i in nb.prange(a.shape[0]):
            s += a[i]
        for i in range(3):
            s += 1.0
        return s

    assert total(np.ones(5000)) == 5003.0
    total.parallel_diagnostics(level=4)
    out = capsys.readouterr().out
    src, first = inspect.getsourcelines(total.py_func)
    line = first + next(k for k, t in enumerate(src) if "prange" in t)
    assert f"prange loop at line {line}: split over the threads" in out
    assert out.count("prange loop at line") == 1  # (the range loop is not one)
    assert "variant 1 (a:float64[::1])" in out


def test_parallel_diagnostics_without_parallel_say_so(capsys):
    @nb.njit
    def total(a):
        s = 0.0
        for i in nb.prange(a.shape[0]):
            s += a[i]
        return s

    total(np.ones(10))
    total.parallel_diagnostics()
    assert "parallel=False" in capsys.readouterr().out

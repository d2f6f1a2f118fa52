"""LLVM's lock (llvmlite's, shared with Numba) is let go whatever happens inside an LLVM call.

Numba registers callbacks that llvmlite's lock runs after taking it and before letting it go.
A RecursionError raised in one of them (an LLVM call near Python's recursion limit) used to
leave the lock held by a thread that carried on; the next compile of another thread (the
background tier-up) then waited for ever. Checked in a child process, so a regression fails
this test instead of hanging the suite."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import threading, numpy as np
    import numba                         # registers llvmlite lock callbacks
    import jitmagic as jm
    from jitmagic.runtime import llvmlock

    llvm = llvmlock.binding()
    jm.jit(lambda x: x + 1.0)(np.ones(2))

    def deep(n):                          # every level calls into LLVM
        llvm.parse_assembly("define i32 @f() { ret i32 0 }")
        return deep(n + 1)

    for _ in range(20):                   # the limit lands at a different spot each time
        try:
            deep(0)
        except RecursionError:
            pass
    print("held by main:", llvm.ffi.lib._lock._lock._is_owned())

    out = []
    t = threading.Thread(target=lambda: out.append(float(jm.jit(lambda x: x * 3.0)(2.0))),
                         daemon=True)
    t.start()
    t.join(60)
    print("other thread:", out if not t.is_alive() else "waiting")
""")


def test_a_recursion_error_inside_an_llvm_call_lets_go_of_the_lock():
    p = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["held by main: False", "other thread: [6.0]"], p.stdout

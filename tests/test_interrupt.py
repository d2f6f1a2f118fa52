"""Ctrl-C (SIGINT, as Jupyter's "interrupt kernel" sends) stops native code that would run
for ever, raises KeyboardInterrupt, and leaves the process (the user's kernel) usable."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import os, signal, threading, numpy as np, jitmagic as jm
    import jitmagic.numpy as jnp
    from jitmagic import lax
    signal.signal(signal.SIGINT, signal.default_int_handler)   # as in IPython
    never_ends = jm.jit(lambda x: lax.while_loop(lambda c: c > -1.0, lambda c: c + 1.0, x))
    huge = jm.jit(lambda n: (jnp.zeros((2**31, 2**31)) + n).sum())
    flat = jm.jit(lambda n: (jnp.zeros(2**50) + n).sum())             # one 1-D loop
    rows = jm.jit(lambda n: (jnp.zeros((3, 2**46)) + n).sum(axis=1))  # few, huge rows
    in_body = jm.jit(lambda n: lax.fori_loop(0, 2, lambda i, c: c + (jnp.zeros(2**50) + n)
                                             .sum(), 0.0))
    arg = jm.jit(lambda n: jnp.argmax(jnp.zeros(2**50) + n))
    for name, f in (("while_loop", never_ends), ("huge loop nest", huge), ("1-D loop", flat),
                    ("long rows", rows), ("1-D loop in a body", in_body), ("argmax", arg)):
        f.lower(0.0)                                    # compile outside the timed window
        threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            f(0.0)
            print(name, "finished?!")
        except KeyboardInterrupt:
            print(name, "interrupted")
    print("after:", jm.jit(lambda x: x * 2)(np.arange(3.0)).tolist())
""")


def test_ctrl_c_stops_native_loops_and_the_process_goes_on():
    p = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "while_loop interrupted",
        "huge loop nest interrupted",
        "1-D loop interrupted",
        "long rows interrupted",
        "1-D loop in a body interrupted",
        "argmax interrupted",
        "after: [0.0, 2.0, 4.0]",
    ], p.stdout + p.stderr


FREE_SCRIPT = textwrap.dedent("""
    import ctypes, gc, os, signal, threading, numpy as np, jitmagic as jm
    import jitmagic.numpy as jnp
    from jitmagic import lax
    signal.signal(signal.SIGINT, signal.default_int_handler)
    libc = ctypes.CDLL("libc.so.6")
    def rss_mib():
        gc.collect(); libc.malloc_trim(0)
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    @jm.jit
    def stuck(x):
        t = jnp.sort(x)                    # a 32 MiB temporary, written (so resident)
        return lax.while_loop(lambda c: c > -1.0, lambda c: c + t[0] * 0.0, t[1])
    x = np.random.rand(4 * 2**20)
    stuck.lower(x)
    before = None
    for k in range(5):
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            stuck(x)
        except KeyboardInterrupt:
            pass
        if k == 0:
            before = rss_mib()             # after the first: the allocator has warmed up
    print(f"growth {rss_mib() - before:.0f} MiB")
""")


def test_an_interrupted_call_frees_its_temporaries():
    p = subprocess.run(
        [sys.executable, "-c", FREE_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    growth = float(p.stdout.split()[1])
    assert growth < 24, p.stdout  # four leaked temporaries would be 128 MiB


TRACE_SCRIPT = textwrap.dedent("""
    import os, signal, threading, numpy as np, jitmagic as jm
    import jitmagic.numpy as jnp
    signal.signal(signal.SIGINT, signal.default_int_handler)   # as in IPython
    # O3 straight away: the light tier compiles the long program before the interrupt lands
    jm.config.update(max_trace_equations=10**8, tiered=False)
    small = jm.jit(lambda x: x + 1.0)
    small(np.zeros(2))

    def unrolled(n):
        def f(x):
            for _ in range(n):
                x = jnp.sin(x) * 1.0001
            return x
        return jm.jit(f)
    # a trace that would take minutes, then a compile of a long straight-line program
    # (the interrupt lands in the trace, the passes or LLVM: each must recover)
    for name, n in (("trace", 10**7), ("compile", 10000)):
        threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            unrolled(n)(np.zeros(2))
            print(name, "finished?!")
        except KeyboardInterrupt:
            print(name, "interrupted")
    print("after:", small(np.zeros(2)).tolist(), unrolled(3)(np.zeros(2)).tolist())
""")


def test_ctrl_c_during_trace_or_compile_leaves_the_kernel_usable():
    p = subprocess.run(
        [sys.executable, "-c", TRACE_SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "trace interrupted",
        "compile interrupted",
        "after: [1.0, 1.0] [0.0, 0.0]",
    ], p.stdout + p.stderr

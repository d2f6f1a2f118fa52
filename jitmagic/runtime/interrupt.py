"""Ctrl-C (SIGINT, also a Jupyter "interrupt kernel") stops running native code.

A tiny JIT-compiled C-level SIGINT handler sets an abort flag and then calls the handler it
replaced (Python's, so KeyboardInterrupt is still raised as usual). Generated code polls the
flag once per iteration of outer loops and of lax loops, and returns status 3, which the
caller turns into KeyboardInterrupt. A Python `signal.signal(SIGINT, ...)` installed later
replaces this handler; native code is then not interruptible, but nothing else changes.

A Jupyter kernel does exactly that before every cell (ipykernel sets Python's default handler
for the time of each request, which re-installs Python's C-level handler in place of this
one): so in IPython the handler is put in front again as each cell starts (`pre_execute`).
Without it, only a function compiled in the running cell could be interrupted, and Ctrl-C on
any later call of it left the kernel busy for as long as the loop ran.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading

import llvmlite.ir as ir

from jitmagic.runtime import native
from jitmagic.runtime.llvmtypes import I32, PTR

ABORTED = 3
_flag = ctypes.c_int32(0)
_installed = {}

_HANDLER_IR = """
@jm_prev = global ptr null
@jm_flag_ptr = global ptr null
define void @jm_sigint(i32 %s) {
entry:
  %f = load ptr, ptr @jm_flag_ptr
  store volatile i32 1, ptr %f
  %p = load ptr, ptr @jm_prev
  %none = icmp ule ptr %p, inttoptr (i64 1 to ptr)   ; SIG_DFL (0) / SIG_IGN (1)
  br i1 %none, label %done, label %chain
chain:
  call void %p(i32 %s)
  br label %done
done:
  ret void
}
"""


def install():
    """Put the handler in front of the current SIGINT handler. Called at every compile (main
    thread only), so a handler that Python code installed since is chained, not lost."""
    if threading.current_thread() is not threading.main_thread():
        return
    if not _installed:
        # a handful of instructions run once per Ctrl-C: LLVM's -O0 and fast instruction
        # selection (0.8 ms, where O3 took 2-3 ms of a process's first compile); with the disk
        # cache on, linked from it
        fns = native.build(
            _HANDLER_IR,
            ("jm_sigint", "jm_flag_ptr", "jm_prev"),
            "sigint",
            opt=(0, 0),
            persistent=True,
        )
        ctypes.c_void_p.from_address(fns["jm_flag_ptr"]).value = ctypes.addressof(_flag)
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        _installed.update(handler=fns["jm_sigint"], libc=libc, prev=fns["jm_prev"])
        _follow_ipython()
    handler, libc = _installed["handler"], _installed["libc"]
    prev = libc.signal(signal.SIGINT, handler)
    if prev != handler and prev != ctypes.c_void_p(-1).value:
        ctypes.c_void_p.from_address(_installed["prev"]).value = prev


def _follow_ipython():
    """Run install() as each IPython cell starts, when an IPython shell is running (looked
    up, not imported: importing jitmagic never imports IPython)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:
        shell.events.register("pre_execute", install)


def attach(engine):
    addr = engine.get_global_value_address("jm_abort")
    if addr:
        ctypes.c_void_p.from_address(addr).value = ctypes.addressof(_flag)


def declare(module):
    g = ir.GlobalVariable(module, PTR, "jm_abort")
    g.initializer = ir.Constant(PTR, None)


def clear(cg):
    """At the entry: a Ctrl-C that arrived before this call does not abort it."""
    b = cg.b
    b.store(ir.Constant(I32, 0), b.load(cg.module.globals["jm_abort"], typ=PTR))


def check(cg):
    """Branch to cg.abort_target if Ctrl-C was pressed. The load is atomic so that LLVM
    cannot hoist it out of the loop (nothing in the loop writes the flag)."""
    b = cg.b
    flag = b.load_atomic(b.load(cg.module.globals["jm_abort"], typ=PTR), "monotonic", 4, typ=I32)
    hit = b.icmp_signed("!=", flag, ir.Constant(I32, 0))
    cont = cg.func.append_basic_block("not_interrupted")
    b.cbranch(hit, cg.abort_target, cont)
    b.position_at_end(cont)

"""Worker threads shared by every parallel kernel: `jm_par(task, arg, n)` runs task(arg, i) for
i in [0, n) on the calling thread and the pool's workers, and returns when all have finished.

Why not a pthread_create per call, as before: a thread started on a core that another process
holds (NumPy's OpenBLAS worker spins for 50-200 ms after each product, JAX's pool spins too)
waits for its time slice, and the call waited for it at pthread_join. A 128x256x512 product
split over two threads took a median 0.73 ms and a 90th percentile 8 ms; on one thread 0.5 and
0.56 ms. Here tasks are claimed one at a time from a shared word, the caller included, so a
worker that has not woken up yet delays nothing: the caller takes the tasks itself and waits
only for tasks another thread has actually started. Starting threads (20-50 us each) is paid
once per process.

The claim word is gen << 40 | n << 20 | next: a claim is one compare-and-swap, and a worker
that read a finished job's task and argument cannot claim in a later job (its generation
differs). Workers spin briefly (SPIN pauses) for the next job, then sleep on a futex. One job
at a time: a second caller (another Python thread, or a task that is itself parallel) runs its
tasks inline. After a fork the child starts its own workers on first use.
"""

from __future__ import annotations

import ctypes
import os
import platform

from jitmagic.core import forksafe
from jitmagic.runtime import llvmtypes as _llvmtypes
from jitmagic.runtime import native as runtime

SPIN = 4000  # pauses (~40 us) a worker waits for the next job before it sleeps
MAX_TASKS = (1 << 20) - 1
_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine())
_FUNCS = ("jm_par",)


class _State(ctypes.Structure):
    _fields_ = [
        ("word", ctypes.c_int64),
        ("task", ctypes.c_void_p),
        ("arg", ctypes.c_void_p),
        ("done", ctypes.c_int64),
        ("busy", ctypes.c_int64),
        ("sleepers", ctypes.c_int64),
        ("seq", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("started", ctypes.c_int64),
        ("spawned", ctypes.c_int64),
        ("jobs", ctypes.c_int64),
        ("inline", ctypes.c_int64),
    ]


_lock = forksafe.lock()
_pool = {}


def _ir(nworkers):
    """The pool's functions; its state is the module's global @jm_threads_state (a _State), so
    the text holds no address of this process and the disk cache can keep the module."""

    def at(field):
        offset = getattr(_State, field).offset
        return f"getelementptr inbounds (i8, ptr @jm_threads_state, i64 {offset})"

    word, task, arg, done, busy, sleepers, seq, started, spawned, jobs, inline = (
        at(f)
        for f in (
            "word",
            "task",
            "arg",
            "done",
            "busy",
            "sleepers",
            "seq",
            "started",
            "spawned",
            "jobs",
            "inline",
        )
    )
    x86 = platform.machine() in ("x86_64", "AMD64")
    relax = "  call void @llvm.x86.sse2.pause()\n" if x86 else ""
    mask = (1 << 20) - 1
    sleep = (
        f"""  %s = load atomic i32, ptr {seq} seq_cst, align 4
  %x = atomicrmw add ptr {sleepers}, i64 1 seq_cst
  %w2 = load atomic i64, ptr {word} seq_cst, align 8
  %c2 = call i1 @claimable(i64 %w2)
  br i1 %c2, label %awake, label %wait
wait:
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX}, ptr {seq}, i32 128, i32 %s, ptr null)
  br label %awake
awake:
  %y = atomicrmw sub ptr {sleepers}, i64 1 seq_cst
  br label %loop"""
        if _FUTEX
        else "  br label %loop"
    )
    wake = (
        f"""  %sl = load atomic i64, ptr {sleepers} seq_cst, align 8
  %any = icmp ne i64 %sl, 0
  br i1 %any, label %wake, label %mine
wake:
  %o = atomicrmw add ptr {seq}, i32 1 seq_cst
  %r = call i64 (i64, ...) @syscall(i64 {_FUTEX}, ptr {seq}, i32 129, i32 2147483647)
  br label %mine"""
        if _FUTEX
        else "  br label %mine"
    )
    return f"""
@jm_threads_state = global [{ctypes.sizeof(_State)} x i8] zeroinitializer, align 64
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
{"declare void @llvm.x86.sse2.pause()" if x86 else ""}

define private void @relax() {{
{relax}  ret void
}}

define private i1 @claimable(i64 %w) {{
  %i = and i64 %w, {mask}
  %ns = lshr i64 %w, 20
  %n = and i64 %ns, {mask}
  %c = icmp ult i64 %i, %n
  ret i1 %c
}}

define private void @bump(ptr %counter) {{
  %o = atomicrmw add ptr %counter, i64 1 monotonic
  ret void
}}

; claim and run the current job's tasks until none is left
define private void @work() {{
entry:
  br label %again
again:
  %w = load atomic i64, ptr {word} acquire, align 8
  %left = call i1 @claimable(i64 %w)
  br i1 %left, label %try, label %out
try:
  %t = load atomic ptr, ptr {task} monotonic, align 8
  %a = load atomic ptr, ptr {arg} monotonic, align 8
  %w1 = add i64 %w, 1
  %r = cmpxchg ptr {word}, i64 %w, i64 %w1 acq_rel acquire
  %ok = extractvalue {{i64, i1}} %r, 1
  br i1 %ok, label %run, label %again
run:
  %i = and i64 %w, {mask}
  call void %t(ptr %a, i64 %i)
  %d = atomicrmw add ptr {done}, i64 1 release
  br label %again
out:
  ret void
}}

define private ptr @worker(ptr %unused) {{
entry:
  br label %loop
loop:
  call void @work()
  br label %spin
spin:
  %k = phi i64 [0, %loop], [%k1, %pause]
  %w = load atomic i64, ptr {word} monotonic, align 8
  %c = call i1 @claimable(i64 %w)
  br i1 %c, label %loop, label %count
count:
  %k1 = add i64 %k, 1
  %more = icmp ult i64 %k1, {SPIN}
  br i1 %more, label %pause, label %sleep
pause:
  call void @relax()
  br label %spin
sleep:
{sleep}
}}

define private void @spawn() {{
entry:
  %tid = alloca i64
  br label %loop
loop:
  %k = phi i64 [0, %entry], [%k1, %next]
  %more = icmp ult i64 %k, {nworkers}
  br i1 %more, label %create, label %out
create:
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr null)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %detach, label %next
detach:
  %id = load i64, ptr %tid
  %d = call i32 @pthread_detach(i64 %id)
  call void @bump(ptr {spawned})
  br label %next
next:
  %k1 = add i64 %k, 1
  br label %loop
out:
  store i64 1, ptr {started}
  ret void
}}

define void @jm_par(ptr %task, ptr %arg, i64 %n) {{
entry:
  %small = icmp ult i64 %n, 2
  %huge = icmp ugt i64 %n, {MAX_TASKS}
  %serial = or i1 %small, %huge
  br i1 %serial, label %inline, label %lock
lock:
  %l = cmpxchg ptr {busy}, i64 0, i64 1 acquire monotonic
  %got = extractvalue {{i64, i1}} %l, 1
  br i1 %got, label %start, label %inline_busy
inline_busy:
  call void @bump(ptr {inline})
  br label %inline
start:
  %st = load i64, ptr {started}
  %need = icmp eq i64 %st, 0
  br i1 %need, label %spawn, label %publish
spawn:
  call void @spawn()
  br label %publish
publish:
  call void @bump(ptr {jobs})
  store atomic ptr %task, ptr {task} monotonic, align 8
  store atomic ptr %arg, ptr {arg} monotonic, align 8
  store atomic i64 0, ptr {done} monotonic, align 8
  %w = load atomic i64, ptr {word} monotonic, align 8
  %g = lshr i64 %w, 40
  %g1 = add i64 %g, 1
  %g2 = and i64 %g1, 16777215
  %gs = shl i64 %g2, 40
  %nsh = shl i64 %n, 20
  %nw = or i64 %gs, %nsh
  store atomic i64 %nw, ptr {word} seq_cst, align 8
{wake}
mine:
  call void @work()
  br label %wait
wait:
  %k = phi i64 [0, %mine], [%k1, %pause], [%k1, %yield]
  %dn = load atomic i64, ptr {done} acquire, align 8
  %all = icmp uge i64 %dn, %n
  br i1 %all, label %finish, label %count
count:
  %k1 = add i64 %k, 1
  %long = icmp ugt i64 %k1, 2000
  br i1 %long, label %yield, label %pause
pause:
  call void @relax()
  br label %wait
yield:
  %y = call i32 @sched_yield()
  br label %wait
finish:
  store atomic i64 0, ptr {busy} release, align 8
  ret void
inline:
  br label %iloop
iloop:
  %i = phi i64 [0, %inline], [%i1, %ibody]
  %go = icmp ult i64 %i, %n
  br i1 %go, label %ibody, label %iout
ibody:
  call void %task(ptr %arg, i64 %i)
  %i1 = add i64 %i, 1
  br label %iloop
iout:
  ret void
}}
"""


def threads() -> int:
    """Threads a parallel kernel splits over: the calling thread and the pool's workers (the
    CPUs this process may run on, at most 8)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _init():
    if _pool:
        return _pool
    with _lock:
        if _pool:
            return _pool
        workers = threads() - 1 if _FUTEX else 0
        # LLVM's -O0 and fast instruction selection: 2-3 ms, where -O1 took 10-17 ms of a
        # process's first call (a claim is one compare-and-swap per task either way); with the
        # disk cache on, linked from it
        fns = runtime.build(
            _ir(workers),
            (*_FUNCS, "jm_threads_state"),
            "threads",
            link=("jm_par",),
            opt=(0, 0),
            persistent=True,
        )
        st = _State.from_address(fns["jm_threads_state"])
        _pool.update(fns, state=st, workers=workers)
    return _pool


def install():
    """Make jm_par known to LLVM (before linking a kernel that calls it)."""
    _init()


def declare(module):
    """`void jm_par(ptr task, ptr arg, i64 n)` in `module`; task is `void (ptr arg, i64 i)`."""
    import llvmlite.ir as ir

    install()
    fn = module.globals.get("jm_par")
    if fn is None:
        fn = ir.Function(
            module,
            ir.FunctionType(ir.VoidType(), [_llvmtypes.PTR, _llvmtypes.PTR, _llvmtypes.I64]),
            "jm_par",
        )
    return fn


def info() -> dict:
    if not _pool:
        return {"workers": 0, "started": 0, "jobs": 0, "inline": 0}
    st = _pool["state"]
    return {
        "workers": st.spawned,
        "started": bool(st.started),
        "jobs": st.jobs,
        "inline": st.inline,
    }


def _after_fork_in_child():
    """The child has none of the parent's threads: start afresh, and make sure no job of the
    parent's (copied mid-way) can be claimed by the child's new workers."""
    if _pool:
        st = _pool["state"]
        gen = ((st.word >> 40) + 1) & 0xFFFFFF
        st.word, st.done, st.busy, st.sleepers, st.started, st.spawned = gen << 40, 0, 0, 0, 0, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------- prange's thread count

_prange_threads = ctypes.c_int64(0)  # 0: all of threads(); read by compiled prange loops


def set_parallel_threads(n: int) -> None:
    """How many threads a prange loop splits over from now on (numba.set_num_threads)."""
    _prange_threads.value = int(n)


def parallel_threads() -> int:
    return _prange_threads.value or threads()


def prange_threads_symbol() -> str:
    """The name compiled prange loops read the thread count from (known to LLVM's linker)."""
    if not _symbols:
        import llvmlite.binding as llvm

        llvm.add_symbol("jm_prange_threads", ctypes.addressof(_prange_threads))
        _symbols.append("jm_prange_threads")
    return "jm_prange_threads"


_symbols: list = []

"""Large result and temporary buffers, kept mapped and reused.

Why: glibc gives freed memory above its trim threshold back to the system. A NumPy program run
between two jitted calls (or the caller dropping the last result) therefore leaves the next
call's fresh result to be page-faulted in again, inside the kernel: a 1M-element sin/cos chain
on two threads took 8 ms after a NumPy run against 1 ms in a loop of its own (390 faults per
call), and a reported speedup measured between eager runs said 4x where timeit said 22x.

How: a small table of free blocks (SLOTS entries, exact sizes, at most `buffer_pool_bytes`
together; the oldest is freed first when a block does not fit). Two clients:
- results: arrays of MIN_BYTES or more are allocated under a NumPy memory handler
  (PyDataMem_SetHandler, NumPy >= 1.22) named "jitmagic", whose free puts the block in the table
  when the array dies; they are ordinary C-contiguous ndarrays that own their data.
- kernel temporaries: codegen calls jm_tmp_alloc / jm_tmp_free instead of malloc / free (a
  64-byte header keeps the block's size).
The table is native code (generated here once per process) behind a spin lock: kernels run
without the GIL, on any thread. Everything made here is kept alive until the process ends:
NumPy calls the handler for every array it made, however late.
"""

from __future__ import annotations

import ctypes
import math
import os

import numpy as np

from jitmagic.core import forksafe
from jitmagic.core.config import config
from jitmagic.runtime import native as runtime
from jitmagic.runtime import native_call

SLOTS = 32
MIN_BYTES = 256 << 10  # smaller blocks: glibc's bins already reuse them without faults
HEADER = 64
_FUNCS = (
    "jm_pool_take",
    "jm_pool_give",
    "jm_pool_clear",
    "jm_h_malloc",
    "jm_h_calloc",
    "jm_h_realloc",
    "jm_h_free",
    "jm_tmp_alloc",
    "jm_tmp_free",
    "jm_new_array",
)
_SET_HANDLER = 304  # PyDataMem_SetHandler in NumPy's C API table (1.22+ and 2.x)


class _State(ctypes.Structure):
    _fields_ = [
        ("lock", ctypes.c_int64),
        ("cached", ctypes.c_int64),
        ("cap", ctypes.c_int64),
        ("min", ctypes.c_int64),
        ("hits", ctypes.c_int64),
        ("misses", ctypes.c_int64),
        ("victim", ctypes.c_int64),
        ("given", ctypes.c_int64),
        ("ptrs", ctypes.c_void_p * SLOTS),
        ("sizes", ctypes.c_int64 * SLOTS),
    ]


class _Allocator(ctypes.Structure):
    _fields_ = [
        ("ctx", ctypes.c_void_p),
        ("malloc", ctypes.c_void_p),
        ("calloc", ctypes.c_void_p),
        ("realloc", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
    ]


class _Handler(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 127),
        ("version", ctypes.c_uint8),
        ("allocator", _Allocator),
    ]


_lock = forksafe.lock()
_pool = {}


# what jm_new_array calls, in the module's global @jm_pool_api, set after loading
_API = ("incref", "decref", "new", "set_handler", "capsule")


def _ir():
    """The pool's functions as LLVM IR text. The table's state is the module's global
    @jm_pool_state (a _State) and NumPy's and Python's functions are read from @jm_pool_api,
    so the text holds no address of this process and the disk cache can keep the module."""

    def at(field):
        return (
            f"getelementptr inbounds (i8, ptr @jm_pool_state, i64 {getattr(_State, field).offset})"
        )

    lock, cached, cap, mn, hits, misses, victim, given = (
        at(f) for f in ("lock", "cached", "cap", "min", "hits", "misses", "victim", "given")
    )
    ptrs, sizes = at("ptrs"), at("sizes")
    ext = "\n".join(
        f"declare {sig}"
        for sig in (
            "ptr @malloc(i64)",
            "ptr @calloc(i64, i64)",
            "ptr @realloc(ptr, i64)",
            "void @free(ptr)",
        )
    )
    fn = {k: f"%api_{k}" for k in _API}
    load_api = "\n".join(
        f"  %api_{k} = load ptr, ptr getelementptr inbounds (ptr, ptr @jm_pool_api, i64 {i})"
        for i, k in enumerate(_API)
    )
    return f"""
{ext}
@jm_pool_state = global [{ctypes.sizeof(_State)} x i8] zeroinitializer, align 64
@jm_pool_api = global [{len(_API)} x ptr] zeroinitializer

define private void @lock() {{
entry:
  br label %spin
spin:
  %r = cmpxchg ptr {lock}, i64 0, i64 1 acquire monotonic
  %ok = extractvalue {{i64, i1}} %r, 1
  br i1 %ok, label %done, label %spin
done:
  ret void
}}

define private void @unlock() {{
  store atomic i64 0, ptr {lock} release, align 8
  ret void
}}

define private void @bump(ptr %counter) {{
  %c = load i64, ptr %counter
  %c1 = add i64 %c, 1
  store i64 %c1, ptr %counter
  ret void
}}

; under the lock: free the oldest slot (round robin) and move on
define private void @evict() {{
entry:
  %v = load i64, ptr {victim}
  %pp = getelementptr ptr, ptr {ptrs}, i64 %v
  %sp = getelementptr i64, ptr {sizes}, i64 %v
  %p = load ptr, ptr %pp
  %s = load i64, ptr %sp
  store ptr null, ptr %pp
  store i64 0, ptr %sp
  %c = load i64, ptr {cached}
  %c1 = sub i64 %c, %s
  store i64 %c1, ptr {cached}
  call void @free(ptr %p)
  %v1 = add i64 %v, 1
  %v2 = urem i64 %v1, {SLOTS}
  store i64 %v2, ptr {victim}
  ret void
}}

define ptr @jm_pool_take(i64 %size) {{
entry:
  %min = load i64, ptr {mn}
  %small = icmp ult i64 %size, %min
  br i1 %small, label %none, label %go
go:
  call void @lock()
  br label %loop
loop:
  %i = phi i64 [0, %go], [%i1, %next]
  %sp = getelementptr i64, ptr {sizes}, i64 %i
  %s = load i64, ptr %sp
  %eq = icmp eq i64 %s, %size
  br i1 %eq, label %found, label %next
next:
  %i1 = add i64 %i, 1
  %end = icmp eq i64 %i1, {SLOTS}
  br i1 %end, label %miss, label %loop
found:
  %pp = getelementptr ptr, ptr {ptrs}, i64 %i
  %p = load ptr, ptr %pp
  store ptr null, ptr %pp
  store i64 0, ptr %sp
  %c = load i64, ptr {cached}
  %c1 = sub i64 %c, %size
  store i64 %c1, ptr {cached}
  call void @bump(ptr {hits})
  call void @unlock()
  ret ptr %p
miss:
  call void @bump(ptr {misses})
  call void @unlock()
  br label %none
none:
  ret ptr null
}}

define i32 @jm_pool_give(ptr %p, i64 %size) {{
entry:
  %min = load i64, ptr {mn}
  %cap = load i64, ptr {cap}
  %small = icmp ult i64 %size, %min
  %big = icmp ugt i64 %size, %cap
  %no = or i1 %small, %big
  br i1 %no, label %refuse, label %go
go:
  call void @lock()
  br label %room
room:
  %c = load i64, ptr {cached}
  %cs = add i64 %c, %size
  %over = icmp ugt i64 %cs, %cap
  br i1 %over, label %make_room, label %find
make_room:
  call void @evict()
  br label %room
find:
  br label %loop
loop:
  %i = phi i64 [0, %find], [%i1, %next]
  %pp = getelementptr ptr, ptr {ptrs}, i64 %i
  %q = load ptr, ptr %pp
  %empty = icmp eq ptr %q, null
  br i1 %empty, label %store, label %next
next:
  %i1 = add i64 %i, 1
  %end = icmp eq i64 %i1, {SLOTS}
  br i1 %end, label %full, label %loop
full:
  call void @evict()
  br label %find
store:
  store ptr %p, ptr %pp
  %sp = getelementptr i64, ptr {sizes}, i64 %i
  store i64 %size, ptr %sp
  %c2 = load i64, ptr {cached}
  %c3 = add i64 %c2, %size
  store i64 %c3, ptr {cached}
  call void @bump(ptr {given})
  call void @unlock()
  ret i32 1
refuse:
  ret i32 0
}}

define void @jm_pool_clear() {{
entry:
  call void @lock()
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  call void @evict()
  %i1 = add i64 %i, 1
  %end = icmp eq i64 %i1, {SLOTS}
  br i1 %end, label %done, label %loop
done:
  call void @unlock()
  ret void
}}

define ptr @jm_h_malloc(ptr %ctx, i64 %size) {{
entry:
  %p = call ptr @jm_pool_take(i64 %size)
  %hit = icmp ne ptr %p, null
  br i1 %hit, label %done, label %fresh
fresh:
  %q = call ptr @malloc(i64 %size)
  ret ptr %q
done:
  ret ptr %p
}}

define ptr @jm_h_calloc(ptr %ctx, i64 %n, i64 %es) {{
  %p = call ptr @calloc(i64 %n, i64 %es)
  ret ptr %p
}}

define ptr @jm_h_realloc(ptr %ctx, ptr %p, i64 %size) {{
  %q = call ptr @realloc(ptr %p, i64 %size)
  ret ptr %q
}}

; into the table, or back to the C library
define private void @release(ptr %p, i64 %size) {{
entry:
  %kept = call i32 @jm_pool_give(ptr %p, i64 %size)
  %ok = icmp ne i32 %kept, 0
  br i1 %ok, label %done, label %free
free:
  call void @free(ptr %p)
  br label %done
done:
  ret void
}}

define void @jm_h_free(ptr %ctx, ptr %p, i64 %size) {{
entry:
  %null = icmp eq ptr %p, null
  br i1 %null, label %done, label %go
go:
  call void @release(ptr %p, i64 %size)
  br label %done
done:
  ret void
}}

define ptr @jm_tmp_alloc(i64 %n) {{
entry:
  %total = add i64 %n, {HEADER}
  %p = call ptr @jm_pool_take(i64 %total)
  %hit = icmp ne ptr %p, null
  br i1 %hit, label %got, label %fresh
fresh:
  %q = call ptr @malloc(i64 %total)
  %oom = icmp eq ptr %q, null
  br i1 %oom, label %fail, label %got
got:
  %b = phi ptr [%p, %entry], [%q, %fresh]
  store i64 %total, ptr %b
  %user = getelementptr i8, ptr %b, i64 {HEADER}
  ret ptr %user
fail:
  ret ptr null
}}

define void @jm_tmp_free(ptr %user) {{
entry:
  %null = icmp eq ptr %user, null
  br i1 %null, label %done, label %go
go:
  %b = getelementptr i8, ptr %user, i64 -{HEADER}
  %total = load i64, ptr %b
  call void @release(ptr %b, i64 %total)
  br label %done
done:
  ret void
}}

; a new array of NumPy's, its data from this pool: PyArray_NewFromDescr under our handler
define ptr @jm_new_array(ptr %type, ptr %descr, i32 %nd, ptr %dims) {{
entry:
{load_api}
  call void {fn["incref"]}(ptr %descr)
  %old = call ptr {fn["set_handler"]}(ptr {fn["capsule"]})
  %bad = icmp eq ptr %old, null
  br i1 %bad, label %fail0, label %go
fail0:
  call void {fn["decref"]}(ptr %descr)
  ret ptr null
go:
  %arr = call ptr {fn["new"]}(ptr %type, ptr %descr, i32 %nd, ptr %dims, ptr null, ptr null, i32 0, ptr null)
  %t = call ptr {fn["set_handler"]}(ptr %old)
  call void {fn["decref"]}(ptr %old)
  %tbad = icmp eq ptr %t, null
  br i1 %tbad, label %tfail, label %tok
tok:
  call void {fn["decref"]}(ptr %t)
  ret ptr %arr
tfail:
  %made = icmp ne ptr %arr, null
  br i1 %made, label %drop, label %out
drop:
  call void {fn["decref"]}(ptr %arr)
  br label %out
out:
  ret ptr null
}}

"""


def _init():
    """Build the pool once per process; {function name: address, ...}."""
    if _pool:
        return _pool
    with _lock:
        if _pool:
            return _pool
        c = native_call._c_api()
        table = ctypes.c_void_p.from_address(c["table"] + 8 * _SET_HANDLER).value
        handler = _Handler()
        handler.name, handler.version = b"jitmagic", 1
        name = ctypes.create_string_buffer(b"mem_handler")
        new_capsule = ctypes.PYFUNCTYPE(
            ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
        )(("PyCapsule_New", ctypes.pythonapi))
        capsule = new_capsule(ctypes.addressof(handler), ctypes.addressof(name), None)
        api = {
            "incref": c["incref"],
            "decref": c["decref"],
            "new": c["new"],
            "set_handler": table,
            "capsule": id(capsule),
        }
        # LLVM's -O0 and fast instruction selection: 2-3 ms, where -O1 took 15-25 ms of a
        # process's first call (the code is a slot search under a lock, per large block); with
        # the disk cache on, linked from it
        fns = runtime.build(
            _ir(),
            (*_FUNCS, "jm_pool_state", "jm_pool_api"),
            "pool",
            link=("jm_tmp_alloc", "jm_tmp_free", "jm_new_array"),
            opt=(0, 0),
            persistent=True,
        )
        (ctypes.c_void_p * len(_API)).from_address(fns["jm_pool_api"])[:] = [api[k] for k in _API]
        st = _State.from_address(fns["jm_pool_state"])
        st.cap, st.min = config.buffer_pool_bytes, MIN_BYTES
        a = handler.allocator
        a.malloc, a.calloc = fns["jm_h_malloc"], fns["jm_h_calloc"]
        a.realloc, a.free = fns["jm_h_realloc"], fns["jm_h_free"]
        new_array = ctypes.PYFUNCTYPE(
            ctypes.py_object, ctypes.py_object, ctypes.py_object, ctypes.c_int32, ctypes.c_void_p
        )(fns["jm_new_array"])
        clear = ctypes.CFUNCTYPE(None)(fns["jm_pool_clear"])
        # never freed: NumPy calls the handler for the arrays it made, even at exit
        runtime.keep_forever(st, handler, name, capsule, new_array, clear)
        _pool.update(fns, state=st, capsule=capsule, new_array=new_array, clear=clear)
    return _pool


def install():
    """Make the temporaries' allocator known to LLVM (before linking a kernel that calls it)."""
    _init()


def new_array_address():
    """jm_new_array(type, descr, nd, dims) -> new reference, for native_call's entry."""
    return _init()["jm_new_array"]


def tmp_free_address():
    """jm_tmp_free(block), for Python code freeing a temporary the kernel handed it."""
    return _init()["jm_tmp_free"]


def pooled(nbytes) -> bool:
    return nbytes >= MIN_BYTES


def allocator(shape, dtype, array_type):
    """A function returning a new uninitialised pooled array_type of this shape and dtype."""
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    new, descr, nd, at = _init()["new_array"], np.dtype(dtype), len(shape), ctypes.addressof(dims)

    def new_pooled():
        return new(array_type, descr, nd, at)

    new_pooled.dims = dims  # alive with the function
    return new_pooled


def empty(shape, dtype, array_type):
    """A new uninitialised array_type; its data comes from the pool when large enough."""
    dtype = np.dtype(dtype)
    if math.prod(shape) * dtype.itemsize < MIN_BYTES:  # the common case: no conversions
        return array_type(shape, dtype)
    shape = tuple(int(n) for n in shape)
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    return _init()["new_array"](array_type, dtype, len(shape), ctypes.addressof(dims))


def set_limit(nbytes):
    """config.buffer_pool_bytes changed: apply it (0 turns the pool off) and trim."""
    if _pool:
        _pool["state"].cap = nbytes
        if _pool["state"].cached > nbytes:
            _pool["clear"]()


config.on_update("buffer_pool_bytes", set_limit)


def clear():
    """Free every block the pool keeps."""
    if _pool:
        _pool["clear"]()


def info() -> dict:
    """What the pool holds and how often it served a request."""
    if not _pool:
        return {
            "cached_bytes": 0,
            "blocks": 0,
            "hits": 0,
            "misses": 0,
            "kept": 0,
            "limit_bytes": None,
        }
    st = _pool["state"]
    return {
        "cached_bytes": st.cached,
        "blocks": sum(1 for p in st.ptrs if p),
        "hits": st.hits,
        "misses": st.misses,
        "kept": st.given,
        "limit_bytes": st.cap,
    }


def _after_fork_in_child():
    """A thread of the parent may have held the table's lock at the fork: the child's copy
    has no such thread, so the lock is free."""
    if _pool:
        _pool["state"].lock = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

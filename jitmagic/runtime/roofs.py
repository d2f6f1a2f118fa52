"""The machine's limits, measured once per machine: memory bandwidth and peak floating-point
throughput, the roofs a profiled region is compared with (dispatch/profile.py and
diagnostics/profile.py).

- Bandwidth: a STREAM-style triad, a[i] = b[i] + s * c[i] over float64 arrays, counted as
  STREAM counts it (24 bytes per element: two reads and a write; the write-allocate read a
  normal store also causes is not counted, as it is not counted for a profiled region either),
  on one thread and on all of the thread pool's, for arrays far larger than the last-level
  cache (`memory`) and for arrays that fit the L2 and the last-level cache (`l2`, `llc`).
- Peak: a loop of independent fused multiply-adds on the widest vectors the CPU has (16
  accumulators of 8 doubles on AVX-512), 2 flops per lane and FMA, on one thread and on all.

Each figure is the best of several runs (the machine may be shared: the best run is the one
least disturbed). The kernels are LLVM IR compiled for this CPU, the multi-threaded runs go
through the thread pool every parallel kernel uses. The result is kept as JSON next to the
persistent cache's entries (disk_cache_dir), under a name made from the host description the
cache keys use (CPU name and features), so another machine or CPU measures again; it is
measured when first asked for in a process that finds no such file (about a second).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import tempfile
import threading
import time

import numpy as np

from jitmagic.core.config import config
from jitmagic.runtime import diskcache, engine, threadpool
from jitmagic.runtime import native as runtime

FORMAT = 1
_REPEATS = 8
# the bandwidth and compute kernels: one pass (or `reps` passes) over [lo, hi) of each array;
# a task of the thread pool runs chunk i of a job described by 8-byte slots
_IR = """
declare void @jm_par(ptr, ptr, i64)
declare <{w} x double> @llvm.fma.v{w}f64(<{w} x double>, <{w} x double>, <{w} x double>)

define void @jm_roof_triad(ptr %a, ptr %b, ptr %c, double %s, i64 %lo, i64 %hi, i64 %reps) {{
entry:
  br label %rep
rep:
  %r = phi i64 [ 0, %entry ], [ %r1, %rep_end ]
  %rf = sitofp i64 %r to double
  %sr = fadd double %s, %rf
  br label %loop
loop:
  %i = phi i64 [ %lo, %rep ], [ %i1, %body ]
  %more = icmp slt i64 %i, %hi
  br i1 %more, label %body, label %rep_end
body:
  %pb = getelementptr inbounds double, ptr %b, i64 %i
  %pc = getelementptr inbounds double, ptr %c, i64 %i
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  %vb = load double, ptr %pb
  %vc = load double, ptr %pc
  %m = fmul double %sr, %vc
  %v = fadd double %vb, %m
  store double %v, ptr %pa
  %i1 = add nsw i64 %i, 1
  br label %loop
rep_end:
  %r1 = add i64 %r, 1
  %again = icmp slt i64 %r1, %reps
  br i1 %again, label %rep, label %done
done:
  ret void
}}

; slots: a, b, c, s, n, chunk, reps
define internal void @triad_task(ptr %arg, i64 %t) {{
entry:
  %a = load ptr, ptr %arg
  %p1 = getelementptr i64, ptr %arg, i64 1
  %b = load ptr, ptr %p1
  %p2 = getelementptr i64, ptr %arg, i64 2
  %c = load ptr, ptr %p2
  %p3 = getelementptr i64, ptr %arg, i64 3
  %s = load double, ptr %p3
  %p4 = getelementptr i64, ptr %arg, i64 4
  %n = load i64, ptr %p4
  %p5 = getelementptr i64, ptr %arg, i64 5
  %chunk = load i64, ptr %p5
  %p6 = getelementptr i64, ptr %arg, i64 6
  %reps = load i64, ptr %p6
  %lo = mul i64 %t, %chunk
  %hi0 = add i64 %lo, %chunk
  %over = icmp sgt i64 %hi0, %n
  %hi = select i1 %over, i64 %n, i64 %hi0
  call void @jm_roof_triad(ptr %a, ptr %b, ptr %c, double %s, i64 %lo, i64 %hi, i64 %reps)
  ret void
}}

define void @jm_roof_triad_par(ptr %arg, i64 %tasks) {{
entry:
  call void @jm_par(ptr @triad_task, ptr %arg, i64 %tasks)
  ret void
}}

define double @jm_roof_fma(i64 %n, double %x) {{
entry:
  %xi = insertelement <{w} x double> poison, double %x, i64 0
  %m = shufflevector <{w} x double> %xi, <{w} x double> poison, <{w} x i32> zeroinitializer
  %add = fmul <{w} x double> %m, %m
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
{phis}
{fmas}
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
{sums}
  %lane = extractelement <{w} x double> %s{last}, i64 0
  ret double %lane
}}

; slots: n, x, result per task
define internal void @fma_task(ptr %arg, i64 %t) {{
entry:
  %n = load i64, ptr %arg
  %p1 = getelementptr i64, ptr %arg, i64 1
  %x = load double, ptr %p1
  %r = call double @jm_roof_fma(i64 %n, double %x)
  %k = add i64 %t, 2
  %pr = getelementptr double, ptr %arg, i64 %k
  store double %r, ptr %pr
  ret void
}}

define void @jm_roof_fma_par(ptr %arg, i64 %tasks) {{
entry:
  call void @jm_par(ptr @fma_task, ptr %arg, i64 %tasks)
  ret void
}}
"""
_ACCUMULATORS = 16
_NAMES = ("jm_roof_triad", "jm_roof_triad_par", "jm_roof_fma", "jm_roof_fma_par")
_kernels = {}
_lock = threading.Lock()
_measured = {}


def vector_width():
    """Doubles in the widest vector register of this CPU."""
    features = engine.host_info()["features"]
    if "+avx512f" in features:
        return 8
    if "+avx" in features:
        return 4
    return 2


def _kernel_ir():
    w, k = vector_width(), _ACCUMULATORS
    v = f"<{w} x double>"
    phis = "\n".join(f"  %a{j} = phi {v} [ %m, %entry ], [ %f{j}, %loop ]" for j in range(k))
    fmas = "\n".join(
        f"  %f{j} = call {v} @llvm.fma.v{w}f64({v} %a{j}, {v} %m, {v} %add)" for j in range(k)
    )
    sums = [f"  %s0 = fadd {v} %f0, %f1"]
    sums += [f"  %s{j - 1} = fadd {v} %s{j - 2}, %f{j}" for j in range(2, k)]
    return _IR.format(w=w, phis=phis, fmas=fmas, sums="\n".join(sums), last=k - 2)


def _compiled():
    if not _kernels:
        with _lock:
            if not _kernels:
                threadpool.install()  # jm_par, known to LLVM by name
                _kernels.update(runtime.build(_kernel_ir(), _NAMES, "roofs", opt=(3, 3)))
    return _kernels


def cache_sizes():
    """(L2, last-level cache) in bytes, from sysfs (1 MiB and 8 MiB when it says nothing)."""
    sizes = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            if not entry.startswith("index"):
                continue
            with open(os.path.join(base, entry, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
            if kind == "Instruction":
                continue
            n = int(text.rstrip("KMG"))
            n <<= {"K": 10, "M": 20, "G": 30}.get(text[-1:], 0)
            sizes[level] = max(sizes.get(level, 0), n)
    except (OSError, ValueError):
        pass
    l2 = sizes.get(2, 1 << 20)
    return l2, max(sizes.get(max(sizes, default=2), 8 << 20), l2)


# ---------------------------------------------------------------- the measurements


def triad_gbs(n_elements, threads=1, min_seconds=0.02):
    """Best triad bandwidth (GB/s, 24 bytes per element) over arrays of n_elements doubles."""
    k = _compiled()
    a, b, c = (np.full(n_elements, 1.0) for _ in range(3))  # written: pages are mapped
    per_pass = 24 * n_elements
    reps = max(1, int(min_seconds * 20e9 / per_pass))
    best = 0.0
    if threads == 1:
        fn = ctypes.CFUNCTYPE(
            None, *([ctypes.c_void_p] * 3), ctypes.c_double, *([ctypes.c_int64] * 3)
        )(k["jm_roof_triad"])

        def run():
            fn(a.ctypes.data, b.ctypes.data, c.ctypes.data, 0.5, 0, n_elements, reps)
    else:
        chunk = -(-n_elements // threads)
        slots = (ctypes.c_int64 * 7)()
        for i, p in enumerate((a, b, c)):
            slots[i] = p.ctypes.data
        ctypes.c_double.from_buffer(slots, 3 * 8).value = 0.5
        slots[4], slots[5], slots[6] = n_elements, chunk, reps
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(k["jm_roof_triad_par"])

        def run():
            fn(ctypes.addressof(slots), threads)

    run()  # warm: the pool's workers awake, the arrays in whatever cache they fit
    for _ in range(_REPEATS):
        t0 = time.perf_counter()
        run()
        dt = time.perf_counter() - t0
        best = max(best, per_pass * reps / dt / 1e9)
    return best


def fma_gflops(threads=1, min_seconds=0.02):
    """Best float64 FMA throughput (GFLOP/s) on the widest vectors, on `threads` threads."""
    k = _compiled()
    flops_per_iter = 2 * _ACCUMULATORS * vector_width()
    n = max(1000, int(min_seconds * 50e9 / flops_per_iter))
    slots = (ctypes.c_double * (2 + max(threads, 1)))()
    ctypes.c_int64.from_buffer(slots, 0).value = n
    slots[1] = 1.0 - 1e-9
    if threads == 1:
        fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64, ctypes.c_double)(k["jm_roof_fma"])

        def run():
            fn(n, slots[1])
    else:
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(k["jm_roof_fma_par"])

        def run():
            fn(ctypes.addressof(slots), threads)

    run()
    best = 0.0
    for _ in range(_REPEATS):
        t0 = time.perf_counter()
        run()
        dt = time.perf_counter() - t0
        best = max(best, n * flops_per_iter * threads / dt / 1e9)
    return best


def measure() -> dict:
    """Every roof, measured now (about a second)."""
    t0 = time.perf_counter()
    l2, llc = cache_sizes()
    nthreads = threadpool.threads()
    # per array: a third of half the cache (the three arrays fit with room to spare), and for
    # memory twice the last-level cache, with 64 MiB at least
    sizes = {
        "l2": max(1024, l2 // 2 // 24),
        "llc": max(4096, llc // 2 // 24),
        "memory": max(2 * llc, 64 << 20) // 8,
    }
    bandwidth = {}
    for level, n in sizes.items():
        bandwidth[level] = {
            "1": triad_gbs(n, 1),
            # the L2 is per core: each thread gets arrays of that size
            "all": triad_gbs(n * (nthreads if level == "l2" else 1), nthreads),
        }
    peak = {"1": fma_gflops(1), "all": fma_gflops(nthreads)}
    info = engine.host_info()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "format": FORMAT,
        "load": load,  # the 1-minute load average while measuring: a busy machine gives less
        "cpu": info["cpu"],
        "threads": nthreads,
        "vector_doubles": vector_width(),
        "cache_bytes": {"l2": l2, "llc": llc},
        "bandwidth_gbs": bandwidth,
        "peak_gflops_f64": peak,
        "measured_at": time.time(),
        "seconds": round(time.perf_counter() - t0, 3),
    }


# ---------------------------------------------------------------- kept per machine


def host_key() -> str:
    """The host description the persistent cache keys its entries with, hashed."""
    info = engine.host_info()
    h = hashlib.sha256(
        "\0".join(
            (f"roofs={FORMAT}", info["cpu"], info["features"], f"threads={threadpool.threads()}")
        ).encode()
    )
    return h.hexdigest()[:16]


def path() -> str:
    directory = os.path.expanduser(config.disk_cache_dir or diskcache.default_dir())
    return os.path.join(directory, f"roofs-{host_key()}.json")


def get(remeasure=False) -> dict:
    """The roofs of this machine: from this process's memory, else from the file kept beside
    the persistent cache, else measured now (and kept). The dict says where it came from
    (`source`: "measured", "file", "memory")."""
    key = host_key()
    if not remeasure and key in _measured:
        return dict(_measured[key], source="memory")
    if not remeasure:
        kept = _load(path())
        if kept is not None:
            _measured[key] = kept
            return dict(kept, source="file")
    roofs = measure()
    _measured[key] = roofs
    _store(path(), roofs)
    return dict(roofs, source="measured")


def _load(p):
    """The kept roofs, if the file is a regular file of this user's in the expected format."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (st.st_uid == os.getuid() and (st.st_mode & 0o022) == 0 and st.st_size < 65536):
            return None  # someone else's figures are not this machine's for us
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    return data


def _store(p, roofs):
    """Atomically (a temporary file renamed into place); a failure to write is not an error:
    the roofs are measured again by the next process."""
    try:
        d = os.path.dirname(p)
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".roofs-", dir=d)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(roofs, f)
            os.replace(tmp, p)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass

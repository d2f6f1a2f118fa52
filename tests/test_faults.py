"""Faults leave the kernel usable (issue #28, part 4).

Each fault happens in a real Jupyter kernel (jupyter_client starts one ipykernel for the module,
with the jitmagic extension loaded): LLVM refusing the module of a compile, the full-tier
compiler process killed mid-compile, a full file system under the persistent cache, the buffer
pool far past its limit, a temporary that cannot be allocated, Ctrl-C in native loops (lax
loops, a parallel kernel, an njit loop and an njit prange loop). After each, the
kernel answers with its state kept (the module's session object and the test's own value),
the function's cache is consistent (its other variants serve calls, the next compile works)
and a record in jm.events() says what happened.
"""

from __future__ import annotations

import errno
import json
import os
import queue
import signal
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SETUP = textwrap.dedent("""
    %load_ext jitmagic
    import json, os, numpy as np, jitmagic as jm, jitmagic.numpy as jnp
    from jitmagic import lax
    from jitmagic.dispatch import pipeline, tiering
    from jitmagic.runtime import bufpool
    jm.config.update(live_notices=False, eager_baseline=False)
    session = object()

    def records(f, *kinds):
        return [dict(kind=e.kind, variant=e.variant, message=e.message,
                     timings=sorted(e.timings_ms))
                for e in jm.tracker.event_list(f) if not kinds or e.kind in kinds]

    def consistent(f):
        # every variant is the one its key finds (njit's: one of those its key finds), ids
        # are unique, and no hit table or native pattern refers to a variant not held
        st = f._state
        held = {k: e if isinstance(e, list) else [e] for k, e in st.cache.items()}
        live = {id(v) for e in held.values() for v in e}
        assert len(live) == len(f.variants)
        assert all(any(v is w for w in held[v.key]) for v in f.variants)
        assert len({v.id for v in f.variants}) == len(f.variants)
        assert all(id(getattr(v, "base", v)) in live for v in st.native.values())
        assert all(id(v) in live for v in st.quick.values())
        return [v.id for v in f.variants]

    def out(**values):
        print("RESULT " + json.dumps(values, default=str))
""")


class Kernel:
    """One ipykernel process and a blocking client of it."""

    def __init__(self, cwd):
        from jupyter_client.manager import start_new_kernel

        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.cwd = Path(cwd)
        self.km, self.kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(cwd))
        self.restarts = 0
        self.session_id = self.result(SETUP + "out(session=id(session))")["session"]

    def restart(self):
        """A new kernel process, after one that died or hangs (the test that saw it fails;
        the next ones get a working kernel)."""
        self.restarts += 1
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=60)
        self.session_id = self.result(SETUP + "out(session=id(session))")["session"]

    def execute(self, code, timeout=300):
        """(reply content, everything printed or raised). A kernel that dies meanwhile (a
        fault that crashed it) fails at once, and is restarted for the next test."""
        text = []
        # stop_on_error=False: a cell that raises (as these do) would make ipykernel drop the
        # requests already queued behind it, the next cell of the test among them
        msg_id = self.kc.execute(code, stop_on_error=False)
        end = time.monotonic() + timeout
        while True:
            try:
                m = self.kc.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                if not self.km.is_alive():
                    self.restart()
                    raise AssertionError(f"the kernel died running:\n{code}") from None
                if time.monotonic() > end:
                    raise AssertionError(f"no answer in {timeout} s to:\n{code}") from None
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind, c = m["msg_type"], m["content"]
            if kind == "stream":
                text.append(c["text"])
            elif kind == "error":
                text.append(f"{c['ename']}: {c['evalue']}\n")
            elif kind == "status" and c["execution_state"] == "idle":
                break
        while True:
            reply = self.kc.get_shell_msg(timeout=max(end - time.monotonic(), 1))
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], "".join(text)

    def run(self, code, timeout=300):
        content, text = self.execute(code, timeout)
        assert content["status"] == "ok", text
        return text

    def result(self, code, timeout=300):
        """The values the cell passed to out(...)."""
        text = self.run(code, timeout)
        lines = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
        assert lines, text
        return json.loads(lines[-1][len("RESULT ") :])

    def fails(self, code, timeout=300):
        """(exception name, its message) of a cell that must raise."""
        content, text = self.execute(code, timeout)
        assert content["status"] == "error", text
        return content["ename"], content["evalue"]

    def interrupt(self, code, after_s=1.0, timeout=60):
        """Run `code` (which must not end by itself), press Ctrl-C as Jupyter does once it
        has run for after_s, and return the name of the exception the cell ended with.
        The cell waits for the go-ahead after saying it started: code that holds the GIL (an
        njit loop) would keep the kernel's output thread from sending that message."""
        go = self.cwd / f"go-{uuid.uuid4().hex}"
        msg_id = self.kc.execute(
            "print('started', flush=True)\nimport os as _os, time as _time\n"
            f"while not _os.path.exists({str(go)!r}):\n    _time.sleep(0.01)\n" + code,
            stop_on_error=False,
        )
        end = time.monotonic() + timeout
        while True:  # the cell is running: its first line has printed
            m = self.kc.get_iopub_msg(timeout=max(end - time.monotonic(), 1))
            if (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "stream"
                and "started" in m["content"]["text"]
            ):
                break
        go.touch()
        time.sleep(after_s)
        self.km.interrupt_kernel()
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                reply = self.kc.get_shell_msg(timeout=max(end - time.monotonic(), 0.1))
            except queue.Empty:
                break
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"].get("ename")
        self.restart()
        raise AssertionError("Ctrl-C did not stop the cell: the kernel was restarted")

    def check_alive(self, name, token):
        """The kernel is the one started for this module, and still holds `name`."""
        got = self.result(f"out(session=id(session), value={name})")
        assert got == {"session": self.session_id, "value": token}

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = Kernel(tmp_path_factory.mktemp("kernel"))
    yield k
    k.close()


@pytest.fixture
def state(kernel, request):
    """A value of this test's in the kernel, checked after the test (with the session)."""
    name = "kept_" + request.node.name.split("[")[0][5:]
    token = uuid.uuid4().hex
    if not kernel.km.is_alive():  # an earlier test's fault killed it: that test failed
        kernel.restart()
    kernel.run(f"{name} = {token!r}")
    restarts = kernel.restarts
    yield
    if not kernel.km.is_alive():
        kernel.restart()
        pytest.fail("the kernel died")
    if kernel.restarts == restarts:  # (a restart during the test failed it already)
        kernel.check_alive(name, token)


# ---------------------------------------------------------------- LLVM refuses the module

# how the injected fault breaks the LLVM IR text of the next compile (pipeline.lower is the
# seam: the text goes to LLVM exactly as if the code generator had produced it)
BREAKS = {
    "unparsable": "text + '\\nthis is not LLVM IR\\n'",
    "rejected by the verifier": (
        "text + '\\ndefine i64 @jm_fault(i1 %c) {\\nentry:\\n  br i1 %c, label %a, label %b\\n"
        "a:\\n  %x = add i64 1, 2\\n  br label %b\\nb:\\n  ret i64 %x\\n}\\n'"
    ),
    # a call of a symbol nothing defines: MCJIT would link it as address 0, and the call crash
    "calls an undefined symbol": (
        "text.replace('\\nentry:\\n', '\\nentry:\\n  call void @jm_fault_no_such_symbol()\\n', 1)"
        " + '\\ndeclare void @jm_fault_no_such_symbol()\\n'"
    ),
    "loses its entry point": "text.replace('@\"jm_entry\"', '@\"jm_entry_renamed\"')",
}
SAYS = {
    "unparsable": "generated LLVM IR is invalid",
    "rejected by the verifier": "does not dominate all uses",
    "calls an undefined symbol": "jm_fault_no_such_symbol, which no loaded library defines",
    "loses its entry point": "entry point jm_entry not found",
}


@pytest.mark.parametrize("how", list(BREAKS))
def test_a_module_llvm_refuses_is_a_lowering_error_and_leaves_no_variant(kernel, state, how):
    k = list(BREAKS).index(how)  # (identical code would share one cache across the cases)
    kernel.run(
        textwrap.dedent(f"""
        def refused(x):
            return x * 2.0 + {k}.0

        refused = jm.jit(refused, shapes="static")
        refused(np.ones(3))
        real_lower = pipeline.lower

        def broken_lower(opt, name, strided=False):
            text, *rest = real_lower(opt, name, strided)
            return ({BREAKS[how]}, *rest)
    """)
    )
    kernel.run("pipeline.lower = broken_lower")
    try:
        ename, evalue = kernel.fails("refused(np.ones(5))")
    finally:
        kernel.run("pipeline.lower = real_lower")
    assert ename == "LoweringError"
    assert "refused: LLVM could not compile the code generated for it" in evalue
    assert SAYS[how] in evalue
    got = kernel.result(
        textwrap.dedent("""
        after_fault = consistent(refused)
        other = refused(np.ones(3)).tolist()          # the variant compiled before
        fixed = refused(np.ones(5)).tolist()          # compiles normally now
        out(after_fault=after_fault, variants=consistent(refused), other=other, fixed=fixed,
            records=records(refused, "compile", "miss", "error"))
    """)
    )
    assert got["after_fault"] == [1]  # nothing half-registered
    assert got["variants"] == [1, 2]
    assert got["other"] == [2.0 + k] * 3 and got["fixed"] == [2.0 + k] * 5
    kinds = [r["kind"] for r in got["records"]]
    assert kinds == ["compile", "error", "miss"], got["records"]
    assert "LoweringError: refused: LLVM could not compile" in got["records"][1]["message"]


# ---------------------------------------------------------------- the O3 worker dies


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_full_tier_compiler_killed_mid_compile_falls_back_and_restarts(kernel, state):
    # a module LLVM's O3 takes seconds over (about 2.5 s on one core: rows of static trip
    # counts it unrolls), so that the child is killed while it compiles
    kernel.run(
        textwrap.dedent("""
        saved = {k: v for k, v in jm.config.as_dict().items() if k != "watch"}
        tiering.settle()  # no earlier function's tier-up runs in the child meanwhile
        jm.config.update(tiered=True, tracking=True, tier_up_calls=10**9, tier_up_ms=1e9)

        def long_o3(x):
            for k in range(30):
                x = jnp.sin(x[::-1]) * 1.0001 + jnp.cumsum(x, axis=0)
            return x

        long_o3 = jm.jit(long_o3)
        small = jm.jit(lambda x: np.sqrt(x) + 1.0)
        xs, xl = np.arange(10.0), np.linspace(0.0, 1.0, 30).reshape(6, 5)
        want_small, want_long = small(xs), long_o3(xl)
        assert tiering.tier_up(small, small.variants[-1])   # the child is up, and idle
    """)
    )
    pid = kernel.result("out(pid=tiering._client.proc.pid)")["pid"]
    before = _cpu_seconds(pid)
    kernel.run("jm.config.update(tier_up_calls=2); long_o3(xl); long_o3(xl)")  # hot: tier-up
    end = time.monotonic() + 60
    while _cpu_seconds(pid) < before + 0.3:  # it has been compiling for a while
        assert time.monotonic() < end, "the tier-up never reached the child"
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    got = kernel.result(
        textwrap.dedent("""
        import time
        v = long_o3.variants[-1]
        end = time.monotonic() + 120
        while v.tier < 2 and v.tier_up_info is None and time.monotonic() < end:
            time.sleep(0.05)
        same = bool(np.array_equal(long_o3(xl), want_long))
        # the next tier-up starts a new child
        third = jm.jit(lambda x: np.exp(x) - 1.0)
        third(xs)
        assert tiering.tier_up(third, third.variants[-1])
        out(tier=v.tier, info=v.tier_up_info and sorted(v.tier_up_info), same=same,
            variants=consistent(long_o3), records=records(long_o3, "warning", "tier_up"),
            third=records(third, "tier_up")[-1], new_pid=tiering._client.proc.pid,
            alive=tiering._client.proc.poll() is None,
            third_ok=bool(np.allclose(third(xs), np.expm1(xs), rtol=1e-14)))
    """)
    )
    assert got["tier"] == 2 and got["same"] and got["variants"] == [1]
    kinds = [r["kind"] for r in got["records"]]
    assert kinds == ["warning", "tier_up"], got["records"]
    warning = got["records"][0]["message"]
    assert f"full-tier compiler process (pid {pid}) died mid-compile (killed by SIGKILL)" in (
        warning
    )
    assert "compiled at O3 in this process instead" in warning
    assert got["new_pid"] != pid and got["alive"] and got["third_ok"]
    assert "link" in got["third"]["timings"]  # compiled by the new child, linked here
    kernel.run("tiering.settle(); jm.config.update(**saved)")


# ---------------------------------------------------------------- a full disk


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs, mounted for the test (CI runs as root)."""
    mnt = tmp_path / "fs"
    mnt.mkdir(mode=0o700)
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if p.returncode:
        pytest.fail(
            f"mounting a small tmpfs needs root (CI runs as root): {p.stderr.strip()}",
            pytrace=False,
        )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(directory):
    """Write a file until the file system says it is full; its path."""
    path = directory / "filler"
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return path


def test_a_full_disk_under_the_persistent_cache_is_a_warning(kernel, state, small_fs):
    cache = small_fs / "cache"
    kernel.run(
        textwrap.dedent(f"""
        jm.config.update(disk_cache=True, disk_cache_dir={str(cache)!r})
        xd = np.arange(6.0)
        stored = jm.jit(lambda x: x + 3.0)
        stored(xd)
    """)
    )
    # (cache/runtime/ may hold jitmagic's own runtime modules, when this process compiled them)
    entries = sorted(p.name for p in cache.glob("*.jmc"))
    assert len(entries) == 1
    filler = _fill(small_fs)
    try:
        got = kernel.result(
            textwrap.dedent("""
            @jm.jit
            def full(x):
                return x * 7.0 - 1.0

            r = full(xd).tolist()
            stored.clear_cache()
            hit = stored(xd).tolist()                 # loads still work on a full disk
            out(r=r, hit=hit, records=records(full, "warning", "disk_miss", "disk_hit"),
                stored=records(stored, "disk_hit"), variants=consistent(full))
        """)
        )
        assert got["r"] == [7.0 * k - 1.0 for k in range(6)]
        assert got["hit"] == [k + 3.0 for k in range(6)] and len(got["stored"]) == 1
        assert [r["kind"] for r in got["records"]] == ["disk_miss", "warning"]
        warning = got["records"][1]["message"]
        assert "full: could not write the persistent cache in" in warning
        assert "No space left on device" in warning and "free space there" in warning
        # no partial entry left (the compile lock of the key, an empty file, may stay: the
        # next process to compile it takes the same lock)
        assert sorted(p.name for p in cache.glob("*.jmc")) == entries
        assert not list(cache.rglob(".tmp-*"))
        left = [p for p in cache.glob(".lock-*") if p.stat().st_size]
        assert not left, left
        log = small_fs.parent / "log.json"
        kernel.run(f"%jit_log full --json {log}")  # the view shows the record
        assert any("No space left on device" in e["message"] for e in json.loads(log.read_text()))
    finally:
        filler.unlink()
    got = kernel.result(
        textwrap.dedent("""
        full.clear_cache(); full(xd)      # stored now
        full.clear_cache(); again = full(xd).tolist()
        out(again=again, kinds=[r["kind"] for r in records(full, "disk_miss", "disk_hit")])
        jm.config.update(disk_cache=False)
    """)
    )
    assert got["again"] == [7.0 * k - 1.0 for k in range(6)]
    assert got["kinds"] == ["disk_miss", "disk_miss", "disk_hit"]
    assert len(list(cache.glob("*.jmc"))) == 2 and not list(cache.rglob(".tmp-*"))


# ---------------------------------------------------------------- the buffer pool


def test_results_held_far_past_the_pool_limit_stay_right_and_the_rest_is_freed(kernel, state):
    got = kernel.result(
        textwrap.dedent("""
        import ctypes, gc
        def rss_mib():
            gc.collect(); ctypes.CDLL("libc.so.6").malloc_trim(0)
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        jm.config.update(buffer_pool_bytes=8 << 20)
        bufpool.clear()
        scale = jm.jit(lambda x, s: x * s)
        xp = np.arange(1 << 19, dtype=np.float64)            # 4 MiB per result
        base = rss_mib()
        held = [scale(xp, float(k)) for k in range(40)]       # 160 MiB: 20 times the limit
        right = all(np.array_equal(h, xp * k) for k, h in enumerate(held))
        distinct = len({h.ctypes.data for h in held})
        peak = rss_mib() - base
        del held
        after = rss_mib() - base
        info = bufpool.info()
        again = all(np.array_equal(scale(xp, 2.5), xp * 2.5) for _ in range(5))
        out(right=right, distinct=distinct, peak=peak, after=after, info=info, again=again,
            variants=consistent(scale))
    """)
    )
    assert got["right"] and got["again"] and got["distinct"] == 40
    assert got["peak"] > 120, got  # they were all resident at once
    assert got["info"]["cached_bytes"] <= 8 << 20 and got["info"]["limit_bytes"] == 8 << 20
    assert got["after"] < 8 + 24, got  # the pool keeps its limit, the rest went back
    assert got["variants"] == [1]
    kernel.run("jm.config.update(buffer_pool_bytes=256 << 20)")


@pytest.mark.parametrize("k, n", [(1, 2**24), (2, 2**32)], ids=["2^51 bytes", "2^67 bytes"])
def test_a_temporary_that_cannot_be_allocated_raises_memory_error_and_frees_the_rest(
    kernel, state, k, n
):
    # the first temporary (a cumulative sum of `a`, 32 MiB) is allocated, the second (one of
    # the n*n broadcast product) cannot be: 2^51 bytes, or 2^67 bytes that wrap around 64 bits
    kernel.run(
        textwrap.dedent(f"""
        def two_temps(a, b, c):
            return jnp.cumsum(a)[-1] + jnp.cumsum((b * c).ravel())[-1] * {k}.0

        two_temps = jm.jit(two_temps, shapes="dynamic")
        a = np.ones(1 << 22)
        assert two_temps(a, np.ones((3, 1)), np.ones((1, 4))) == 12.0 * {k} + (1 << 22)
        b = np.broadcast_to(np.ones(1), ({n}, 1))
        c = np.broadcast_to(np.ones(1), (1, {n}))
        pool0 = bufpool.info()
    """)
    )
    for _ in range(2):  # the Python hit path, then (after a few hits) the native entry
        ename, evalue = kernel.fails(
            "for _ in range(4):\n"
            "    try:\n"
            "        two_temps(a, b, c)\n"
            "    except MemoryError:\n"
            "        pass\n"
            "two_temps(a, b, c)"
        )
        assert ename == "MemoryError" and "could not allocate a temporary buffer" in evalue
    got = kernel.result(
        textwrap.dedent(f"""
        pool1 = bufpool.info()
        ok = two_temps(a, np.ones((5, 1)), np.ones((1, 7))) == 35.0 * {k} + (1 << 22)
        out(pool0=pool0, pool1=pool1, ok=bool(ok), variants=consistent(two_temps),
            records=records(two_temps, "error"))
    """)
    )
    p0, p1 = got["pool0"], got["pool1"]
    # each of the 10 calls took the 32 MiB block from the pool and gave it back when it failed
    assert p1["hits"] - p0["hits"] >= 10 and p1["kept"] - p0["kept"] >= 10, got
    assert p1["blocks"] == p0["blocks"] and p1["cached_bytes"] == p0["cached_bytes"]
    assert got["ok"] and got["variants"] == [1]
    assert len(got["records"]) == 10
    assert all(
        "two_temps" in r["message"] and "could not allocate a temporary buffer" in r["message"]
        for r in got["records"]
    )


# ---------------------------------------------------------------- Ctrl-C

# (definition of `spin`, a call that runs until interrupted, a call that returns, its value)
INTERRUPTIBLE = [
    pytest.param(
        "spin = jm.jit(lambda n: lax.fori_loop(0, n, lambda i, c: c + 1.0, 0.0))",
        "spin(2**62)",
        "spin(1000)",
        1000.0,
        id="lax.fori_loop",
    ),
    pytest.param(
        "spin = jm.jit(lambda x: lax.while_loop(lambda c: c > -1.0, lambda c: c + 1.0, x))",
        "spin(0.0)",
        "spin(-5.0)",
        -5.0,
        id="lax.while_loop",
    ),
    # a kernel split over the thread pool (its parts poll Ctrl-C too), generic in its length:
    # a stride-0 view of 2^50 elements runs for days; the same variant serves the real call
    pytest.param(
        "spin = jm.jit(lambda x: (jnp.sin(x) * 2.0).sum(), shapes='dynamic')\n"
        "spin(np.full(2**20, 0.5))\n"
        "assert 'jm_par' in spin.variants[-1].module.llvm_ir  # it runs on the pool",
        "spin(np.broadcast_to(np.float64(0.5), (2**50,)))",
        "float(round(spin(np.full(2**20, 0.5)) / (2 * np.sin(0.5) * 2**20), 12))",
        1.0,
        id="parallel-kernel",
    ),
    pytest.param(
        "@jm.njit\n"
        "def spin(n):\n"
        "    s = 0.0\n"
        "    for i in range(n):\n"
        "        s += 1.0\n"
        "    return s",
        "spin(2**62)",
        "spin(1000)",
        1000.0,
        id="njit-loop",
    ),
    pytest.param(
        "from jitmagic.numba import prange\n"
        "@jm.njit(parallel=True)\n"
        "def spin(n):\n"
        "    s = 0.0\n"
        "    for i in prange(n):\n"
        "        s += 1.0\n"
        "    return s",
        "spin(2**62)",
        "spin(1000)",
        1000.0,
        id="njit-prange",
    ),
]


@pytest.mark.parametrize("define, forever, call, value", INTERRUPTIBLE)
def test_ctrl_c_in_a_native_loop_leaves_the_kernel_usable(
    kernel, state, define, forever, call, value
):
    kernel.run(define + f"\nassert {call} == {value!r}")
    ids = kernel.result("out(ids=consistent(spin))")["ids"]
    # first on the Python hit path, then on the native entry point (built after a few hits)
    for warm in (0, 10):
        kernel.run(f"for _ in range({warm}):\n    {call}")
        t0 = time.monotonic()
        assert kernel.interrupt(forever) == "KeyboardInterrupt"
        assert time.monotonic() - t0 < 30  # stopped, not finished
    got = kernel.result(
        f"out(value=float({call}), ids=consistent(spin), records=records(spin, 'interrupt'))"
    )
    assert got["value"] == value and got["ids"] == ids
    assert len(got["records"]) == 2, got["records"]
    assert all(
        r["variant"] in ids and "was interrupted (KeyboardInterrupt)" in r["message"]
        for r in got["records"]
    )


def test_ctrl_c_reaches_native_code_in_every_cell_not_only_the_compiling_one(kernel, state):
    # ipykernel puts Python's own SIGINT handler back before each cell: jitmagic's must be
    # put in front again, or a loop compiled in an earlier cell ignores Ctrl-C
    kernel.run(
        "forever = jm.jit(lambda x: lax.while_loop(lambda c: c > -2.0, lambda c: c + 2.0, x))"
    )
    kernel.run("forever(-3.0)")
    for _ in range(3):  # three later cells, none compiling
        assert kernel.interrupt("forever(0.0)", after_s=0.5) == "KeyboardInterrupt"

"""Profiles (f.profile, %jit_profile): the instrumented twin, the figures counted from the IR,
the roofs, the verdicts, and that profiling leaves the variant alone.

Timing assertions run on a machine shared with other work (2 cores, other processes): each
compares two measurements taken in turns, and takes the best of a few attempts (five), so a burst
of load during one attempt does not decide the outcome, while a systematic error (a region timed
wrongly, code outside every region, a wrong roof) still fails every attempt.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import jitmagic as jm
from jitmagic import lax
from jitmagic.diagnostics import profile as profiles
from jitmagic.diagnostics import tracker
from jitmagic.runtime import roofs, runstats


@pytest.fixture(scope="module", autouse=True)
def _quick_profiles(tmp_path_factory):
    """Short profiles, and the roofs kept in a directory of this test module's (measured once
    here, never written to the user's cache)."""
    saved = {k: getattr(jm.config, k) for k in ("profile_budget_s", "disk_cache_dir")}
    jm.config.update(
        profile_budget_s=0.3, disk_cache_dir=str(tmp_path_factory.mktemp("jitmagic-cache"))
    )
    yield
    jm.config.update(**saved)


def _kernel_rows(p):
    return [r for r in p.rows if r.index >= 0 and r.eqns]


# ---------------------------------------------------------------- the figures add up


@pytest.mark.parametrize("library", ["jitmagic", "openblas"])
def test_regions_add_up_to_the_instrumented_kernel_time(library):
    # the product's row names the library the variant calls; which one a large product gets
    # is measured per machine (runtime/gemm_choice.py), so each is pinned here in turn
    jm.config.update(gemm_library=library)

    @jm.jit
    def f(x, y):
        a = np.sin(x) * y  # a fused loop nest
        b = (a * a).sum(axis=1)  # a reduction
        c = a @ y.T  # a GEMM
        return a + 1.0, b, c

    x, y = np.random.rand(400, 300), np.random.rand(400, 300)
    p = f.profile(x, y).profile
    kernel_regions = sum(r.time_us for r in p.rows if r.index >= 0)
    assert kernel_regions == pytest.approx(p.twin_kernel_us, rel=0.10)
    kinds = [r.name for r in _kernel_rows(p)]
    assert any("sin" in k for k in kinds)
    assert any("reduce_sum" in k for k in kinds)
    gemm = next(r for r in _kernel_rows(p) if r.prim == "dot_general")
    assert ("jm_gemm_f64" if library == "jitmagic" else "OpenBLAS") in gemm.library
    # shares of the call: the call's own rows and the regions make up all of it, but for the
    # clock reads between regions
    assert sum(r.share for r in p.rows) == pytest.approx(1.0, abs=0.02)


def test_instrumented_call_is_close_to_the_normal_one():
    @jm.jit
    def g(x):
        return np.exp(-x * x) * 3.0 + x

    x = np.random.rand(1 << 20)
    # the least disturbed of up to 15 profiles decides (a loaded machine disturbs some; a
    # twin that is really slower is slower in every one)
    best = np.inf
    for _ in range(15):
        best = min(best, abs(np.log(g.profile(x).profile.perturbation)))
        if np.exp(best) < 1.3:
            break
    assert np.exp(best) < 1.3


def test_a_perturbed_run_says_so():
    @jm.jit
    def tiny(x):
        return x + 1.0

    p = tiny.profile(np.ones(4)).profile
    said = any("perturbed" in n for n in p.notes)
    assert said == (p.perturbation > 1.3 or p.perturbation < 1 / 1.3)


# ---------------------------------------------------------------- regions against the same code alone


def _poly(c):
    # eight independent Horner chains per element: enough work in flight for the FMA units
    acc = 0.0
    for j in range(8):
        q = c * (1.0 + 0.01 * j)
        for _ in range(12):
            q = q * c + 0.5
        acc = acc + q
    return acc


def _kernel_us(f, *args, batches=11, per=10):
    """The kernel time of f alone, as a profile takes its figures: the mean kernel time per
    call of `batches` batches of `per` calls, averaged over the quieter half of the batches."""
    f(*args)
    v = f.variants[-1]
    ts = []
    for _ in range(batches):
        k0 = v.total_ns
        for _ in range(per):
            f(*args)
        ts.append((v.total_ns - k0) / per)
    ts.sort()
    half = ts[: (len(ts) + 1) // 2]
    return sum(half) / len(half) / 1e3


@pytest.fixture
def _one_tier():
    """Every variant compiled at O3: the code timed alone gets hot and would be re-optimised,
    the profiled one (whose timed calls are not counted as the user's) would not."""
    jm.config.update(tiered=False)
    yield
    jm.config.update(tiered=True)


def test_region_times_match_the_same_code_timed_alone_and_the_bounds_are_right(_one_tier):
    @jm.jit
    def two(a, b, c):
        t = a + 2.5 * b  # a triad: memory-bound
        p = _poly(c)  # 200 flops per element: compute-bound
        return t, p

    triad = jm.jit(lambda a, b: a + 2.5 * b)
    poly = jm.jit(_poly)
    # 1 MB per array: one thread per region (a kernel this size is not split), its data in
    # the last-level cache
    n = 1 << 17
    a, b, c = (np.random.rand(n) for _ in range(3))
    ratios_triad, ratios_poly, verdicts = [], [], []
    for k in range(12):  # in turns: a profile, then each region's code alone, right after it
        p = two.profile(a, b, c).profile
        rt, rp = _kernel_rows(p)
        assert "2.5" in "".join(rt.eqns) and rt.fused_lines != rp.fused_lines
        verdicts.append((rt.bound, rp.bound, rp.share > rt.share))
        ratios_triad.append(rt.time_us / _kernel_us(triad, a, b))
        ratios_poly.append(rp.time_us / _kernel_us(poly, c))
        if k >= 4 and all(  # (more turns only while other work disturbs every pair)
            abs(np.log(min(r, key=lambda v: abs(np.log(v))))) < np.log(1.25)
            for r in (ratios_triad, ratios_poly)
        ):
            break
    # each pair was measured back to back: the one least disturbed by other work decides
    assert min(ratios_triad, key=lambda r: abs(np.log(r))) == pytest.approx(1.0, rel=0.25)
    assert min(ratios_poly, key=lambda r: abs(np.log(r))) == pytest.approx(1.0, rel=0.25)
    assert ("memory", "compute", True) in verdicts
    # the counts behind the verdicts, from the IR: a triad moves 24 bytes and does 2 flops an
    # element; the polynomial 8 chains of 1 + 12 * 2 flops, plus 8 adds
    assert rt.bytes_read == 16 * n and rt.bytes_written == 8 * n and rt.flops == 2 * n
    assert rp.flops == (8 * 25 + 8) * n
    assert rt.intensity < 1 < rp.intensity


# ---------------------------------------------------------------- the roofs


def test_bandwidth_roof_agrees_with_numpy_copy():
    """The triad's bandwidth (24 bytes an element, as STREAM) against np.copyto's (16), on one
    thread each, for arrays far larger than the last-level cache, measured in turns.

    The two count bytes differently: the triad's stores read each line first (write-allocate,
    32 bytes moved for 24 counted), memcpy's large copies do not (non-temporal stores). So
    they agree within that factor, not better: a triad at 0.75x of the copy is a true reading
    (seen under load). A wrong roof is off by more: a miscounted stream (1.5x), a measure of
    arrays the cache holds (2x and more)."""
    _, llc = roofs.cache_sizes()
    n = max(2 * llc, 64 << 20) // 8
    src, dst = np.random.rand(n), np.empty(n)
    triad, copy = [], []

    def agree():
        return 0.7 <= max(triad) / max(copy) <= 1.3

    # in turns, until the best of each agree or 12 turns are done (other work on the machine
    # slows either in some turns; a wrong roof disagrees in all of them)
    for _ in range(12):
        triad.append(roofs.triad_gbs(n, 1))
        best = 0.0
        for _ in range(5):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            best = max(best, 16 * n / (time.perf_counter() - t0) / 1e9)
        copy.append(best)
        if len(triad) >= 4 and agree():
            break
    assert agree(), (max(triad), max(copy))


def test_roofs_are_measured_once_and_kept_beside_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(roofs, "_measured", {})
    calls = []
    real = roofs.measure

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(roofs, "measure", counting)
    jm.config.update(disk_cache_dir=str(tmp_path))
    try:
        first = roofs.get()
        assert first["source"] == "measured" and len(calls) == 1
        path = roofs.path()
        assert os.path.dirname(path) == str(tmp_path) and os.path.exists(path)
        assert roofs.get()["source"] == "memory"
        monkeypatch.setattr(roofs, "_measured", {})
        again = roofs.get()  # a new process: from the file, not measured
        assert again["source"] == "file" and len(calls) == 1
        assert again["bandwidth_gbs"] == first["bandwidth_gbs"]
        for level in ("l2", "llc", "memory"):
            assert first["bandwidth_gbs"][level]["1"] > 0
        assert first["bandwidth_gbs"]["l2"]["1"] > first["bandwidth_gbs"]["memory"]["1"]
        assert first["peak_gflops_f64"]["1"] > 0
        # someone else could have written a file others may write: not believed
        os.chmod(path, 0o666)
        monkeypatch.setattr(roofs, "_measured", {})
        assert roofs.get()["source"] == "measured" and len(calls) == 2
    finally:
        jm.config.update(disk_cache_dir=str(tmp_path.parent))


# ---------------------------------------------------------------- profiling changes nothing


def test_profiling_leaves_results_cache_statistics_and_events_alone():
    @jm.jit
    def h(x, k):
        return lax.fori_loop(0, k, lambda i, v: v * 0.5 + x, x) + np.cos(x)

    x = np.random.rand(50_000)
    before = h(x, 5)
    h(x, 5)
    jf_variants = list(h.variants)
    (v,) = jf_variants
    counters, fast, module = bytes(v.counters), v.fast, v.module
    seq = tracker.event_list()[-1].seq
    p = h.profile(x, 5).profile
    assert [e.kind for e in tracker.event_list() if e.seq > seq] == ["profile"]
    assert bytes(v.counters) == counters  # not one call counted as the user's
    assert v.fast is fast and v.module is module and h.variants == jf_variants
    np.testing.assert_array_equal(h(x, 5), before)
    assert v.calls == runstats_calls(counters) + 1
    loop = next(r for r in _kernel_rows(p) if r.prim == "fori_loop")
    assert loop.iterations == 5 and loop.per_iteration_us == pytest.approx(loop.time_us / 5)
    assert v.profile_twin.variant is not v and v.profile_twin.variant.module is not v.module


def test_a_strided_input_is_profiled_on_a_contiguous_copy():
    @jm.jit
    def strided(x):
        return x * 2.0 + 1.0

    x = np.random.rand(20_000)[::2]
    strided(x)
    (v,) = strided.variants
    counters = bytes(v.counters)
    p = strided.profile(x).profile
    assert bytes(v.counters) == counters
    assert p.kernel_us > 0 and any("not C-contiguous" in n for n in p.notes)
    (r,) = _kernel_rows(p)
    assert r.elements == 10_000


def runstats_calls(raw):
    return int.from_bytes(raw[runstats.CALLS * 8 : runstats.CALLS * 8 + 8], "little", signed=True)


def test_a_call_without_a_variant_is_compiled_first_and_says_so():
    @jm.jit
    def fresh(x):
        return x * 3.0

    seq = tracker.event_list()[-1].seq if tracker.event_list() else 0
    p = fresh.profile(np.ones(1000)).profile
    kinds = [e.kind for e in tracker.event_list() if e.seq > seq and e.function == "fresh"]
    assert kinds == ["compile", "profile"]
    assert p.compiled_now and any("compiled first" in n for n in p.notes)
    compile_ms = fresh.variants[0].compile_ms
    assert p.call_us < compile_ms * 1e3 / 10  # the compile is not in the figures


def test_a_profile_with_tracking_off_still_times_the_kernel():
    @jm.jit
    def untracked(x):
        return np.exp(x) - 1.0

    x = np.random.rand(100_000)
    jm.config.update(tracking=False)
    try:
        untracked(x)
        (v,) = untracked.variants
        p = untracked.profile(x).profile
        assert p.kernel_us > 0 and p.twin_kernel_us > 0
        assert v.calls == 0  # the user's statistics stay off
        untracked(x)
        assert v.calls == 0
    finally:
        jm.config.update(tracking=True)


def test_while_loop_iterations_are_counted():
    @jm.jit
    def collatz(n):
        def body(c):
            k, steps = c
            return jm.numpy.where(k % 2 == 0, k // 2, 3 * k + 1), steps + 1

        return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))[1]

    n = np.int64(27)
    p = collatz.profile(n).profile
    loop = next(r for r in _kernel_rows(p) if r.prim == "while_loop")
    assert loop.iterations == int(collatz(n)) == 111
    assert loop.bound in ("serial dependence", "overhead")


def test_flops_and_bytes_are_counted_from_the_ir():
    @jm.jit
    def k(x, y, z, m):
        w = x * y + z  # 2 flops an element; reads 3 arrays, writes 1
        return w, m @ m  # 2 n^3

    n = 1000
    x, y, z = (np.random.rand(n) for _ in range(3))
    m = np.random.rand(64, 64)
    p = k.profile(x, y, z, m).profile
    loop = next(r for r in _kernel_rows(p) if r.prim == "add")
    assert (loop.flops, loop.bytes_read, loop.bytes_written) == (2 * n, 24 * n, 8 * n)
    assert loop.elements == n
    gemm = next(r for r in _kernel_rows(p) if r.prim == "dot_general")
    assert gemm.flops == 2 * 64**3
    assert gemm.bytes_read == 64 * 64 * 8  # one operand, read twice: counted once
    assert gemm.gflops == pytest.approx(gemm.flops / gemm.time_us / 1e3)


def test_source_lines_helpers_and_nested_jit():
    def helper(v):
        return np.tanh(v) * 2.0

    @jm.jit
    def inner(v):
        return v + 1.0

    @jm.jit
    def outer(x):
        a = helper(x)
        b = inner(a)
        return b.sum()

    p = outer.profile(np.random.rand(10_000)).profile
    lines = {n: p.source[n - p.source_start].strip() for n in p.line_share}
    assert set(lines.values()) <= {"a = helper(x)", "b = inner(a)", "return b.sum()"}
    via = " ".join(v for r in p.rows for v in r.via)
    assert "in helper: return np.tanh(v) * 2.0" in via and "in inner: return v + 1.0" in via
    assert sum(p.line_share.values()) == pytest.approx(
        sum(r.share for r in _kernel_rows(p)), rel=1e-6
    )


def test_shape_generic_variant_is_profiled_at_the_call_sizes():
    @jm.jit(shapes="dynamic")
    def gen(x):
        return x * x + 1.0

    x = np.random.rand(3000)
    gen(x)
    assert gen.variants[0].generic is not None
    p = gen.profile(x).profile
    (r,) = _kernel_rows(p)
    assert r.elements == 3000 and r.flops == 6000 and r.bytes_written == 8 * 3000


def test_small_inputs_are_overhead_and_the_profile_says_why():
    @jm.jit
    def small(x, y):
        return x * 2.0 + y

    x, y = np.ones(8), np.ones(8)
    small(x, y)
    small.cache_info()  # measures the NumPy baseline: the profile compares with it
    p = small.profile(x, y).profile
    assert p.overhead_dominated
    own = {r.kind: r for r in p.rows if r.index < 0}
    assert own["dispatch"].time_us > 0 and own["allocation"].time_us > 0
    assert "dispatch" in p.summary and "allocation" in p.summary and "NumPy takes" in p.summary
    assert p.eager_us is not None


def test_watched_functions_are_not_profiled():
    import jax  # deferred: only this test needs it (and a missing JAX fails it)

    w = jm.watch(jax.jit(lambda x: x * 2))
    with pytest.raises(NotImplementedError, match="not available for jax"):
        w.profile(np.ones(3))


# ---------------------------------------------------------------- the views


def test_annotated_source_html_and_text():
    @jm.jit
    def shown(x):
        y = np.sqrt(x) + 1.0
        z = (y * y).sum()
        return z

    df = shown.profile(np.random.rand(100_000))
    p = df.profile
    assert list(df.columns) == profiles.COLUMNS and len(df) == len(p.rows)
    assert any(": y = np.sqrt(x) + 1.0" in s for s in df["source"])
    html = df._repr_html_()
    for line in ("y = np.sqrt(x) + 1.0", "z = (y * y).sum()"):
        assert line in html
    assert "title='region [" in html and "GB/s" in html and "rgba(" in html
    text = repr(df)
    assert "y = np.sqrt(x) + 1.0" in text and "█" in text and "bound" not in text.split("\n")[0]
    shares = {n: s for n, s in p.line_share.items()}
    top = max(shares, key=shares.get)
    assert f"{shares[top]:6.1%}" in text
    # a derived frame is a plain DataFrame
    assert type(df[df["share"] > 0]).__name__ == "DataFrame"


def test_roofline_figure_and_dashboard_data():
    from jitmagic.notebook import dashboard

    @jm.jit
    def rl(x):
        return np.sin(x) * x

    p = rl.profile(np.random.rand(200_000)).profile
    data = dashboard.roofline_data([p])
    assert data["points"] and data["roofs"]["memory"] and data["roofs"]["peak"]
    pt = data["points"][0]
    assert pt["function"] == "rl" and pt["gflops"] > 0 and pt["verdict"]
    fig = dashboard.figure(dashboard.cache_table([rl]), tracker.events(), (), profiles=[p])
    assert any("Roofline" in ax.get_title(loc="left") for ax in fig.axes)


def test_importing_jitmagic_leaves_the_views_heavy_modules_unloaded():
    """Profiles are registered when jitmagic loads; pandas and matplotlib wait for a view."""
    import subprocess
    import sys

    code = (
        "import sys, jitmagic\n"
        "print([m for m in ('pandas', 'matplotlib', 'IPython') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(jm.__file__))},
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

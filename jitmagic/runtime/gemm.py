"""jitmagic's own matrix product for float32/float64: packed, blocked, register-tiled.

Why not OpenBLAS, which NumPy ships: on this machine's CPU (AMD Zen 5, 512-bit FMA units)
its best kernels (SkylakeX) reach 90 GFLOP/s per core at 1024 x 1024 x 1024, where XLA's
reach 108; and two threads of it either stall each other at their per-block barrier when
the cores are shared, or (as slabs of single-threaded calls) pack the shared operand once per
slab. Measured in benchmarks/README.md (issue 17, GEMM).

The loop order is the usual one for packed GEMM (Goto's, as in BLIS): for each block of
KC rows by NC columns of op(B), that block is packed once into NR-column strips (in
parallel, shared by every thread); then each task takes a range of rows of C, packs KC
columns of op(A) into MR-row strips (MC rows at a time, its own buffer), and runs the
micro-kernel, which keeps an MR x NR tile of C in vector registers for the whole KC-long
dot product. Edge tiles go through a tile on the stack, element by element, so nothing outside
C's m x n elements is read or written; packed strips are padded with zeros.

One process-lifetime module (runtime/native.py) serves every kernel: `jm_gemm_f64` and
`jm_gemm_f32`, batched, with strides, choosing threads at run time (so one entry point serves
shape-generic variants too). C = op(A) op(B), alpha 1, beta 0.
"""

from __future__ import annotations

import ctypes
import os

from jitmagic.core import forksafe
from jitmagic.runtime import bufpool, engine, isa, threadpool
from jitmagic.runtime import llvmtypes as _llvmtypes
from jitmagic.runtime import native as runtime

# multiply-adds in all below which a call runs on one thread (a task of the pool costs a few
# microseconds; ~0.02 ms of work on one core)
PAR_MIN = 1 << 21
# block sizes of the AVX-512 tile (in elements of the dtype: shared dimension, rows of C,
# columns of C), for a 1 MB L2 and a 32 MB L3: KC 128-1024 x MC 64-384 ran within 5% of each
# other there, larger KC faster (benchmarks/README.md, session 5); other tiles: _blocks
KC, MC, NC = 512, 192, 3072
# tasks per thread and block: 2, 4 and 8 ran within noise of each other on idle cores (1024:
# 10.4-10.8 ms); more tasks leave less undone when the scheduler parks a thread mid-task (the
# caller waits only for tasks another thread has started)
TASKS_PER_THREAD = 4

_lock = forksafe.lock()
_built = {}


def _shape(features: str):
    """(vector bytes, MR, vectors per row of a tile): MR x (NV vectors) accumulators must fit
    the register file with room for the operands."""
    if isa.has(features, "avx512f"):
        return 64, 8, 3  # 24 of 32 zmm registers hold C
    if isa.has(features, "avx"):
        return 32, 6, 2  # 12 of 16 ymm
    return 16, 4, 2


def _caches() -> tuple[int, int]:
    """(L1 data, L2) bytes of one core, from Linux's description of CPU 0's caches; those of
    an AVX2 server core (AMD Zen 2/3: 32 KB, 512 KB) where it cannot be read."""
    l1, l2 = 32 << 10, 512 << 10
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        names = [d for d in os.listdir(base) if d.startswith("index")]
    except OSError:
        return l1, l2
    for d in names:
        try:
            level, kind, size = (_read(os.path.join(base, d, f)) for f in ("level", "type", "size"))
            n = int(size.rstrip("KMG")) << {"K": 10, "M": 20, "G": 30}.get(size[-1:], 0)
        except (OSError, ValueError):
            continue
        if (level, kind) == ("1", "Data"):
            l1 = n
        elif (level, kind) == ("2", "Unified"):
            l2 = n
    return l1, l2


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _blocks(features: str, size: int, mr: int, nr: int) -> tuple[int, int, int]:
    """(KC, MC, NC) for a tile of MR x NR values of `size` bytes. AVX-512: measured (KC, MC,
    NC above). Narrower tiles, by the usual analytical model (as in BLIS): a KC x NR strip of
    packed B fills about half of L1 (it is read once per MR rows of A), an MC x KC block of
    packed A half of L2. On this machine's Zen 5 core (48 KB, 1 MB) that is KC 384 and MC 168
    (float64) or 336 (float32); on a Zen 2/3 core (32 KB, 512 KB), 256 and 126 or 252."""
    if isa.has(features, "avx512f"):
        return KC, MC, NC
    l1, l2 = _caches()
    kc = max(128, min(512, l1 // 2 // (nr * size) // 8 * 8))
    mc = max(mr, min(384, l2 // 2 // (kc * size) // mr * mr))
    return kc, mc, NC


class _Fn:
    """A function body in LLVM IR text; loop counters live in entry-block allocas, which the
    pass pipeline turns into registers."""

    def __init__(self, t):
        self.t, self.lines, self.allocas, self.n = t, [], [], 0

    def __call__(self, s):
        self.lines.append("  " + s)

    def op(self, s):
        self.n += 1
        self(f"%t{self.n} = {s}")
        return f"%t{self.n}"

    def label(self, base):
        self.n += 1
        return f"{base}{self.n}"

    def block(self, name):
        self.lines.append(f"{name}:")

    def min(self, a, b):
        c = self.op(f"icmp slt i64 {a}, {b}")
        return self.op(f"select i1 {c}, i64 {a}, i64 {b}")

    def mul(self, a, b):
        return self.op(f"mul i64 {a}, {b}")

    def add(self, a, b):
        return self.op(f"add i64 {a}, {b}")

    def ceil_div(self, a, b):
        """a / b rounded up (a >= 0, b > 0); b an SSA value or a constant."""
        b1 = b - 1 if isinstance(b, int) else self.op(f"sub i64 {b}, 1")
        return self.op(f"udiv i64 {self.add(a, b1)}, {b}")

    def at(self, p, off, t=None):
        return self.op(f"getelementptr inbounds {t or self.t}, ptr {p}, i64 {off}")

    def field(self, ctx, i, t="i64"):
        return self.op(f"load {t}, ptr {self.at(ctx, i, 'i64')}")

    def loop(self, start, end, step, body):
        v = f"%v{len(self.allocas)}"
        self.allocas.append(f"  {v} = alloca i64")
        self(f"store i64 {start}, ptr {v}")
        head, inside, out = self.label("head"), self.label("body"), self.label("out")
        self(f"br label %{head}")
        self.block(head)
        i = self.op(f"load i64, ptr {v}")
        self(f"br i1 {self.op(f'icmp slt i64 {i}, {end}')}, label %{inside}, label %{out}")
        self.block(inside)
        body(i)
        self(f"store i64 {self.add(i, step)}, ptr {v}")
        self(f"br label %{head}")
        self.block(out)

    def branch(self, cond, then, other=None):
        a, b, j = self.label("then"), self.label("else"), self.label("join")
        self(f"br i1 {cond}, label %{a}, label %{b}")
        self.block(a)
        then()
        self(f"br label %{j}")
        self.block(b)
        if other is not None:
            other()
        self(f"br label %{j}")
        self.block(j)

    def text(self, header, attrs="#1", ret="ret void"):
        return "\n".join(
            [
                f"{header} {attrs} {{",
                "entry:",
                *self.allocas,
                "  br label %start",
                "start:",
                *self.lines,
                "  " + ret,
                "}",
            ]
        )


class _Gen:
    def __init__(self, dtype, features, blocks=None):
        self.sfx = dtype
        self.t = {"f64": "double", "f32": "float"}[dtype]
        size = 8 if dtype == "f64" else 4
        vbytes, self.mr, self.nv = _shape(features)
        self.v = vbytes // size
        self.nr = self.nv * self.v
        self.kc, self.mc, self.nc = blocks or _blocks(features, size, self.mr, self.nr)
        self.size = size
        self.vt = f"<{self.v} x {self.t}>"
        self.zero = "0.0"

    def name(self, what):
        return f"@gemm_{what}_{self.sfx}"

    def kernel(self):
        """C[h x w] (= or +=) packed A strip (kc x MR) times packed B strip (kc x NR), h <= MR,
        w <= NR: the whole tile in vector registers, stored whole, or for an edge tile through
        a tile on the stack, element by element (nothing outside C's h x w corner is read or
        written)."""
        mr, nv, v, t, vt, sz = self.mr, self.nv, self.v, self.t, self.vt, self.size
        vs = f"v{v}{self.sfx}"
        L = [
            f"define internal void {self.name('kernel')}(ptr noalias %a, ptr noalias %b, "
            f"ptr noalias %c, i64 %ldc, i64 %kc, i1 %add, i64 %h, i64 %w) #0 {{",
            "entry:",
            f"  %tile = alloca [{mr * self.nr} x {t}], align 64",
            "  br label %loop",
            "loop:",
            "  %k = phi i64 [0, %entry], [%k1, %loop]",
        ]
        for r in range(mr):
            for j in range(nv):
                L.append(f"  %acc{r}_{j} = phi {vt} [zeroinitializer, %entry], [%n{r}_{j}, %loop]")
        L += [
            f"  %ao = mul i64 %k, {mr}",
            f"  %bo = mul i64 %k, {self.nr}",
            f"  %pa = getelementptr inbounds {t}, ptr %a, i64 %ao",
            f"  %pb = getelementptr inbounds {t}, ptr %b, i64 %bo",
        ]
        for j in range(nv):
            L += [
                f"  %pb{j} = getelementptr inbounds {t}, ptr %pb, i64 {j * v}",
                f"  %b{j} = load {vt}, ptr %pb{j}, align {sz}",
            ]
        for r in range(mr):
            L += [
                f"  %pa{r} = getelementptr inbounds {t}, ptr %pa, i64 {r}",
                f"  %a{r} = load {t}, ptr %pa{r}",
                f"  %i{r} = insertelement {vt} poison, {t} %a{r}, i32 0",
                f"  %s{r} = shufflevector {vt} %i{r}, {vt} poison, <{v} x i32> zeroinitializer",
            ]
            for j in range(nv):
                L.append(
                    f"  %n{r}_{j} = call {vt} @llvm.fma.{vs}({vt} %s{r}, {vt} %b{j}, "
                    f"{vt} %acc{r}_{j})"
                )
        L += [
            "  %k1 = add i64 %k, 1",
            "  %more = icmp slt i64 %k1, %kc",
            "  br i1 %more, label %loop, label %out",
            "out:",
            f"  %hfull = icmp eq i64 %h, {mr}",
            f"  %wfull = icmp eq i64 %w, {self.nr}",
            "  %full = and i1 %hfull, %wfull",
            "  br i1 %full, label %whole, label %part",
            "whole:",
        ]
        for r in range(mr):
            L.append(f"  %row{r} = mul i64 {r}, %ldc")
            for j in range(nv):
                L += [
                    f"  %o{r}_{j} = add i64 %row{r}, {j * v}",
                    f"  %q{r}_{j} = getelementptr inbounds {t}, ptr %c, i64 %o{r}_{j}",
                ]
        L += [
            "  br i1 %add, label %accumulate, label %store",
            "store:",
        ]
        L += [
            f"  store {vt} %n{r}_{j}, ptr %q{r}_{j}, align {sz}"
            for r in range(mr)
            for j in range(nv)
        ]
        L += ["  ret void", "accumulate:"]
        for r in range(mr):
            for j in range(nv):
                L += [
                    f"  %w{r}_{j} = load {vt}, ptr %q{r}_{j}, align {sz}",
                    f"  %x{r}_{j} = fadd {vt} %w{r}_{j}, %n{r}_{j}",
                    f"  store {vt} %x{r}_{j}, ptr %q{r}_{j}, align {sz}",
                ]
        # an edge tile: the registers to a stack tile, then its h x w corner element by element
        # (edge tiles are a few percent of a product's tiles, and this is a few percent of an
        # edge tile's time; storing under lane masks took a third of the module's IR)
        L += ["  ret void", "part:"]
        for r in range(mr):
            for j in range(nv):
                L += [
                    f"  %tp{r}_{j} = getelementptr inbounds {t}, ptr %tile, i64 {r * self.nr + j * v}",
                    f"  store {vt} %n{r}_{j}, ptr %tp{r}_{j}, align {sz}",
                ]
        L += [
            "  br label %prow",
            "prow:",
            "  %pr = phi i64 [0, %part], [%pr1, %pnext]",
            "  %crow = mul i64 %pr, %ldc",
            f"  %trow = mul i64 %pr, {self.nr}",
            "  br label %pcol",
            "pcol:",
            "  %pq = phi i64 [0, %prow], [%pq1, %pcol]",
            "  %ti = add i64 %trow, %pq",
            f"  %tq = getelementptr inbounds {t}, ptr %tile, i64 %ti",
            f"  %x = load {t}, ptr %tq",
            "  %ci = add i64 %crow, %pq",
            f"  %cq = getelementptr {t}, ptr %c, i64 %ci",
            f"  %old = load {t}, ptr %cq",  # inside C's h x w corner; used only when adding
            f"  %sum = fadd {t} %old, %x",
            f"  %y = select i1 %add, {t} %sum, {t} %x",
            f"  store {t} %y, ptr %cq",
            "  %pq1 = add i64 %pq, 1",
            "  %qin = icmp slt i64 %pq1, %w",
            "  br i1 %qin, label %pcol, label %pnext",
            "pnext:",
            "  %pr1 = add i64 %pr, 1",
            "  %rin = icmp slt i64 %pr1, %h",
            "  br i1 %rin, label %prow, label %pdone",
            "pdone:",
            "  ret void",
            "}",
        ]
        return "\n".join(L)

    def transpose8(self, e, row_at, out_at):
        """Eight vectors of 8 loaded from row_at(r) stored transposed: element q of row r goes
        to element r of the vector stored at out_at(q) (three rounds of shuffles)."""
        v8 = f"<8 x {self.t}>"
        rows = [e.op(f"load {v8}, ptr {row_at(r)}, align {self.size}") for r in range(8)]
        for lo, hi, span in (
            ((0, 8, 2, 10, 4, 12, 6, 14), (1, 9, 3, 11, 5, 13, 7, 15), 1),
            ((0, 1, 8, 9, 4, 5, 12, 13), (2, 3, 10, 11, 6, 7, 14, 15), 2),
            ((0, 1, 2, 3, 8, 9, 10, 11), (4, 5, 6, 7, 12, 13, 14, 15), 4),
        ):
            out = [None] * 8
            for g in range(8):
                if (g // span) % 2:
                    continue
                for mask, slot in ((lo, g), (hi, g + span)):
                    m = ", ".join(f"i32 {q}" for q in mask)
                    out[slot] = e.op(
                        f"shufflevector {v8} {rows[g]}, {v8} {rows[g + span]}, <8 x i32> <{m}>"
                    )
            rows = out
        for q in range(8):
            e(f"store {v8} {rows[q]}, ptr {out_at(q)}, align {self.size}")

    def one_by_one(self, e, dst, width, start, count, line_stride, k_from):
        """The packing loops for what no vector path takes: lines start .. start+count-1 of
        the source (line l's element k at src[l*line_stride + k*sk]) into a strip `width`
        values wide, k from k_from on; lines past count are zeros."""
        t = self.t

        def line(i):
            inside = e.op(f"icmp slt i64 {i}, {count}")
            ii = e.op(f"select i1 {inside}, i64 {i}, i64 0")
            src = e.at("%src", e.mul(e.add(start, ii), line_stride))

            def element(k):
                x = e.op(f"load {t}, ptr {e.at(src, e.mul(k, '%sk'))}")
                x = e.op(f"select i1 {inside}, {t} {x}, {t} {self.zero}")
                e(f"store {t} {x}, ptr {e.at(dst, e.add(e.mul(k, width), i))}")

            e.loop(k_from, "%kc", 1, element)

        e.loop(0, width, 1, line)

    def pack_b(self):
        """Strips first..last-1 of op(B)'s kc x nc block (element (k, j) at src[k*sk + j*sj])
        into dst: strip s holds kc rows of NR values from dst + s*NR*kc, zeros past nc."""
        e, nr, vt = _Fn(self.t), self.nr, self.vt

        def strip(s):
            j0 = e.mul(s, nr)
            w = e.min(nr, e.op(f"sub i64 %nc, {j0}"))
            dst = e.at("%dst", e.mul(j0, "%kc"))
            whole = e.op(f"and i1 {e.op(f'icmp eq i64 {w}, {nr}')}, {e.op('icmp eq i64 %sj, 1')}")

            def rows_as_vectors():
                def row(k):
                    src = e.at("%src", e.add(e.mul(k, "%sk"), j0))
                    d = e.at(dst, e.mul(k, nr))
                    for j in range(self.nv):
                        x = e.op(f"load {vt}, ptr {e.at(src, j * self.v)}, align {self.size}")
                        e(f"store {vt} {x}, ptr {e.at(d, j * self.v)}, align {self.size}")

                e.loop(0, "%kc", 1, row)

            # op(B) transposed (rows of the stored matrix along k): 8 x 8 blocks turned in
            # registers, then the last kc % 8 rows one element at a time
            k_end = e.op("and i64 %kc, -8") if nr % 8 == 0 else "0"
            turn = (
                e.op(f"and i1 {e.op(f'icmp eq i64 {w}, {nr}')}, {e.op('icmp eq i64 %sk, 1')}")
                if nr % 8 == 0
                else "false"
            )

            def turned():
                def block(k0):
                    # the strip's NR / 8 groups of 8 columns, as a loop (unrolled, they were
                    # most of the packing's code for the wide AVX-512 tiles)
                    def group(g8):
                        j = e.add(j0, g8)
                        self.transpose8(
                            e,
                            lambda r: e.at("%src", e.add(e.mul(e.add(j, r), "%sj"), k0)),
                            lambda q: e.at(dst, e.add(e.mul(e.add(k0, q), nr), g8)),
                        )

                    e.loop(0, nr, 8, group)

                e.loop(0, k_end, 8, block)

            def by_column():
                if nr % 8 == 0:
                    e.branch(turn, turned)
                k_from = e.op(f"select i1 {turn}, i64 {k_end}, i64 0")

                self.one_by_one(e, dst, nr, j0, w, "%sj", k_from)

            e.branch(whole, rows_as_vectors, by_column)

        e.loop("%first", "%last", 1, strip)
        return e.text(
            f"define internal void {self.name('pack_b')}(ptr noalias %dst, ptr noalias %src, "
            "i64 %sk, i64 %sj, i64 %kc, i64 %nc, i64 %first, i64 %last)"
        )

    def pack_a(self):
        """op(A)'s mc x kc block (element (i, k) at src[i*si + k*sk]) into MR-row strips: strip
        s holds kc columns of MR values from dst + s*MR*kc, zeros past mc."""
        e, t, mr = _Fn(self.t), self.t, self.mr

        def transposed(i0, dst, k_end):
            """Rows along k (A row-major): 8 x 8 blocks; k_end = kc - kc % 8."""
            e.loop(
                0,
                k_end,
                8,
                lambda k0: self.transpose8(
                    e,
                    lambda r: e.at("%src", e.add(e.mul(e.add(i0, r), "%si"), k0)),
                    lambda q: e.at(dst, e.mul(e.add(k0, q), 8)),
                ),
            )

        def strip(i0):
            h = e.min(mr, e.op(f"sub i64 %mc, {i0}"))
            dst = e.at("%dst", e.mul(i0, "%kc"))
            k_end = e.op("and i64 %kc, -8") if mr == 8 else "0"
            fast = (
                e.op(f"and i1 {e.op(f'icmp eq i64 {h}, {mr}')}, {e.op('icmp eq i64 %sk, 1')}")
                if mr == 8
                else "false"
            )
            # columns along i (A transposed): each column of the strip is one vector
            down = e.op(f"and i1 {e.op(f'icmp eq i64 {h}, {mr}')}, {e.op('icmp eq i64 %si, 1')}")
            vm = f"<{mr} x {t}>"

            def by_column(k):
                x = e.op(
                    f"load {vm}, ptr {e.at('%src', e.add(e.mul(k, '%sk'), i0))}, align {self.size}"
                )
                e(f"store {vm} {x}, ptr {e.at(dst, e.mul(k, mr))}, align {self.size}")

            e.branch(down, lambda: e.loop(0, "%kc", 1, by_column))
            k_from = e.op(f"select i1 {down}, i64 %kc, i64 0")
            if mr == 8:
                e.branch(fast, lambda: transposed(i0, dst, k_end))
                k_from = e.op(f"select i1 {fast}, i64 {k_end}, i64 {k_from}")

            self.one_by_one(e, dst, mr, i0, h, "%si", k_from)

        e.loop(0, "%mc", mr, strip)
        return e.text(
            f"define internal void {self.name('pack_a')}(ptr noalias %dst, ptr noalias %src, "
            "i64 %si, i64 %sk, i64 %mc, i64 %kc)"
        )

    def macro(self):
        """C[mc x ncols] (= or +=) the packed A block times the packed B strips."""
        e, mr, nr = _Fn(self.t), self.mr, self.nr

        def col(jr):
            w = e.min(nr, e.op(f"sub i64 %ncols, {jr}"))
            pb = e.at("%bp", e.mul(jr, "%kc"))

            def row(ir_):
                h = e.min(mr, e.op(f"sub i64 %mc, {ir_}"))
                pa = e.at("%ap", e.mul(ir_, "%kc"))
                pc = e.at("%c", e.add(e.mul(ir_, "%ldc"), jr))
                e(
                    f"call void {self.name('kernel')}(ptr {pa}, ptr {pb}, ptr {pc}, i64 %ldc, "
                    f"i64 %kc, i1 %add, i64 {h}, i64 {w})"
                )

            e.loop(0, "%mc", mr, row)

        e.loop(0, "%ncols", nr, col)
        return e.text(
            f"define internal void {self.name('macro')}(ptr noalias %ap, ptr noalias %bp, "
            "ptr noalias %c, i64 %ldc, i64 %mc, i64 %ncols, i64 %kc, i1 %add)",
            "#2",
        )

    # The block context, an array of i64 slots shared by the tasks of one (jc, pc) block:
    _CTX = (
        "a",
        "sai",
        "sak",
        "b",
        "sbk",
        "sbj",
        "c",
        "ldc",
        "m",
        "nc",
        "kc",
        "pc",
        "jc",
        "bbuf",
        "strips",
        "per_pack",
        "rows",
        "cols",
        "tn",
        "failed",
    )

    def _ctx(self, e, ctx, name, t="i64"):
        return e.field(ctx, self._CTX.index(name), t)

    def pack_task(self):
        """Task i of packing the block: strips [i*per_pack, (i+1)*per_pack)."""
        e = _Fn(self.t)
        g = lambda n, t="i64": self._ctx(e, "%ctx", n, t)
        per, strips = g("per_pack"), g("strips")
        first = e.mul("%i", per)
        last = e.min(e.add(first, per), strips)
        src = e.at(g("b", "ptr"), e.add(e.mul(g("pc"), g("sbk")), e.mul(g("jc"), g("sbj"))))
        e(
            f"call void {self.name('pack_b')}(ptr {g('bbuf', 'ptr')}, ptr {src}, i64 {g('sbk')}, "
            f"i64 {g('sbj')}, i64 {g('kc')}, i64 {g('nc')}, i64 {first}, i64 {last})"
        )
        return e.text(f"define internal void {self.name('pack_task')}(ptr %ctx, i64 %i)", "#2")

    def compute_task(self):
        """Task t of the block: rows [ti*rows, ...) by columns [tj*cols, ...) of the block's
        output, ti, tj = divmod(t, tn); A is packed MC rows at a time into the task's own
        buffer."""
        e, mr = _Fn(self.t), self.mr
        g = lambda n, t="i64": self._ctx(e, "%ctx", n, t)
        tn, rows, cols, kc, m, nc = g("tn"), g("rows"), g("cols"), g("kc"), g("m"), g("nc")
        ti, tj = e.op(f"udiv i64 %t, {tn}"), e.op(f"urem i64 %t, {tn}")
        r0, c0 = e.mul(ti, rows), e.mul(tj, cols)
        r1, c1 = e.min(e.add(r0, rows), m), e.min(e.add(c0, cols), nc)
        ncols = e.op(f"sub i64 {c1}, {c0}")
        add = e.op(f"icmp sgt i64 {g('pc')}, 0")
        sai, sak, ldc = g("sai"), g("sak"), g("ldc")
        a_at = e.at(g("a", "ptr"), e.mul(g("pc"), sak))
        c_at = e.at(g("c", "ptr"), e.add(g("jc"), c0))
        bp = e.at(g("bbuf", "ptr"), e.mul(c0, kc))
        # buffers as large as this product needs: a fixed MC x KC one (819 KB) was a fresh
        # mmap per call for products with a short shared dimension (conv taps)
        rows_here = e.min(self.mc, e.op(f"sub i64 {r1}, {r0}"))
        abytes = e.mul(e.mul(e.add(rows_here, mr), kc), self.size)
        abuf = e.op(f"call ptr @jm_tmp_alloc(i64 {abytes})")
        got = e.op(f"icmp ne ptr {abuf}, null")

        def block(i):
            mc = e.min(self.mc, e.op(f"sub i64 {r1}, {i}"))
            e(
                f"call void {self.name('pack_a')}(ptr {abuf}, ptr {e.at(a_at, e.mul(i, sai))}, "
                f"i64 {sai}, i64 {sak}, i64 {mc}, i64 {kc})"
            )
            e(
                f"call void {self.name('macro')}(ptr {abuf}, ptr {bp}, ptr {e.at(c_at, e.mul(i, ldc))}, "
                f"i64 {ldc}, i64 {mc}, i64 {ncols}, i64 {kc}, i1 {add})"
            )

        failed = e.at("%ctx", self._CTX.index("failed"), "i64")
        e.branch(
            got,
            lambda: e.loop(r0, r1, self.mc, block),
            lambda: e(f"store atomic i64 1, ptr {failed} monotonic, align 8"),
        )
        e(f"call void @jm_tmp_free(ptr {abuf})")
        return e.text(f"define internal void {self.name('compute_task')}(ptr %ctx, i64 %t)", "#2")

    def product(self):
        """One product C (m x n) = op(A) op(B), k > 0, on nt threads of the pool (nt = 1: the
        calling thread alone)."""
        e, nr, mr = _Fn(self.t), self.nr, self.mr
        nslots = len(self._CTX)
        e.allocas.append(f"  %ctx = alloca [{nslots} x i64], align 8")

        def put(name, val, t="i64"):
            e(f"store {t} {val}, ptr {e.at('%ctx', self._CTX.index(name), 'i64')}")

        for name in ("sai", "sak", "sbk", "sbj", "ldc", "m"):
            put(name, f"%{name}")
        for name in ("a", "b", "c"):
            put(name, f"%{name}", "ptr")
        nc_max = e.min(self.nc, "%n")
        bbuf = e.op(
            f"call ptr @jm_tmp_alloc(i64 "
            f"{e.mul(e.mul(e.add(nc_max, nr), e.min(self.kc, '%k')), self.size)})"
        )
        put("bbuf", bbuf, "ptr")
        put("failed", 0)
        par = e.op("icmp sgt i64 %nt, 1")
        # tasks: rows of C in MR multiples, and when there are too few rows, columns in NR
        # multiples too (each column range packs its rows of A again)
        want = e.mul("%nt", TASKS_PER_THREAD)
        mstrips = e.ceil_div("%m", mr)
        tm = e.op(f"select i1 {par}, i64 {e.min(want, mstrips)}, i64 1")
        rows = e.mul(e.ceil_div(mstrips, tm), mr)
        tm = e.ceil_div("%m", rows)
        put("rows", rows)

        def block_n(jc):
            nc = e.min(self.nc, e.op(f"sub i64 %n, {jc}"))
            strips = e.ceil_div(nc, nr)
            tn_want = e.ceil_div(want, tm)
            tn = e.op(f"select i1 {par}, i64 {e.min(tn_want, strips)}, i64 1")
            cols = e.mul(e.ceil_div(strips, tn), nr)
            tn = e.ceil_div(nc, cols)
            npack = e.op(f"select i1 {par}, i64 {e.min('%nt', strips)}, i64 1")
            per = e.ceil_div(strips, npack)
            npack = e.ceil_div(strips, per)
            for name, val in (
                ("jc", jc),
                ("nc", nc),
                ("strips", strips),
                ("per_pack", per),
                ("cols", cols),
                ("tn", tn),
            ):
                put(name, val)
            tasks = e.mul(tm, tn)

            def block_k(pc):
                put("pc", pc)
                put("kc", e.min(self.kc, e.op(f"sub i64 %k, {pc}")))
                e.branch(
                    par,
                    lambda: e(
                        f"call void @jm_par(ptr {self.name('pack_task')}, ptr %ctx, i64 {npack})"
                    ),
                    lambda: e(f"call void {self.name('pack_task')}(ptr %ctx, i64 0)"),
                )
                e.branch(
                    par,
                    lambda: e(
                        f"call void @jm_par(ptr {self.name('compute_task')}, ptr %ctx, i64 {tasks})"
                    ),
                    lambda: e.loop(
                        0,
                        tasks,
                        1,
                        lambda t: e(f"call void {self.name('compute_task')}(ptr %ctx, i64 {t})"),
                    ),
                )

            e.loop(0, "%k", self.kc, block_k)

        e.branch(
            e.op(f"icmp ne ptr {bbuf}, null"),
            lambda: e.loop(0, "%n", self.nc, block_n),
            lambda: put("failed", 1),
        )
        e(f"call void @jm_tmp_free(ptr {bbuf})")
        rc = e.op(f"trunc i64 {self._ctx(e, '%ctx', 'failed')} to i32")
        return e.text(
            f"define internal i32 {self.name('product')}(i64 %m, i64 %n, i64 %k, "
            "ptr %a, i64 %sai, i64 %sak, ptr %b, i64 %sbk, i64 %sbj, ptr %c, i64 %ldc, "
            "i64 %nt)",
            "#2",
            ret=f"ret i32 {rc}",
        )

    # the entry's arguments, which batch tasks find in this order in their context, followed
    # by the failure flag
    _ARGS = (
        "nb",
        "m",
        "n",
        "k",
        "a",
        "sab",
        "sai",
        "sak",
        "b",
        "sbb",
        "sbk",
        "sbj",
        "c",
        "sbc",
        "ldc",
        "nt",
    )

    def batch_task(self):
        """Product i of a batch, on the thread that takes it."""
        e = _Fn(self.t)
        f = [
            e.field("%ctx", j, "ptr" if n in ("a", "b", "c") else "i64")
            for j, n in enumerate(self._ARGS)
        ]
        _, m, n, k, a, sab, sai, sak, b, sbb, sbk, sbj, c, sbc, ldc, _ = f
        rc = e.op(
            f"call i32 {self.name('product')}(i64 {m}, i64 {n}, i64 {k}, "
            f"ptr {e.at(a, e.mul('%i', sab))}, i64 {sai}, i64 {sak}, "
            f"ptr {e.at(b, e.mul('%i', sbb))}, i64 {sbk}, i64 {sbj}, "
            f"ptr {e.at(c, e.mul('%i', sbc))}, i64 {ldc}, i64 1)"
        )
        e.branch(
            e.op(f"icmp ne i32 {rc}, 0"),
            lambda: e(
                f"store atomic i64 1, ptr {e.at('%ctx', len(self._ARGS), 'i64')} monotonic, align 8"
            ),
        )
        return e.text(f"define internal void {self.name('batch_task')}(ptr %ctx, i64 %i)", "#2")

    def entry(self):
        """jm_gemm_<t>(nb, m, n, k, a, sab, sai, sak, b, sbb, sbk, sbj, c, sbc, ldc, nt): for
        each i < nb, C_i = op(A_i) op(B_i), A_i's element (r, k) at a[i*sab + r*sai + k*sak],
        B_i's (k, j) at b[i*sbb + k*sbk + j*sbj], C_i's (r, j) at c[i*sbc + r*ldc + j]; on up
        to nt threads."""
        e, t, args = _Fn(self.t), self.t, self._ARGS
        e.allocas.append(f"  %ctx = alloca [{len(args) + 1} x i64], align 8")
        failed = e.at("%ctx", len(args), "i64")
        e(f"store i64 0, ptr {failed}")
        nothing = e.op(f"or i1 {e.op('icmp sle i64 %m, 0')}, {e.op('icmp sle i64 %n, 0')}")
        nothing = e.op(f"or i1 {nothing}, {e.op('icmp sle i64 %nb, 0')}")

        def zero():  # k = 0: the empty sum
            def one(i):
                c = e.at("%c", e.mul(i, "%sbc"))

                def row(r):
                    cr = e.at(c, e.mul(r, "%ldc"))
                    e.loop(0, "%n", 1, lambda j: e(f"store {t} {self.zero}, ptr {e.at(cr, j)}"))

                e.loop(0, "%m", 1, row)

            e.loop(0, "%nb", 1, one)

        def products():
            each = e.mul(e.mul("%m", "%n"), "%k")
            work = e.mul(each, "%nb")
            little = e.op(f"icmp slt i64 {work}, {PAR_MIN}")
            alone = e.op(f"or i1 {e.op('icmp slt i64 %nt, 2')}, {little}")

            def one_by_one(nt):
                def one(i):
                    rc = e.op(
                        f"call i32 {self.name('product')}(i64 %m, i64 %n, i64 %k, "
                        f"ptr {e.at('%a', e.mul(i, '%sab'))}, i64 %sai, i64 %sak, "
                        f"ptr {e.at('%b', e.mul(i, '%sbb'))}, i64 %sbk, i64 %sbj, "
                        f"ptr {e.at('%c', e.mul(i, '%sbc'))}, i64 %ldc, i64 {nt})"
                    )
                    old, new = e.op(f"load i64, ptr {failed}"), e.op(f"zext i32 {rc} to i64")
                    e(f"store i64 {e.op(f'or i64 {old}, {new}')}, ptr {failed}")

                e.loop(0, "%nb", 1, one)

            def threaded():
                # whole products are the tasks (no barrier per block) when they are small, or
                # spread evenly enough over the threads; otherwise each product's blocks are
                rem = e.op("urem i64 %nb, %nt")
                spread = e.op(f"icmp sge i64 %nb, {e.mul('%nt', 4)}")
                even = e.op(f"or i1 {e.op(f'icmp eq i64 {rem}, 0')}, {spread}")
                small = e.op(f"icmp slt i64 {each}, {PAR_MIN}")
                enough = e.op("icmp sge i64 %nb, %nt")
                by_batch = e.op(f"and i1 {enough}, {e.op(f'or i1 {even}, {small}')}")

                def batch():
                    for j, name in enumerate(args):
                        e(
                            f"store {'ptr' if name in ('a', 'b', 'c') else 'i64'} %{name}, "
                            f"ptr {e.at('%ctx', j, 'i64')}"
                        )
                    e(f"call void @jm_par(ptr {self.name('batch_task')}, ptr %ctx, i64 %nb)")

                e.branch(by_batch, batch, lambda: one_by_one("%nt"))

            e.branch(alone, lambda: one_by_one(1), threaded)

        e.branch(
            nothing, lambda: None, lambda: e.branch(e.op("icmp sle i64 %k, 0"), zero, products)
        )
        rc = e.op(f"trunc i64 {e.op(f'load i64, ptr {failed}')} to i32")
        # 0, or 1 when memory for the packed operands could not be had
        return e.text(
            f"define i32 @jm_gemm_{self.sfx}("
            + ", ".join(f"{'ptr' if n in ('a', 'b', 'c') else 'i64'} %{n}" for n in args)
            + ")",
            "#2",
            ret=f"ret i32 {rc}",
        )

    def module(self):
        return "\n\n".join(
            [
                self.kernel(),
                self.pack_b(),
                self.pack_a(),
                self.macro(),
                self.pack_task(),
                self.compute_task(),
                self.product(),
                self.batch_task(),
                self.entry(),
            ]
        )


def ir_text(features: str, dtype: str, blocks=None) -> str:
    """The module of jm_gemm_<dtype> ("f64" or "f32") for a CPU with these LLVM features;
    blocks: (KC, MC, NC) instead of the defaults."""
    g = _Gen(dtype, features, blocks)
    return "\n\n".join(
        [
            "declare ptr @jm_tmp_alloc(i64)",
            "declare void @jm_tmp_free(ptr)",
            "declare void @jm_par(ptr, ptr, i64)",
            f"declare {g.vt} @llvm.fma.v{g.v}{dtype}({g.vt}, {g.vt}, {g.vt})",
            # the micro-kernel and the packing through the full instruction selector (the
            # module's pass pipeline is SROA only: engine.SSA_BY_HAND; at O3 the packing
            # compiled 3x slower and ran no faster)
            "attributes #0 = { noinline nounwind }",
            "attributes #1 = { noinline nounwind optsize minsize }",
            # and what runs once per block or per call, not optimised at all (fast instruction
            # selection: LLVM's passes and its full selector took ~60 ms for these alone)
            "attributes #2 = { noinline nounwind optnone }",
            g.module(),
        ]
    )


def install(dtype: str) -> int:
    """Build jm_gemm_<dtype> once per process (20-30 ms of LLVM; with the disk cache on, linked
    from it in 1-2 ms) and make it known to LLVM by name; its address."""
    name = f"jm_gemm_{dtype}"
    if name not in _built:
        with _lock:
            if name not in _built:
                bufpool.install()
                threadpool.install()
                text = ir_text(engine.host_info()["features"], dtype)
                _built.update(
                    runtime.build(
                        text,
                        (name,),
                        f"gemm_{dtype}",
                        link=(name,),
                        opt=engine.SSA_BY_HAND,
                        persistent=True,
                    )
                )
    return _built[name]


_ENTRY = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    *([ctypes.c_int64] * 4 + [ctypes.c_void_p] + [ctypes.c_int64] * 3 + [ctypes.c_void_p])
    + [ctypes.c_int64] * 3
    + [ctypes.c_void_p]
    + [ctypes.c_int64] * 3,
)


def entry(dtype: str):
    """jm_gemm_<dtype> as a ctypes function (see _Gen.entry for its arguments)."""
    return _ENTRY(install(dtype))


def declare(module, dtype):
    """`i32 jm_gemm_<t>(nb, m, n, k, a, sab, sai, sak, b, sbb, sbk, sbj, c, sbc, ldc, nt)` in
    `module` (see _Gen.entry); returns 0, or 1 when it could not allocate its buffers."""
    import llvmlite.ir as ir
    import numpy as np

    dt = "f64" if np.dtype(dtype) == np.float64 else "f32"
    install(dt)
    name = f"jm_gemm_{dt}"
    fn = module.globals.get(name)
    if fn is None:
        sizes = [_llvmtypes.I64] * 3
        fn = ir.Function(
            module,
            ir.FunctionType(
                _llvmtypes.I32,
                [_llvmtypes.I64] * 4
                + [_llvmtypes.PTR]
                + sizes
                + [_llvmtypes.PTR]
                + sizes
                + [_llvmtypes.PTR]
                + [_llvmtypes.I64] * 3,
            ),
            name,
        )
    return fn


def linked_by(obj: bytes):
    """Install the entry points that object code `obj` calls (before linking it)."""
    for dt in ("f64", "f32"):
        if f"jm_gemm_{dt}".encode() in obj:
            install(dt)

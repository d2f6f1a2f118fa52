"""IPython magics: %%jit, %jit_cache, %jit_log, %jit_dashboard, %jit_config and live notices.

Loaded by `%load_ext jitmagic`. Every magic is a view over the tracker's records
(`jm.events()`, `f.cache_info()`, `jm.tracker.snapshot()`); nothing here keeps its own
statistics except the run-time samples taken after each cell for the dashboard's timeline.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import html
import os
import time

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jitmagic.core.config import config
from jitmagic.diagnostics import cluster, tracker
from jitmagic.diagnostics import profile as profile_records
from jitmagic.diagnostics.tableview import CacheTable, CacheTables, LogTable, WorkerCacheTable
from jitmagic.diagnostics.watch.cells import peer_jit
from jitmagic.diagnostics.watch.watched import WatchedFunction
from jitmagic.dispatch import baseline
from jitmagic.dispatch.baseline import view_budget
from jitmagic.dispatch.function import JitFunction
from jitmagic.dispatch.function import jit as _jit
from jitmagic.dispatch.inspection import pick, short_table
from jitmagic.errors import JitError
from jitmagic.notebook import cellfunc, dashboard, profiling
from jitmagic.notebook import comm as panel_comm

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package root
_LINE_MAGICS = ("jit_cache", "jit_log", "jit_dashboard", "jit_config", "jit_profile")
_CELL_MAGICS = ("jit",)
_NOTICE_KINDS = ("compile", "miss", "storm", "evict")


# ---------------------------------------------------------------- session state


class _Session:
    """What the extension holds while loaded in one shell."""

    def __init__(self):
        self.pending = []  # events since the last notices were shown
        self.samples = []  # (time, cumulative run ms), one per cell, for the timeline
        self.run_seen = {}  # (id(state), variant id) -> total_ns seen
        self.run_ms = 0.0
        self.cells = {}  # (source, inputs, name) -> CellFunction
        self.unsubscribe = None
        self.custom_exc = False
        self.quiet_cell = False

    def on_event(self, ev):
        if ev.kind in _NOTICE_KINDS:
            self.pending.append(ev)

    def sample_run_time(self):
        total = 0.0
        for f in tracker.all_functions():
            for v in f.variants:
                k = (f.fid, v.id)
                seen = self.run_seen.get(k, 0)
                if v.total_ns > seen:
                    total += (v.total_ns - seen) / 1e6
                self.run_seen[k] = v.total_ns
        self.run_ms += total
        if total or not self.samples:
            self.samples.append((time.time(), self.run_ms))
            del self.samples[:-2000]


_session: _Session | None = None


def _pre_run_cell(info=None):
    if _session is not None:
        _session.quiet_cell = False


def _post_run_cell(result=None):
    s = _session
    if s is None:
        return
    s.sample_run_time()
    events, s.pending = s.pending, []
    if events and config.live_notices and not s.quiet_cell:
        from IPython.display import display

        display(Notices(events))


# ---------------------------------------------------------------- display objects


def _notice_line(ev):
    if ev.kind == "storm":
        return f"jit ⚠ {ev.message}"
    if ev.kind == "evict":
        return f"jit · {ev.message}"
    ms = ev.timings_ms.get("total")
    why = "; ".join(r.text for r in ev.reasons) or ev.message
    statics = ", ".join(f"{k}={tracker.fmt_value(v)}" for k, v in ev.statics.items())
    name = ev.function if ev.backend == "jitmagic" else f"{ev.function} [{ev.backend}]"
    if ev.worker is not None:
        name += f" on {ev.worker}"
    return (
        f"{ev.front} · compiled {name} variant {ev.variant}"
        + (f" ({statics})" if statics else "")
        + (f" in {ms:.1f} ms" if ms is not None else "")
        + f" — {why}"
        + _figures_note(ev)
    )


NOTICE_MEASURE_S = 1.0  # time the notices after one cell may spend measuring baselines


def _figures_note(ev):
    """` · speedup 0.23x over NumPy, break-even never`: the figures %jit_cache shows, when
    the variant is still live and its baseline is measured (within NOTICE_MEASURE_S)."""
    if ev.kind not in ("compile", "miss") or not config.eager_baseline:
        return ""
    if getattr(ev, "backend", "jitmagic") != "jitmagic":
        return ""  # no NumPy baseline for another JIT's functions
    v = next(
        (
            v
            for f in tracker.all_functions()
            if f.fid == ev.fid
            for v in f.variants
            if v.id == ev.variant
        ),
        None,
    )
    if v is None:
        return ""
    fig = baseline.figures(v, v.compile_ms)
    if fig.speedup is None:
        return ""
    be = fig.break_even_text()
    return f" · speedup {fig.speedup_text()} over NumPy, break-even {be}" + (
        "" if be == "never" else " calls"
    )


class Notices:
    """The lines shown after a cell in which something compiled (one per compile)."""

    MAX_LINES = 12

    def __init__(self, events):
        events = list(events)
        self.events = events[: self.MAX_LINES - 1] if len(events) > self.MAX_LINES else events
        rest = events[len(self.events) :]
        with view_budget(NOTICE_MEASURE_S):
            self.lines = [_notice_line(e) for e in self.events]
        storms = [e for e in rest if e.kind == "storm"]
        if rest:
            self.lines.append(
                f"jit · … and {len(rest) - len(storms)} more compile(s); %jit_log shows them all"
            )
            self.events.append(rest[-1])
        for e in storms:
            self.events.append(e)
            self.lines.append(_notice_line(e))

    def _repr_mimebundle_(self, include=None, exclude=None):
        rows = []
        for e, line in zip(self.events, self.lines):
            color = "color:#d97706;font-weight:600;" if e.kind == "storm" else "opacity:0.8;"
            rows.append(f'<div style="{color}">{html.escape(line)}</div>')
        return {
            "text/plain": "\n".join(self.lines),
            "text/html": '<div class="jitmagic-notices" style="font-family:monospace;'
            f'font-size:0.85em;">{"".join(rows)}</div>',
        }

    def __repr__(self):
        return "\n".join(self.lines)


class CodeView:
    """IR / LLVM IR / assembly of one variant, or a unified diff of two."""

    def __init__(self, title, text, diff=False):
        self.title, self.text, self.diff = title, text, diff

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self.diff:
            colors = {
                "+": "rgba(46,160,67,0.25)",
                "-": "rgba(248,81,73,0.25)",
                "@": "rgba(56,139,253,0.2)",
            }
            body = "".join(
                f'<span style="display:block;background:{colors.get(line[:1], "none")}">'
                f"{html.escape(line) or ' '}</span>"
                for line in self.text.splitlines()
            )
        else:
            body = html.escape(self.text)
        return {
            "text/plain": f"{self.title}\n{self.text}",
            "text/html": f"<details open><summary><b>{html.escape(self.title)}</b></summary>"
            f'<pre style="font-size:0.85em;line-height:1.3">{body}</pre></details>',
        }

    def __repr__(self):
        return f"{self.title}\n{self.text}"


class ConfigView:
    def __init__(self, values, help_):
        self.values, self.help = values, help_

    def _repr_mimebundle_(self, include=None, exclude=None):
        w = max(len(k) for k in self.values)
        plain = "\n".join(f"{k:<{w}} = {v!r:<10}  # {self.help[k]}" for k, v in self.values.items())
        rows = "".join(
            f"<tr><td><code>{k}</code></td><td><code>{html.escape(repr(v))}</code></td>"
            f"<td style='text-align:left'>{html.escape(self.help[k])}</td></tr>"
            for k, v in self.values.items()
        )
        return {
            "text/plain": "jitmagic options (set with %jit_config name=value ...)\n" + plain,
            "text/html": "<table><thead><tr><th>option</th><th>value</th><th>meaning</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>",
        }


# ---------------------------------------------------------------- tracebacks


def _internal(frame):
    return os.path.abspath(frame.f_code.co_filename).startswith(_PKG_DIR + os.sep)


def strip_internal_frames(tb):
    """The traceback without jitmagic's own frames, so it ends at the user's line.
    Set JITMAGIC_TRACEBACK=full to keep them."""
    if os.environ.get("JITMAGIC_TRACEBACK") == "full":
        return tb
    kept = []
    while tb is not None:
        if not _internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


def _show_jit_error(shell, etype, value, tb, tb_offset=None):
    tb = strip_internal_frames(tb) or tb
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def _through_jitmagic(tb):
    while tb is not None:
        if _internal(tb.tb_frame):
            return True
        tb = tb.tb_next
    return False


# ---------------------------------------------------------------- argument helpers


def _int_list(text):
    try:
        return tuple(int(t) for t in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 0,2 — got {text!r}") from None


def _name_list(text):
    names = tuple(t for t in text.replace(",", " ").split())
    for n in names:
        if not n.isidentifier():
            raise argparse.ArgumentTypeError(f"{n!r} is not a Python name")
    return names


def _rounded(df):
    floats = df.select_dtypes("float").columns
    return df.round({c: 3 for c in floats})


def _parse(magic, line):
    args = parse_argstring(magic, line)  # raises UsageError on bad options
    return args


def _cell_jit(static_argnums, static_argnames, backend="jitmagic", shapes=None, njit=False):
    """Decorator applied to each top-level function of a %%jit cell."""
    import inspect

    def wrap(fun):
        if isinstance(fun, JitFunction) or getattr(fun, "backend", None) == backend:
            return fun
        if njit:  # NumPy's semantics (jm.njit): in-place updates, loops and branches on values
            from jitmagic.imperative import njit as njit_compile  # (loaded on first use)

            return njit_compile(fun)
        try:
            params = inspect.signature(fun).parameters
        except (TypeError, ValueError):
            params = {}
        kinds = [p.kind for p in params.values()]
        npos = sum(
            k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for k in kinds
        )
        varargs = inspect.Parameter.VAR_POSITIONAL in kinds
        nums = tuple(n for n in static_argnums if varargs or -npos <= n < npos)
        names = tuple(n for n in static_argnames if n in params)
        if backend != "jitmagic":
            return peer_jit(backend, fun, nums, names)
        return _jit(fun, static_argnums=nums, static_argnames=names, shapes=shapes)

    return wrap


# ---------------------------------------------------------------- the magics


@magics_class
class JitMagics(Magics):
    # ------------------------------------------------------------ %%jit
    @magic_arguments()
    @argument(
        "--static-argnums",
        type=_int_list,
        default=(),
        metavar="N,...",
        help="positions of static parameters, applied to every function of the cell that "
        "has that many positional parameters",
    )
    @argument(
        "--static-argnames",
        type=_name_list,
        default=(),
        metavar="NAME,...",
        help="names of static parameters, applied to every function of the cell that has "
        "a parameter of that name",
    )
    @argument(
        "--traced",
        type=_name_list,
        default=(),
        metavar="NAME,...",
        help="cell without functions: Python scalars among these inputs are traced (one "
        "compiled variant for all values) instead of static",
    )
    @argument(
        "--name",
        default=None,
        help="cell without functions: the name shown in %%jit_cache and notices "
        "(default: cell_ followed by the first outputs)",
    )
    @argument("--quiet", action="store_true", help="no live notices after this cell")
    @argument(
        "--njit",
        action="store_true",
        help="compile the cell's functions with jm.njit (NumPy's semantics: in-place updates "
        "reach the caller, Python loops and branches on values compile natively) instead of "
        "jm.jit (JAX's)",
    )
    @argument(
        "--profile",
        action="store_true",
        help="profile instead of showing the result (as %%jit_profile): a cell without "
        "functions is profiled as the function it compiles to, on this run's inputs; a cell "
        "with functions profiles its last line, which must be a call of a jitted function",
    )
    @argument(
        "--shapes",
        choices=("auto", "static", "dynamic"),
        default=None,
        help="shape-generic variants (jm.jit's shapes=): static compiles each shape, auto "
        "compiles a variant generic in the dimensions that change, dynamic starts "
        "generic (default: jm.config.shapes)",
    )
    @argument(
        "--backend",
        choices=("jitmagic", "jax", "numba"),
        default="jitmagic",
        help="compile the cell's functions with this JIT (jax.jit or numba.njit, "
        "watched: their compiles show in %%jit_log and %%jit_cache); a cell "
        "without functions needs jitmagic",
    )
    @cell_magic
    def jit(self, line, cell):
        """Run the cell with jitmagic: its functions become jitted, or the cell itself is compiled.

        A cell that defines functions at top level (def) runs as usual, and each of those
        functions is bound in the namespace as its jitted version (jm.jit), so calls later in the
        cell and in later cells run compiled code. --static-argnums/--static-argnames apply to
        the functions whose signatures have those parameters.

        A cell that defines no function is compiled as one function of the names it reads:

          inputs   every name the cell reads before assigning it, and that is bound in the
                   namespace when the cell runs. NumPy arrays and scalars, lists and dicts are
                   traced; Python bool/int/float/complex/str/bytes/None and tuples are static
                   (each new value compiles a new variant) unless listed in --traced.
                   Modules, functions and other objects are not inputs: they are read as
                   globals while tracing and frozen into the compiled code.
          outputs  every name the cell assigns at top level (=, +=, for/with targets),
                   written back to the namespace. Traced values are recomputed by native code
                   on each run; Python values (loop counters, strings) are recorded when the
                   cell is traced and written back unchanged.
          result   a final expression is displayed, as in a normal cell.

        Re-running an unchanged cell with inputs of the same shapes, dtypes and static values
        reuses the compiled variant: the Python body then does not run (print happens only
        while tracing). Errors raised while tracing point at the line of the cell.

        Examples::

            %%jit --static-argnames n
            def power(x, n):
                for _ in range(n):
                    x = x * x
                return x

            %%jit --traced dt
            v = v + dt * a
            x = x + dt * v
        """
        __tracebackhide__ = True
        args = _parse(self.jit, line)
        if args.quiet and _session is not None:
            _session.quiet_cell = True
        ip = self.shell
        full = f"%%jit {line}".rstrip() + "\n" + cell
        filename = ip.compile.cache(full, ip.execution_count or 0, raw_code=full)
        src = ip.transform_cell(cell)
        try:
            tree = ast.parse("\n" + src, filename)  # the %%jit line is line 1
        except SyntaxError as e:
            raise e.with_traceback(None) from None
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        if args.shapes is not None and args.backend != "jitmagic":
            raise UsageError(
                f"%%jit --shapes is jitmagic's own option; drop it with --backend {args.backend}"
            )
        if args.njit and (args.static_argnums or args.static_argnames or args.shapes):
            raise UsageError(
                "%%jit --njit: njit functions have no static arguments and no shapes= (a new "
                "size never recompiles); drop --static-argnums/--static-argnames/--shapes"
            )
        if args.njit and args.backend != "jitmagic":
            raise UsageError("%%jit --njit compiles with jitmagic: drop --backend")
        if args.njit and not defs:
            raise UsageError(
                "%%jit --njit compiles the cell's functions: this cell defines none; put the "
                "code in a def (or drop --njit to compile the cell itself with jm.jit)"
            )
        if args.profile and args.backend != "jitmagic":
            raise UsageError(
                f"%%jit --profile: profiling is not available for {args.backend}: it times the "
                f"regions of jitmagic's own generated code; drop --backend to profile"
            )
        if not defs and args.backend != "jitmagic":
            raise UsageError(
                f"%%jit --backend {args.backend}: this cell defines no function; "
                f"only jitmagic's own backend compiles a whole cell. Put the code "
                f"in a def, or drop --backend"
            )
        try:
            if defs:
                return self._run_with_functions(tree, defs, args, filename)
            return self._run_as_function(tree, args, filename)
        except cellfunc.CellError as e:
            raise UsageError(f"%%jit: {e}") from None
        except Exception as e:
            if _through_jitmagic(e.__traceback__):
                # the same exception, its traceback trimmed to the user's frames
                raise e.with_traceback(strip_internal_frames(e.__traceback__))  # noqa: B904
            raise

    def _run_with_functions(self, tree, defs, args, filename):
        __tracebackhide__ = True
        for node in defs:
            deco = ast.parse(
                f"__import__('jitmagic.notebook.magics', fromlist=['_'])._cell_jit("
                f"{tuple(args.static_argnums)!r}, {tuple(args.static_argnames)!r}, "
                f"{args.backend!r}, {args.shapes!r}, {args.njit!r})",
                mode="eval",
            ).body
            line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            for n in ast.walk(deco):
                n.lineno = n.end_lineno = line
                n.col_offset = n.end_col_offset = 0
            node.decorator_list.insert(0, deco)
        last = None
        if isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        if args.profile and (last is None or not isinstance(last.body, ast.Call)):
            raise UsageError(
                "%%jit --profile: the cell's last line must be a call of a jitted function "
                "(e.g. step(state)): that call is profiled"
            )
        ns = self.shell.user_ns
        exec(compile(tree, filename, "exec"), ns)
        if args.profile:
            fn, a, kw = profiling.parse_call(ast.unparse(last), ns, "%%jit --profile")
            return profiling.profile_call(fn, a, kw)
        if last is not None:
            return eval(compile(last, filename, "eval"), ns)
        return None

    def _run_as_function(self, tree, args, filename):
        __tracebackhide__ = True
        if not tree.body:
            return None
        analysis = cellfunc.analyse(tree)
        ns = self.shell.user_ns
        inputs = cellfunc.inputs_for(analysis, ns, args.traced)
        shown = [n for n in analysis.outputs if n != cellfunc._LAST][:3]
        name = args.name or ("cell_" + "_".join(shown) if shown else "cell")
        if not name.isidentifier():
            raise UsageError(f"%%jit --name {name!r}: the name must be a Python identifier")
        key = (ast.dump(tree, include_attributes=True), tuple(inputs.items()), name)
        cells = _session.cells if _session is not None else {}
        cf = cells.get(key)
        if cf is None:
            cf = cells[key] = cellfunc.CellFunction(analysis, inputs, filename, ns, name)
            while len(cells) > 64:
                cells.pop(next(iter(cells)))
        cf.jitted.shapes = args.shapes
        kw = {n: ns[n] for n in cf.inputs}  # this run's inputs, before outputs replace them
        out = cf(ns)
        if args.profile:
            ns.update({n: v for n, v in out.items() if n != cellfunc._LAST})
            return profiling.profile_call(cf.jitted, (), kw)
        result = out.pop(cellfunc._LAST, None)
        ns.update(out)
        return result

    # ------------------------------------------------------------ %jit_cache
    @magic_arguments()
    @argument(
        "name",
        nargs="?",
        help="a jitted function (its name in the namespace or its "
        "qualname); all functions when omitted",
    )
    @argument("--ir", action="store_true", help="show the optimised jitmagic IR of a variant")
    @argument("--llvm", action="store_true", help="show the optimised LLVM IR of a variant")
    @argument("--asm", action="store_true", help="show the assembly of a variant")
    @argument("--variant", type=int, metavar="K", help="variant id (default: the latest)")
    @argument(
        "--diff",
        type=int,
        nargs=2,
        metavar=("K1", "K2"),
        help="unified diff of two variants' code (IR unless --llvm/--asm)",
    )
    @argument("--clear", action="store_true", help="drop the compiled variants")
    @argument(
        "--workers",
        action="store_true",
        help="with a tracked Dask cluster (jm.dask.track): one row per worker and variant "
        "instead of the workers' variants folded per function",
    )
    @argument(
        "--all-columns",
        action="store_true",
        help="every column: compile phases, kernel mean/min/total, numeric speedup and "
        "break-even, and how each time was measured (call_how, eager_how)",
    )
    @line_magic
    def jit_cache(self, line):
        """Table of every jitted function's compiled variants, or the code of one variant.

        With a tracked Dask cluster (jm.dask.track), the workers' variants follow, folded per
        function ("on 2 workers: 1 compiled it, 1 loaded it from the disk cache"; --workers:
        one row each).

        Columns: function, variant, statics, signature, compile_ms, calls, kernel_us_median
        (the native code alone, median of the last 128 calls), call_us (the whole call as you
        wait for it: dispatch, result allocation, kernel), eager (the same inputs run with
        NumPy), speedup (eager / call), break_even (calls after which the compile has paid
        for itself, or never), reason (why it was compiled). call_us and eager are warm
        medians on the inputs of the variant's first call, measured when first shown; a
        NumPy run that outlasts eager_baseline_budget_s (a long loop) gives bounds, marked
        ≥ and ≤. --all-columns adds compile phases, kernel mean/min/total and how each time
        was measured.
        """
        args = _parse(self.jit_cache, line)
        views = [k for k in ("ir", "llvm", "asm") if getattr(args, k)]
        if len(views) > 1:
            raise UsageError("%jit_cache: choose one of --ir, --llvm, --asm")
        if (views or args.variant is not None or args.diff) and not args.name:
            raise UsageError(
                "%jit_cache: --ir/--llvm/--asm/--variant/--diff need a function "
                "name, e.g. %jit_cache f --llvm"
            )
        fns = [self._find(args.name)] if args.name else tracker.all_functions()
        if args.clear:
            n = sum(len(f.variants) for f in fns)
            for f in fns:
                f.clear_cache()
            print(f"cleared {n} compiled variant(s) of {', '.join(f.name for f in fns) or '-'}")
            return None
        if args.diff:
            return self._diff(fns[0], views[0] if views else "ir", *args.diff)
        if views or args.variant is not None:
            return self._code(fns[0], views[0] if views else "ir", args.variant)
        df = dashboard.cache_table(fns)
        if cluster.trackings():
            cluster.refresh()
        remote = cluster.cache_frame(fns[0] if args.name else None, per_worker=args.workers)
        if df.empty and remote.empty:
            print("no compiled variants yet" + (f" for {args.name}" if args.name else ""))
        if not args.all_columns:
            df = short_table(df)
        table = CacheTable(_rounded(df))
        if remote.empty:
            return table
        return CacheTables(table, WorkerCacheTable(_rounded(remote)))

    def _code_text(self, f, view, variant):
        try:
            if view == "ir":
                return f.inspect_ir(variant)
            if view == "llvm":
                return f.inspect_llvm(variant)
            return f.inspect_asm(variant)
        except ValueError as e:
            raise UsageError(f"%jit_cache: {e}") from None

    def _code(self, f, view, variant):
        text = self._code_text(f, view, variant)
        v = pick(f, variant)
        label = {"ir": "jitmagic IR", "llvm": "LLVM IR (optimised)", "asm": "assembly"}[view]
        if getattr(f, "backend", "jitmagic") != "jitmagic":
            label = f"{f.backend}'s own {'representation' if view == 'ir' else label}"
        return CodeView(
            f"{f.name} variant {v.id} ({v.describe_statics()}{v.signature}) — {label}", text
        )

    def _diff(self, f, view, k1, k2):
        a, b = self._code_text(f, view, k1), self._code_text(f, view, k2)
        diff = "\n".join(
            difflib.unified_diff(
                a.splitlines(), b.splitlines(), f"variant {k1}", f"variant {k2}", lineterm=""
            )
        )
        return CodeView(
            f"{f.name}: {view} diff of variant {k1} -> {k2}", diff or "(identical)", diff=True
        )

    def _find(self, name):
        v = self.shell.user_ns.get(name)
        if isinstance(v, (JitFunction, WatchedFunction)):
            return v
        matches = [f for f in tracker.all_functions() if name in (f.name, f.qualname)]
        if matches:
            return max(matches, key=lambda f: max((x.last_ns for x in f.variants), default=0))
        known = sorted({f.name for f in tracker.all_functions()})
        raise UsageError(
            f"no jitted function named {name!r}"
            + (
                f"; jitted functions: {', '.join(known)}"
                if known
                else " (nothing has been jitted yet)"
            )
        )

    # ------------------------------------------------------------ %jit_log
    @magic_arguments()
    @argument("name", nargs="?", help="only this function's events")
    @argument("--last", type=int, metavar="N", help="only the last N events")
    @argument("--csv", metavar="PATH", help="also write the events (all columns) to a CSV file")
    @argument("--json", metavar="PATH", help="also write the events (all columns) as JSON records")
    @argument("--all-columns", action="store_true", help="show every column")
    @line_magic
    def jit_log(self, line):
        """The compile / cache-miss / eviction / storm log as a DataFrame (newest last).

        `reason` lists every difference from the closest earlier variant (static value, shape,
        dtype, weak type, pytree structure, referenced global, redefinition).
        """
        args = _parse(self.jit_log, line)
        if args.last is not None and args.last < 1:
            raise UsageError("%jit_log: --last takes a positive number of events")
        if args.name:
            self._find(args.name)  # a clear error for an unknown name
        df = tracker.events(args.name)
        if args.last:
            df = df.tail(args.last)
        for path, write in (
            (args.csv, lambda p: df.to_csv(p, index=False)),
            (args.json, lambda p: df.to_json(p, orient="records", date_format="iso", indent=1)),
        ):
            if path:
                try:
                    write(path)
                except OSError as e:
                    raise UsageError(f"%jit_log: cannot write {path}: {e.strerror}") from None
                print(f"wrote {len(df)} event(s) to {path}")
        if not args.all_columns:
            columns = [
                "seq",
                "time",
                "kind",
                "function",
                "backend",
                "variant",
                "statics",
                "signature",
                "reason",
                "compile_ms",
                "message",
            ]
            if df["worker"].notna().any():  # records from a tracked cluster's workers
                columns.insert(4, "worker")
            df = df[columns]
        return LogTable(_rounded(df).reset_index(drop=True))

    # ------------------------------------------------------------ %jit_dashboard
    @magic_arguments()
    @argument("name", nargs="?", help="only this function")
    @argument("--save", metavar="PATH", help="also save the figure (format from the extension)")
    @argument(
        "--theme",
        choices=sorted(dashboard.THEMES),
        default="light",
        help="palette; both are opaque, so either reads in light and dark notebooks",
    )
    @argument(
        "--live",
        action="store_true",
        help="in JupyterLab, keep the charts updating while cells run (through the JIT "
        "panel's connection); other frontends show the picture of now",
    )
    @line_magic
    def jit_dashboard(self, line):
        """Figures: compile vs run time per variant, break-even calls, and the session timeline
        (cumulative compile vs cumulative run time, storms marked)."""
        args = _parse(self.jit_dashboard, line)
        fns = [self._find(args.name)] if args.name else tracker.all_functions()
        if _session is not None:
            _session.sample_run_time()
        samples = _session.samples if _session is not None and not args.name else []
        names = {f.name for f in fns}
        snap = [d for d in tracker.snapshot()["functions"] if not args.name or d["name"] in names]
        evs = tracker.event_list(args.name)[-1000:]
        d = dashboard.Dashboard(
            dashboard.cache_table(fns),
            tracker.events(args.name),
            samples,
            snap,
            [e.to_dict() for e in evs],
            theme=args.theme,
            title=f"jitmagic: {args.name}" if args.name else None,
            profiles=[p for p in profile_records.latest() if p.fid in {f.fid for f in fns}],
        )
        if args.live:
            if args.name:
                raise UsageError(
                    "%jit_dashboard: --live follows every function; "
                    "drop the name, and pick one in the chart's filter"
                )
            d.data.update(live=True, kernel_id=panel_comm.kernel_id())
        if args.save:
            try:
                d.save(args.save)
            except (OSError, ValueError) as e:
                raise UsageError(f"%jit_dashboard: cannot save {args.save}: {e}") from None
            print(f"saved the dashboard to {args.save}")
        return d

    # ------------------------------------------------------------ %jit_config
    @magic_arguments()
    @argument(
        "assignments",
        nargs="*",
        metavar="NAME=VALUE",
        help="options to set, e.g. live_notices=False storm_threshold=5",
    )
    @line_magic
    def jit_config(self, line):
        """Show jitmagic's options, or set some: %jit_config max_variants=16 live_notices=off"""
        args = _parse(self.jit_config, line)
        kw = {}
        for a in args.assignments:
            name, eq, value = a.partition("=")
            if not eq or not name:
                raise UsageError(f"%jit_config: expected NAME=VALUE, got {a!r}")
            try:
                kw[name] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                kw[name] = value
        if kw:
            try:
                config.update(**kw)
            except ValueError as e:
                raise UsageError(f"%jit_config: {e}") from None
        return ConfigView(config.as_dict(), config.describe())


# ---------------------------------------------------------------- load / unload


def load_ipython_extension(ip):
    global _session
    if _session is not None:
        unload_ipython_extension(ip)
    _session = _Session()
    ip.register_magics(JitMagics)
    ip.register_magics(profiling.ProfileMagics)
    ip.events.register("pre_run_cell", _pre_run_cell)
    ip.events.register("post_run_cell", _post_run_cell)
    _session.unsubscribe = tracker.subscribe(_session.on_event)
    if not ip.custom_exceptions:
        ip.set_custom_exc((JitError,), _show_jit_error)
        _session.custom_exc = True
    try:
        panel_comm.start(ip)
    except Exception as e:  # the side panel is optional; the magics must still load
        import warnings

        warnings.warn(
            f"jitmagic: the JupyterLab channel did not start: {e}", RuntimeWarning, stacklevel=2
        )


def unload_ipython_extension(ip):
    global _session
    s, _session = _session, None
    mm = ip.magics_manager
    for kind, names in (("line", _LINE_MAGICS), ("cell", _CELL_MAGICS)):
        for n in names:
            mm.magics[kind].pop(n, None)
    mm.registry.pop(JitMagics.__name__, None)
    mm.registry.pop(profiling.ProfileMagics.__name__, None)
    for name, cb in (("pre_run_cell", _pre_run_cell), ("post_run_cell", _post_run_cell)):
        try:
            ip.events.unregister(name, cb)
        except ValueError:
            pass
    if s is not None:
        if s.unsubscribe is not None:
            s.unsubscribe()
        if s.custom_exc and ip.custom_exceptions == (JitError,):
            ip.set_custom_exc((), None)
    if hasattr(panel_comm, "stop"):
        try:
            panel_comm.stop(ip)
        except Exception:
            pass

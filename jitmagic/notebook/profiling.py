"""%jit_profile, %%jit --profile and the panel's "profile" request: a call of a jitted function
profiled (jitmagic.dispatch.profile measures, jitmagic.diagnostics.profile makes the records and
views), shown as the annotated source.

`%jit_profile f(x, y)` evaluates f and its arguments in the user's namespace (f is not called
by the evaluation: the profile calls it) and returns the profile's DataFrame, whose display is
the annotated source listing (HTML in a notebook, text in a terminal).
"""

from __future__ import annotations

import ast

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jitmagic.diagnostics import profile as profiles
from jitmagic.diagnostics import profile_views
from jitmagic.dispatch import profile as measuring
from jitmagic.dispatch.function import JitFunction
from jitmagic.runtime import roofs

USAGE = (
    "%jit_profile expects a call of a jitted function, e.g. %jit_profile step(state) or "
    "%jit_profile f(x, n=3)"
)


class _Captured(Exception):
    """Raised by the stand-in for the profiled function: the evaluated arguments."""

    def __init__(self, args, kwargs):
        super().__init__()
        self.args_, self.kwargs = args, kwargs


def _capture(*args, **kwargs):
    raise _Captured(args, kwargs)


def parse_call(source, ns, what="%jit_profile"):
    """(function, args, kwargs) of a call expression, evaluated in `ns` without calling the
    function. Raises UsageError for anything that is not a call of a jitted function."""
    source = source.strip()
    if not source:
        raise UsageError(USAGE)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as e:
        raise UsageError(
            f"{what}: {source!r} is not a Python expression ({e.msg}). {USAGE}"
        ) from None
    call = tree.body
    if not isinstance(call, ast.Call):
        raise UsageError(f"{what}: {source!r} is not a call. {USAGE}")
    try:
        fn = eval(compile(ast.Expression(call.func), "<jit_profile>", "eval"), ns)
    except Exception as e:
        raise UsageError(
            f"{what}: could not evaluate {ast.unparse(call.func)!r}: {type(e).__name__}: {e}"
        ) from None
    backend = getattr(fn, "backend", None)
    if backend not in (None, "jitmagic") and hasattr(fn, "profile"):
        raise UsageError(
            f"{what}: profiling is not available for {backend}: {ast.unparse(call.func)} is "
            f"compiled by {backend}, and a profile times the regions of jitmagic's own "
            f"generated code. Compile it with jm.jit (or %%jit) to profile it."
        )
    if not isinstance(fn, JitFunction):
        hint = (
            "decorate it with @jm.jit, or define it in a %%jit cell"
            if callable(fn)
            else "it is not even callable"
        )
        raise UsageError(
            f"{what}: {ast.unparse(call.func)!r} is not a jitted function "
            f"({type(fn).__name__}); {hint}. {USAGE}"
        )
    stand_in = ast.Call(ast.Name("__jitmagic_capture__", ast.Load()), call.args, call.keywords)
    expr = ast.fix_missing_locations(ast.Expression(stand_in))
    scope = dict(ns)
    scope["__jitmagic_capture__"] = _capture
    try:
        eval(compile(expr, "<jit_profile>", "eval"), scope)
    except _Captured as c:
        return fn, c.args_, c.kwargs
    except Exception as e:
        raise UsageError(
            f"{what}: could not evaluate the arguments of {source!r}: {type(e).__name__}: {e}"
        ) from None
    raise UsageError(f"{what}: {source!r}: the arguments did not evaluate")  # not reached


def profile_call(fn, args, kwargs, budget=None, remeasure=False):
    """The profile's DataFrame (its display is the annotated source)."""
    if remeasure:
        roofs.get(remeasure=True)
    m = measuring.measure(fn, args, kwargs, budget)
    return profiles.run(m)


class RooflineView:
    """The roofline chart of some profiles (image/png, with a text summary)."""

    def __init__(self, profs, theme="light"):
        from jitmagic.notebook import dashboard  # the palettes; deferred: matplotlib is heavy

        self.profiles = list(profs)
        machine = self.profiles[-1].roofs if self.profiles else roofs.get()
        self.figure = profile_views.roofline_figure(self.profiles, machine, dashboard.THEMES[theme])
        self._png = dashboard.png_bytes(self.figure)
        self._text = profile_views.roofs_text(machine)

    def _repr_mimebundle_(self, include=None, exclude=None):
        import base64

        return {
            "text/plain": "roofline: " + self._text,
            "image/png": base64.b64encode(self._png).decode("ascii"),
        }


@magics_class
class ProfileMagics(Magics):
    @magic_arguments()
    @argument(
        "call",
        nargs="*",
        help="a call of a jitted function, e.g. step(state) or f(x, n=3): its variant is "
        "compiled first if it has none (the compile is not part of the profile)",
    )
    @argument(
        "--budget",
        type=float,
        default=None,
        metavar="S",
        help="seconds spent timing the call and its instrumented twin in turns (default "
        "jm.config.profile_budget_s)",
    )
    @argument(
        "--roofline",
        action="store_true",
        help="also show the roofline chart: each region under the machine's measured roofs",
    )
    @argument(
        "--remeasure-roofs",
        action="store_true",
        help="measure the machine's bandwidth and peak again first (once per machine "
        "otherwise; do it when the machine is quiet)",
    )
    @line_magic
    def jit_profile(self, line):
        """Profile a call of a jitted function: where its run time goes, line by line.

        The call's variant runs through an instrumented twin (compiled on demand and kept
        beside it; the variant's own code and statistics are untouched) that times each region
        of the compiled code: every fused loop nest, library call (GEMM, BLAS, LAPACK),
        control-flow loop (with its iterations), and the call's own overhead (dispatch, result
        allocation, argument checks). Each region gets its source lines, time and share, bytes
        and flops counted from the IR, achieved GB/s and GFLOP/s, what bounds it (memory,
        compute, or why neither) and how far it is from this machine's measured roof, and what
        the compiler did (fused lines, vector width, threads, library, tier).

        Shows the function's source with each line shaded by its share of the call; the
        returned DataFrame has one row per region (`.profile` is the record).

        Examples::

            %jit_profile step(state)
            %jit_profile --roofline f(x, n=3)
        """
        raw = line.strip()
        opts, _, rest = _split_options(raw)
        try:
            args = parse_argstring(self.jit_profile, opts)
        except UsageError as e:
            raise UsageError(f"%jit_profile: {e}. {USAGE}") from None
        if args.budget is not None and args.budget <= 0:
            raise UsageError("%jit_profile: --budget takes a positive number of seconds")
        fn, call_args, call_kwargs = parse_call(rest, self.shell.user_ns)
        table = profile_call(fn, call_args, call_kwargs, args.budget, args.remeasure_roofs)
        if args.roofline:
            from IPython.display import display

            display(table)
            display(RooflineView([table.profile]))
            return None
        return table


def _split_options(line):
    """(the leading --options, "", the call): options come before the call expression."""
    words = line.split(" ")
    opts = []
    i = 0
    while i < len(words):
        w = words[i]
        if not w:
            i += 1
            continue
        if not w.startswith("--"):
            break
        opts.append(w)
        if w == "--budget" and i + 1 < len(words):
            opts.append(words[i + 1])
            i += 1
        i += 1
    return " ".join(opts), "", " ".join(words[i:])


# ---------------------------------------------------------------- the panel's request


def panel_answer(data, find_function):
    """The answer to the panel's {"type": "request_profile", "req", "fid", "variant"}: the
    variant profiled on the inputs its first call was made with."""
    req = data.get("req")
    try:
        f = find_function(data.get("fid"), data.get("qualname"))
        if not isinstance(f, JitFunction):
            raise NotImplementedError(
                f"profiling is not available for {getattr(f, 'backend', '?')}: it times the "
                f"regions of jitmagic's own generated code"
            )
        vid = int(data["variant"])
        v = next((x for x in f.variants if x.id == vid), None)
        if v is None:
            raise LookupError(f"{f.name} has no live variant {vid} (evicted or cleared)")
        kept = measuring.kept_inputs(v)
        if kept is None:
            raise LookupError(
                f"the inputs of variant {vid}'s first call were not kept (too large for "
                f"profile_keep_bytes, or dropped for newer variants'): run "
                f"%jit_profile {f.name}(...) in a cell instead"
            )
        args, kwargs = kept
        if f.key_of(args, kwargs)[0] != v.key:
            raise LookupError(
                f"{f.name} now compiles these inputs to another variant (a global it reads "
                f"changed): run %jit_profile {f.name}(...) in a cell instead"
            )
        table = profile_call(f, args, kwargs)
        p = table.profile
        return {"type": "profile", "req": req, "profile": profile_views.panel_data(p)}
    except Exception as e:  # the panel shows the error; the kernel carries on
        return {"type": "profile", "req": req, "error": f"{type(e).__name__}: {e}"}

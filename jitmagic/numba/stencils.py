"""numba.stencil: a kernel written with relative indices (`a[-1, 0] + a[1, 0]`), applied at
every point of the input where the whole neighbourhood is inside it; the other points of the
output hold `cval` (0 by default), as Numba's stencils do.

    @stencil
    def smooth(a):
        return 0.25 * (a[0, 1] + a[1, 0] + a[0, -1] + a[-1, 0])
    out = smooth(x)        # from Python or from njit code

How: the kernel's source is rewritten once into a function of absolute indices
(`a[i0 - 1, i1]`, the neighbourhood's extent read from its constant relative indices, or
given with neighborhood=), and a loop over the interior calls it; both are njit code,
compiled by jitmagic.njit (from Python, one njit function per stencil; inside njit code,
inline). The output's dtype is the kernel's result type at the first interior point
(the first input's dtype when no point is inside). Options other than neighborhood=, cval=
and standard_indexing= raise NotImplementedError naming them.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import textwrap

import numpy as np

_counter = itertools.count()


class Stencil:
    def __init__(self, kernel, neighborhood=None, cval=0, standard_indexing=(), **options):
        for k in options:
            raise NotImplementedError(f"numba.stencil option {k}= is not supported by jitmagic")
        self.kernel = kernel
        self.__name__ = getattr(kernel, "__name__", "stencil")
        self.__doc__ = kernel.__doc__
        self.cval = cval
        self.neighborhood = neighborhood
        self.standard = set(standard_indexing)
        self._source = None
        self._njit = None
        try:
            from jitmagic.imperative.namespace import BY_IDENTITY

            BY_IDENTITY[self] = _InNjit(self)  # (njit code calls it inline)
        except TypeError:
            pass

    # ------------------------------------------------------------ the generated code
    def _apply_function(self, ndim):
        key = ("apply", ndim)
        cache = self.__dict__.setdefault("_generated", {})
        if key not in cache:
            cache[key] = _generate(self, ndim)
        return cache[key]

    def __call__(self, *args, out=None):
        from jitmagic.imperative.function import NjitFunction

        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if not arrays:
            raise TypeError(f"stencil {self.__name__}(): the first argument must be an array")
        fn = self._apply_function(arrays[0].ndim)
        key = ("njit", arrays[0].ndim)
        cache = self.__dict__.setdefault("_generated", {})
        if key not in cache:
            cache[key] = NjitFunction(fn)
        result = cache[key](*args)
        if out is not None:
            out[...] = result
            return out
        return result

    def __repr__(self):
        return f"<stencil {self.__name__}>"


class _InNjit:
    """The stencil as njit code sees it: its loop compiled inline."""

    def __init__(self, st):
        self._st = st

    def __call__(self, *args, out=None):
        from jitmagic.imperative.function import NjitFunction

        first = args[0]
        fn = self._st._apply_function(first.ndim)
        result = NjitFunction(fn)(*args)  # (called while tracing: inlined)
        if out is not None:
            out[...] = result
            return out
        return result


def _kernel_tree(kernel):
    src = textwrap.dedent(inspect.getsource(kernel))
    tree = ast.parse(src)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise TypeError("numba.stencil decorates a function")
    fdef.decorator_list = []
    return fdef


def _relative_index(sub):
    """The constant relative index of a subscript (a tuple of ints), or None."""
    idx = sub.slice
    items = idx.elts if isinstance(idx, ast.Tuple) else [idx]
    out = []
    for it in items:
        v = it
        sign = 1
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, (ast.USub, ast.UAdd)):
            sign = -1 if isinstance(v.op, ast.USub) else 1
            v = v.operand
        if not (isinstance(v, ast.Constant) and isinstance(v.value, int)):
            return None
        out.append(sign * v.value)
    return tuple(out)


def _generate(st, ndim):
    """The Python source of `apply(*args)` for inputs of `ndim` dimensions, compiled into a
    function whose source njit can read (registered in linecache)."""
    fdef = _kernel_tree(st.kernel)
    params = [a.arg for a in fdef.args.args]
    relative = [p for p in params if p not in st.standard]
    extents = [[0, 0] for _ in range(ndim)]
    if st.neighborhood is not None:
        if len(st.neighborhood) != ndim:
            raise ValueError(
                f"stencil {st.__name__}: neighborhood has {len(st.neighborhood)} "
                f"axes for {ndim}-dimensional inputs"
            )
        extents = [[int(lo), int(hi)] for lo, hi in st.neighborhood]
    idx_names = [f"stencil_i{d}_" for d in range(ndim)]

    class Rewrite(ast.NodeTransformer):
        def visit_Subscript(self, node):
            self.generic_visit(node)
            if not (isinstance(node.value, ast.Name) and node.value.id in relative):
                return node
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(items) != ndim:
                raise NotImplementedError(
                    f"stencil {st.__name__}: {node.value.id} is indexed with {len(items)} "
                    f"indices for a {ndim}-dimensional input"
                )
            rel = _relative_index(node)
            if rel is not None and st.neighborhood is None:
                for d, r in enumerate(rel):
                    extents[d][0] = min(extents[d][0], r)
                    extents[d][1] = max(extents[d][1], r)
            elif st.neighborhood is None:
                raise NotImplementedError(
                    f"stencil {st.__name__}: a relative index that is not a constant needs "
                    "neighborhood= (Numba's rule too)"
                )
            absolute = [
                ast.BinOp(left=ast.Name(id=n, ctx=ast.Load()), op=ast.Add(), right=it)
                for n, it in zip(idx_names, items)
            ]
            node.slice = ast.Tuple(elts=absolute, ctx=ast.Load()) if ndim > 1 else absolute[0]
            return node

    fdef = Rewrite().visit(fdef)
    kname = f"stencil_kernel_{next(_counter)}_"
    fdef.name = kname
    fdef.args.args += [ast.arg(arg=n) for n in idx_names]
    ast.fix_missing_locations(fdef)
    kernel_src = ast.unparse(fdef)
    first = relative[0] if relative else params[0]
    args = ", ".join(params)
    loops, indent = [], "    "
    for d, (lo, hi) in enumerate(extents):
        loops.append(f"{indent}for {idx_names[d]} in range({-lo}, {first}.shape[{d}] - {hi}):")
        indent += "    "
    at_first = ", ".join(str(-lo) for lo, _ in extents)
    inside = (
        " and ".join(f"{first}.shape[{d}] > {hi - lo}" for d, (lo, hi) in enumerate(extents))
        or "True"
    )
    call = f"{kname}({args}, {', '.join(idx_names)})"
    apply_name = f"stencil_apply_{next(_counter)}_"
    src = "\n".join(
        [
            kernel_src,
            "",
            f"def {apply_name}({args}):",
            f"    if {inside}:",
            f"        dt = np.asarray({kname}({args}, {at_first})).dtype",
            "    else:",
            f"        dt = {first}.dtype",
            f"    out = np.full({first}.shape, {st.cval!r}, dt)",
            *["    " + line for line in []],
            *loops,
            f"{indent}out[{', '.join(idx_names)}] = {call}",
            "    return out",
            "",
        ]
    )
    filename = f"<jitmagic stencil {st.__name__} {apply_name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = dict(st.kernel.__globals__)
    ns["np"] = np
    exec(compile(src, filename, "exec"), ns)
    return ns[apply_name]


def stencil(func_or_mode="constant", **options):
    """numba.stencil, with or without options."""
    if callable(func_or_mode):
        return Stencil(func_or_mode, **options)
    if func_or_mode != "constant":
        raise NotImplementedError(
            f"numba.stencil mode {func_or_mode!r} is not supported (Numba's only mode is "
            "'constant')"
        )
    return lambda f: Stencil(f, **options)

"""Functions applied per element or per slice: vectorize, apply_along_axis, apply_over_axes,
and user-defined ufuncs (jnp.frompyfunc, jnp.ufunc). JAX maps them with vmap; here the
function is traced once as the body of lax.map, a compiled loop over the elements (or
slices), never unrolled, so it sees exactly the scalars or core slices NumPy's would."""

from __future__ import annotations

import math
import re

import numpy as np

from jitmagic import lax
from jitmagic.core.operands import asarray, aval, broadcast_to, normalize_axis, shape_of
from jitmagic.numpy import _shape


def _map(fn, xs, n):
    """fn applied to each leading row of the arrays xs (a tuple), stacked; n rows."""
    return lax.map(lambda row: fn(*row), tuple(xs))


_DIMS = r"\(([\w,\s]*)\)"


def _parse_signature(signature):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    parts = signature.replace(" ", "").split("->")
    if len(parts) != 2 or not all(re.fullmatch(rf"({_DIMS},?)*", p) for p in parts):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    return tuple([tuple(d for d in g.split(",") if d) for g in re.findall(_DIMS, p)] for p in parts)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """np.vectorize / jnp.vectorize: pyfunc sees one element (or one core slice, with a
    gufunc signature) at a time; arguments broadcast over the loop dimensions."""
    ins_core = outs_core = None
    if signature is not None:
        ins_core, outs_core = _parse_signature(signature)

    def wrapped(*args, **kwargs):
        names = [k for k in kwargs if k not in excluded]
        if names:  # traced keywords become trailing positional arguments
            fixed = {k: v for k, v in kwargs.items() if k in excluded}
            n_pos = len(args)

            def call(*a):
                return pyfunc(*a[:n_pos], **fixed, **dict(zip(names, a[n_pos:])))

            return vectorize(call, excluded=excluded, signature=signature)(
                *args, *[kwargs[k] for k in names]
            )
        idx = [i for i in range(len(args)) if i not in excluded]
        if ins_core is not None and len(ins_core) != len(idx):
            raise TypeError(
                f"wrong number of positional arguments: expected {len(ins_core)}, got {len(idx)}"
            )
        arrs = [asarray(args[i]) for i in idx]
        cores = ins_core or [()] * len(arrs)
        sizes = {}
        loops = []
        for a, core in zip(arrs, cores):
            shp = shape_of(a)
            if len(core) > len(shp):
                raise ValueError(
                    f"input with shape {shp} has fewer dimensions than the core "
                    f"dimensions {core} of the signature"
                )
            for name, d in zip(core, shp[len(shp) - len(core) :]):
                if sizes.setdefault(name, d) != d:
                    raise ValueError(
                        f"inconsistent size for core dimension {name!r}: {sizes[name]} vs {d}"
                    )
            loops.append(shp[: len(shp) - len(core)])
        loop = tuple(np.broadcast_shapes(*loops)) if loops else ()
        n = math.prod(loop)
        flat = []
        for a, core in zip(arrs, cores):
            cs = shape_of(a)[len(shape_of(a)) - len(core) :]
            flat.append(_shape.reshape(broadcast_to(a, loop + cs), (n,) + cs))

        def body(*row):
            full = list(args)
            for i, r in zip(idx, row):
                full[i] = r
            return pyfunc(*full)

        if not loop:
            return body(*[_shape.reshape(f, shape_of(f)[1:]) for f in flat])
        out = _map(body, tuple(flat), n)
        if outs_core is not None:
            n_out = len(outs_core)
            if (n_out == 1) == isinstance(out, tuple):
                raise ValueError(f"wrong number of outputs from pyfunc: the signature has {n_out}")

        def unflat(o):
            return _shape.reshape(o, loop + shape_of(o)[1:])

        return tuple(unflat(o) for o in out) if isinstance(out, tuple) else unflat(out)

    wrapped.__name__ = getattr(pyfunc, "__name__", "vectorized")
    wrapped.__doc__ = getattr(pyfunc, "__doc__", None)
    return wrapped


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    arr = asarray(arr)
    nd = aval(arr).ndim
    axis = normalize_axis(axis, nd)
    x = _shape.moveaxis(arr, axis, -1)
    batch = shape_of(x)[:-1]
    n = math.prod(batch)
    out = _map(
        lambda r: asarray(func1d(r, *args, **kwargs)), (_shape.reshape(x, (n, shape_of(x)[-1])),), n
    )
    core = shape_of(out)[1:]
    out = _shape.reshape(out, batch + core)
    # NumPy puts the function's output dimensions where the axis was
    k = len(core)
    perm = list(range(axis)) + list(range(nd - 1, nd - 1 + k)) + list(range(axis, nd - 1))
    return _shape.transpose(out, perm)


def apply_over_axes(func, a, axes):
    a = asarray(a)
    for ax in axes if isinstance(axes, (tuple, list)) else (axes,):
        nd = aval(a).ndim
        ax = ax + nd if ax < 0 else ax
        res = asarray(func(a, ax))
        if aval(res).ndim != nd:
            res = _shape.expand_dims(res, ax)
            if aval(res).ndim != nd:
                raise ValueError("function is not returning an array of the correct shape")
        a = res
    return a


class ufunc:
    """jnp.ufunc: a user function as a ufunc. Calls broadcast and map the function over
    elements; outer, reduce and accumulate are loops over one axis (lax.map / lax.scan).
    `at` and `reduceat` raise NotImplementedError."""

    def __init__(
        self,
        func,
        /,
        nin,
        nout,
        *,
        name=None,
        nargs=None,
        identity=None,
        call=None,
        reduce=None,
        accumulate=None,
        at=None,
        reduceat=None,
    ):
        for kw, v in (
            ("call", call),
            ("reduce", reduce),
            ("accumulate", accumulate),
            ("at", at),
            ("reduceat", reduceat),
        ):
            if v is not None:
                raise NotImplementedError(f"jnp.ufunc({kw}=...) is not supported by jitmagic")
        self._func = func
        self.nin, self.nout = int(nin), int(nout)
        self.nargs = nargs if nargs is not None else self.nin
        self.identity = identity
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._call = vectorize(func)

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}: out= and where= are not supported")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
        return self._call(*args)

    def outer(self, A, B, /):
        if self.nin != 2 or self.nout != 1:
            raise ValueError("outer only supported for binary ufuncs with one output")
        A, B = asarray(A), asarray(B)
        na, nb = aval(A).ndim, aval(B).ndim
        return self(
            _shape.expand_dims(A, tuple(range(na, na + nb))) if nb else A,
            _shape.expand_dims(B, tuple(range(na))) if na else B,
        )

    def _binary(self, what):
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{what} only supported for binary ufuncs with one output")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        self._binary("reduce")
        if out is not None or where is not None:
            raise NotImplementedError(f"{self.__name__}.reduce: out= and where= are not supported")
        a = asarray(a)
        if dtype is not None:
            a = _shape.astype(a, dtype)
        nd = aval(a).ndim
        if axis is None:
            x, keep = _shape.ravel(a), (1,) * nd
        else:
            ax = normalize_axis(axis, nd)
            x = _shape.moveaxis(a, ax, 0)
            keep = tuple(1 if i == ax else d for i, d in enumerate(shape_of(a)))
        if initial is None:
            initial = self.identity
        if initial is None:
            if shape_of(x)[0] == 0:
                raise ValueError(
                    f"zero-size array to reduction operation {self.__name__} which has no identity"
                )
            init, rest = x[0], x[1:]
        else:
            init = broadcast_to(_shape.astype(asarray(initial), aval(x).dtype), shape_of(x)[1:])
            rest = x
        acc, _ = lax.scan(
            lambda c, r: (_shape.astype(asarray(self._call(c, r)), aval(c).dtype), None), init, rest
        )
        return _shape.reshape(acc, keep) if keepdims else acc

    def accumulate(self, a, axis=0, dtype=None, out=None):
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"{self.__name__}.accumulate: out= is not supported")
        a = asarray(a)
        if dtype is not None:
            a = _shape.astype(a, dtype)
        ax = normalize_axis(axis, aval(a).ndim)
        x = _shape.moveaxis(a, ax, 0)
        if shape_of(x)[0] == 0:
            return a

        def step(c, r):
            c = _shape.astype(asarray(self._call(c, r)), aval(c).dtype)
            return c, c

        _, ys = lax.scan(step, x[0], x[1:])
        return _shape.moveaxis(_shape.concatenate([x[:1], ys], axis=0), 0, ax)

    def at(self, *args, **kwargs):
        raise NotImplementedError(
            f"{self.__name__}.at is not supported by jitmagic; use "
            f"x.at[idx].apply(...) or x.at[idx].set(...)"
        )

    def reduceat(self, *args, **kwargs):
        raise NotImplementedError(f"{self.__name__}.reduceat is not supported by jitmagic")


def frompyfunc(func, /, nin, nout, *, identity=None):
    return ufunc(func, nin, nout, identity=identity)


FUNCTIONS = dict(
    vectorize=vectorize,
    apply_along_axis=apply_along_axis,
    apply_over_axes=apply_over_axes,
    frompyfunc=frompyfunc,
)

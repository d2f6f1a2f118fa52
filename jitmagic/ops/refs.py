"""Primitives on references (mutable arrays in memory; core/refs.py), for njit's imperative code.

    ref_get     (r)                  -> value        the array's contents now (read lazily, in
                                                     program order: see lower/imperative.plan)
    ref_stride  (r)                  -> int64        the bytes between elements along `axis`
                                                     (known only when it runs for an 'A'
                                                     layout: a view of a view)
    ref_load    (r, *idx)            -> scalar       one element; idx bounds-checked, negative
                                                     indices counted from the end
    ref_store   (r, *idx, v)         -> ()           write one element (checked likewise)
    ref_set     (r, v)               -> ()           r[...] = v, v broadcast to r's shape
                                                     (stretch: v's axes whose size may be 1
                                                     only where the code runs)
    ref_view    (r, *scalars)        -> ref          basic indexing: ints, slices, newaxis
    ref_transpose (r)                -> ref          axes permuted (no copy)
    ref_part    (r)                  -> ref          part="real"/"imag" of a complex array
    ref_reshape (r, *dims)           -> ref          another shape of a C-contiguous reference
    ref_alloc   (*dims)              -> ref          new uninitialised array (np.empty)
    ref_new     (v)                  -> ref          new array holding v (np.array(v))

A reference's sizes that only the running code knows (a slice with traced bounds, np.empty(n))
are size symbols named in the equation's parameters (`out_shape`); the code generator gives
them their values where the equation runs. Their NumPy references operate on ndarrays (a
reference is the array itself), so the reference interpreter runs njit's IR with NumPy's
semantics.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core import shapes
from jitmagic.core.refs import RefType
from jitmagic.core.registry import shaped
from jitmagic.lower import imperative as nj
from jitmagic.ops.define import register

_I64 = np.dtype(np.int64)


def _need_ref(prim, r):
    if not isinstance(r, RefType):
        raise TypeError(f"{prim} needs a reference, got {r}")


def _need_scalars(prim, xs, kinds="iu"):
    for x in xs:
        if x.shape != () or x.dtype.kind not in kinds:
            raise TypeError(f"{prim}: indices must be integer scalars, got {x}")


# ---------------------------------------------------------------- ref_get


def _get_abstract(r):
    _need_ref("ref_get", r)
    return r.value()


register(
    "ref_get",
    "view",
    _get_abstract,
    lambda r: np.array(r, copy=True),
    lambda cg, in_aval, out_aval, idx: idx,
    takes_refs=True,
)


# ---------------------------------------------------------------- ref_stride


def _stride_abstract(r, *, axis):
    _need_ref("ref_stride", r)
    if not 0 <= axis < r.ndim:
        raise TypeError(f"ref_stride: axis {axis} of a reference of rank {r.ndim}")
    return shaped((), np.int64)


register(
    "ref_stride",
    "custom",
    _stride_abstract,
    lambda r, *, axis: np.int64(r.strides[axis]),
    lambda cg, e, outs: nj.lower_stride(cg, e, outs),
    takes_refs=True,
)


# ---------------------------------------------------------------- ref_load / ref_store


def _load_abstract(r, *idx, checked=True):
    _need_ref("ref_load", r)
    if len(idx) != r.ndim:
        raise TypeError(f"ref_load: {len(idx)} indices for a reference of rank {r.ndim}")
    _need_scalars("ref_load", idx)
    return shaped((), r.dtype)


def _load_impl(r, *idx, checked=True):
    return r[tuple(int(i) for i in idx)]


register(
    "ref_load",
    "custom",
    _load_abstract,
    _load_impl,
    lambda cg, e, outs: nj.lower_load(cg, e, outs),
    takes_refs=True,
)


def _store_abstract(r, *rest, checked=True):
    _need_ref("ref_store", r)
    idx, v = rest[:-1], rest[-1]
    if len(idx) != r.ndim:
        raise TypeError(f"ref_store: {len(idx)} indices for a reference of rank {r.ndim}")
    _need_scalars("ref_store", idx)
    if v.shape != () or v.dtype != r.dtype:
        raise TypeError(f"ref_store: the value {v} must be a {r.dtype} scalar")
    return ()


def _store_impl(r, *rest, checked=True):
    r[tuple(int(i) for i in rest[:-1])] = rest[-1]
    return ()


register(
    "ref_store",
    "custom",
    _store_abstract,
    _store_impl,
    lambda cg, e, outs: nj.lower_store(cg, e, outs),
    multiple_results=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- ref_set


def _set_abstract(r, v, stretch=()):
    _need_ref("ref_set", r)
    if isinstance(v, RefType):
        raise TypeError("ref_set takes the value to write, not a reference")
    if v.dtype != r.dtype:
        raise TypeError(f"ref_set: a {v.dtype} value for a {r.dtype} reference (cast first)")
    if v.ndim > r.ndim:
        raise ValueError(f"could not broadcast input array from shape {v.shape} into {r.shape}")
    return ()


def _set_impl(r, v, stretch=()):
    r[...] = v
    return ()


register(
    "ref_set",
    "custom",
    _set_abstract,
    _set_impl,
    lambda cg, e, outs: nj.lower_set(cg, e, outs),
    multiple_results=True,
    takes_refs=True,
    effect=True,
)


# ---------------------------------------------------------------- views

# ref_view's `index`: one entry per index element, in order:
#   ("int", k)                 integer: k is the position of a scalar operand (after r); drops
#                              the axis; bounds-checked, negative counted from the end
#   ("slice", a, b, c)         a slice; each of a, b, c is None, ("c", int) or ("d", k)
#   ("new",)                   np.newaxis
# Axes the index does not name are kept whole. out_shape: the view's shape (fresh size
# symbols where the running code computes a length); out_layout: what is known of it.


def _view_abstract(r, *scalars, index, out_shape, out_layout):
    _need_ref("ref_view", r)
    _need_scalars("ref_view", scalars)
    named = sum(1 for e in index if e[0] in ("int", "slice"))
    if named > r.ndim:
        raise IndexError(
            f"too many indices for array: array is {r.ndim}-dimensional, but {named} were indexed"
        )
    kept = sum(1 for e in index if e[0] in ("slice", "new")) + (r.ndim - named)
    if kept != len(out_shape):
        raise TypeError(f"ref_view: out_shape {out_shape} does not have rank {kept}")
    return RefType(out_shape, r.dtype, out_layout, r.readonly)


def _view_impl(r, *scalars, index, out_shape, out_layout):
    def val(spec):
        if spec is None:
            return None
        return spec[1] if spec[0] == "c" else int(scalars[spec[1]])

    key = []
    for e in index:
        if e[0] == "int":
            key.append(int(scalars[e[1]]))
        elif e[0] == "slice":
            key.append(slice(val(e[1]), val(e[2]), val(e[3])))
        else:
            key.append(np.newaxis)
    return r[tuple(key)]


register(
    "ref_view",
    "custom",
    _view_abstract,
    _view_impl,
    lambda cg, e, outs: nj.lower_view(cg, e, outs),
    takes_refs=True,
)


def _transpose_abstract(r, *, perm):
    _need_ref("ref_transpose", r)
    if sorted(perm) != list(range(r.ndim)):
        raise ValueError(f"axes {perm} don't match array of rank {r.ndim}")
    layout = "A"
    if r.layout == "C" and list(perm) == list(range(r.ndim))[::-1]:
        layout = "F"
    elif r.layout == "F" and list(perm) == list(range(r.ndim))[::-1]:
        layout = "C"
    elif r.layout != "A" and list(perm) == list(range(r.ndim)):
        layout = r.layout
    return RefType(tuple(r.shape[p] for p in perm), r.dtype, layout, r.readonly)


register(
    "ref_transpose",
    "custom",
    _transpose_abstract,
    lambda r, *, perm: np.transpose(r, perm),
    lambda cg, e, outs: nj.lower_transpose(cg, e, outs),
    takes_refs=True,
)


def _part_abstract(r, *, part):
    _need_ref("ref_part", r)
    if r.dtype.kind != "c":
        raise TypeError(f"ref_part needs a complex reference, got {r}")
    real = np.dtype(np.float64 if r.dtype == np.complex128 else np.float32)
    return RefType(r.shape, real, "A" if r.ndim else "C", r.readonly)


register(
    "ref_part",
    "custom",
    _part_abstract,
    lambda r, *, part: r.real if part == "real" else r.imag,
    lambda cg, e, outs: nj.lower_part(cg, e, outs),
    takes_refs=True,
)


def _reshape_abstract(r, *dims, out_shape, binds):
    _need_ref("ref_reshape", r)
    _need_scalars("ref_reshape", dims)
    if r.layout != "C":
        raise TypeError("ref_reshape needs a C-contiguous reference")
    return RefType(out_shape, r.dtype, "C", r.readonly)


def _reshape_impl(r, *dims, out_shape, binds):
    env = {name: int(d) for name, d in zip(binds, dims)}
    shape = [shapes.evaluate(d, env) for d in out_shape]
    if not np.shares_memory(r.reshape(shape), r) and r.size:
        raise ValueError("reshape of this array would copy it")
    return r.reshape(shape)


register(
    "ref_reshape",
    "custom",
    _reshape_abstract,
    _reshape_impl,
    lambda cg, e, outs: nj.lower_reshape(cg, e, outs),
    takes_refs=True,
)


# ---------------------------------------------------------------- new arrays


# ref_alloc's operands are the sizes only the running code knows, each the value of one size
# symbol named in `binds`; out_shape may also hold sizes known otherwise (ints, arguments' sizes)


def _alloc_abstract(*dims, dtype, out_shape, binds, layout="C"):
    _need_scalars("ref_alloc", dims)
    if len(dims) != len(binds):
        raise TypeError("ref_alloc: one size operand per symbol it binds")
    return RefType(out_shape, dtype, layout)


def _alloc_impl(*dims, dtype, out_shape, binds, layout="C"):
    env = {name: int(d) for name, d in zip(binds, dims)}
    for n in env.values():
        if n < 0:
            raise ValueError("negative dimensions are not allowed")
    shape = [shapes.evaluate(d, env) for d in out_shape]
    return np.empty(shape, dtype, order="F" if layout == "F" else "C")


register(
    "ref_alloc",
    "custom",
    _alloc_abstract,
    _alloc_impl,
    lambda cg, e, outs: nj.lower_alloc(cg, e, outs),
    takes_refs=True,
    effect=True,
)


def _new_abstract(v, *, layout="C"):
    if isinstance(v, RefType):
        raise TypeError("ref_new takes a value")
    return RefType(v.shape, v.dtype, layout)


register(
    "ref_new",
    "custom",
    _new_abstract,
    lambda v, *, layout="C": np.array(v, order="F" if layout == "F" else "C", copy=True),
    lambda cg, e, outs: nj.lower_new(cg, e, outs),
    effect=True,
)

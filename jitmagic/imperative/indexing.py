"""Advanced indexing in njit code (integer arrays, boolean masks), with NumPy's semantics: a
read makes a new array; an integer index out of range raises IndexError (negative indices
count from the end); a write updates the array in place, element by element in NumPy's order
(a repeated index keeps the last value).

Every form is reduced to a few loops written in Python (imperative/library.py) compiled into
the function as the user's loops are: the basic items of the index (ints and slices) become a
view first, a boolean mask becomes the positions where it holds, and the one remaining array
index gathers or scatters rows of that view.
"""

from __future__ import annotations

import numpy as np

from jitmagic.core.shapes import Dim
from jitmagic.core.tracing import Tracer, bind, current_trace
from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative import library
from jitmagic.imperative.tracers import RefTracer, _as_dtype, transpose, view_of

_I64 = np.dtype(np.int64)


def _is_array(i):
    if isinstance(i, Tracer):
        return i.aval.ndim > 0
    return isinstance(i, (list, np.ndarray)) and np.ndim(i) > 0


def _is_basic(i):
    return i is None or isinstance(i, slice) or not _is_array(i)


def _is_int_item(i):
    if isinstance(i, bool):
        return False
    if isinstance(i, (int, np.integer, Dim)):
        return True
    return isinstance(i, Tracer) and i.aval.ndim == 0 and i.aval.dtype.kind in "iu"


def _dtype(i):
    return i.aval.dtype if isinstance(i, Tracer) else np.asarray(i).dtype


def _tracer(x):
    """A traced array (a reference, so the helpers' loops load its elements) for x."""
    from jitmagic.imperative.namespace import _new

    if isinstance(x, RefTracer):
        return x
    if isinstance(x, Tracer):
        return _new(x)
    t = current_trace()
    return _new(t.tracer_type(t, t.to_atom(np.asarray(x))))


def _same(a, b):
    return a is b or (isinstance(a, int) and isinstance(b, int) and a == b) or a == b


def _mask_matches(mask_shape, shape, axis):
    for k, (m, n) in enumerate(zip(mask_shape, shape[axis:])):
        if isinstance(m, int) and isinstance(n, int) and m != n:
            raise IndexError(
                f"boolean index did not match indexed array along axis {axis + k}; size of "
                f"axis is {n} but size of corresponding boolean axis is {m}"
            )


def _whole(i):
    """Is the index item i `:` (a traced int is compared as an object, not as a value)?"""
    return isinstance(i, slice) and i == slice(None)


def _split(r, items):
    """(view, k, array): the basic items applied as a view of r, the one array index left and
    its axis in the view; `k` is None when the result's new axis goes first (NumPy's rule for
    advanced indices separated by a slice)."""
    arrays = [n for n, i in enumerate(items) if _is_array(i)]
    if len(arrays) != 1:
        raise NjitUnsupportedError(
            "njit supports one integer or boolean array in an index (x[idx], x[:, idx], "
            "x[mask], x[idx, 3]) and two 1-d integer arrays for a 2-d array (x[i, j]); this "
            "index has a combination it does not support yet: index in a loop instead"
        )
    (pos,) = arrays
    adv = [n for n, i in enumerate(items) if n == pos or _is_int_item(i)]
    contiguous = max(adv) - min(adv) + 1 == len(adv)
    basic = tuple(slice(None) if n == pos else i for n, i in enumerate(items))
    view = view_of(r, basic) if not all(_whole(i) for i in basic) else r
    axis = sum(1 for n, i in enumerate(items[:pos]) if not _is_int_item(i) and i is not None)
    axis += sum(1 for i in items[:pos] if i is None)
    return view, axis, items[pos], contiguous


def _positions(idx, view, axis):
    """An integer-array or 1-d boolean index along `axis` of view, as traced int64 positions."""
    if _dtype(idx).kind == "b":
        shp = idx.aval.shape if isinstance(idx, Tracer) else np.shape(idx)
        if len(shp) != 1:
            raise NjitUnsupportedError(
                "a boolean mask with fewer dimensions than the array, combined with other "
                "items, is not supported by njit: use a 1-d mask per axis"
            )
        _mask_matches(shp, view.shape, axis)
        if not isinstance(idx, Tracer):
            return _tracer(np.flatnonzero(idx).astype(np.int64))
        return library.call(library.nonzero_flat, _tracer(idx))
    if _dtype(idx).kind not in "iu":
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    if not isinstance(idx, Tracer):
        return _tracer(np.asarray(idx).astype(np.int64))
    if idx.aval.dtype != _I64:
        idx = idx.astype(np.int64)
    return _tracer(idx)


def _front(view, axis):
    """view with `axis` moved first (a view), and the permutation that undoes it."""
    if axis == 0:
        return view, None
    perm = (axis,) + tuple(a for a in range(view.ndim) if a != axis)
    back = tuple(int(np.argsort(perm)[a]) for a in range(view.ndim))
    return transpose(view, perm), back


def _full_mask(r, items):
    (m,) = items
    return _is_array(m) and _dtype(m).kind == "b" and np.ndim(m) == r.ndim and r.ndim > 1


def _points(r, items):
    return (
        r.ndim == 2
        and len(items) == 2
        and all(_is_array(i) and _dtype(i).kind in "iu" and np.ndim(i) == 1 for i in items)
    )


def _require_in_bounds(pos, n, axis):
    """Every index of `pos` within an axis of size n, checked before anything is written
    (NumPy validates the whole index first: a failed assignment leaves the array as it was)."""
    nv = bind("dim_value", dim=n) if not isinstance(n, int) else np.int64(n)
    v = pos.value()
    inside = (v >= -nv) & (v < nv)
    if isinstance(v.shape[0], int):
        bad = v[np.argmin(inside)] if v.shape[0] != 0 else np.int64(0)
    else:
        # a length only the running code knows may be 0 there: one in-bounds 0 joins both
        # (argmin then finds the first bad index, or that 0)
        bad = np.concatenate([v, np.zeros(1, v.dtype)])[
            np.argmin(np.concatenate([inside, np.ones(1, np.bool_)]))
        ]
    bind(
        "nj_require",
        np.all(inside),
        bad,
        nv,
        exc="IndexError",
        message=f"index {{0}} is out of bounds for axis {axis} with size {{1}}",
    )


def _check_same_length(i, j):
    a, b = i.shape[0], j.shape[0]
    if isinstance(a, int) and isinstance(b, int) and a != b:
        raise IndexError(
            f"shape mismatch: indexing arrays could not be broadcast together with shapes "
            f"({a},) ({b},)"
        )


def gather(r, items):
    """r[items] for an index with an array in it: a new array."""
    if len(items) == 1 and _full_mask(r, items):
        (m,) = items
        _mask_matches(np.shape(m) if not isinstance(m, Tracer) else m.aval.shape, r.shape, 0)
        flat_m = _tracer(m).ravel() if isinstance(m, Tracer) else _tracer(np.ravel(m))
        return library.call(library.compress_flat, r.ravel(), flat_m)
    if _points(r, items):
        i, j = (_positions(x, r, a) for a, x in enumerate(items))
        _check_same_length(i, j)
        return library.call(library.take_points, r, i, j)
    if sum(1 for i in items if _is_array(i)) > 1:
        return _gather_many(r, items)
    view, axis, idx, contiguous = _split(r, items)
    shp = idx.aval.shape if isinstance(idx, Tracer) else np.shape(idx)
    pos = _positions(idx, view, axis)
    if len(shp) > 1 and _dtype(idx).kind in "iu":
        pos = pos.ravel()
    front, back = _front(view, axis)
    out = library.call(library.take_rows, front, pos)
    if len(shp) > 1 and _dtype(idx).kind in "iu":
        out = out.reshape(tuple(shp) + tuple(front.shape[1:]))
        if back is not None:
            back = _widen(back, len(shp))
    if back is not None and contiguous:
        out = transpose(out, back)
    return out


def _gather_many(r, items):
    """r[items] with several integer arrays (and ints) in the index: NumPy's rule, the arrays
    broadcast together to a shape B that replaces the axes they index, where the first of them
    is when they are adjacent in the index, else first. The indexed axes are moved first and
    flattened into one, each point's position in it computed from its indices (checked, negative
    from the end), and the rows at those positions taken."""
    from jitmagic.imperative.namespace import _new

    if any(_is_array(i) and _dtype(i).kind == "b" for i in items):
        raise NjitUnsupportedError(
            "a boolean mask together with other arrays in one index is not supported by njit: "
            "index with np.nonzero(mask) instead",
            construct="a boolean mask with other index arrays",
        )
    adv = [n for n, i in enumerate(items) if _is_array(i) or _is_int_item(i)]
    contiguous = max(adv) - min(adv) + 1 == len(adv)
    basic = tuple(slice(None) if n in adv else i for n, i in enumerate(items))
    view = view_of(r, basic) if not all(_whole(i) for i in basic) else r
    # the view's axis of each advanced item (None items add axes before it)
    axes, ax = [], 0
    for n, i in enumerate(items):
        if n in adv:
            axes.append(ax)
        if i is None or n in adv or isinstance(i, slice):
            ax += 1
    for i in items:
        if i is Ellipsis:
            raise IndexError("an index can only have a single ellipsis ('...')")
    rest = [a for a in range(view.ndim) if a not in axes]
    front = transpose(view, tuple(axes) + tuple(rest)) if axes != list(range(len(axes))) else view
    vals = []
    for n in adv:
        i = items[n]
        v = i.value() if isinstance(i, RefTracer) else i
        if not isinstance(v, Tracer):
            v = np.asarray(v)
        if _dtype(v).kind not in "iu":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        vals.append(v.astype(np.int64) if isinstance(v, Tracer) else v.astype(np.int64))
    shape_b = np.broadcast_shapes(*[tuple(v.shape) for v in vals])
    flat = None
    for v, a in zip(vals, axes):
        n_ax = view.shape[a]
        pos = _tracer(np.broadcast_to(v, shape_b).ravel() if shape_b else np.reshape(v, (1,)))
        _require_in_bounds(pos, n_ax, a)
        nv = bind("dim_value", dim=n_ax) if not isinstance(n_ax, int) else np.int64(n_ax)
        p = pos.value()
        p = np.where(p < 0, p + nv, p)
        flat = p if flat is None else flat * nv + p
    lead = 1
    for a in axes:
        lead = lead * view.shape[a]
    rows = _new(front.value().reshape((lead,) + tuple(front.shape[len(axes) :])))
    out = library.call(library.take_rows, rows, _tracer(flat))
    out = out.reshape(tuple(shape_b) + tuple(front.shape[len(axes) :]))
    if contiguous and axes[0] != 0:
        nb, at = len(shape_b), axes[0]
        perm = tuple(range(nb, nb + at)) + tuple(range(nb)) + tuple(range(nb + at, out.ndim))
        out = transpose(out, perm)
    return out


def _widen(back, n):
    """The inverse permutation `back` (for a one-axis index) for an index of n axes."""
    perm = [b if b == 0 else b + n - 1 for b in back]
    at = perm.index(0)
    return tuple(perm[:at] + list(range(n)) + perm[at + 1 :])


def _value_for(r, value):
    v = _as_dtype(value, r.dtype, "setitem")
    if isinstance(v, Tracer) and v.aval.ndim == 0:
        return v
    if not isinstance(v, Tracer) and np.ndim(v) == 0:
        return v
    return _tracer(v)  # a copy: NumPy reads a value overlapping the target before writing


def scatter(r, items, value):
    """r[items] = value for an index with an array in it, in place."""
    v = _value_for(r, value)
    vnd = v.ndim if isinstance(v, Tracer) else 0
    if len(items) == 1 and _full_mask(r, items):
        (m,) = items
        _mask_matches(np.shape(m) if not isinstance(m, Tracer) else m.aval.shape, r.shape, 0)
        if vnd > 1:
            raise ValueError(
                "NumPy boolean array indexing assignment requires a 0 or 1-dimensional input"
            )
        helper = {2: library.put_mask_2d, 3: library.put_mask_3d}.get(r.ndim)
        if helper is None:
            raise NjitUnsupportedError(
                "assigning through a boolean mask of more than 3 dimensions is not supported "
                "by njit: reshape the array and the mask to 1-d views"
            )
        _check_mask_values(m, v, vnd)
        library.call(helper, r, _tracer(m), _scalar_or(v))
        return
    if _points(r, items):
        i, j = (_positions(x, r, a) for a, x in enumerate(items))
        _check_same_length(i, j)
        _require_in_bounds(i, r.shape[0], 0)
        _require_in_bounds(j, r.shape[1], 1)
        library.call(library.put_points, r, i, j, _scalar_or(v))
        return
    view, axis, idx, contiguous = _split(r, items)
    shp = idx.aval.shape if isinstance(idx, Tracer) else np.shape(idx)
    if len(shp) > 1 and _dtype(idx).kind in "iu":
        raise NjitUnsupportedError(
            "assigning through a multi-dimensional integer index is not supported by njit: "
            "ravel the index, or assign in a loop"
        )
    if not contiguous and axis != 0:
        raise NjitUnsupportedError(
            "assigning through an index whose integer items are separated by a slice is not "
            "supported by njit: assign in a loop"
        )
    if _dtype(idx).kind == "b" and len(shp) == 1 and view.ndim == 1:
        _mask_matches(shp, view.shape, 0)
        _check_mask_values(idx, v, vnd)
        library.call(library.put_mask_flat, view, _tracer(idx), _scalar_or(v))
        return
    pos = _positions(idx, view, axis)
    front, back = _front(view, axis)
    if back is not None and vnd > 1:
        # v is laid out as the indexed result (the index's axis at `axis`): move it first too
        vperm = (axis,) + tuple(a for a in range(vnd) if a != axis) if vnd == view.ndim else None
        if vperm is None:
            raise NjitUnsupportedError(
                "broadcasting a value of fewer dimensions into x[:, idx] = v is not supported "
                "by njit: give v the result's shape"
            )
        v = transpose(v, vperm)
    _check_row_values(pos, v, vnd, front.ndim)
    _require_in_bounds(pos, front.shape[0], axis)
    library.call(library.put_rows, front, pos, _scalar_or(v))


def _scalar_or(v):
    """Scalars reach the helpers as 0-d traced values (they test v.ndim)."""
    if isinstance(v, Tracer):
        return v
    t = current_trace()
    return t.tracer_type(t, t.to_atom(np.asarray(v)))


def _check_mask_values(m, v, vnd):
    if vnd == 1 and isinstance(m, np.ndarray) and isinstance(v.shape[0], int):
        n = int(np.count_nonzero(m))
        if v.shape[0] not in (1, n):
            raise ValueError(
                f"NumPy boolean array indexing assignment cannot assign {v.shape[0]} input "
                f"values to the {n} output values where the mask is true"
            )


def _check_row_values(pos, v, vnd, ndim):
    if vnd == ndim and vnd:
        a, b = v.shape[0], pos.shape[0]
        if isinstance(a, int) and isinstance(b, int) and a not in (1, b):
            raise ValueError(
                f"shape mismatch: value array of shape {tuple(v.shape)} could not be broadcast "
                f"to indexing result of shape ({b},{','.join(str(s) for s in v.shape[1:])})"
            )

"""A list's operations as njit code (imperative/lists.py's runtime lists): each works on the
list's buffer `buf` (a 1-d array whose length is the capacity) and its length `n`, and is
compiled inline as the user's code is (lists.py calls them through library.call). A helper
that changes the list returns the new (buf, n): a buffer that is full is replaced by one twice
as long (amortised doubling), so n appends cost O(n).
"""

from __future__ import annotations

import numpy as np

from jitmagic.errors import NjitUnsupportedError


def grown(buf, n, need):
    """buf, or a buffer of at least `need` elements holding buf[:n] (twice as long or more)."""
    if need > buf.shape[0]:
        cap = 2 * buf.shape[0] + 8
        if cap < need:
            cap = need
        new = np.empty(cap, buf.dtype)
        for k in range(n):
            new[k] = buf[k]
        buf = new
    return buf


def room(buf, n):
    """buf, or twice as long a copy when it is full (an append's room)."""
    if n == buf.shape[0]:
        new = np.empty(2 * n + 8, buf.dtype)
        for k in range(n):
            new[k] = buf[k]
        buf = new
    return buf


def position(n, i, what):
    """lst[i]'s position: negative counts from the end; IndexError out of range."""
    if i < 0:
        i = i + n
    if i < 0 or i >= n:
        if what == 0:
            raise IndexError("list index out of range")
        raise IndexError("list assignment index out of range")
    return i


def get(buf, n, i):
    return buf[position(n, i, 0)]


def put(buf, n, i, v):
    buf[position(n, i, 1)] = v


def pop(buf, n, i):
    if n == 0:
        raise IndexError("pop from empty list")
    if i < 0:
        i = i + n
    if i < 0 or i >= n:
        raise IndexError("pop index out of range")
    v = buf[i]
    for k in range(i, n - 1):
        buf[k] = buf[k + 1]
    return v, n - 1


def insert(buf, n, i, v):
    """list.insert: i clamped to [0, n] as Python does (negative from the end)."""
    if i < 0:
        i = i + n
        if i < 0:
            i = 0
    if i > n:
        i = n
    buf = grown(buf, n, n + 1)
    for k in range(n, i, -1):
        buf[k] = buf[k - 1]
    buf[i] = v
    return buf, n + 1


def extend_from(buf, n, src, m):
    """The m elements of src (an array) appended."""
    buf = grown(buf, n, n + m)
    for k in range(m):
        buf[n + k] = src[k]
    return buf, n + m


def repeated(src, m, times):
    """The m elements of src, `times` times over (lst * times), in a new buffer."""
    if times < 0:
        times = 0
    out = np.empty(m * times + 8, src.dtype)
    for r in range(times):
        for k in range(m):
            out[r * m + k] = src[k]
    return out, m * times


def fill_column(out, buf, n, j):
    """out[:, j] = buf[:n] (a list of tuples as an (n, k) array, one field at a time)."""
    for r in range(n):
        out[r, j] = buf[r]


def find(buf, n, v):
    """The first position holding v, or -1."""
    at = -1
    for k in range(n):
        if buf[k] == v:
            at = k
            break
    return at


def count(buf, n, v):
    c = 0
    for k in range(n):
        if buf[k] == v:
            c += 1
    return c


def index(buf, n, v):
    at = find(buf, n, v)
    if at < 0:
        raise ValueError("list.index(x): x not in list")
    return at


def remove(buf, n, v):
    at = find(buf, n, v)
    if at < 0:
        raise ValueError("list.remove(x): x not in list")
    for k in range(at, n - 1):
        buf[k] = buf[k + 1]
    return n - 1


def reverse(buf, n):
    for k in range(n // 2):
        t = buf[k]
        buf[k] = buf[n - 1 - k]
        buf[n - 1 - k] = t


def sort(buf, n):
    buf[:n].sort()


def nonempty(n, what):
    if n == 0:
        raise ValueError(what)


def sliced(buf, n, start, stop, step, has_start, has_stop):
    """lst[start:stop:step] as a new buffer and its length (Python's clamping of the bounds)."""
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step > 0:
        lo = 0
        hi = n
        if has_start:
            lo = start
            if lo < 0:
                lo = lo + n
                if lo < 0:
                    lo = 0
            if lo > n:
                lo = n
        if has_stop:
            hi = stop
            if hi < 0:
                hi = hi + n
                if hi < 0:
                    hi = 0
            if hi > n:
                hi = n
        m = (hi - lo + step - 1) // step
    else:
        lo = n - 1
        hi = -1
        if has_start:
            lo = start
            if lo < 0:
                lo = lo + n
                if lo < 0:
                    lo = -1
            if lo > n - 1:
                lo = n - 1
        if has_stop:
            hi = stop
            if hi < 0:
                hi = hi + n
                if hi < 0:
                    hi = -1
            if hi > n - 1:
                hi = n - 1
        m = (lo - hi - step - 1) // (-step)
    if m < 0:
        m = 0
    out = np.empty(m + 8, buf.dtype)
    for k in range(m):
        out[k] = buf[lo + k * step]
    return out, m


# ---------------------------------------------------------------- lists of rows (rowlists.py)
# A list of rows keeps its rows one after another in `buf` (flat), its row count `n` and its
# row shape, one size per axis (fixed by the first row: every later row is checked against it).


def row_size(n, fixed, size, axis):
    """The row shape's size on `axis` once a row of that size is added: any while the list
    is empty, else the one it has (NumPy's ValueError for rows of different shapes, raised
    when the row is added: njit's list keeps rows of one shape)."""
    if n == 0:
        return size
    if size != fixed:
        raise ValueError(
            f"setting an array element with a sequence. The requested array has an "
            f"inhomogeneous shape after {axis + 1} dimensions (njit: the row added at position "
            f"{n} has size {size} on axis {axis}, the list's rows {fixed}; a list of rows "
            f"holds rows of one shape)"
        )
    return fixed


def put_row(buf, at, row, size):
    """buf[at:at + size] = row (a 1-d array of `size` elements; buf has room: grown)."""
    for k in range(size):
        buf[at + k] = row[k]


def get_row(buf, n, i, size):
    """A new 1-d array holding row i (negative from the end; IndexError out of range)."""
    k = position(n, i, 0)
    out = np.empty(size, buf.dtype)
    for j in range(size):
        out[j] = buf[k * size + j]
    return out


def rows_array(buf, total, out):
    """out (a new array, flat view) = the first `total` elements of buf."""
    for k in range(total):
        out[k] = buf[k]


def rows_head(buf, total):
    """A new array holding the first `total` elements of buf."""
    out = np.empty(total, buf.dtype)
    for k in range(total):
        out[k] = buf[k]
    return out


def some_elements(total):
    """np.array of lists of numbers that are all empty is float64 in NumPy, whatever type
    njit gave the lists: refused when it happens."""
    if total == 0:
        raise NjitUnsupportedError(
            "np.array of a list of empty lists: NumPy gives a float64 array, njit's has the "
            "lists' element type; start the lists with floats or test their length first"
        )


def rows_nonempty(n, what):
    """np.array of an empty list of rows is NumPy's 1-d empty array: another rank than the
    rows' array njit compiled for, so refused when it happens."""
    if n == 0:
        if what == 0:
            raise NjitUnsupportedError(
                "np.array of an empty list of rows: NumPy gives a 1-d array of shape (0,), "
                "njit's array has the rank of the rows plus one; test len(rows) first"
            )
        if what == 1:
            raise ValueError("need at least one array to concatenate")
        raise ValueError("need at least one array to stack")

"""str() and f-strings of values known only when njit code runs, for the two places Python
code shows them: exception messages (`raise ValueError(f"bad n={n}")`) and print().

While tracing, `str(x)` or `f"{x:.3f}"` of a traced scalar returns a placeholder (a numbered
marker with the format spec) and remembers the value; string concatenation and f-strings
carry the marker along as text. `split(text)` turns a message holding markers into a
template with one typed field per value ({i0}, {f1:.3f}, {b2}, {c3}, {s4} for a float32)
and the values to pass with the raise or the print; the running code stores them as int64
bits and Python formats the template when it raises (lower/imperative.py format_message).
A marker that reaches anything else (a comparison, a dict key, a returned string) would
make Python decide on a placeholder instead of the value: `check_consumed` refuses the
function by name then.
"""

from __future__ import annotations

import re

import numpy as np

from jitmagic.core.tracing import bind
from jitmagic.errors import NjitUnsupportedError

_MARK = re.compile("\x00(\\d+)\x01([^\x02]*)\x02")
_F64, _I64 = np.dtype(np.float64), np.dtype(np.int64)


def _texts():
    from jitmagic.imperative.tracers import state

    st = state()
    if not hasattr(st, "texts"):
        st.texts = {}  # marker number -> [traced value, consumed]
    return st.texts


def placeholder(x, spec=None):
    """The text standing for str(x) (spec None) or format(x, spec) of the traced scalar x."""
    v = x.value() if hasattr(x, "value") and callable(x.value) else x
    if v.aval.ndim:
        raise NjitUnsupportedError(
            "str() or an f-string of an array inside njit code: only values known when the "
            "code runs can be formatted there (into an exception message or print()); "
            "format the returned array outside",
            construct="str() of an array",
        )
    if v.aval.dtype.kind not in "biufc":
        raise NjitUnsupportedError(f"str() of a {v.aval.dtype} value inside njit code")
    texts = _texts()
    n = len(texts)
    texts[n] = [v, False]
    # str() of a float32 is NumPy's shortest text ('0.1'); format() goes through a Python
    # float ('0.10000000149011612'), as NumPy's float32.__format__ does
    mark = "=" if spec is None and v.aval.dtype == np.float32 else ""
    return f"\x00{n}\x01{mark}{spec or ''}\x02"


def has_markers(text):
    return isinstance(text, str) and "\x00" in text


def split(text, first=0):
    """(template, values) of a message: its markers as typed fields numbered from `first`,
    the values (int64 or float64 tracers, two for a complex) in that order."""
    texts = _texts()
    values = []
    out = []
    pos = 0
    for m in _MARK.finditer(text):
        out.append(_escape(text[pos : m.start()]))
        entry = texts[int(m.group(1))]
        entry[1] = True
        v, spec = entry[0], m.group(2)
        k = first + len(values)
        kind = v.aval.dtype.kind
        if spec.startswith("="):
            kind, spec = "s", spec[1:]  # (carried as float64, shown as str of a float32)
        if kind == "c":
            values.append(bind("real", v))
            values.append(bind("imag", v))
            values[-2:] = [_as(x, _F64) for x in values[-2:]]
        else:
            values.append(_as(v, _F64 if kind in "fs" else _I64))
        conv = "!s" if kind == "s" else ""  # (str(), not format(): see placeholder)
        out.append("{" + f"{kind}{k}{conv}" + (f":{spec}" if spec else "") + "}")
        pos = m.end()
    out.append(_escape(text[pos:]))
    return "".join(out), values


def field(x, k):
    """(template field, values) for a traced scalar passed as an exception's argument."""
    template, values = split(placeholder(x), k)
    return template, values


def _as(v, dt):
    if v.aval.dtype == dt:
        return v
    return bind("convert_element_type", v, new_dtype=dt, weak_type=False)


def _escape(s):
    return s.replace("{", "{{").replace("}", "}}")


def check_consumed():
    """At the end of a trace: every formatted value went into a message or a print."""
    from jitmagic.imperative.tracers import state

    texts = getattr(state(), "texts", None) or {}
    if any(not used for _, used in texts.values()):
        raise NjitUnsupportedError(
            "a str() or f-string of a value known only when the code runs was used for "
            "something other than an exception message or print() (compared, stored or "
            "returned): njit formats such values only into messages",
            construct="str() of a traced value",
        )

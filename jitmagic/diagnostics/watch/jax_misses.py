"""JAX's cache-miss explanations (`jax_explain_cache_misses`) as tracker Reasons.

JAX explains each tracing-cache miss of a user function by logging text. While it does, its
explain() frame holds the keys it compared; jitmagic reads them and diffs them by its own
rules (keys.py). Should JAX's internals differ, the text alone is parsed into the same
fields: function, where, changed argument, old and new value.
"""

from __future__ import annotations

import inspect
import re
import sys

from jitmagic.core import pytree
from jitmagic.diagnostics import tracker
from jitmagic.diagnostics.watch import keys
from jitmagic.dispatch import identity

_HEAD = re.compile(r"TRACING CACHE MISS at (?P<callsite>.*?):\n")
_NEVER = re.compile(
    r"never seen function:\n\s+(?P<name>\S+) id=\d+"
    r"(?: defined at (?P<where>\S+))?"
)
_FOR = re.compile(r"\n  for (?P<name>\S+)(?: defined at (?P<where>\S+))?\n")
_TYPE = re.compile(r"^\s*\* at (?P<arg>.+?), now (?P<new>\S+) and before (?P<old>\S+)$", re.M)
_TREE = re.compile(
    r"^\s*\* at input path (?P<path>.+?), now (?P<new>.+?) and before "
    r"(?P<old>.+?), so (?P<why>.*)$",
    re.M,
)
_STATIC = re.compile(r"Static\(val=(.*)\)")


def explaining_frame():
    """What JAX's explain() had in hand (the function, its argument names and abstract
    values), read from its frame: the full signature of every compile, and parameter names
    for positional statics. None when JAX's internals differ; the text alone is then used."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_name != "explain":
        f = f.f_back
    if f is None:
        return None
    loc = f.f_locals
    try:
        fun, flat = loc["fun"], loc["in_avals"]
        params = list(inspect.signature(fun).parameters)
        info = keys.jax_info_from_flat(flat, params)
        history = [
            keys.jax_info_from_flat(k[1][0], params)
            for k in loc["keys"]
            if isinstance(k, (list, tuple)) and len(k) > 1
        ]
    except Exception:
        return None
    return {"fun": fun, "params": params, "info": info, "history": history}


def parse_explanation(msg, frame=None):
    """JAX's cache-miss text -> {name, where, callsite, reasons, statics, signature}; `frame`
    (from explaining_frame) completes the signature and names positional statics."""
    head = _HEAD.match(msg)
    callsite = head.group("callsite") if head else ""
    params = frame["params"] if frame else []
    m = _NEVER.search(msg)
    if m:
        info = frame["info"] if frame else None
        return {
            "name": m.group("name"),
            "where": _where_text(m.group("where") or callsite),
            "callsite": callsite,
            "statics": info.statics if info else {},
            "signature": info.signature() if info else "",
            "reasons": [tracker.Reason("new_function", None, None, None, "new function")],
        }
    m = _FOR.search(msg)
    if not m:
        return None
    if frame and frame["history"]:
        # the keys JAX compared, diffed by jitmagic's rules: the closest key by fewest
        # differences (JAX's text ranks a pytree difference before a type difference)
        info = frame["info"]
        return {
            "name": m.group("name"),
            "where": _where_text(m.group("where") or callsite),
            "callsite": callsite,
            "statics": info.statics,
            "signature": info.signature(),
            "reasons": tracker.explain_miss(frame["history"], info),
        }
    reasons, statics, sig = [], {}, []
    for t in _TYPE.finditer(msg):
        arg, new, old = t.group("arg"), t.group("new"), t.group("old")
        reasons.extend(_type_reasons(arg, old, new))
        sig.append(f"{arg}:{new}")
    for t in _TREE.finditer(msg):
        arg = _path_name(t.group("path"), params)
        new_s, old_s = _STATIC.search(t.group("new")), _STATIC.search(t.group("old"))
        if new_s and old_s:
            statics[arg] = _Shown(new_s.group(1))
            reasons.append(
                tracker.Reason(
                    "static_value",
                    arg,
                    old_s.group(1),
                    new_s.group(1),
                    f"static argument '{arg}' changed: {old_s.group(1)} -> {new_s.group(1)}",
                )
            )
        else:
            reasons.append(
                tracker.Reason(
                    "pytree",
                    arg,
                    t.group("old"),
                    t.group("new"),
                    f"pytree structure of '{arg}' changed: {t.group('why')}",
                )
            )
    if not reasons:
        detail = msg.split("For the closest previous key:", 1)[-1].strip()
        reasons.append(tracker.Reason("other", None, None, None, f"JAX: {detail}"))
    return {
        "name": m.group("name"),
        "where": _where_text(m.group("where") or callsite),
        "callsite": callsite,
        "reasons": reasons,
        "statics": statics,
        "signature": ", ".join(sig),
    }


_SHORT = re.compile(r"(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?P<weak>\{weak_type=\w+\})?")


def _type_reasons(arg, old, new):
    a, b = _SHORT.fullmatch(old), _SHORT.fullmatch(new)
    if not (a and b):
        return [
            tracker.Reason("dtype", arg, old, new, f"argument '{arg}' type changed: {old} -> {new}")
        ]
    out = []
    if a.group("shape") != b.group("shape"):
        out.append(
            tracker.Reason(
                "shape", arg, old, new, f"argument '{arg}' shape changed: {old} -> {new}"
            )
        )
    if a.group("dtype") != b.group("dtype"):
        out.append(
            tracker.Reason(
                "dtype", arg, old, new, f"argument '{arg}' dtype changed: {old} -> {new}"
            )
        )
    elif a.group("weak") != b.group("weak"):
        out.append(
            tracker.Reason(
                "weak_type",
                arg,
                old,
                new,
                f"argument '{arg}' weak type changed: {old} -> {new} (a Python scalar vs an array)",
            )
        )
    return out or [
        tracker.Reason("dtype", arg, old, new, f"argument '{arg}' type changed: {old} -> {new}")
    ]


class _Shown(str):
    """A value known only as JAX printed it: shown as that text, not as a quoted string."""

    def __repr__(self):
        return str(self)


def _where_text(defined_at):
    """JAX's 'file:line' spelled as jitmagic spells places (basename, or the notebook cell)."""
    from types import SimpleNamespace

    fn, _, line = (defined_at or "").rpartition(":")
    if not fn or not line.isdigit():
        return defined_at or "?"
    code = SimpleNamespace(co_filename=fn, co_firstlineno=int(line))
    return identity.where(SimpleNamespace(__code__=code))


def _path_name(path, params=()):
    return pytree.arg_label(path, lambda i: params[i] if i < len(params) else f"args[{i}]")
